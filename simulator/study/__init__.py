"""The experiment pipeline: a grid of points over a workload model, run, stored and written.

The workload model (for example PostgreSQL in ``models``) is found through the ``snapsim.models``
entry point (:mod:`~simulator.study.workload_model`); nothing here imports it. The commands that
judge, report or benchmark stand on this package in :mod:`simulator.tools`; it never imports them.
"""
