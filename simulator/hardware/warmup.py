"""Compile the coherence kernel ahead of a run, so that the first point is not charged for it.

Numba compiles each kernel entry point on its first call in a process, or loads it from its
on-disk cache (``cache=True``): tens of seconds on a fresh install, about a second afterwards.
:func:`warm_kernel` makes those first calls on a small machine, with the argument types the
simulator uses (every entry point of :class:`~simulator.hardware.machine.Machine` that reaches
the kernel), so that a command can say what it is doing instead of showing a stalled first
point; worker processes forked afterwards inherit the compiled code.
"""

from __future__ import annotations

import numpy as np

from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine
from simulator.hardware.codes import Op
from simulator.hardware.coherence import kernel
from simulator.hardware.machine import Machine, new_counters

__all__ = ["kernel_compiled", "warm_kernel"]

_ENTRY_POINTS: tuple[object, ...] = (kernel.access, kernel.sequence, kernel.scan, kernel.pollute)


def kernel_compiled() -> bool:
    """Whether every kernel entry point is compiled (or loaded) in this process already."""
    # A Numba dispatcher lists the signatures compiled or loaded so far; the kernel module's
    # functions are dispatchers whatever their static type says.
    return all(len(getattr(entry, "signatures", ())) > 0 for entry in _ENTRY_POINTS)


WARM_MACHINE = "gold5215-2s"
"""The shipped machine warmed when none is given (compiled code does not depend on it)."""

MAX_WARM_PRIVATE_WAYS = 1 << 24
"""A given machine with more L1d and L2 ways than this over all cores (about 200 MB of tags and
LRU stamps) is not built to warm the kernel: :data:`WARM_MACHINE` is, and the machine's own
memory estimate refuses it before its first point (:mod:`simulator.study.estimate`)."""


def _private_ways(config: MachineConfig) -> int:
    topology = config.topology
    cores = topology.sockets * topology.domains_per_socket * topology.cores_per_domain
    return cores * (config.l1d.sets * config.l1d.ways + config.l2.sets * config.l2.ways)


def warm_kernel(config: MachineConfig | None = None) -> None:
    """Call every kernel entry point once on a 4-line machine.

    ``config``: its machine (default: a shipped one; the compiled code depends on the argument
    types only).
    """
    if config is None or _private_ways(config) > MAX_WARM_PRIVATE_WAYS:
        config = load_machine(WARM_MACHINE)  # a huge machine is refused later, not built here
    machine = Machine(config, np.arange(4, dtype=np.int64) * 64)
    out = new_counters()
    lines = np.arange(4, dtype=np.int64)
    masks = np.full(4, -1, dtype=np.int64)
    machine.access(0, 0, Op.RMW, out=out)
    machine.sequence(0, lines, np.full(4, int(Op.LOAD), dtype=np.int64), masks, 0.0, out)
    machine.scan(0, lines, masks, op=Op.LOAD, out=out)
    machine.scan(0, lines, masks, op=Op.STORE, out=out)
    machine.pollute(0, 4096, 4096)
