"""Cache-coherence state and its two implementations: a plain-Python reference and a Numba kernel.

Both implement the same model (see :mod:`simulator.hardware.coherence.reference`) and must produce
identical states, counts and costs; :class:`simulator.hardware.machine.Machine` chooses one of them.
"""
