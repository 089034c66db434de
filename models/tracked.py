"""The shared lines a simulation tracks, and precomputed accesses to them.

PostgreSQL's shared memory has tens of thousands of lines, of which a run touches a known subset:
the lock words, the VariableCache line, the procArray arrays of the connected entries, each
backend's own PGPROC lines, the hot buffer descriptors. Models *register* the accesses they will
perform while they are being set up (:meth:`TrackedMemory.access`, :meth:`TrackedMemory.scan`);
each registration returns a precomputed handle of machine line indices and byte masks. Once every
model is set up, :meth:`TrackedMemory.build_machine` creates the :class:`~simulator.machine.Machine`
over exactly the registered lines, labelled in perf c2c style from the layout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.layout import Region
from models.shmem import PgSharedMemory
from simulator.coherence.codes import Op
from simulator.machine import Backend, Machine
from simulator.machine_config import LINE_BYTES, MachineConfig

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Access:
    """One memory operation on a tracked line: machine line index, operation, bytes touched."""

    line: int
    op: Op
    mask: int
    field: str
    """``region.field`` touched, for reports."""


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """A precomputed scan: line indices and masks in first-touch order, cut into chunks.

    ``chunk_starts[k]`` is the first access of chunk ``k``; chunk ``k`` covers procArray entries
    ``k * entries_per_chunk`` onwards. ``entries`` is the number of entries scanned (for the
    instruction cost); ``pattern`` is the memory-level-parallelism class (``stream`` or
    ``indirect``).
    """

    lines: IntArray
    masks: IntArray
    chunk_starts: tuple[int, ...]
    entries_per_chunk: int
    entries: int
    pattern: str

    def chunks(self) -> Iterable[tuple[IntArray, IntArray, int]]:
        """``(lines, masks, entries)`` per chunk."""
        bounds = (*self.chunk_starts, len(self.lines))
        remaining = self.entries
        for k in range(len(self.chunk_starts)):
            entries = min(self.entries_per_chunk, remaining)
            remaining -= entries
            yield self.lines[bounds[k]:bounds[k + 1]], self.masks[bounds[k]:bounds[k + 1]], entries


class TrackedMemory:
    """Registry of the tracked lines of one simulation."""

    def __init__(self, shmem: PgSharedMemory) -> None:
        self.shmem = shmem
        self._index: dict[int, int] = {}
        self._numbers: list[int] = []
        self.machine: Machine | None = None

    @property
    def n_lines(self) -> int:
        """Lines registered so far."""
        return len(self._numbers)

    def line_index(self, line_number: int) -> int:
        """Machine index of a line (registering it if new)."""
        index = self._index.get(line_number)
        if index is None:
            if self.machine is not None:
                raise RuntimeError("the machine is built: no new lines can be tracked")
            index = len(self._numbers)
            self._index[line_number] = index
            self._numbers.append(line_number)
        return index

    def access(self, region: Region, index: int, field: str | None, op: Op) -> list[Access]:
        """The accesses of one field of one element (two if it straddles lines)."""
        label = f"{region.name}.{field}" if field else region.name
        return [Access(self.line_index(line), op, mask, label)
                for line, mask in region.field_span(index, field)]

    def scan(self, parts: Iterable[tuple[Region, Iterable[int], Iterable[str] | None]],
             entries: int, entries_per_chunk: int, pattern: str) -> ScanPlan:
        """A scan over several per-entry part lists, interleaved entry by entry.

        ``parts`` gives, for the scan's entries in order, which element of which region and which
        fields each entry reads (e.g. ``pgprocnos[i]`` then ``PGXACT[pgprocnos[i]]``); the
        element sequences must all have ``entries`` elements. Every line appears once, at its
        first touch, with the union of the bytes read.
        """
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
        signed = [m - (1 << 64) if m >= 1 << 63 else m for m in masks]
        return ScanPlan(lines, np.asarray(signed, dtype=np.int64), tuple(chunk_starts),
                        entries_per_chunk, entries, pattern)

    def build_machine(self, config: MachineConfig, backend: Backend = "compiled") -> Machine:
        """The machine over every registered line (after this no line can be added)."""
        if not self._numbers:
            raise RuntimeError("no line was registered")
        addresses = [n * LINE_BYTES for n in self._numbers]
        labels = [self.shmem.label_for_line(n) for n in self._numbers]
        self.machine = Machine(config, addresses, labels=labels, backend=backend)
        return self.machine
