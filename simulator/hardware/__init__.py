"""The generic machine: what a memory operation costs. Synchronous, returns costs, no SimPy.

Reading order: :mod:`~simulator.hardware.codes` (the protocol's vocabulary),
:mod:`~simulator.hardware.topology` (sockets, domains, cores, threads),
:mod:`~simulator.hardware.latency` (the latency tables), :mod:`~simulator.hardware.coherence`
(the directory: a readable reference and a compiled kernel), :mod:`~simulator.hardware.machine`
(the facade a program calls), then the shared-memory toolkit a program uses to place its data:
:mod:`~simulator.hardware.layout`, :mod:`~simulator.hardware.tracked` and
:mod:`~simulator.hardware.fields`.
"""
