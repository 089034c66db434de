"""Compiled (Numba) coherence kernel over packed state arrays.

The same model as :mod:`simulator.coherence.reference`, step for step and in the same order, so
that both produce identical states, counts and costs (the tests check this on random traces).
Read the reference to understand the model; this module is about speed:

* The state lives in four flat arrays (``int32``, ``int64``, ``float64`` and a constant ``int64``
  parameter vector holding geometry, segment offsets and class tables). Numba's per-argument
  unboxing cost makes a few large arrays much cheaper to pass than many small ones (0.5 µs vs
  1.8 µs per call measured on the development machine).
* Caches are set-associative arrays of tags with LRU stamps; per (core, line) way indexes give
  O(1) lookups. Untracked lines (the footprint of other work) are stored as :data:`JUNK` tags.
* One call handles one access (:func:`access`) or a whole chunk of a scan (:func:`scan`).

The Python side (:class:`simulator.coherence.state.KernelState`) allocates the arrays and exposes
named NumPy views of every segment.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np
from numba import njit

from simulator.coherence.codes import EMPTY, JUNK, N_CLASSES

# ---------------------------------------------------------------------------- parameter layout
# Header slots of the int64 parameter vector.
P_LINES, P_CORES, P_DOMAINS, P_HOMES = 0, 1, 2, 3
P_TPC, P_CPD, P_DPS = 4, 5, 6
P_S1, P_W1, P_S2, P_W2, P_S3, P_W3 = 7, 8, 9, 10, 11, 12
P_PROTOCOL, P_INCLUSION = 13, 14
P_OFFSETS = 16
"""Segment offsets start here: for each dtype group, one slot per segment start plus an end."""

I32_SEGMENTS = (
    "owner", "ostate", "last_writer", "home", "holders", "l1_way", "l2_way", "l3_way",
    "l1_tag", "l2_tag", "l3_tag", "l3_dirty", "private_ptr", "l3_ptr", "set1", "set2", "set3",
)
I64_SEGMENTS = (
    "keys", "dirty_mask", "read_mask", "write_mask", "line_ops", "line_class",
    "line_invalidations", "line_false_hitm", "l1_stamp", "l2_stamp", "l3_stamp", "counters",
)
F64_SEGMENTS = ("busy_until", "line_wait_ns", "scalars", "transfer_ns", "dram_ns")
P_SEGMENTS = ("transfer_class", "dram_class")
I32_BASE = P_OFFSETS
I64_BASE = I32_BASE + len(I32_SEGMENTS) + 1
F64_BASE = I64_BASE + len(I64_SEGMENTS) + 1
PSEG_BASE = F64_BASE + len(F64_SEGMENTS) + 1
HEADER_SIZE = PSEG_BASE + len(P_SEGMENTS) + 1
"""The parameter vector is this header followed by the P segments (class tables)."""

# Scalar latencies in the ``scalars`` float segment.
S_L1, S_L2, S_L3, S_SMT, S_ATOMIC, S_UPGRADE = 0, 1, 2, 3, 4, 5
N_SCALARS = 6

# Protocol and inclusion codes (see codes.PROTOCOL_CODES / INCLUSION_CODES).
MESIF, MOESI = 1, 2
INCLUSIVE, VICTIM = 0, 2

# Line states, operation and class codes (see codes.py; repeated as plain ints for Numba).
ST_E, ST_M, ST_O, ST_F = 2, 3, 4, 5
OP_LOAD, OP_RMW = 0, 2
C_L1, C_L2, C_L3, C_SMT, C_UPGRADE = 0, 1, 2, 3, 12
O_LATENCY, O_WAIT, O_STALL = N_CLASSES, N_CLASSES + 1, N_CLASSES + 2
O_INVAL, O_FALSE, O_TRUE = N_CLASSES + 3, N_CLASSES + 4, N_CLASSES + 5

Views = namedtuple(
    "Views",
    (
        "n_lines", "n_cores", "n_domains", "n_homes", "tpc", "cpd", "dps",
        "s1", "w1", "s2", "w2", "s3", "w3", "protocol", "inclusion",
        "p", "i32", "i64", "f64",
        *I32_SEGMENTS, *I64_SEGMENTS, *F64_SEGMENTS, *P_SEGMENTS,
    ),
)
"""The four state arrays plus the geometry and the start offset of every segment.

Helpers index the flat arrays directly (``v.i32[v.owner + line]``): a tuple of four arrays and
integers is cheap to pass between compiled functions, whereas a tuple of one view per segment
costs a reference-count update per array on every call.
"""


@njit(cache=True, _nrt=False)
def _views(p: Any, i32: Any, i64: Any, f64: Any) -> Any:
    a, b, c, d = I32_BASE, I64_BASE, F64_BASE, PSEG_BASE
    return Views(
        p[P_LINES], p[P_CORES], p[P_DOMAINS], p[P_HOMES], p[P_TPC], p[P_CPD], p[P_DPS],
        p[P_S1], p[P_W1], p[P_S2], p[P_W2], p[P_S3], p[P_W3], p[P_PROTOCOL], p[P_INCLUSION],
        p, i32, i64, f64,
        p[a], p[a + 1], p[a + 2], p[a + 3], p[a + 4], p[a + 5], p[a + 6], p[a + 7],
        p[a + 8], p[a + 9], p[a + 10], p[a + 11], p[a + 12], p[a + 13], p[a + 14], p[a + 15],
        p[a + 16],
        p[b], p[b + 1], p[b + 2], p[b + 3], p[b + 4], p[b + 5], p[b + 6], p[b + 7],
        p[b + 8], p[b + 9], p[b + 10], p[b + 11],
        p[c], p[c + 1], p[c + 2], p[c + 3], p[c + 4],
        p[d], p[d + 1],
    )


# ---------------------------------------------------------------------------- cache primitives


@njit(cache=True, _nrt=False, inline="always")
def _tick(v: Any) -> int:
    v.i64[v.counters + 0] += 1
    return int(v.i64[v.counters + 0])


@njit(cache=True, _nrt=False, inline="always")
def _free_or_lru_way(i32: Any, tag_base: int, i64: Any, stamp_base: int, ways: int) -> int:
    """First empty way of a set, else its least recently used way."""
    best = -1
    best_stamp = 0
    for w in range(ways):
        if i32[tag_base + w] == EMPTY:
            return w
        if best < 0 or i64[stamp_base + w] < best_stamp:
            best = w
            best_stamp = i64[stamp_base + w]
    return best


@njit(cache=True, _nrt=False, inline="always")
def _insert_l1(v: Any, core: int, index: int, line: int) -> None:
    base = (core * v.s1 + index) * v.w1
    w = _free_or_lru_way(v.i32, v.l1_tag + base, v.i64, v.l1_stamp + base, v.w1)
    victim = v.i32[v.l1_tag + base + w]
    if victim >= 0:
        v.i32[v.l1_way + core * v.n_lines + victim] = -1  # an L1 victim stays in the L2
    v.i32[v.l1_tag + base + w] = line
    v.i64[v.l1_stamp + base + w] = _tick(v)
    if line >= 0:
        v.i32[v.l1_way + core * v.n_lines + line] = w


@njit(cache=True, _nrt=False, inline="always")
def _remove_private(v: Any, core: int, line: int) -> None:
    slot = core * v.n_lines + line
    w1 = v.i32[v.l1_way + slot]
    if w1 >= 0:
        v.i32[v.l1_tag + (core * v.s1 + v.i32[v.set1 + line]) * v.w1 + w1] = EMPTY
        v.i32[v.l1_way + slot] = -1
    w2 = v.i32[v.l2_way + slot]
    if w2 >= 0:
        v.i32[v.l2_tag + (core * v.s2 + v.i32[v.set2 + line]) * v.w2 + w2] = EMPTY
        v.i32[v.l2_way + slot] = -1


@njit(cache=True, _nrt=False, inline="always")
def _back_invalidate(v: Any, domain: int, line: int) -> None:
    first = domain * v.cpd
    for core in range(first, first + v.cpd):
        if v.i32[v.holders + core * v.n_lines + line] != 0:
            _remove_private(v, core, line)
            v.i32[v.holders + core * v.n_lines + line] = 0
            if v.i32[v.owner + line] == core:
                v.i32[v.owner + line] = -1
                v.i32[v.ostate + line] = 0


@njit(cache=True, _nrt=False, inline="always")
def _insert_l3(v: Any, domain: int, index: int, line: int, dirty: bool) -> None:
    base = (domain * v.s3 + index) * v.w3
    if line >= 0:
        w = v.i32[v.l3_way + domain * v.n_lines + line]
        if w >= 0:
            if dirty:
                v.i32[v.l3_dirty + base + w] = 1
            v.i64[v.l3_stamp + base + w] = _tick(v)
            return
    w = _free_or_lru_way(v.i32, v.l3_tag + base, v.i64, v.l3_stamp + base, v.w3)
    victim = v.i32[v.l3_tag + base + w]
    if victim >= 0:
        v.i32[v.l3_way + domain * v.n_lines + victim] = -1
        if v.inclusion == INCLUSIVE:
            _back_invalidate(v, domain, victim)
    v.i32[v.l3_tag + base + w] = line
    v.i32[v.l3_dirty + base + w] = 1 if dirty else 0
    v.i64[v.l3_stamp + base + w] = _tick(v)
    if line >= 0:
        v.i32[v.l3_way + domain * v.n_lines + line] = w


@njit(cache=True, _nrt=False, inline="always")
def _l3_remove(v: Any, domain: int, line: int) -> None:
    slot = domain * v.n_lines + line
    w = v.i32[v.l3_way + slot]
    if w >= 0:
        v.i32[v.l3_tag + (domain * v.s3 + v.i32[v.set3 + line]) * v.w3 + w] = EMPTY
        v.i32[v.l3_way + slot] = -1


@njit(cache=True, _nrt=False, inline="always")
def _evicted_from_l2(v: Any, core: int, line: int) -> None:
    slot = core * v.n_lines + line
    w1 = v.i32[v.l1_way + slot]
    if w1 >= 0:
        v.i32[v.l1_tag + (core * v.s1 + v.i32[v.set1 + line]) * v.w1 + w1] = EMPTY
        v.i32[v.l1_way + slot] = -1
    v.i32[v.holders + slot] = 0
    dirty = False
    if v.i32[v.owner + line] == core:
        dirty = v.i32[v.ostate + line] == ST_M or v.i32[v.ostate + line] == ST_O
        v.i32[v.owner + line] = -1
        v.i32[v.ostate + line] = 0
    domain = core // v.cpd
    index = v.i32[v.set3 + line]
    if v.inclusion == INCLUSIVE:
        w = v.i32[v.l3_way + domain * v.n_lines + line]
        if dirty and w >= 0:
            v.i32[v.l3_dirty + (domain * v.s3 + index) * v.w3 + w] = 1
    else:
        _insert_l3(v, domain, index, line, dirty)


@njit(cache=True, _nrt=False, inline="always")
def _insert_l2(v: Any, core: int, index: int, line: int) -> None:
    base = (core * v.s2 + index) * v.w2
    w = _free_or_lru_way(v.i32, v.l2_tag + base, v.i64, v.l2_stamp + base, v.w2)
    victim = v.i32[v.l2_tag + base + w]
    if victim >= 0:
        v.i32[v.l2_way + core * v.n_lines + victim] = -1
        v.i32[v.l2_tag + base + w] = EMPTY
        _evicted_from_l2(v, core, victim)
    v.i32[v.l2_tag + base + w] = line
    v.i64[v.l2_stamp + base + w] = _tick(v)
    if line >= 0:
        v.i32[v.l2_way + core * v.n_lines + line] = w


@njit(cache=True, _nrt=False, inline="always")
def _fill_private(v: Any, core: int, line: int) -> None:
    _insert_l2(v, core, v.i32[v.set2 + line], line)
    _insert_l1(v, core, v.i32[v.set1 + line], line)


@njit(cache=True, _nrt=False, inline="always")
def _touch_private(v: Any, core: int, line: int, in_l1: bool) -> None:
    slot = core * v.n_lines + line
    if in_l1:
        v.i64[v.l1_stamp + (core * v.s1 + v.i32[v.set1 + line]) * v.w1 + v.i32[v.l1_way + slot]] = _tick(v)
    else:
        v.i64[v.l2_stamp + (core * v.s2 + v.i32[v.set2 + line]) * v.w2 + v.i32[v.l2_way + slot]] = _tick(v)
        _insert_l1(v, core, v.i32[v.set1 + line], line)


# ---------------------------------------------------------------------------- protocol helpers


@njit(cache=True, _nrt=False, inline="always")
def _transfer_ns(v: Any, dirty: int, req: int, sup: int, home: int) -> float:
    nd, nh = v.n_domains, v.n_homes
    return float(v.f64[v.transfer_ns + ((dirty * nd + req) * nd + sup) * nh + home])


@njit(cache=True, _nrt=False, inline="always")
def _transfer_class(v: Any, dirty: int, req: int, sup: int) -> int:
    nd = v.n_domains
    return int(v.p[v.transfer_class + (dirty * nd + req) * nd + sup])


@njit(cache=True, _nrt=False, inline="always")
def _supplier(v: Any, core: int, domain: int, line: int) -> tuple[int, float, bool, bool, int]:
    home = v.i32[v.home + line]
    owner = v.i32[v.owner + line]
    if owner >= 0:
        owner_domain = owner // v.cpd
        dirty = v.i32[v.ostate + line] == ST_M or v.i32[v.ostate + line] == ST_O
        d = 1 if dirty else 0
        return (_transfer_class(v, d, domain, owner_domain),
                _transfer_ns(v, d, domain, owner_domain, home), True, dirty, -1)
    w = v.i32[v.l3_way + domain * v.n_lines + line]
    if w >= 0:
        v.i64[v.l3_stamp + (domain * v.s3 + v.i32[v.set3 + line]) * v.w3 + w] = _tick(v)
        return C_L3, float(v.f64[v.scalars + S_L3]), False, False, domain
    socket = domain // v.dps
    for pass_ in range(2):
        for other in range(v.n_domains):
            if other == domain or ((other // v.dps == socket) != (pass_ == 0)):
                continue
            w = v.i32[v.l3_way + other * v.n_lines + line]
            if w >= 0:
                index = (other * v.s3 + v.i32[v.set3 + line]) * v.w3 + w
                dirty = v.i32[v.l3_dirty + index] != 0
                v.i64[v.l3_stamp + index] = _tick(v)
                d = 1 if dirty else 0
                return (_transfer_class(v, d, domain, other),
                        _transfer_ns(v, d, domain, other, home), False, dirty, other)
    nh = v.n_homes
    return (int(v.p[v.dram_class + domain * nh + home]), float(v.f64[v.dram_ns + domain * nh + home]),
            False, False, -1)


@njit(cache=True, _nrt=False, inline="always")
def _attribute_hitm(v: Any, line: int, mask: int, out: Any) -> None:
    if mask & v.i64[v.dirty_mask + line]:
        out[O_TRUE] += 1.0
    else:
        out[O_FALSE] += 1.0
        v.i64[v.line_false_hitm + line] += 1


@njit(cache=True, _nrt=False, inline="always")
def _queue(v: Any, line: int, now: float, latency: float) -> float:
    start = max(now, v.f64[v.busy_until + line])
    v.f64[v.busy_until + line] = start + latency
    return start - now


@njit(cache=True, _nrt=False, inline="always")
def _invalidation_latency(v: Any, domain: int, line: int, skip_core: int, supplier: int) -> float:
    latency = 0.0
    home = v.i32[v.home + line]
    for core in range(v.n_cores):
        if core == skip_core or core == supplier:
            continue
        if v.i32[v.holders + core * v.n_lines + line] != 0:
            latency = max(latency, _transfer_ns(v, 0, domain, core // v.cpd, home))
    return latency


@njit(cache=True, _nrt=False, inline="always")
def _invalidate_others(v: Any, core: int, line: int, out: Any) -> None:
    count = 0
    for other in range(v.n_cores):
        slot = other * v.n_lines + line
        if other != core and v.i32[v.holders + slot] != 0:
            _remove_private(v, other, line)
            v.i32[v.holders + slot] = 0
            count += 1
    if v.i32[v.owner + line] != core:
        v.i32[v.owner + line] = -1
        v.i32[v.ostate + line] = 0
    v.i64[v.line_invalidations + line] += count
    out[O_INVAL] += count


@njit(cache=True, _nrt=False, inline="always")
def _drop_l3_copies(v: Any, domain: int, line: int) -> None:
    for other in range(v.n_domains):
        if other == domain and v.inclusion == INCLUSIVE:
            continue
        _l3_remove(v, other, line)


@njit(cache=True, _nrt=False, inline="always")
def _any_holder(v: Any, line: int, except_core: int) -> bool:
    for core in range(v.n_cores):
        if core != except_core and v.i32[v.holders + core * v.n_lines + line] != 0:
            return True
    return False


# ---------------------------------------------------------------------------- access paths


@njit(cache=True, _nrt=False, inline="always")
def _load(v: Any, core: int, line: int, mask: int, now: float, out: Any) -> tuple[int, float, float]:
    slot = core * v.n_lines + line
    w1 = v.i32[v.l1_way + slot]
    if w1 >= 0:
        v.i64[v.l1_stamp + (core * v.s1 + v.i32[v.set1 + line]) * v.w1 + w1] = _tick(v)
        return C_L1, float(v.f64[v.scalars + S_L1]), 0.0
    w2 = v.i32[v.l2_way + slot]
    if w2 >= 0:
        v.i64[v.l2_stamp + (core * v.s2 + v.i32[v.set2 + line]) * v.w2 + w2] = _tick(v)
        _insert_l1(v, core, v.i32[v.set1 + line], line)
        return C_L2, float(v.f64[v.scalars + S_L2]), 0.0
    domain = core // v.cpd
    klass, latency, from_owner, dirty, from_l3 = _supplier(v, core, domain, line)
    if from_l3 == domain and v.inclusion == VICTIM and not _any_holder(v, line, -1):
        _l3_remove(v, domain, line)
    wait = 0.0
    if from_owner:
        state = v.i32[v.ostate + line]
        if v.protocol == MOESI and (state == ST_M or state == ST_O):
            v.i32[v.ostate + line] = ST_O
        else:
            v.i32[v.owner + line] = -1
            v.i32[v.ostate + line] = 0
        if dirty:
            _attribute_hitm(v, line, mask, out)
            wait = _queue(v, line, now, latency)
    elif dirty:
        _attribute_hitm(v, line, mask, out)
    # Grant: E if alone, F (MESIF without owner) or S.
    if not _any_holder(v, line, -1):
        v.i32[v.owner + line] = core
        v.i32[v.ostate + line] = ST_E
    elif v.i32[v.owner + line] < 0 and v.protocol == MESIF:
        v.i32[v.owner + line] = core
        v.i32[v.ostate + line] = ST_F
    v.i32[v.holders + slot] = 1
    if v.inclusion == INCLUSIVE and from_l3 != domain:
        _insert_l3(v, domain, v.i32[v.set3 + line], line, False)
    _fill_private(v, core, line)
    return klass, latency, wait


@njit(cache=True, _nrt=False, inline="always")
def _hit_cost(v: Any, thread: int, core: int, line: int, op: int, in_l1: bool) -> tuple[int, float, float]:
    level_class = C_L1 if in_l1 else C_L2
    level_ns = float(v.f64[v.scalars + S_L1]) if in_l1 else float(v.f64[v.scalars + S_L2])
    if op != OP_RMW:
        return level_class, level_ns, 0.0
    writer = v.i32[v.last_writer + line]
    if writer >= 0 and writer != thread and writer // v.tpc == core:
        return C_SMT, float(v.f64[v.scalars + S_SMT]), 0.0
    return level_class, max(float(v.f64[v.scalars + S_ATOMIC]), level_ns), 0.0


@njit(cache=True, _nrt=False, inline="always")
def _write(
    v: Any, thread: int, core: int, line: int, op: int, mask: int, now: float, out: Any
) -> tuple[int, float, float]:
    slot = core * v.n_lines + line
    domain = core // v.cpd
    if v.i32[v.l2_way + slot] >= 0:
        in_l1 = v.i32[v.l1_way + slot] >= 0
        _touch_private(v, core, line, in_l1)
        state = v.i32[v.ostate + line]
        if v.i32[v.owner + line] == core and (state == ST_M or state == ST_E):
            if state == ST_E:
                v.i64[v.dirty_mask + line] = mask
            else:
                v.i64[v.dirty_mask + line] |= mask
            v.i32[v.ostate + line] = ST_M
            return _hit_cost(v, thread, core, line, op, in_l1)
        others = _any_holder(v, line, core)
        latency = max(float(v.f64[v.scalars + S_UPGRADE]), _invalidation_latency(v, domain, line, core, -1))
        owned_dirty = v.i32[v.owner + line] == core and state == ST_O
        wait = _queue(v, line, now, latency) if others else 0.0
        _invalidate_others(v, core, line, out)
        _drop_l3_copies(v, domain, line)
        v.i32[v.owner + line] = core
        v.i32[v.ostate + line] = ST_M
        if owned_dirty:
            v.i64[v.dirty_mask + line] |= mask
        else:
            v.i64[v.dirty_mask + line] = mask
        return C_UPGRADE, latency, wait
    klass, latency, from_owner, dirty, from_l3 = _supplier(v, core, domain, line)
    if dirty:
        _attribute_hitm(v, line, mask, out)
    others = _any_holder(v, line, core)
    supplier = v.i32[v.owner + line] if from_owner else -1
    latency = max(latency, _invalidation_latency(v, domain, line, core, supplier))
    wait = _queue(v, line, now, latency) if others else 0.0
    _invalidate_others(v, core, line, out)
    _drop_l3_copies(v, domain, line)
    v.i32[v.owner + line] = core
    v.i32[v.ostate + line] = ST_M
    v.i32[v.holders + slot] = 1
    v.i64[v.dirty_mask + line] = mask
    if v.inclusion == INCLUSIVE and from_l3 != domain:
        _insert_l3(v, domain, v.i32[v.set3 + line], line, False)
    _fill_private(v, core, line)
    return klass, latency, wait


@njit(cache=True, _nrt=False, inline="always")
def _access(
    v: Any, thread: int, core: int, line: int, op: int, mask: int, now: float, out: Any
) -> tuple[int, float, float]:
    if op == OP_LOAD:
        klass, latency, wait = _load(v, core, line, mask, now, out)
        v.i64[v.read_mask + line] |= mask
    else:
        klass, latency, wait = _write(v, thread, core, line, op, mask, now, out)
        v.i64[v.write_mask + line] |= mask
        v.i32[v.last_writer + line] = thread
    v.i64[v.line_ops + line * 3 + op] += 1
    v.i64[v.line_class + line * N_CLASSES + klass] += 1
    v.f64[v.line_wait_ns + line] += wait
    out[klass] += 1.0
    out[O_LATENCY] += latency
    out[O_WAIT] += wait
    return klass, latency, wait


# ---------------------------------------------------------------------------- entry points


@njit(cache=True, _nrt=False)
def access(
    p: Any, i32: Any, i64: Any, f64: Any, thread: int, line: int, op: int, mask: int,
    now: float, out: Any,
) -> tuple[int, float, float]:
    """One memory operation; returns ``(class, latency_ns, wait_ns)`` and adds to ``out``."""
    v = _views(p, i32, i64, f64)
    klass, latency, wait = _access(v, thread, thread // v.tpc, line, op, mask, now, out)
    out[O_STALL] += latency + wait
    return klass, latency, wait


@njit(cache=True, _nrt=False)
def scan(
    p: Any, i32: Any, i64: Any, f64: Any, thread: int, lines: Any, masks: Any, op: int,
    mlp: float, now: float, out: Any,
) -> float:
    """Many independent accesses; returns the stall (misses overlap ``mlp`` at a time)."""
    v = _views(p, i32, i64, f64)
    core = thread // v.tpc
    stall = 0.0
    for index in range(lines.shape[0]):
        klass, latency, wait = _access(v, thread, core, lines[index], op, masks[index], now, out)
        stall += wait
        if klass != C_L1:
            stall += latency / mlp
    out[O_STALL] += stall
    return stall


@njit(cache=True, _nrt=False)
def pollute(p: Any, i32: Any, i64: Any, f64: Any, core: int, private_lines: int,
            l3_lines: int) -> None:
    """Pass untracked lines through a core's private caches and its domain's L3."""
    v = _views(p, i32, i64, f64)
    start = v.i32[v.private_ptr + core]
    for j in range(private_lines):
        _insert_l2(v, core, (start + j) % v.s2, JUNK)
        _insert_l1(v, core, (start + j) % v.s1, JUNK)
    v.i32[v.private_ptr + core] = (start + private_lines) % (v.s1 * v.s2)
    domain = core // v.cpd
    start3 = v.i32[v.l3_ptr + domain]
    for j in range(l3_lines):
        _insert_l3(v, domain, (start3 + j) % v.s3, JUNK, False)
    v.i32[v.l3_ptr + domain] = (start3 + l3_lines) % v.s3


def zero_out() -> np.ndarray[Any, np.dtype[np.float64]]:
    """A zeroed output vector."""
    from simulator.coherence.codes import OUT_SIZE

    return np.zeros(OUT_SIZE, dtype=np.float64)
