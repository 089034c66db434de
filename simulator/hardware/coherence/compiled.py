"""Python side of the compiled kernel: allocation of the packed state and named views.

:class:`CompiledCoherence` has the same public API as
:class:`~simulator.hardware.coherence.reference.ReferenceCoherence` and gives the same results; it
allocates the flat arrays that :mod:`simulator.hardware.coherence.kernel` works on and exposes every
segment as a named NumPy view (``state.view("owner")``, reshaped where it is per core).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from simulator.config.machine import MachineConfig
from simulator.hardware.codes import (
    CALENDAR_SLOTS,
    EMPTY,
    INCLUSION_CODES,
    JUNK,
    N_CLASSES,
    PROTOCOL_CODES,
)
from simulator.hardware.coherence import kernel
from simulator.hardware.latency import LatencyTables
from simulator.hardware.topology import Topology
from simulator.types import IntArray, SequenceFunction


class CompiledCoherence:
    """Coherence state in packed arrays, driven by the Numba kernel.

    Args:
        machine: the machine.
        line_keys: per tracked line, its global line number (byte address // 64).
        line_homes: per tracked line, its home node.
        topology: the machine's topology, and ``tables`` its latency tables (built from
            ``machine`` if not given).
    """

    def __init__(
        self,
        machine: MachineConfig,
        line_keys: Sequence[int] | IntArray,
        line_homes: Sequence[int] | IntArray,
        topology: Topology | None = None,
        tables: LatencyTables | None = None,
    ) -> None:
        self.machine = machine
        self.topology = topo = topology if topology is not None else Topology.from_config(machine)
        if tables is None:
            tables = LatencyTables.build(machine, topo)
        self.tables = tables
        keys = np.asarray(line_keys, dtype=np.int64)
        homes = np.asarray(line_homes, dtype=np.int64)
        if keys.shape != homes.shape or keys.ndim != 1:
            raise ValueError("line_keys and line_homes must be 1-D and of the same length")
        n_lines, n_cores, n_domains = len(keys), topo.n_cores, topo.n_domains
        n_homes = len(machine.memory.home_nodes)
        n_tenures = topo.n_threads if tables.home_rule else 0
        self.n_lines = n_lines
        s1, w1 = machine.l1d.sets, machine.l1d.ways
        s2, w2 = machine.l2.sets, machine.l2.ways
        s3, w3 = machine.l3.sets, machine.l3.ways
        sizes = {
            "owner": n_lines, "ostate": n_lines, "last_writer": n_lines, "home": n_lines,
            "holders": n_cores * n_lines, "n_holders": n_lines, "l1_way": n_cores * n_lines,
            "l2_way": n_cores * n_lines, "l3_way": n_domains * n_lines,
            "l1_tag": n_cores * s1 * w1, "l2_tag": n_cores * s2 * w2,
            "l3_tag": n_domains * s3 * w3, "l3_dirty": n_domains * s3 * w3,
            "private_ptr": n_cores, "l3_ptr": n_domains,
            "set1": n_lines, "set2": n_lines, "set3": n_lines, "core_domain": n_cores,
            "cal_count": n_lines, "l2_fill_victim": s2 * w2,
            "cal_who": n_lines * CALENDAR_SLOTS if tables.home_rule else 0,
            "tenure_owned": n_tenures * n_lines, "tenure_end": n_tenures * n_lines,
            "tenure_start": n_tenures * n_lines, "core_lock_end": n_cores,
            "debt_ns": topo.n_threads,
            "keys": n_lines, "dirty_mask": n_lines, "read_mask": n_lines,
            "write_mask": n_lines, "line_ops": 3 * n_lines, "line_class": N_CLASSES * n_lines,
            "line_invalidations": n_lines, "line_false_hitm": n_lines,
            "l1_stamp": n_cores * s1 * w1, "l2_stamp": n_cores * s2 * w2,
            "l3_stamp": n_domains * s3 * w3, "counters": 2,
            "cal_start": n_lines * CALENDAR_SLOTS,
            "cal_end": n_lines * CALENDAR_SLOTS,
            "line_wait_ns": n_lines, "scalars": kernel.N_SCALARS,
            "transfer_ns": tables.transfer_ns.size, "dram_ns": tables.dram_ns.size,
            "transfer_class": tables.transfer_class.size, "dram_class": tables.dram_class.size,
            "service_ns": tables.service_ns.size,
        }
        header = np.zeros(kernel.HEADER_SIZE, dtype=np.int64)
        header[: kernel.P_INCLUSION + 1] = (
            n_lines, n_cores, n_domains, n_homes, machine.topology.threads_per_core,
            machine.topology.cores_per_domain, machine.topology.domains_per_socket,
            s1, w1, s2, w2, s3, w3, PROTOCOL_CODES[machine.protocol.value],
            INCLUSION_CODES[machine.l3_inclusion.value],
        )
        header[kernel.P_HOME_RULE] = int(tables.home_rule)
        self._slices: dict[str, tuple[str, int, int]] = {}
        groups = (
            ("i32", kernel.I32_SEGMENTS, kernel.I32_BASE, 0),
            ("i64", kernel.I64_SEGMENTS, kernel.I64_BASE, 0),
            ("f64", kernel.F64_SEGMENTS, kernel.F64_BASE, 0),
            ("p", kernel.P_SEGMENTS, kernel.PSEG_BASE, kernel.HEADER_SIZE),
        )
        totals: dict[str, int] = {}
        for group, names, base, start in groups:
            offset = start
            for index, name in enumerate(names):
                header[base + index] = offset
                self._slices[name] = (group, offset, offset + sizes[name])
                offset += sizes[name]
            header[base + len(names)] = offset
            totals[group] = offset
        self.p = np.zeros(totals["p"], dtype=np.int64)
        self.p[: kernel.HEADER_SIZE] = header
        self.i32 = np.zeros(totals["i32"], dtype=np.int32)
        self.i64 = np.zeros(totals["i64"], dtype=np.int64)
        self.f64 = np.zeros(totals["f64"], dtype=np.float64)
        self._initialise(keys, homes)
        self._l2_way_flat = self._flat("l2_way")
        self._sequence: SequenceFunction | None = None

    def _initialise(self, keys: IntArray, homes: IntArray) -> None:
        for name in ("owner", "last_writer", "l1_way", "l2_way", "l3_way", "l1_tag", "l2_tag",
                     "l3_tag", "l2_fill_victim", "cal_who"):
            self._flat(name)[:] = -1
        for level, cache in (("l1", self.machine.l1d), ("l2", self.machine.l2),
                             ("l3", self.machine.l3)):
            if cache.ways > kernel.MAX_WAYS:
                raise ValueError(f"{level}: at most {kernel.MAX_WAYS} ways are supported")
            stamps = self._flat(f"{level}_stamp").reshape(-1, cache.ways)
            stamps[:] = np.arange(cache.ways)  # empty ways: the clock part of the stamp is 0
        assert EMPTY == -1
        self._flat("keys")[:] = keys
        self._flat("set1")[:] = keys % self.machine.l1d.sets
        self._flat("set2")[:] = keys % self.machine.l2.sets
        self._flat("set3")[:] = keys % self.machine.l3.sets
        self._flat("home")[:] = homes
        self._flat("core_domain")[:] = (
            np.arange(self.topology.n_cores) // self.machine.topology.cores_per_domain)
        tables = self.tables
        self._flat("scalars")[:] = (
            tables.l1_ns, tables.l2_ns, tables.l3_ns, tables.smt_sibling_ns,
            tables.atomic_local_ns, tables.upgrade_ns, tables.per_extra_sharer_ns,
            tables.owner_window, tables.transfer_overlap, 1.0 - tables.transfer_overlap,
            float(tables.local_batch),
        )
        self._flat("service_ns")[:] = tables.service_ns.ravel()
        self._flat("transfer_ns")[:] = tables.transfer_ns.ravel()
        self._flat("dram_ns")[:] = tables.dram_ns.ravel()
        self._flat("transfer_class")[:] = tables.transfer_class.ravel()
        self._flat("dram_class")[:] = tables.dram_class.ravel()

    def _flat(self, name: str) -> npt.NDArray[Any]:
        group, start, stop = self._slices[name]
        array: npt.NDArray[Any] = getattr(self, group)
        return array[start:stop]

    def view(self, name: str) -> npt.NDArray[Any]:
        """A named segment of the state, shaped ``[cores or domains, lines]`` where per core.

        ``line_ops`` and ``line_class`` are shaped ``[lines, operations or classes]`` (views of
        the kernel's storage, which keeps one row per operation or class).
        """
        flat = self._flat(name)
        topo = self.topology
        per_core = {"holders", "l1_way", "l2_way"}
        if name in per_core:
            return flat.reshape(topo.n_cores, self.n_lines)
        if name in ("l3_way",):
            return flat.reshape(topo.n_domains, self.n_lines)
        if name == "line_ops":
            return flat.reshape(3, self.n_lines).T
        if name == "line_class":
            return flat.reshape(N_CLASSES, self.n_lines).T
        return flat

    # ------------------------------------------------------------------ operations

    def access(
        self, thread: int, line: int, op: int, mask: int, now: float, out: npt.NDArray[np.float64]
    ) -> tuple[int, float, float]:
        """Perform one memory operation; see the reference for the semantics."""
        klass, latency, wait = kernel.access(
            self.p, self.i32, self.i64, self.f64, thread, line, op, _signed(mask), now, out
        )
        return int(klass), float(latency), float(wait)

    def sequence(
        self,
        thread: int,
        lines: npt.NDArray[np.int64],
        ops: npt.NDArray[np.int64],
        masks: npt.NDArray[np.int64],
        now: float,
        out: npt.NDArray[np.float64],
    ) -> tuple[float, float]:
        """Dependent operations back to back; returns ``(total cost, total wait)``."""
        total, waited = kernel.sequence(self.p, self.i32, self.i64, self.f64, thread, lines, ops,
                                        masks, now, out)
        return float(total), float(waited)

    def sequence_function(self) -> SequenceFunction:
        """:meth:`sequence` as the kernel itself with the state bound (no Python call between)."""
        if self._sequence is None:
            self._sequence = functools.partial(kernel.sequence, self.p, self.i32, self.i64,
                                               self.f64)
        return self._sequence

    def scan(
        self,
        thread: int,
        lines: npt.NDArray[np.int64],
        masks: npt.NDArray[np.int64],
        op: int,
        mlp: float,
        now: float,
        out: npt.NDArray[np.float64],
    ) -> float:
        """Access many independent lines; returns the stall time."""
        return float(
            kernel.scan(self.p, self.i32, self.i64, self.f64, thread, lines, masks, op, mlp,
                        now, out)
        )

    def holds(self, core: int, line: int) -> bool:
        """Whether ``core``'s private caches hold a valid copy of ``line`` (L1 ⊆ L2)."""
        return bool(self._l2_way_flat[core * self.n_lines + line] >= 0)

    def pollute(self, core: int, private_lines: int, l3_lines: int) -> None:
        """Pass untracked lines through a core's private caches and its domain's L3."""
        kernel.pollute(self.p, self.i32, self.i64, self.f64, core, private_lines, l3_lines)

    # ------------------------------------------------------------------ inspection

    def canonical_state(self) -> dict[str, Any]:
        """The full state in the implementation-independent form of the reference."""
        topo = self.topology
        n_lines = self.n_lines
        holders = self.view("holders")

        def sets_of(level: str, count: int, with_dirty: bool) -> list[list[list[Any]]]:
            cache = self.machine.l1d if level == "l1" else (
                self.machine.l2 if level == "l2" else self.machine.l3)
            tags = self._flat(f"{level}_tag").reshape(count, cache.sets, cache.ways)
            stamps = self._flat(f"{level}_stamp").reshape(count, cache.sets, cache.ways)
            dirty = (self._flat("l3_dirty").reshape(count, cache.sets, cache.ways)
                     if with_dirty else None)
            result = []
            for unit in range(count):
                rows: list[list[Any]] = []
                for index in range(cache.sets):
                    ways = [w for w in range(cache.ways) if tags[unit, index, w] != EMPTY]
                    ways.sort(key=stamps[unit, index].__getitem__)
                    if dirty is None:
                        rows.append([max(int(tags[unit, index, w]), JUNK) for w in ways])
                    else:
                        rows.append([
                            (max(int(tags[unit, index, w]), JUNK),
                             bool(dirty[unit, index, w]) if tags[unit, index, w] >= 0 else False)
                            for w in ways
                        ])
                result.append(rows)
            return result

        return {
            "owner": self.view("owner").tolist(),
            "ostate": self.view("ostate").tolist(),
            "holders": [[c for c in range(topo.n_cores) if holders[c, line]]
                        for line in range(n_lines)],
            "last_writer": self.view("last_writer").tolist(),
            "dirty_mask": _unsigned(self.view("dirty_mask")),
            "calendar": self._calendars(),
            "core_lock_end": self._flat("core_lock_end").tolist(),
            "debt_ns": self._flat("debt_ns").tolist(),
            "tenure_start": self._flat("tenure_start").reshape(-1, n_lines).tolist(),
            "tenure_end": self._flat("tenure_end").reshape(-1, n_lines).tolist(),
            "tenure_owned": [[bool(x) for x in row]
                             for row in self._flat("tenure_owned").reshape(-1, n_lines)],
            "l1": sets_of("l1", topo.n_cores, False),
            "l2": sets_of("l2", topo.n_cores, False),
            "l3": sets_of("l3", topo.n_domains, True),
            "line_ops": self.view("line_ops").tolist(),
            "line_class": self.view("line_class").tolist(),
            "line_invalidations": self.view("line_invalidations").tolist(),
            "line_false_hitm": self.view("line_false_hitm").tolist(),
            "line_wait_ns": self.view("line_wait_ns").tolist(),
            **self.line_counters(),
        }

    def _calendars(self) -> list[list[tuple[float, float, int]]]:
        slots = CALENDAR_SLOTS
        counts = self.view("cal_count")
        starts = self._flat("cal_start").reshape(self.n_lines, slots)
        ends = self._flat("cal_end").reshape(self.n_lines, slots)
        who = (self._flat("cal_who").reshape(self.n_lines, slots) if self.tables.home_rule
               else np.full((self.n_lines, slots), -1))
        return [[(float(starts[line, k]), float(ends[line, k]), int(who[line, k]))
                 for k in range(counts[line])] for line in range(self.n_lines)]

    def line_counters(self) -> dict[str, Any]:
        """The per-line counters of :meth:`canonical_state` alone (cheap: no cache contents)."""
        return {
            "line_ops": self.view("line_ops").tolist(),
            "line_class": self.view("line_class").tolist(),
            "line_invalidations": self.view("line_invalidations").tolist(),
            "line_false_hitm": self.view("line_false_hitm").tolist(),
            "line_wait_ns": self.view("line_wait_ns").tolist(),
            "read_mask": _unsigned(self.view("read_mask")),
            "write_mask": _unsigned(self.view("write_mask")),
        }

    def reset_line_counters(self) -> None:
        """Zero every per-line counter and byte mask (the coherence state is unchanged)."""
        for name in ("line_ops", "line_class", "line_invalidations", "line_false_hitm",
                     "line_wait_ns", "read_mask", "write_mask"):
            self._flat(name)[:] = 0


def _signed(mask: int) -> int:
    """A 64-bit byte mask as the kernel's signed int64."""
    mask &= (1 << 64) - 1
    return mask - (1 << 64) if mask >= 1 << 63 else mask


def _unsigned(values: npt.NDArray[np.int64]) -> list[int]:
    return [int(x) for x in values.view(np.uint64)]
