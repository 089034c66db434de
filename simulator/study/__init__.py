"""Experiments over a workload model: a grid of points, run, stored and turned into files.

The workload model (for example PostgreSQL in ``models``) is found through the ``snapsim.models``
entry point (:mod:`~simulator.study.workload_model`); nothing here imports it.
"""
