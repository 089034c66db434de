"""The shared lines a simulation tracks, and precomputed accesses to them.

A program's shared memory can have tens of thousands of lines, of which a run touches a known
subset: lock words, shared counters, the arrays a scan reads, each process's own lines (in
PostgreSQL, for example, the procArray arrays of the connected entries and each backend's own
PGPROC lines). Models *register* the accesses they will perform while they are being
set up (:meth:`TrackedMemory.access`, :meth:`TrackedMemory.scan`); each registration returns a
precomputed handle of machine line indices and byte masks. Once every model is set up,
:meth:`TrackedMemory.build_machine` creates the :class:`~simulator.hardware.machine.Machine` over
exactly the registered lines, labelled in perf c2c style from the layout.

A line is *private* when it was only registered for one process's own accesses (inside
:meth:`TrackedMemory.registering_for`): no other process ever touches it while its owner runs, so
the order of its accesses relative to other processes' does not matter (:attr:`Ops.private`; a
process model can skip a synchronisation for such accesses).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np
import numpy.typing as npt

from simulator.config.machine import LINE_BYTES, MachineConfig
from simulator.hardware.codes import Op
from simulator.hardware.latency import LatencyTables
from simulator.hardware.layout import Region, SharedMemory
from simulator.hardware.machine import Implementation, Machine
from simulator.hardware.topology import Topology
from simulator.types import IntArray


@dataclass(frozen=True, slots=True)
class Access:
    """One memory operation on a tracked line: machine line index, operation, bytes touched."""

    line: int
    op: Op
    mask: int
    field: str
    """``region.field`` touched, for reports."""


class Ops(Sequence[Access]):
    """An immutable sequence of accesses, with the arrays the machine takes built once.

    ``lines``, ``ops`` and ``masks`` (signed int64 byte masks) feed
    :meth:`~simulator.hardware.machine.Machine.sequence` directly; they are built on first use, so
    the
    many intermediate sequences of a model's set-up cost no arrays. Concatenating two ``Ops``
    gives a new one, remembered by the left operand: the hot paths concatenate the same
    long-lived pieces again and again (a lock word, then an own store) and get the same object
    back.
    """

    __slots__ = ("_accesses", "_arrays", "_memory", "_private", "_sums")

    def __init__(self, accesses: Iterable[Access] = (),
                 memory: TrackedMemory | None = None) -> None:
        self._accesses = tuple(accesses)
        self._memory = memory
        self._private: bool | None = None
        self._arrays: tuple[IntArray, IntArray, IntArray] | None = None
        self._sums: dict[int, tuple[Ops | None, Ops]] | None = None

    def _build(self) -> tuple[IntArray, IntArray, IntArray]:
        accesses = self._accesses
        arrays = (np.array([a.line for a in accesses], dtype=np.int64),
                  np.array([int(a.op) for a in accesses], dtype=np.int64),
                  np.array([_signed(a.mask) for a in accesses], dtype=np.int64))
        self._arrays = arrays
        return arrays

    @property
    def arrays(self) -> tuple[IntArray, IntArray, IntArray]:
        """``(lines, ops, masks)`` in one call (a process's hot path)."""
        arrays = self._arrays
        return arrays if arrays is not None else self._build()

    @property
    def lines(self) -> IntArray:
        """Machine line index of every access."""
        arrays = self._arrays
        return (arrays if arrays is not None else self._build())[0]

    @property
    def ops(self) -> IntArray:
        """:class:`Op` value of every access."""
        arrays = self._arrays
        return (arrays if arrays is not None else self._build())[1]

    @property
    def masks(self) -> IntArray:
        """Byte mask of every access, in the kernel's signed int64 form."""
        arrays = self._arrays
        return (arrays if arrays is not None else self._build())[2]

    def __len__(self) -> int:
        return len(self._accesses)

    def __iter__(self) -> Iterator[Access]:
        return iter(self._accesses)

    @overload
    def __getitem__(self, index: int) -> Access: ...

    @overload
    def __getitem__(self, index: slice) -> Ops: ...

    def __getitem__(self, index: int | slice) -> Access | Ops:
        if isinstance(index, slice):
            return Ops(self._accesses[index], self._memory)
        return self._accesses[index]

    @property
    def private(self) -> bool:
        """Whether every line is private to one process (known once the machine is built)."""
        if self._private is None:
            memory = self._memory
            if memory is None or memory.private_lines is None:
                return False
            self._private = bool(memory.private_lines[self.lines].all())
        return self._private

    def __add__(self, other: Sequence[Access]) -> Ops:
        memory = self._memory if self._memory is not None else getattr(other, "_memory", None)
        if not isinstance(other, Ops):
            return Ops((*self._accesses, *other), memory)
        sums = self._sums
        if sums is None:
            sums = self._sums = {}
        known = sums.get(id(other))
        if known is not None and (known[0] is other or known[0] is None):
            return known[1]
        result = Ops((*self._accesses, *other._accesses), memory)
        # ``x + x`` (a CAS that failed, then the one that succeeds) is kept without a reference
        # to itself, which would be a cycle; under the key id(self) it can only be self.
        sums[id(other)] = (None if other is self else other, result)
        return result

    def __repr__(self) -> str:
        return f"Ops({list(self._accesses)!r})"

    def with_op(self, op: Op) -> Ops:
        """The same lines and bytes with another operation (e.g. the load before a CAS)."""
        return Ops((Access(a.line, op, a.mask, a.field) for a in self._accesses), self._memory)


_SHARED = -1
"""User of a line registered outside any process's own accesses, or for several processes."""

NO_OPS = Ops()
"""The empty sequence."""


def _signed(mask: int) -> int:
    mask &= (1 << 64) - 1
    return mask - (1 << 64) if mask >= 1 << 63 else mask


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """A precomputed scan: line indices and masks in first-touch order, cut into chunks.

    ``chunk_starts[k]`` is the first access of chunk ``k``; chunk ``k`` covers the scan's entries
    ``k * entries_per_chunk`` onwards. ``entries`` is the number of entries scanned (for the
    instruction cost); ``pattern`` is the memory-level-parallelism class (``stream`` or
    ``indirect``); ``op`` the operation on every line: loads (a read of an array) or stores (a
    ``memset``, the destination of a ``memmove``), whose misses overlap alike.
    """

    lines: IntArray
    masks: IntArray
    chunk_starts: tuple[int, ...]
    entries_per_chunk: int
    entries: int
    pattern: str
    op: Op = Op.LOAD
    _chunks: list[tuple[IntArray, IntArray, int]] = field(
        default_factory=list, init=False, repr=False, compare=False)

    def chunks(self) -> Sequence[tuple[IntArray, IntArray, int]]:
        """``(lines, masks, entries)`` per chunk (built once: a plan is scanned many times)."""
        cached = self._chunks
        if cached:
            return cached
        bounds = (*self.chunk_starts, len(self.lines))
        remaining = self.entries
        for k in range(len(self.chunk_starts)):
            entries = min(self.entries_per_chunk, remaining)
            remaining -= entries
            cached.append((self.lines[bounds[k]:bounds[k + 1]],
                           self.masks[bounds[k]:bounds[k + 1]], entries))
        return cached


class TrackedMemory:
    """Registry of the tracked lines of one simulation."""

    def __init__(self, memory: SharedMemory) -> None:
        self.memory = memory
        self._index: dict[int, int] = {}
        self._numbers: list[int] = []
        self._users: list[int] = []
        """Per line: the process it was registered for, or :data:`_SHARED`."""
        self._current_user: int | None = None
        self._known: dict[tuple[int, int, str | None, Op], Ops] = {}
        """:meth:`access` results by (region, element, field, operation)."""
        self.machine: Machine | None = None
        self.private_lines: npt.NDArray[np.bool_] | None = None
        """Per line, whether it is private to one process (set by :meth:`build_machine`)."""

    @property
    def n_lines(self) -> int:
        """Lines registered so far."""
        return len(self._numbers)

    @contextlib.contextmanager
    def registering_for(self, user: int) -> Iterator[None]:
        """Register the accesses of the block as the own accesses of process ``user``."""
        self._current_user = user
        try:
            yield
        finally:
            self._current_user = None

    def line_index(self, line_number: int) -> int:
        """Machine index of a line (registering it if new)."""
        index = self._index.get(line_number)
        user = _SHARED if self._current_user is None else self._current_user
        if index is None:
            if self.machine is not None:
                raise RuntimeError("the machine is built: no new lines can be tracked")
            index = len(self._numbers)
            self._index[line_number] = index
            self._numbers.append(line_number)
            self._users.append(user)
        elif self._users[index] != user:
            self._users[index] = _SHARED
        return index

    def access(self, region: Region, index: int, field: str | None, op: Op) -> Ops:
        """The accesses of one field of one element (two if it straddles lines).

        Asking again returns the same object (set-up asks for the same shared fields once per
        process); its lines are registered for the current user again, as new ones would be.
        """
        key = (id(region), index, field, op)
        known = self._known.get(key)
        if known is not None:
            user = _SHARED if self._current_user is None else self._current_user
            users = self._users
            for access in known:
                if users[access.line] != user:
                    users[access.line] = _SHARED
            return known
        label = f"{region.name}.{field}" if field else region.name
        ops = Ops([Access(self.line_index(line), op, mask, label)
                   for line, mask in region.field_span(index, field)], self)
        self._known[key] = ops
        return ops

    def scan(self, parts: Iterable[tuple[Region, Iterable[int], Iterable[str] | None]],
             entries: int, entries_per_chunk: int, pattern: str,
             op: Op = Op.LOAD) -> ScanPlan:
        """A scan over several per-entry part lists, interleaved entry by entry.

        ``parts`` gives, for the scan's entries in order, which element of which region and which
        fields each entry reads (e.g. PostgreSQL's ``pgprocnos[i]`` then ``PGXACT[pgprocnos[i]]``);
        the element sequences must all have ``entries`` elements. Every line appears once, at its
        first touch, with the union of the bytes read (or, with ``op`` = ``Op.STORE``, written).

        Raises:
            ValueError: an element list of another length than ``entries``, or ``op`` an RMW (a
                scan's accesses are independent; an atomic is not).
        """
        if op not in (Op.LOAD, Op.STORE):
            raise ValueError(f"a scan loads or stores, not {op!r}")
        columns = [(region, list(elements), None if fields is None else list(fields))
                   for region, elements, fields in parts]
        for region, elements, _ in columns:
            if len(elements) != entries:
                raise ValueError(f"scan of {region.name}: {len(elements)} elements, not {entries}")
        order: dict[int, int] = {}
        masks: list[int] = []
        chunk_starts: list[int] = []
        for entry in range(entries):
            if entry % entries_per_chunk == 0:
                chunk_starts.append(len(masks))
            for region, elements, fields in columns:
                element = elements[entry]
                spans = (region.field_span(element, None) if fields is None
                         else region.fields_span(element, fields))
                for line_number, mask in spans:
                    line = self.line_index(line_number)
                    slot = order.get(line)
                    if slot is None:
                        order[line] = len(masks)
                        masks.append(mask)
                    else:
                        masks[slot] |= mask
        lines = np.fromiter(order.keys(), dtype=np.int64, count=len(order))
        signed = [_signed(m) for m in masks]
        return ScanPlan(lines, np.asarray(signed, dtype=np.int64), tuple(chunk_starts),
                        entries_per_chunk, entries, pattern, op)

    def release(self) -> None:
        """Forget the registered accesses once the run is over.

        Every :class:`Ops` refers back to this registry, which keeps them all: a reference
        cycle that only Python's cyclic collector could free, walking each of the (hundreds of
        thousands of) accesses of a large point. Without the registry's references they are
        freed as soon as the model lets go of them. No access can be registered afterwards.
        """
        self._known.clear()

    def build_machine(self, config: MachineConfig,
                      implementation: Implementation = "compiled", *,
                      topology: Topology | None = None,
                      tables: LatencyTables | None = None) -> Machine:
        """The machine over every registered line (after this no line can be added).

        ``topology`` and ``tables``: the machine's, if already built (see :class:`Machine`).
        """
        if not self._numbers:
            raise RuntimeError("no line was registered")
        addresses = [n * LINE_BYTES for n in self._numbers]
        labels = [self.memory.label_for_line(n) for n in self._numbers]
        self.machine = Machine(config, addresses, labels=labels,
                               implementation=implementation, topology=topology, tables=tables)
        self.private_lines = np.array([user != _SHARED for user in self._users], dtype=np.bool_)
        return self.machine
