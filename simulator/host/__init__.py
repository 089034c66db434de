"""This computer, read and timed: the instruments that look at the host rather than simulate it.

:mod:`.facts` reads the host's facts once (CPU model, topology, kernel, governor, idle states,
memory); :mod:`.probe` turns them into a machine file close to the nearest shipped one
(``snapsim machine probe``), with :mod:`.probe_idle` reading a guest's idle states; :mod:`.procfs`
reads CPU accounting from ``/proc``; :mod:`.wakeup` and :mod:`.clock` are micro-benchmarks of the
host's wake-up path and clock (``--measure-wakeup``, ``--measure-clock``). Nothing here knows
PostgreSQL or the model.
"""
