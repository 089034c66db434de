"""``snapsim measure``: real PostgreSQL servers and pgbench, measured on this host.

This package is a measurement tool, not part of the model: it starts real servers (``postgres``,
``initdb``) and pgbench clients, holds idle connections, runs the active clients, reads where the
CPU went from ``/proc``, and writes a measurement file that ``snapsim validate`` judges the model
against. It never imports the model (``snapsim_models``); the algorithm names it writes
(``pre14``, ``post14``) are labels the user gives to installations.

Modules: :mod:`.installations` (bin directories, versions, the label check), :mod:`.processes`
(every started process, stopped by PID), :mod:`.leftovers` (a killed measurement's processes,
found and stopped by the next one), :mod:`.noise` (whether other work disturbed a run),
:mod:`.cluster` (one server's life), :mod:`.pgbench`
(commands and output parsing), :mod:`.holders` (idle and mostly idle connections), :mod:`.plan`
(points, order, estimates and limits), :mod:`.session` (the measurement itself),
:mod:`.kernel_thread_fit` (the DAMON thread's line fitted to its measured CPU), :mod:`.results` and
:mod:`.outputs` (the files written) and :mod:`.manifest` (the measurement manifest, read and
written: the datasets ``snapsim validate`` and the experiment pipeline read). The host's own
facts and CPU accounting are :mod:`simulator.host`'s.
"""
