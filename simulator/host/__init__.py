"""This computer, read and timed: the instruments that look at the host rather than simulate it.

:mod:`.facts` reads the host's facts once (CPU model, topology, caches and NUMA nodes, kernel,
governor, idle states, memory), for a measurement's metadata and for :mod:`.probe`, which turns
them into a machine file close to the nearest shipped one (``snapsim machine probe``), with
:mod:`.probe_idle` reading a guest's idle states; :mod:`.procfs` reads CPU accounting from
``/proc`` and holds the one reader of a kernel file's text; :mod:`.wakeup` and :mod:`.clock` are
micro-benchmarks of the host's wake-up path and clock (``--measure-wakeup``,
``--measure-clock``). Nothing here knows PostgreSQL or the model.
"""
