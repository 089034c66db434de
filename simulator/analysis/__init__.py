"""Pure functions on result frames: output columns, USL fits, the c2c report, plots, text tables.

Nothing here runs a simulation, reads a configuration or writes a file of its own accord.
"""
