"""The PostgreSQL programs that run on the simulated machine.

Shared-memory layouts, snapshot algorithms and clients. This package imports :mod:`simulator`;
the reverse is never allowed (``tests/project/test_layering.py`` checks it).
"""
