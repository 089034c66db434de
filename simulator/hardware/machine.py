"""The machine facade: tracked memory, memory operations and their costs, per-line statistics.

A :class:`Machine` is what workload models talk to. It is pure and synchronous: every call returns
a cost in nanoseconds and updates the line states; waiting that cost is the caller's business
(one ``env.timeout`` per step in a SimPy process). It knows nothing about the program it runs.

* :meth:`Machine.access` is one load, store or atomic read-modify-write by a hardware thread. An
  ownership transfer of a line that another transfer is still using waits behind it: a hot line
  is a FIFO queue and the result reports the wait separately from the latency.
* :meth:`Machine.scan` is a run of independent loads (one call per chunk of a scan); misses
  overlap according to the machine's memory-level parallelism (``stream`` or ``indirect``).
* :meth:`Machine.pollute` passes the footprint of other work through a core's caches.

Memory is a fixed set of tracked lines given at construction by byte address (models compute
addresses from their layouts); each gets its home node from the machine's placement policy and an
optional label for reports (``"PGXACT[5..10]"``). The compiled kernel does the work; the
pure-Python reference (``implementation="reference"``) gives identical results and is used by
the tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, Protocol, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from simulator.config.machine import LINE_BYTES, MachineConfig
from simulator.errors import ProtocolError
from simulator.hardware.codes import (
    CLASS_NAMES,
    N_CLASSES,
    OUT_SIZE,
    AccessClass,
    LineState,
    Op,
    Out,
)
from simulator.hardware.coherence.compiled import CompiledCoherence
from simulator.hardware.coherence.reference import ReferenceCoherence
from simulator.hardware.latency import LatencyTables
from simulator.hardware.topology import Topology
from simulator.types import FloatArray, IntArray, SequenceFunction

__all__ = ["ALL_BYTES", "AccessResult", "Implementation", "Machine", "byte_mask", "new_counters"]

ALL_BYTES = (1 << LINE_BYTES) - 1
"""Byte mask of a whole line."""

Implementation = Literal["compiled", "reference"]

_ADDITIVE_COUNTERS = ("line_ops", "line_class", "line_invalidations", "line_false_hitm",
                      "line_wait_ns")
"""The per-line counters that add up (the byte masks accumulate by OR)."""


def new_counters() -> FloatArray:
    """A zeroed counter vector: accesses per :class:`AccessClass`, then the :class:`Out` slots."""
    return np.zeros(OUT_SIZE, dtype=np.float64)


def byte_mask(offset: int, size: int) -> int:
    """Mask of ``size`` bytes starting at byte ``offset`` of a line (bit i = byte i)."""
    if not (offset >= 0 and size >= 1 and offset + size <= LINE_BYTES):
        raise ValueError(f"bytes {offset}..{offset + size - 1} are not inside one line")
    return ((1 << size) - 1) << offset


class AccessResult(NamedTuple):
    """Outcome of one memory operation."""

    access_class: AccessClass
    latency_ns: float
    wait_ns: float

    @property
    def cost_ns(self) -> float:
        """Total time the issuing thread waits: queueing plus latency."""
        return self.latency_ns + self.wait_ns


class _CoherenceImpl(Protocol):
    """What the reference and the compiled implementation both provide."""

    def access(
        self, thread: int, line: int, op: int, mask: int, now: float, out: Any
    ) -> tuple[int, float, float]: ...

    def scan(
        self,
        thread: int,
        lines: IntArray,
        masks: Any,
        op: int,
        mlp: float,
        now: float,
        out: Any,
    ) -> float: ...

    def sequence(
        self, thread: int, lines: IntArray, ops: IntArray, masks: IntArray, now: float, out: Any
    ) -> tuple[float, float]: ...

    def sequence_function(self) -> SequenceFunction: ...

    def pollute(self, core: int, private_lines: int, l3_lines: int) -> None: ...

    def holds(self, core: int, line: int) -> bool: ...

    def canonical_state(self) -> dict[str, Any]: ...

    def line_counters(self) -> dict[str, Any]: ...

    def reset_line_counters(self) -> None: ...


class Machine:
    """A machine over a fixed set of tracked cache lines.

    Args:
        config: the machine.
        line_addresses: byte address of each tracked line (multiples of 64, distinct).
        labels: a label per line for reports; defaults to the hexadecimal address.
        implementation: ``"compiled"`` (Numba kernel, default) or ``"reference"`` (plain Python).
        topology: the machine's topology, and ``tables`` its latency tables, when the caller
            has built them already (a point builds them once for its scheduler and its
            machine); built from ``config`` if not given.
    """

    def __init__(
        self,
        config: MachineConfig,
        line_addresses: Sequence[int] | IntArray,
        labels: Sequence[str] | None = None,
        implementation: Implementation = "compiled",
        *,
        topology: Topology | None = None,
        tables: LatencyTables | None = None,
    ) -> None:
        addresses = np.asarray(line_addresses, dtype=np.int64)
        if addresses.ndim != 1 or len(addresses) == 0:
            raise ValueError("line_addresses must be a non-empty 1-D sequence")
        if np.any(addresses % LINE_BYTES) or np.any(addresses < 0):
            raise ValueError("every line address must be a non-negative multiple of 64")
        if len(np.unique(addresses)) != len(addresses):
            raise ValueError("line addresses must be distinct")
        if labels is not None and len(labels) != len(addresses):
            raise ValueError("labels must have one entry per line")
        self.config = config
        self.topology = topology if topology is not None else Topology.from_config(config)
        if tables is None:
            tables = LatencyTables.build(config, self.topology)
        self.addresses = addresses
        self.line_numbers = addresses // LINE_BYTES
        self.homes = np.array(
            [config.memory.home_of_line(int(n)) for n in self.line_numbers], dtype=np.int64
        )
        self.labels = list(labels) if labels is not None else [f"{a:#x}" for a in addresses]
        self.implementation: Implementation = implementation
        engine: _CoherenceImpl
        if implementation == "compiled":
            engine = CompiledCoherence(config, self.line_numbers, self.homes, self.topology,
                                       tables)
        elif implementation == "reference":
            engine = ReferenceCoherence(config, self.line_numbers, self.homes, self.topology,
                                        tables)
        else:
            raise ValueError(
                f"unknown implementation {implementation!r} (choose compiled or reference)")
        self._engine = engine
        self.totals: FloatArray = new_counters()
        """Counters of operations issued without an ``out`` vector (see :func:`new_counters`)."""
        self._mlp = {"stream": config.mlp.stream, "indirect": config.mlp.indirect}
        self._thread_core: list[int] = [int(core) for core in self.topology.thread_core]

    @property
    def n_lines(self) -> int:
        """Number of tracked lines."""
        return len(self.addresses)

    # ------------------------------------------------------------------ operations

    def access(
        self,
        thread: int,
        line: int,
        op: Op,
        mask: int = ALL_BYTES,
        now: float = 0.0,
        out: FloatArray | None = None,
    ) -> AccessResult:
        """One memory operation by a hardware thread at simulated time ``now`` (ns).

        ``mask`` says which bytes of the line the operation touches (for false-sharing
        attribution). The counters go to ``out`` if given (a vector from :func:`new_counters`,
        e.g. one per transaction), else to :attr:`totals`. Per-line statistics are always kept.
        """
        self._check_thread(thread)
        self._check_line(line)
        target = self.totals if out is None else out
        klass, latency, wait = self._engine.access(thread, line, int(op), mask, now, target)
        return AccessResult(AccessClass(klass), latency, wait)

    def holds(self, thread: int, line: int, *, check: bool = True) -> bool:
        """Whether the thread's core has a valid copy of ``line`` in its private caches.

        A load of such a line hits without any transfer. Nothing changes (no LRU update, no
        counter). ``check=False`` skips the argument checks (hot paths).
        """
        if check:
            self._check_thread(thread)
            self._check_line(line)
        return self._engine.holds(self._thread_core[thread], line)

    def sequence(
        self,
        thread: int,
        lines: IntArray,
        ops: IntArray,
        masks: IntArray,
        now: float = 0.0,
        out: FloatArray | None = None,
        *,
        check: bool = True,
    ) -> tuple[float, float]:
        """Dependent operations issued back to back by one thread, in one call.

        Operation ``k`` starts at ``now`` plus the costs of operations ``0..k-1`` (latency and
        queueing), exactly as successive :meth:`access` calls would; returns the total cost and
        the part of it spent queueing (ns). ``lines``, ``ops`` (:class:`Op` values) and
        ``masks`` are int64 arrays of equal length; masks use the kernel's signed form (see
        the kernel's signed int64 form). Checked unless ``check=False`` (for arrays validated
        once by the caller): the thread; lines and ops in range; equal lengths.
        """
        if check:
            self._check_thread(thread)
            if not len(lines) == len(ops) == len(masks):
                raise ValueError("lines, ops and masks must have the same length")
            if len(lines) and (int(lines.min()) < 0 or int(lines.max()) >= self.n_lines):
                raise IndexError(f"sequence touches a line outside 0..{self.n_lines - 1}")
            if len(ops) and (int(ops.min()) < 0 or int(ops.max()) > int(Op.RMW)):
                raise ValueError("ops must be Op values")
        target = self.totals if out is None else out
        return self._engine.sequence(thread, lines, ops, masks, now, target)

    def sequence_unchecked(self) -> SequenceFunction:
        """:meth:`sequence` as a bare function ``(thread, lines, ops, masks, now, out)``.

        No checks and no defaults, and no Python call between the caller and the engine: for
        hot loops whose arrays were validated once (a process's memory operations).
        """
        return self._engine.sequence_function()

    def scan(
        self,
        thread: int,
        lines: IntArray,
        masks: IntArray | None = None,
        *,
        op: Op = Op.LOAD,
        pattern: Literal["stream", "indirect"] = "stream",
        now: float = 0.0,
        out: FloatArray | None = None,
        check: bool = True,
    ) -> float:
        """Independent accesses to ``lines`` in order; returns the stall in ns.

        Each access beyond an L1 hit costs ``latency / mlp`` where ``mlp`` is the machine's
        overlap for the ``pattern``; waits behind busy lines add in full. Counters go to ``out``
        or :attr:`totals`, as for :meth:`access`. ``check=False`` skips the argument checks for
        contiguous int64 arrays validated once by the caller.
        """
        if not check and masks is not None and out is not None:
            return self._engine.scan(thread, lines, masks, int(op), self._mlp[pattern], now, out)
        self._check_thread(thread)
        lines = np.ascontiguousarray(lines, dtype=np.int64)
        if len(lines) and (lines.min() < 0 or lines.max() >= self.n_lines):
            raise IndexError(f"scan touches a line outside 0..{self.n_lines - 1}")
        if masks is None:
            masks = np.full(len(lines), -1, dtype=np.int64)
        masks = np.ascontiguousarray(masks, dtype=np.int64)
        if masks.shape != lines.shape:
            raise ValueError("masks must have one entry per line")
        mlp = self._mlp.get(pattern)
        if mlp is None:
            raise ValueError(f"unknown scan pattern {pattern!r} (choose stream or indirect)")
        target = self.totals if out is None else out
        return self._engine.scan(thread, lines, masks, int(op), mlp, now, target)

    def pollute(self, core: int, private_bytes: int, l3_bytes: int = 0) -> None:
        """Pass the footprint of other work through a core's L1/L2 and its domain's L3."""
        if not 0 <= core < self.topology.n_cores:
            raise IndexError(f"core {core} does not exist (0..{self.topology.n_cores - 1})")
        if private_bytes < 0 or l3_bytes < 0:
            raise ValueError("footprints must not be negative")
        self._engine.pollute(core, private_bytes // LINE_BYTES, l3_bytes // LINE_BYTES)

    def flush_private(self, core: int) -> None:
        """Empty a core's L1 and L2, as a deep idle state does on entry.

        Every tracked line they hold is evicted (dirty ones written back), exactly as a
        footprint of the L2's size passing through them would evict it.
        """
        self.pollute(core, self.config.l2.size_bytes)

    # ------------------------------------------------------------------ reports

    def class_counts(self, out: FloatArray | None = None) -> dict[str, float]:
        """Accesses per class (and invalidations, waits, false sharing) as a dict.

        A test seam: runs read their counter vectors by index (:class:`AccessClass` and
        :class:`Out`); the tests read them by name here.
        """
        vector = self.totals if out is None else out
        counts = {name: float(vector[i]) for i, name in enumerate(CLASS_NAMES)}
        for slot in Out:
            counts[slot.name.lower()] = float(vector[slot])
        return counts

    def line_counts(self) -> dict[str, npt.NDArray[np.float64]]:
        """The per-line counters that add up, now: to subtract from a later :meth:`line_table`."""
        state = self._engine.line_counters()
        return {name: np.asarray(state[name], dtype=np.float64) for name in _ADDITIVE_COUNTERS}

    def line_table(self, since: dict[str, npt.NDArray[np.float64]] | None = None) -> pd.DataFrame:
        """One row per tracked line: operations, classes, HITM by kind, bytes read and written.

        Columns: ``label, address, home, loads, stores, rmws``, one column per access class,
        ``local_hitm`` (same socket, any L3 domain), ``remote_hitm``, ``false_sharing_hitm``,
        ``invalidations``, ``wait_ns``, ``bytes_read`` and ``bytes_written`` (masks, bit i =
        byte i). ``since``: counts of an earlier :meth:`line_counts` to subtract (the byte masks,
        which accumulate by OR, cover everything since the last :meth:`reset_line_counters`).
        """
        state = self._engine.line_counters()
        if since is not None:
            state = dict(state)
            for name in _ADDITIVE_COUNTERS:
                state[name] = np.asarray(state[name], dtype=np.float64) - since[name]
        ops = np.asarray(state["line_ops"], dtype=np.int64).reshape(self.n_lines, 3)
        classes = np.asarray(state["line_class"], dtype=np.int64).reshape(self.n_lines, N_CLASSES)
        frame = pd.DataFrame(
            {
                "label": self.labels,
                "address": self.addresses,
                "home": self.homes,
                "loads": ops[:, Op.LOAD],
                "stores": ops[:, Op.STORE],
                "rmws": ops[:, Op.RMW],
            }
        )
        for index, name in enumerate(CLASS_NAMES):
            frame[name] = classes[:, index]
        frame["local_hitm"] = (
            classes[:, AccessClass.LOCAL_HITM] + classes[:, AccessClass.CROSS_DOMAIN_HITM]
        )
        frame["remote_hitm"] = classes[:, AccessClass.REMOTE_HITM]
        frame["false_sharing_hitm"] = _as_ints(state["line_false_hitm"])
        frame["invalidations"] = _as_ints(state["line_invalidations"])
        frame["wait_ns"] = np.asarray(state["line_wait_ns"], dtype=np.float64)
        frame["bytes_read"] = _as_uints(state["read_mask"])
        frame["bytes_written"] = _as_uints(state["write_mask"])
        return frame

    def reset_line_counters(self) -> None:
        """Start the per-line table afresh (e.g. at the end of a warm-up); states are kept."""
        self._engine.reset_line_counters()

    def canonical_state(self) -> dict[str, object]:
        """Implementation-independent dump of the whole state (for tests and debugging)."""
        return self._engine.canonical_state()

    def check_invariants(self) -> None:
        """Raise :class:`ProtocolError` if the coherence state is inconsistent.

        Checked: at most one owner, in M/E/O/F; an owner in M or E excludes any other valid copy;
        the owner holds the line; the directory's holders are exactly the cores whose L2 has the
        line; every L1 line is also in the same core's L2; no line is twice in one set.
        """
        check_state(self.canonical_state())

    # ------------------------------------------------------------------ helpers

    def _check_thread(self, thread: int) -> None:
        if not 0 <= thread < self.topology.n_threads:
            raise IndexError(
                f"hardware thread {thread} does not exist (0..{self.topology.n_threads - 1})"
            )

    def _check_line(self, line: int) -> None:
        if not 0 <= line < self.n_lines:
            raise IndexError(f"line {line} is not tracked (0..{self.n_lines - 1})")


def _as_ints(values: object) -> npt.NDArray[np.int64]:
    return np.asarray(values, dtype=np.int64)


def _as_uints(values: object) -> npt.NDArray[np.uint64]:
    return np.asarray(values, dtype=np.uint64)


def check_state(state: dict[str, object]) -> None:
    """Check the coherence invariants on a canonical state; raise :class:`ProtocolError`."""
    owners = cast(list[int], state["owner"])
    ostates = cast(list[int], state["ostate"])
    holders = cast(list[list[int]], state["holders"])
    l1 = cast(list[list[list[int]]], state["l1"])
    l2 = cast(list[list[list[int]]], state["l2"])
    in_l2: dict[int, set[int]] = {}
    for core, sets in enumerate(l2):
        for cache_set in sets:
            tracked = [x for x in cache_set if x >= 0]
            if len(tracked) != len(set(tracked)):
                raise ProtocolError(f"core {core}: a line appears twice in one L2 set")
            for line in tracked:
                in_l2.setdefault(line, set()).add(core)
    for core, sets in enumerate(l1):
        for cache_set in sets:
            for line in cache_set:
                if line >= 0 and core not in in_l2.get(line, set()):
                    raise ProtocolError(f"line {line} is in core {core}'s L1 but not its L2")
    for line, (owner, ostate, held) in enumerate(zip(owners, ostates, holders, strict=True)):
        if set(held) != in_l2.get(line, set()):
            raise ProtocolError(
                f"line {line}: directory holders {sorted(held)} != caches "
                f"{sorted(in_l2.get(line, set()))}"
            )
        if owner < 0:
            if ostate != 0:
                raise ProtocolError(f"line {line}: state {ostate} without an owner")
            continue
        if owner not in held:
            raise ProtocolError(f"line {line}: owner core {owner} does not hold it")
        state_name = LineState(ostate)
        if state_name not in (LineState.M, LineState.E, LineState.O, LineState.F):
            raise ProtocolError(f"line {line}: owner in state {state_name.name}")
        if state_name in (LineState.M, LineState.E) and len(held) > 1:
            raise ProtocolError(
                f"line {line}: {state_name.name} in core {owner} but also held by {sorted(held)}"
            )
