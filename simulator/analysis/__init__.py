"""Pure functions on result frames: columns, seed summaries, USL fits, c2c, plots, text tables.

Nothing here runs a simulation, reads a configuration or writes a file of its own accord.
"""
