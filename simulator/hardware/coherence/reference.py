"""Plain-Python reference implementation of the coherence protocol and cache hierarchy.

This is the readable statement of the model and the oracle that the compiled kernel
(:mod:`simulator.hardware.coherence.kernel`) is tested against: both must produce identical states,
counts and costs for any access sequence. It favours clarity: cache sets are kept in LRU order
(first = least recently used), an L1 set as a ``deque`` bounded by the ways (appending to a full
set drops its least recently used line), an L2 or L3 set as an ``OrderedDict``; sharer sets are
Python int bitmasks.

The model, per line:

* A directory entry: the owner core and its state (M, E, O or F; no owner means only S copies or
  none), the set of cores holding a valid copy, the last writing hardware thread, the bytes dirtied
  since the owner took the line (``dirty_mask``, for false-sharing attribution) and the line's
  *calendar*: the reserved intervals of its recent ownership transfers (a hot line is a queue;
  see :meth:`ReferenceCoherence._queue`).
* Per core a private L1d and L2 shared by its SMT threads (L1 ⊆ L2; an L1 hit does not refresh
  the L2's LRU order, as in hardware); per L3 domain an L3 with an inclusion policy.

A load that misses is served, in order of preference, by the owner's private cache (HIT or HITM by
distance), the own domain's L3, another domain's L3 (nearest first) or DRAM (near or far from the
line's home). A store or RMW needs the only copy: held copies are upgraded (invalidating every
other copy), missing ones are fetched for ownership. Ownership transfers (stores/RMWs that must
invalidate or fetch from another core, and loads of a dirty line) are serialized per line.

Left out: replacement policies other than LRU, prefetchers, write-combining, the store buffer
(stores pay their ownership latency), interconnect bandwidth and per-request variation.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from simulator.config.machine import CoherenceProtocol, L3Inclusion, MachineConfig
from simulator.hardware.codes import (
    CALENDAR_SLOTS,
    JUNK,
    N_CLASSES,
    AccessClass,
    LineState,
    Op,
    Out,
)
from simulator.hardware.latency import CLEAN, DIRTY, LatencyTables
from simulator.hardware.topology import Topology
from simulator.types import SequenceFunction

# Plain ints for the hot paths (IntEnum members are slower to compare and to index with).
_M, _E, _O, _F = int(LineState.M), int(LineState.E), int(LineState.O), int(LineState.F)
_DIRTY_STATES = (_M, _O)
_LOAD, _RMW = int(Op.LOAD), int(Op.RMW)
_L1_HIT, _L2_HIT = int(AccessClass.L1_HIT), int(AccessClass.L2_HIT)
_L3_HIT = int(AccessClass.L3_HIT)
_SMT_SIBLING, _UPGRADE = int(AccessClass.SMT_SIBLING), int(AccessClass.UPGRADE)
_LATENCY, _WAIT, _STALL = int(Out.LATENCY_NS), int(Out.WAIT_NS), int(Out.STALL_NS)
_INVALIDATIONS = int(Out.INVALIDATIONS)
_READ_MODIFIED, _READ_SHARED, _OWNERSHIP = 0, 1, 2
_FOREVER = float("inf")
"""Rows of the ``home`` rule's service-time table (``SERVICE_KINDS``)."""
_FALSE_HITM, _TRUE_HITM = int(Out.FALSE_SHARING_HITM), int(Out.TRUE_SHARING_HITM)

CacheSet = OrderedDict[int, bool]
"""One L2 or L3 set: line id → dirty flag (only meaningful in L3), in LRU order."""

L1Set = deque[int]
"""One L1 set: line ids in LRU order, at most ``ways`` of them (``maxlen``)."""


class ReferenceCoherence:
    """Coherence state of one machine over a fixed set of tracked lines.

    Args:
        machine: the machine.
        line_keys: per tracked line, its global line number (byte address // 64); it selects the
            cache set.
        line_homes: per tracked line, its home node.
        topology: the machine's topology, and ``tables`` its latency tables (built from
            ``machine`` if not given).
    """

    def __init__(
        self,
        machine: MachineConfig,
        line_keys: Sequence[int] | npt.NDArray[np.int64],
        line_homes: Sequence[int] | npt.NDArray[np.int64],
        topology: Topology | None = None,
        tables: LatencyTables | None = None,
    ) -> None:
        self.machine = machine
        self.topology = topo = topology if topology is not None else Topology.from_config(machine)
        self.tables = tables if tables is not None else LatencyTables.build(machine, topo)
        self.threads_per_core = machine.topology.threads_per_core
        self.cores_per_domain = machine.topology.cores_per_domain
        self.domains_per_socket = machine.topology.domains_per_socket
        self.protocol = machine.protocol
        self.inclusive = machine.l3_inclusion == L3Inclusion.INCLUSIVE
        self.victim_l3 = machine.l3_inclusion == L3Inclusion.VICTIM
        # Plain floats and nested lists: NumPy scalar indexing would dominate the reference's cost.
        tables = self.tables
        self._l1_ns, self._l2_ns, self._l3_ns = tables.l1_ns, tables.l2_ns, tables.l3_ns
        self._smt_sibling_ns, self._atomic_local_ns = tables.smt_sibling_ns, tables.atomic_local_ns
        self._upgrade_ns = tables.upgrade_ns
        self._per_extra_sharer_ns = tables.per_extra_sharer_ns
        self._home_rule = tables.home_rule
        self._owner_window = tables.owner_window
        self._overlap = tables.transfer_overlap
        self._serial = 1.0 - tables.transfer_overlap
        self._local_batch = tables.local_batch
        self._moesi = self.protocol == CoherenceProtocol.MOESI
        self._service_ns: list[list[list[float]]] = tables.service_ns.tolist()
        self._transfer_class: list[list[list[int]]] = tables.transfer_class.tolist()
        self._transfer_ns: list[list[list[list[float]]]] = tables.transfer_ns.tolist()
        self._dram_class: list[list[int]] = tables.dram_class.tolist()
        self._dram_ns: list[list[float]] = tables.dram_ns.tolist()
        self._nearest_domains = [self._domains_by_distance(d) for d in range(topo.n_domains)]
        """Per L3 domain, the other domains nearest first (where a miss looks for a copy)."""
        self.keys = [int(k) for k in line_keys]
        self.homes = [int(h) for h in line_homes]
        n_lines = len(self.keys)
        if len(self.homes) != n_lines:
            raise ValueError("line_keys and line_homes must have the same length")
        self.n_lines = n_lines
        self.l1_geom = (machine.l1d.sets, machine.l1d.ways)
        self.l2_geom = (machine.l2.sets, machine.l2.ways)
        self.l3_geom = (machine.l3.sets, machine.l3.ways)
        # Per line, its set index in each cache level (key modulo the number of sets).
        self.set1 = [k % self.l1_geom[0] for k in self.keys]
        self.set2 = [k % self.l2_geom[0] for k in self.keys]
        self.set3 = [k % self.l3_geom[0] for k in self.keys]
        # Directory.
        self.owner = [-1] * n_lines
        self.ostate = [0] * n_lines
        self.holders = [0] * n_lines
        self.last_writer = [-1] * n_lines
        self.dirty_mask = [0] * n_lines
        n_tenures = topo.n_threads if self._home_rule else 0
        self.tenure_start = [[0.0] * n_lines for _ in range(n_tenures)]
        """``home`` rule: per thread and line, when its last transfer through the queue started."""
        self.tenure_end = [[0.0] * n_lines for _ in range(n_tenures)]
        """``home`` rule: per thread and line, when its last tenure through the queue ends
        (:data:`_FOREVER` until a transfer to another core is booked after it; 0 when it never
        had one or lost the line otherwise)."""
        self.tenure_owned = [[False] * n_lines for _ in range(n_tenures)]
        """``home`` rule: per thread and line, whether that tenure was an ownership transfer."""
        self.core_lock_end = [0.0] * topo.n_cores
        """``home`` rule: per core, when its SMT siblings' last turn at a locked operation ends."""
        self.debt_ns = [0.0] * topo.n_threads
        """Local batching: per hardware thread, the delay its booked transfers took when requests
        of another socket went ahead of them, paid before its next operation (see
        :meth:`_queue_at`)."""
        self.calendar: list[list[tuple[float, float, int]]] = [[] for _ in range(n_lines)]
        """Per line, reserved ``(start, end, who)`` intervals sorted by start (at most
        :data:`CALENDAR_SLOTS`); ``who`` is (``home`` rule) ``2 * thread + 1`` for an
        ownership transfer to ``thread``, ``2 * thread`` for a read, -1 for merged reservations."""
        # Caches.
        self.l1: list[list[L1Set]] = [
            [deque(maxlen=self.l1_geom[1]) for _ in range(self.l1_geom[0])]
            for _ in range(topo.n_cores)
        ]
        self.l2: list[list[CacheSet]] = [
            [OrderedDict() for _ in range(self.l2_geom[0])] for _ in range(topo.n_cores)
        ]
        self.l3: list[list[CacheSet]] = [
            [OrderedDict() for _ in range(self.l3_geom[0])] for _ in range(topo.n_domains)
        ]
        self._sets_by_core: list[tuple[list[L1Set], list[CacheSet]] | None] = (
            [None] * topo.n_cores)
        self.private_ptr = [0] * topo.n_cores
        self.l3_ptr = [0] * topo.n_domains
        self._next_junk = JUNK
        # Statistics per line. Operation and class counts are kept one list per operation or
        # class (``line_class[klass][line]``), so that a scan updates one list per kind of hit.
        self.line_ops = [[0] * n_lines for _ in range(3)]
        self.line_class = [[0] * n_lines for _ in range(N_CLASSES)]
        self.line_invalidations = [0] * n_lines
        self.line_false_hitm = [0] * n_lines
        self.line_wait_ns = [0.0] * n_lines
        self.read_mask = [0] * n_lines
        self.write_mask = [0] * n_lines

    # ------------------------------------------------------------------ public operations

    def access(
        self, thread: int, line: int, op: int, mask: int, now: float, out: Any
    ) -> tuple[int, float, float]:
        """Perform one memory operation and return ``(class, latency_ns, wait_ns)``.

        ``mask`` is the set of bytes of the line touched (bit i = byte i). ``out`` is a vector of
        ``OUT_SIZE`` counters that the access adds to; its stall slot gets ``latency + wait``.
        """
        core = thread // self.threads_per_core
        debt = self.debt_ns[thread]
        if debt > 0.0:  # local batching: a delay still owed (see _queue_at)
            self.debt_ns[thread] = 0.0
            klass, latency, wait = self._access(thread, core, line, op, mask, now + debt, out)
            wait += debt
        else:
            klass, latency, wait = self._access(thread, core, line, op, mask, now, out)
        out[klass] += 1
        out[_LATENCY] += latency
        out[_WAIT] += wait
        out[_STALL] += latency + wait
        return klass, latency, wait

    def sequence(
        self,
        thread: int,
        lines: Sequence[int] | npt.NDArray[np.int64],
        ops: Sequence[int] | npt.NDArray[np.int64],
        masks: Sequence[int] | npt.NDArray[np.int64],
        now: float,
        out: Any,
    ) -> tuple[float, float]:
        """Operations issued back to back: each starts when the previous one completes.

        Exactly :meth:`access` on each, at ``now`` plus the costs so far; returns the total
        cost (latencies and waits) and the total wait.
        """
        total = 0.0
        waited = 0.0
        for line, op, mask in zip(_as_int_list(lines), _as_int_list(ops), _as_masks(masks),
                                  strict=True):
            _, latency, wait = self.access(thread, line, op, mask, now + total, out)
            total += latency + wait
            waited += wait
        return total, waited

    def sequence_function(self) -> SequenceFunction:
        """:meth:`sequence` itself (the reference has nothing to bind)."""
        return self.sequence

    def scan(
        self,
        thread: int,
        lines: Sequence[int] | npt.NDArray[np.int64],
        masks: Sequence[int] | npt.NDArray[np.int64] | npt.NDArray[np.uint64],
        op: int,
        mlp: float,
        now: float,
        out: Any,
    ) -> float:
        """Access many independent lines and return the stall time.

        Misses overlap: every access beyond an L1 hit contributes ``latency / mlp``; queueing
        behind a busy line does not overlap. The stall is also added to ``out``.

        Loads that hit the core's L1 or L2 are handled here directly (the same steps as
        :meth:`_load`). The latency and wait sums are kept in locals, which start from ``out``'s
        values and receive the same additions in the same order (a hit's zero wait is not added),
        and are stored into ``out`` once. L1 hits and misses are counted in ints, and the L1 and
        L2 hit counts added to ``out`` once (counts are whole numbers, so this is exact); every
        other access is an L2 hit.
        """
        lines = _as_int_list(lines)
        masks = _as_masks(masks)
        core = thread // self.threads_per_core
        debt = self.debt_ns[thread]
        if debt > 0.0:  # local batching: a delay still owed, paid first (see _queue_at)
            self.debt_ns[thread] = 0.0
            now += debt
            out[_WAIT] += debt
            out[_STALL] += debt
        stall = 0.0
        if op != _LOAD:
            for line, mask in zip(lines, masks, strict=False):
                klass, latency, wait = self._access(thread, core, line, op, mask, now, out)
                out[klass] += 1
                out[_LATENCY] += latency
                out[_WAIT] += wait
                stall += wait
                if klass != _L1_HIT:
                    stall += latency / mlp
            out[_STALL] += stall
            return stall + debt if debt > 0.0 else stall
        l1_sets, l2_sets = self._private_sets(core)
        l1_ns, l2_ns = self._l1_ns, self._l2_ns
        l2_stall = l2_ns / mlp
        read_mask, loads = self.read_mask, self.line_ops[_LOAD]
        l1_hits, l2_hits = self.line_class[_L1_HIT], self.line_class[_L2_HIT]
        l1_count = miss_count = 0
        latency_sum, wait_sum = float(out[_LATENCY]), float(out[_WAIT])
        for line, mask in zip(lines, masks, strict=False):
            l1set = l1_sets[line]
            if line in l1set:
                l1set.remove(line)
                l1set.append(line)
                l1_hits[line] += 1
                l1_count += 1
                latency_sum += l1_ns
            else:
                l2set = l2_sets[line]
                if line in l2set:
                    l2set.move_to_end(line)
                    l1set.append(line)  # a full set drops its LRU line, which stays in the L2
                    l2_hits[line] += 1
                    latency_sum += l2_ns
                    stall += l2_stall
                else:
                    klass, latency, wait = self._load_miss(thread, core, line, mask, now, out)
                    self.line_class[klass][line] += 1
                    self.line_wait_ns[line] += wait
                    out[klass] += 1  # never L2_HIT (L1_HIT: the home rule's owner window)
                    miss_count += 1
                    latency_sum += latency
                    wait_sum += wait
                    stall += wait
                    stall += latency / mlp
            read_mask[line] |= mask
            loads[line] += 1
        out[_L1_HIT] += l1_count
        out[_L2_HIT] += len(lines) - l1_count - miss_count
        out[_LATENCY], out[_WAIT] = latency_sum, wait_sum
        out[_STALL] += stall
        return stall + debt if debt > 0.0 else stall

    def holds(self, core: int, line: int) -> bool:
        """Whether ``core``'s private caches hold a valid copy of ``line`` (L1 ⊆ L2)."""
        return line in self.l2[core][self.set2[line]]

    def pollute(self, core: int, private_lines: int, l3_lines: int) -> None:
        """Fill a core's private caches and its domain's L3 with untracked lines.

        Models the memory footprint of other work: ``private_lines`` distinct lines pass through
        the core's L2 and L1 (consecutive sets from a rotating position) and ``l3_lines`` through
        the L3, evicting tracked lines in LRU order.
        """
        start = self.private_ptr[core]
        sets2, _ = self.l2_geom
        sets1, _ = self.l1_geom
        for j in range(private_lines):
            self._insert_l2(core, (start + j) % sets2, self._junk())
            self._insert_l1(core, (start + j) % sets1, self._junk())
        self.private_ptr[core] = (start + private_lines) % (sets1 * sets2)
        domain = core // self.cores_per_domain
        start3 = self.l3_ptr[domain]
        sets3, _ = self.l3_geom
        for j in range(l3_lines):
            self._insert_l3(domain, (start3 + j) % sets3, self._junk(), False)
        self.l3_ptr[domain] = (start3 + l3_lines) % sets3

    def _private_sets(self, core: int) -> tuple[list[L1Set], list[CacheSet]]:
        """Per tracked line, its L1 set and its L2 set in ``core`` (built on first use)."""
        sets = self._sets_by_core[core]
        if sets is None:
            l1, l2 = self.l1[core], self.l2[core]
            sets = ([l1[i] for i in self.set1], [l2[i] for i in self.set2])
            self._sets_by_core[core] = sets
        return sets

    # ------------------------------------------------------------------ access paths

    def _access(
        self, thread: int, core: int, line: int, op: int, mask: int, now: float, out: Any
    ) -> tuple[int, float, float]:
        """One access and its per-line statistics; the caller counts it in ``out``."""
        if op == _LOAD:
            klass, latency, wait = self._load(thread, core, line, mask, now, out)
            self.read_mask[line] |= mask
        else:
            klass, latency, wait = self._write(thread, core, line, op, mask, now, out)
            self.write_mask[line] |= mask
            self.last_writer[line] = thread
        self.line_ops[op][line] += 1
        self.line_class[klass][line] += 1
        self.line_wait_ns[line] += wait
        return klass, latency, wait

    def _load(
        self, thread: int, core: int, line: int, mask: int, now: float, out: Any
    ) -> tuple[int, float, float]:
        l1set = self.l1[core][self.set1[line]]
        if line in l1set:
            l1set.remove(line)
            l1set.append(line)
            return _L1_HIT, self._l1_ns, 0.0
        l2set = self.l2[core][self.set2[line]]
        if line in l2set:
            l2set.move_to_end(line)
            self._insert_l1(core, self.set1[line], line)
            return _L2_HIT, self._l2_ns, 0.0
        return self._load_miss(thread, core, line, mask, now, out)

    def _load_miss(
        self, thread: int, core: int, line: int, mask: int, now: float, out: Any
    ) -> tuple[int, float, float]:
        """A load that missed the core's L1 and L2."""
        if self._home_rule and self._window_hit(thread, line, now, False):
            return _L1_HIT, self._l1_ns, 0.0
        domain = core // self.cores_per_domain
        owner_domain = self.owner[line] // self.cores_per_domain
        klass, latency, from_owner, dirty, from_l3 = self._supplier(core, domain, line)
        if from_l3 == domain and self.victim_l3 and self.holders[line] == 0:
            # A victim L3 hands an unshared line over to the L2 (exclusive caching).
            self.l3[domain][self.set3[line]].pop(line)
        wait = 0.0
        if self._home_rule:
            # Every read another cache serves queues at the line's home, for its service time.
            if from_owner or (from_l3 >= 0 and from_l3 != domain):
                supplier = owner_domain if from_owner else from_l3
                kind = _READ_MODIFIED if dirty else _READ_SHARED
                if self._local_batch > 1:
                    klass, latency, wait = self._batched_read(
                        thread, domain, line, now, kind, dirty, klass, latency, supplier)
                else:
                    occupancy = max(self._serial * latency,
                                    self._service_ns[kind][domain][supplier])
                    wait = self._queue(line, now + self._overlap * latency, occupancy,
                                       2 * thread)
            if from_owner:
                self._downgrade_owner(line)
            if dirty:
                self._attribute_hitm(line, mask, out)
        elif from_owner:
            self._downgrade_owner(line)
            if dirty:
                self._attribute_hitm(line, mask, out)
                wait = self._queue(line, now, latency, 2 * thread)
        elif dirty:
            self._attribute_hitm(line, mask, out)
        self._grant_shared(core, line)
        if self.inclusive and from_l3 != domain:
            self._insert_l3(domain, self.set3[line], line, False)
        self._fill_private(core, line)
        return klass, latency, wait

    def _write(
        self, thread: int, core: int, line: int, op: int, mask: int, now: float, out: Any
    ) -> tuple[int, float, float]:
        bit = 1 << core
        domain = core // self.cores_per_domain
        home = self.homes[line]
        if line in self.l2[core][self.set2[line]]:
            in_l1 = line in self.l1[core][self.set1[line]]
            self._touch_private(core, line, in_l1)
            if self.owner[line] == core and self.ostate[line] in (_M, _E):
                if self.ostate[line] == _E:
                    self.dirty_mask[line] = mask
                else:
                    self.dirty_mask[line] |= mask
                self.ostate[line] = _M
                return self._hit_cost(thread, core, line, op, in_l1, now)
            others = self.holders[line] & ~bit
            latency = self._upgrade_ns
            latency = max(latency, self._invalidation_latency(domain, others, home))
            owned_dirty = self.owner[line] == core and self.ostate[line] == _O
            wait = 0.0
            if others and self._local_batch > 1:
                _, latency, wait = self._batched_ownership(
                    thread, core, line, now, others, _UPGRADE, latency, self._upgrade_ns,
                    CLEAN, False, others)
            elif others:
                wait = self._queue_ownership(line, now, domain, others, latency, thread)
            self._invalidate_others(core, line, others, out)
            self._drop_l3_copies(domain, line)
            self.owner[line] = core
            self.ostate[line] = _M
            self.dirty_mask[line] = (self.dirty_mask[line] | mask) if owned_dirty else mask
            return _UPGRADE, latency, wait
        if self._home_rule and self._window_hit(thread, line, now, True):
            return _L1_HIT, max(self._atomic_local_ns, self._l1_ns) if op == _RMW else (
                self._l1_ns), 0.0
        klass, latency, from_owner, dirty, from_l3 = self._supplier(core, domain, line)
        if dirty:
            self._attribute_hitm(line, mask, out)
        others = self.holders[line] & ~bit
        supplier_bit = (1 << self.owner[line]) if from_owner else 0
        floor = latency
        latency = max(latency, self._invalidation_latency(domain, others & ~supplier_bit, home))
        wait = 0.0
        if others and self._local_batch > 1:
            klass, latency, wait = self._batched_ownership(
                thread, core, line, now, others, klass, latency, floor,
                DIRTY if dirty else CLEAN, from_owner or (from_l3 >= 0 and from_l3 != domain),
                others & ~supplier_bit)
        elif others:
            wait = self._queue_ownership(line, now, domain, others, latency, thread)
        self._invalidate_others(core, line, others, out)
        self._drop_l3_copies(domain, line)
        self.owner[line] = core
        self.ostate[line] = _M
        self.holders[line] = bit
        self.dirty_mask[line] = mask
        if self.inclusive and from_l3 != domain:
            self._insert_l3(domain, self.set3[line], line, False)
        self._fill_private(core, line)
        return klass, latency, wait

    def _hit_cost(
        self, thread: int, core: int, line: int, op: int, in_l1: bool, now: float
    ) -> tuple[int, float, float]:
        """An access that hits the core's own copy.

        An RMW after the SMT sibling's write waits its turn on the line: the two threads share
        the core's L1 but not the locked operation (``fifo``: in the line's queue; ``home``: at
        the core, which keeps the line).
        """
        level_class = _L1_HIT if in_l1 else _L2_HIT
        level_ns = self._l1_ns if in_l1 else self._l2_ns
        if op != _RMW:
            return level_class, level_ns, 0.0
        writer = self.last_writer[line]
        if writer >= 0 and writer != thread and writer // self.threads_per_core == core:
            if self._home_rule:
                # The line stays in the core: the siblings take turns at its L1, not at the home.
                wait = max(0.0, self.core_lock_end[core] - now)
                self.core_lock_end[core] = now + wait + self._smt_sibling_ns
                return _SMT_SIBLING, self._smt_sibling_ns, wait
            return _SMT_SIBLING, self._smt_sibling_ns, self._queue(
                line, now, self._smt_sibling_ns, 2 * thread + 1)
        return level_class, max(self._atomic_local_ns, level_ns), 0.0

    # ------------------------------------------------------------------ protocol helpers

    def _supplier(self, core: int, domain: int, line: int) -> tuple[int, float, bool, bool, int]:
        """Find who serves a miss: ``(class, latency, from_owner, dirty, l3_domain_or_-1)``."""
        home = self.homes[line]
        owner = self.owner[line]
        if owner >= 0:
            owner_domain = owner // self.cores_per_domain
            dirty = self.ostate[line] in _DIRTY_STATES
            d = DIRTY if dirty else CLEAN
            klass = self._transfer_class[d][domain][owner_domain]
            return klass, self._transfer_ns[d][domain][owner_domain][home], True, dirty, -1
        index = self.set3[line]
        if line in self.l3[domain][index]:
            self.l3[domain][index].move_to_end(line)
            return _L3_HIT, self._l3_ns, False, False, domain
        for other in self._nearest_domains[domain]:
            l3set = self.l3[other][index]
            if line in l3set:
                dirty = l3set[line]
                l3set.move_to_end(line)
                d = DIRTY if dirty else CLEAN
                klass = self._transfer_class[d][domain][other]
                return klass, self._transfer_ns[d][domain][other][home], False, dirty, other
        return self._dram_class[domain][home], self._dram_ns[domain][home], False, False, -1

    def _domains_by_distance(self, domain: int) -> list[int]:
        socket = domain // self.domains_per_socket
        n_domains = self.topology.n_domains
        per_socket = self.domains_per_socket
        same = [d for d in range(n_domains) if d != domain and d // per_socket == socket]
        other = [d for d in range(n_domains) if d // per_socket != socket]
        return same + other

    def _downgrade_owner(self, line: int) -> None:
        """The owner's state after it supplied a read."""
        state = self.ostate[line]
        if self.protocol == CoherenceProtocol.MOESI and state in (_M, _O):
            self.ostate[line] = _O
        else:
            self.owner[line] = -1
            self.ostate[line] = 0

    def _grant_shared(self, core: int, line: int) -> None:
        """The reader's state: E if alone, F (MESIF, no owner) or S if others hold it."""
        if self.holders[line] == 0:
            self.owner[line] = core
            self.ostate[line] = _E
        elif self.owner[line] < 0 and self.protocol == CoherenceProtocol.MESIF:
            self.owner[line] = core
            self.ostate[line] = _F
        self.holders[line] |= 1 << core

    def _attribute_hitm(self, line: int, mask: int, out: Any) -> None:
        if mask & self.dirty_mask[line]:
            out[_TRUE_HITM] += 1
        else:
            out[_FALSE_HITM] += 1
            self.line_false_hitm[line] += 1

    def _queue_ownership(self, line: int, now: float, domain: int, others: int,
                         latency: float, thread: int) -> float:
        """Queue an ownership transfer of ``latency`` by ``thread``; return its wait.

        Under the ``home`` rule its request reaches the home ``transfer_overlap`` of its
        latency after ``now`` (:meth:`_ownership_occupancy` says for how long it then occupies
        the line); under ``fifo`` it occupies the line for its latency from ``now``.
        """
        return self._queue(line, now + self._overlap * latency,
                           self._ownership_occupancy(domain, others, latency), 2 * thread + 1)

    def _ownership_occupancy(self, domain: int, others: int, latency: float) -> float:
        """How long an ownership transfer occupies the line.

        Its latency (``fifo``), or under the ``home`` rule the part of its latency after its
        request reached the home (all of it without ``transfer_overlap``), at least the
        ownership service time to the farthest other holder.
        """
        if not self._home_rule:
            return latency
        occupancy = self._serial * latency
        service = self._service_ns[_OWNERSHIP][domain]
        core = 0
        while others:
            if others & 1:
                occupancy = max(occupancy, service[core // self.cores_per_domain])
            others >>= 1
            core += 1
        return occupancy

    def _window_hit(self, thread: int, line: int, now: float, owned: bool) -> bool:
        """Whether ``thread`` still serves its access at ``now`` from its last tenure of the line.

        The ``home`` rule's owner window. A thread that received the line through the queue keeps
        it until the snoop of the next queued transfer reaches it: ``owner_window`` of that
        transfer's service time after it starts (:attr:`tenure_end`, set when the next transfer
        is booked). ``owned``: the access needs ownership (a store or an atomic), so the tenure
        must have been an ownership transfer. Called only for a thread whose core does not hold
        the line any more. Tenures are kept per thread: an SMT sibling's request books its own.
        """
        end = self.tenure_end[thread][line]
        return (self.tenure_start[thread][line] <= now < end != _FOREVER
                and (self.tenure_owned[thread][line] or not owned))

    def _queue(self, line: int, now: float, latency: float, who: int) -> float:
        """Serialize an ownership transfer with the line's others; return its wait.

        ``now`` is when the request reaches the line (under the ``home`` rule with
        ``transfer_overlap``, after its leg to the home: :meth:`_load_miss`,
        :meth:`_queue_ownership`); ``latency`` is how long the transfer then occupies the line;
        ``who`` is recorded with its reservation (see :attr:`calendar`). The requester's data
        arrives its own latency after it issued the request, plus the wait returned.

        A hot line is a single server, FIFO by logical time. Its recent transfers are kept as
        reserved ``(start, end)`` intervals sorted by start (at most :data:`CALENDAR_SLOTS`; when
        full, the two oldest merge into one span: exact when they are back to back, as on a
        saturated line, and otherwise the gap between them counts as busy, which only a request
        arriving out of time order inside that gap can notice; nothing booked is forgotten,
        however many requesters queue). Requests usually arrive in time order: the transfer
        then starts when every reservation ahead of it (started at or before the running start)
        ends, which is the plain FIFO queue. Because a process may run ahead of the simulation
        clock by up to a quantum (issuing several accesses before it waits for their cost), a
        request can arrive after reservations
        made for *later* times. FIFO would serve it first and push those later transfers back;
        they are already charged, so the request is charged their delays instead: its wait is
        its FIFO wait plus the shift it imposes on each later reservation it overlaps (total
        queueing time is conserved). Its own reservation takes the first free gap from its FIFO
        start (the line's occupancy is conserved too). In time order this is exactly FIFO.
        """
        self._make_room(line)
        calendar = self.calendar[line]
        start = now
        ahead = 0
        while ahead < len(calendar) and calendar[ahead][0] <= start:
            start = max(start, calendar[ahead][1])
            ahead += 1
        wait = start - now
        shifted_end = start + latency
        for booked_start, booked_end, _ in calendar[ahead:]:
            if booked_start >= shifted_end:
                break
            wait += shifted_end - booked_start
            shifted_end = booked_end + (shifted_end - booked_start)
        position = len(calendar)
        for index in range(ahead, len(calendar)):
            booked_start, booked_end, _ = calendar[index]
            if booked_start >= start + latency:
                position = index
                break
            start = max(start, booked_end)
        calendar.insert(position, (start, start + latency, who if self._home_rule else -1))
        if self._home_rule:
            self._book_tenure(line, calendar, position, who)
        return wait

    def _book_tenure(self, line: int, calendar: list[tuple[float, float, int]], position: int,
                     who: int) -> None:
        """Note the tenure of the new reservation's thread and end its predecessor's."""
        thread = who >> 1
        if position > 0:
            before = calendar[position - 1][2]
            if before >= 0 and before >> 1 != thread:
                start, end, _ = calendar[position]
                self.tenure_end[before >> 1][line] = start + self._owner_window * (end - start)
        self.tenure_start[thread][line] = calendar[position][0]
        self.tenure_end[thread][line] = _FOREVER
        self.tenure_owned[thread][line] = bool(who & 1)

    def _make_room(self, line: int) -> None:
        """A full calendar merges its two oldest reservations into one span (see :meth:`_queue`)."""
        calendar = self.calendar[line]
        if len(calendar) == CALENDAR_SLOTS:
            calendar[0:2] = [(calendar[0][0], max(calendar[0][1], calendar[1][1]), -1)]

    # ------------------------------------------------------------------ local batching

    def _socket_of(self, who: int) -> int:
        """The socket of a reservation's requester (``who``: see :attr:`calendar`)."""
        return (who >> 1) // self.threads_per_core // self.cores_per_domain \
            // self.domains_per_socket

    def _domain_of(self, who: int) -> int:
        """The L3 domain of a reservation's requester."""
        return (who >> 1) // self.threads_per_core // self.cores_per_domain

    def _arbitrate(self, thread: int, line: int, arrival: float) -> tuple[int, int, int]:
        """Local batching: where the home serves a request and which copies it then finds.

        ``line_service.local_batch`` N > 1. The home serves the requests of one socket in a
        row: a request of ``thread`` that reaches the line's home at ``arrival`` behind
        requests of other sockets that have not started before it arrives goes ahead of them,
        right after the last reservation of its own socket, unless the home would then have
        served more than N transfers to that socket in a row (so a waiting request of another
        socket is passed by at most N - 1 transfers of each run). A tie goes to the request of
        the socket in service: a thread's atomic issued when its own read completes, without
        ``transfer_overlap``, still follows the read. A request out of time order (it would
        start before a reservation already booked) takes the plain queue.

        The calendar then is the order in which the line moves, so the request is charged by
        it, not by the directory (which changes in issue order): it finds the copies made by
        the last ownership transfer before its turn and the reads booked after that one.
        Returns ``(position, predecessor, owner)``: the index its reservation takes when it
        goes ahead (-1: at the end, the plain queue), the index of the reservation it follows
        and that of the last ownership transfer up to it; ``(-1, -1, -1)`` when the calendar
        does not say (no ownership transfer in it, a merged span on the way, or out of time
        order): the plain queue, charged by the directory. Deterministic and O(calendar).
        """
        calendar = self.calendar[line]
        count = len(calendar)
        start = arrival
        ahead = 0
        while ahead < count and calendar[ahead][0] <= start:
            start = max(start, calendar[ahead][1])
            ahead += 1
        if count == 0 or ahead < count:
            return -1, -1, -1
        socket = self._socket_of(2 * thread)
        index = count - 1
        while index >= 0:
            booked_start, _, who = calendar[index]
            if who < 0 or self._socket_of(who) == socket or booked_start < arrival:
                break
            index -= 1
        position = -1
        if 0 <= index < count - 1 and calendar[index][2] >= 0 and (
                self._socket_of(calendar[index][2]) == socket):
            run = 0
            j = index
            while j >= 0 and run < self._local_batch:
                who = calendar[j][2]
                if who < 0 or self._socket_of(who) != socket:
                    break
                run += 1
                j -= 1
            if run < self._local_batch:
                position = index + 1
        predecessor = position - 1 if position >= 0 else count - 1
        owner = predecessor
        while owner >= 0:
            who = calendar[owner][2]
            if who < 0:
                return -1, -1, -1
            if who & 1:
                return position, predecessor, owner
            owner -= 1
        return -1, -1, -1

    def _batched_read(self, thread: int, domain: int, line: int, now: float, kind: int,
                      dirty: bool, klass: int, latency: float,
                      supplier: int) -> tuple[int, float, float]:
        """A read another cache serves, under local batching: ``(class, latency, wait)``.

        The directory's supplier, class and latency (``supplier``, ``klass``, ``latency``)
        stand when the calendar does not say (:meth:`_arbitrate`); otherwise the line comes
        from the copy the calendar gives: the reservation it follows (MESI, MESIF: the last
        reader forwards) or the last ownership transfer (MOESI: the Owned copy).
        """
        self._make_room(line)
        position, predecessor, owner = self._arbitrate(thread, line,
                                                       now + self._overlap * latency)
        if predecessor >= 0:
            source = owner if self._moesi else predecessor
            supplier = self._domain_of(self.calendar[line][source][2])
            d = DIRTY if dirty else CLEAN
            klass = self._transfer_class[d][domain][supplier]
            latency = self._transfer_ns[d][domain][supplier][self.homes[line]]
        occupancy = max(self._serial * latency, self._service_ns[kind][domain][supplier])
        arrival = now + self._overlap * latency
        if position >= 0:
            return klass, latency, self._queue_at(line, position, arrival, occupancy,
                                                  2 * thread)
        return klass, latency, self._queue(line, arrival, occupancy, 2 * thread)

    def _batched_ownership(self, thread: int, core: int, line: int, now: float, others: int,
                           klass: int, latency: float, floor: float, dirty: int,
                           supplied: bool, sharers: int) -> tuple[int, float, float]:
        """A store or atomic that queues, under local batching: ``(class, latency, wait)``.

        ``klass`` and ``latency`` are the directory's (``floor``: its supplier's latency, or
        the upgrade's); ``others`` the other cores holding the line, ``sharers`` those to
        invalidate besides the supplier; ``supplied``: another cache's copy is fetched.
        When the calendar says (:meth:`_arbitrate`), the data comes from its copy (as for a
        read) and the invalidations reach the farthest of its other copies, with the
        directory's sharer count for the per-sharer increment.
        """
        self._make_room(line)
        domain = core // self.cores_per_domain
        position, predecessor, owner = self._arbitrate(thread, line,
                                                       now + self._overlap * latency)
        if predecessor < 0:
            return klass, latency, self._queue_ownership(line, now, domain, others, latency,
                                                         thread)
        calendar = self.calendar[line]
        home = self.homes[line]
        source = -1
        if supplied:
            source = owner if self._moesi else predecessor
            supplier = self._domain_of(calendar[source][2])
            klass = self._transfer_class[dirty][domain][supplier]
            floor = self._transfer_ns[dirty][domain][supplier][home]
        farthest = 0.0
        service = 0.0
        ownership = self._service_ns[_OWNERSHIP][domain]
        for index in range(owner, predecessor + 1):
            who = calendar[index][2]
            if (who >> 1) // self.threads_per_core == core:
                continue
            other = self._domain_of(who)
            service = max(service, ownership[other])
            if index != source:
                farthest = max(farthest, self._transfer_ns[CLEAN][domain][other][home])
        count = sharers.bit_count()
        latency = floor
        if count > 0:
            reach = farthest + self._per_extra_sharer_ns * (count - 1) if count > 1 else (
                farthest)
            latency = max(latency, max(reach, self._upgrade_ns))
        occupancy = max(self._serial * latency, service)
        arrival = now + self._overlap * latency
        if position >= 0:
            return klass, latency, self._queue_at(line, position, arrival, occupancy,
                                                  2 * thread + 1)
        return klass, latency, self._queue(line, arrival, occupancy, 2 * thread + 1)

    def _queue_at(self, line: int, position: int, arrival: float, occupancy: float,
                  who: int) -> float:
        """Book a transfer that goes ahead of waiting requests (:meth:`_arbitrate`).

        It starts when the reservation before it ends (or at ``arrival``) and occupies the
        line for ``occupancy``; the reservations after it move back as far as they overlap, so
        the line's occupancy is conserved. Their requesters were charged when they booked, so
        each one's delay is owed by its hardware thread (:attr:`debt_ns`) and paid before its
        next operation: queueing time is conserved too, on the threads that queued. The
        moved reservations keep their costs; their tenures move with them. Returns the
        request's own wait.
        """
        calendar = self.calendar[line]
        start = max(arrival, calendar[position - 1][1])
        wait = start - arrival
        calendar.insert(position, (start, start + occupancy, who))
        window = self._owner_window
        edge = start + occupancy
        for index in range(position + 1, len(calendar)):
            booked_start, booked_end, booked_who = calendar[index]
            if booked_start >= edge:
                break
            moved_end = edge + (booked_end - booked_start)
            calendar[index] = (edge, moved_end, booked_who)
            booked = booked_who >> 1
            self.debt_ns[booked] += edge - booked_start
            self.line_wait_ns[line] += edge - booked_start
            if self.tenure_start[booked][line] == booked_start:
                self.tenure_start[booked][line] = edge
            if index > position + 1:
                before = calendar[index - 1][2] >> 1
                if before != booked and self.tenure_start[before][line] == calendar[index - 1][0]:
                    self.tenure_end[before][line] = edge + window * (moved_end - edge)
            edge = moved_end
        self._book_tenure(line, calendar, position, who)
        next_start, next_end, _ = calendar[position + 1]
        self.tenure_end[who >> 1][line] = next_start + window * (next_end - next_start)
        return wait

    def _invalidation_latency(self, domain: int, cores: int, home: int) -> float:
        """The farthest sharer's clean latency, plus the per-sharer increment after the first.

        At least the machine's ``upgrade`` when there is a sharer: a store or atomic that
        misses on a line other cores hold Shared waits for the same invalidations as an upgrade
        (SOSP'13 Table 2: an atomic on a Shared line costs about a store on it, 113 against 116
        cycles in a Westmere die, 272 against 246 on an Opteron, where a load costs 44 / 83).
        """
        latency = 0.0
        sharers = 0
        core = 0
        while cores:
            if cores & 1:
                other_domain = core // self.cores_per_domain
                latency = max(latency, self._transfer_ns[CLEAN][domain][other_domain][home])
                sharers += 1
            cores >>= 1
            core += 1
        latency += self._per_extra_sharer_ns * max(sharers - 1, 0)
        return max(latency, self._upgrade_ns) if sharers else latency

    def _invalidate_others(self, core: int, line: int, others: int, out: Any) -> None:
        count = 0
        victim = 0
        while others:
            if others & 1:
                self._remove_private(victim, line)
                count += 1
            others >>= 1
            victim += 1
        self.holders[line] &= 1 << core
        if self.owner[line] != core:
            self.owner[line] = -1
            self.ostate[line] = 0
        self.line_invalidations[line] += count
        out[_INVALIDATIONS] += count

    def _drop_l3_copies(self, domain: int, line: int) -> None:
        """A write makes every L3 copy stale; an inclusive own-domain L3 keeps the tag."""
        index = self.set3[line]
        for other in range(self.topology.n_domains):
            if other == domain and self.inclusive:
                continue
            self.l3[other][index].pop(line, None)

    # ------------------------------------------------------------------ cache helpers

    def _junk(self) -> int:
        self._next_junk -= 1
        return self._next_junk

    def _touch_private(self, core: int, line: int, in_l1: bool) -> None:
        if in_l1:
            l1set = self.l1[core][self.set1[line]]
            l1set.remove(line)
            l1set.append(line)
        else:
            self.l2[core][self.set2[line]].move_to_end(line)
            self._insert_l1(core, self.set1[line], line)

    def _fill_private(self, core: int, line: int) -> None:
        self._insert_l2(core, self.set2[line], line)
        self._insert_l1(core, self.set1[line], line)

    def _insert_l1(self, core: int, index: int, line: int) -> None:
        # A full set drops its LRU line (``maxlen``); an L1 victim stays in the L2.
        self.l1[core][index].append(line)

    def _insert_l2(self, core: int, index: int, line: int) -> None:
        cache_set = self.l2[core][index]
        if len(cache_set) >= self.l2_geom[1]:
            victim, _ = cache_set.popitem(last=False)
            if victim >= 0:
                self._evicted_from_l2(core, victim)
        cache_set[line] = False

    def _insert_l3(self, domain: int, index: int, line: int, dirty: bool) -> None:
        cache_set = self.l3[domain][index]
        if line in cache_set:
            cache_set[line] = cache_set[line] or dirty
            cache_set.move_to_end(line)
            return
        if len(cache_set) >= self.l3_geom[1]:
            victim, _ = cache_set.popitem(last=False)
            if victim >= 0 and self.inclusive:
                self._back_invalidate(domain, victim)
        cache_set[line] = dirty

    def _evicted_from_l2(self, core: int, line: int) -> None:
        """A tracked line left a core's L2: drop the L1 copy, update the directory, spill to L3."""
        _discard(self.l1[core][self.set1[line]], line)
        if self._home_rule:
            self._end_tenures(core, line)
        self.holders[line] &= ~(1 << core)
        dirty = False
        if self.owner[line] == core:
            dirty = self.ostate[line] in _DIRTY_STATES
            self.owner[line] = -1
            self.ostate[line] = 0
        domain = core // self.cores_per_domain
        index = self.set3[line]
        if self.inclusive:
            if dirty and line in self.l3[domain][index]:
                self.l3[domain][index][line] = True
        else:
            self._insert_l3(domain, index, line, dirty)

    def _end_tenures(self, core: int, line: int) -> None:
        """The core lost the line otherwise than through the queue: no window for its threads."""
        first = core * self.threads_per_core
        for thread in range(first, first + self.threads_per_core):
            self.tenure_end[thread][line] = 0.0

    def _remove_private(self, core: int, line: int) -> None:
        _discard(self.l1[core][self.set1[line]], line)
        self.l2[core][self.set2[line]].pop(line, None)

    def _back_invalidate(self, domain: int, line: int) -> None:
        """Inclusive L3 eviction: every core of the domain loses its copy."""
        first = domain * self.cores_per_domain
        for core in range(first, first + self.cores_per_domain):
            if self.holders[line] >> core & 1:
                self._remove_private(core, line)
                self.holders[line] &= ~(1 << core)
                if self._home_rule:
                    self._end_tenures(core, line)
                if self.owner[line] == core:
                    self.owner[line] = -1
                    self.ostate[line] = 0

    # ------------------------------------------------------------------ inspection

    def canonical_state(self) -> dict[str, Any]:
        """The full state in an implementation-independent form (for equivalence tests)."""

        def lines_of(caches: Sequence[Sequence[Iterable[int]]]) -> list[list[list[int]]]:
            return [[[max(k, JUNK) for k in cache_set] for cache_set in cache] for cache in caches]

        def lines_and_dirty_of(caches: list[list[CacheSet]]) -> list[list[list[Any]]]:
            return [[[(max(k, JUNK), bool(v) if k >= 0 else False) for k, v in cache_set.items()]
                     for cache_set in cache] for cache in caches]

        return {
            "owner": list(self.owner),
            "ostate": list(self.ostate),
            "holders": [[c for c in range(self.topology.n_cores) if h >> c & 1]
                        for h in self.holders],
            "last_writer": list(self.last_writer),
            "dirty_mask": list(self.dirty_mask),
            "calendar": [list(entries) for entries in self.calendar],
            "core_lock_end": list(self.core_lock_end),
            "debt_ns": list(self.debt_ns),
            "tenure_start": [list(row) for row in self.tenure_start],
            "tenure_end": [list(row) for row in self.tenure_end],
            "tenure_owned": [list(row) for row in self.tenure_owned],
            "l1": lines_of(self.l1),
            "l2": lines_of(self.l2),
            "l3": lines_and_dirty_of(self.l3),
            **self.line_counters(),
        }

    def line_counters(self) -> dict[str, Any]:
        """The per-line counters of :meth:`canonical_state` alone."""
        return {
            "line_ops": [list(r) for r in zip(*self.line_ops, strict=True)],
            "line_class": [list(r) for r in zip(*self.line_class, strict=True)],
            "line_invalidations": list(self.line_invalidations),
            "line_false_hitm": list(self.line_false_hitm),
            "line_wait_ns": list(self.line_wait_ns),
            "read_mask": list(self.read_mask),
            "write_mask": list(self.write_mask),
        }

    def reset_line_counters(self) -> None:
        """Zero every per-line counter and byte mask (the coherence state is unchanged)."""
        n_lines = len(self.owner)
        for rows in (self.line_ops, self.line_class):
            for row in rows:
                row[:] = [0] * n_lines
        self.line_invalidations[:] = [0] * n_lines
        self.line_false_hitm[:] = [0] * n_lines
        self.line_wait_ns[:] = [0.0] * n_lines
        self.read_mask[:] = [0] * n_lines
        self.write_mask[:] = [0] * n_lines


def _discard(cache_set: L1Set, line: int) -> None:
    """Remove ``line`` from an L1 set if it is there."""
    if line in cache_set:
        cache_set.remove(line)


def _as_int_list(values: Sequence[int] | npt.NDArray[Any]) -> list[int]:
    """Plain Python ints, converted once (NumPy scalar indexing is slow)."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        result: list[int] = values.tolist()
        return result
    return [int(v) for v in values]


def _as_masks(values: Sequence[int] | npt.NDArray[Any]) -> list[int]:
    """Byte masks as unsigned Python ints (the kernel stores them as signed int64)."""
    return [mask & _ALL_MASK for mask in _as_int_list(values)]


_ALL_MASK = (1 << 64) - 1
