"""Where waiting happens: the SimPy environment, the CPU scheduler and processes on CPUs.

Costs come from :mod:`simulator.hardware` as numbers; this floor turns them into simulated time.
"""
