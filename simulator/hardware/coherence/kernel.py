"""Compiled (Numba) coherence kernel over packed state arrays.

The same model as :mod:`simulator.hardware.coherence.reference`, step for step and in the same
order, so that both produce identical states, counts and costs (the tests check this on random
traces).
Read the reference to understand the model; this module is about speed:

* The state lives in four flat arrays (``int32``, ``int64``, ``float64`` and a constant ``int64``
  parameter vector holding geometry, segment offsets and class tables). Numba unboxes every
  argument on every call, so a few large arrays are much cheaper to pass than many small ones.
* Caches are set-associative arrays of tags with LRU stamps; per (core, line) way indexes give
  O(1) lookups. Untracked lines (the footprint of other work) are stored as :data:`JUNK` tags.
  A stamp is ``clock | way`` (see :data:`MAX_WAYS`): the clock orders the ways of a set, and an
  empty way's stamp is its bare index. The way to fill, the first empty way or else the least
  recently used one, is then simply the one of least stamp (:func:`_way_to_fill`, no branches).
* Per line, a holder count (``n_holders``) mirrors the per-core holder flags, so "does anybody
  else hold it" is O(1); per core, its L3 domain is a table (``core_domain``), not a division.
  Per-line operation and class counters are stored one row per operation or class.
* One call handles one access (:func:`access`) or a whole chunk of a scan (:func:`scan`). A
  load scan serves private-cache hits in its own loop, with the LRU clock and the output sums in
  local variables (receiving the same additions in the same order as the array would, so the
  results are bit-identical), and falls back to the full protocol for misses.
* Array indexes are cast to unsigned (:data:`_u`) so that Numba omits its negative-index
  wraparound, and every function is compiled with ``_nrt=False`` (otherwise every array read
  out of the views tuple costs a reference-count update); see :func:`_jit`.

Compile time: helpers compiled with ``inline=True`` are inlined by Numba at the IR level, which
gives fast code but is slow to compile (the callee's IR is copied per call site, recursively).
The protocol is therefore compiled once, in :func:`_access`, which both entry points call; the
rare or O(cores) steps (:func:`_evicted_from_l2`, :func:`_back_invalidate`,
:func:`_take_ownership`) are real calls too. Only a scan's load misses have an inlined copy of
the load path, in :func:`scan`.

The Python side (:class:`simulator.hardware.coherence.compiled.CompiledCoherence`) allocates the
arrays and exposes named NumPy views of every segment.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from numba import njit

from simulator.hardware.codes import CALENDAR_SLOTS, EMPTY, JUNK, N_CLASSES

# ---------------------------------------------------------------------------- parameter layout
# Header slots of the int64 parameter vector.
P_LINES, P_CORES, P_DOMAINS, P_HOMES = 0, 1, 2, 3
P_TPC, P_CPD, P_DPS = 4, 5, 6
P_S1, P_W1, P_S2, P_W2, P_S3, P_W3 = 7, 8, 9, 10, 11, 12
P_PROTOCOL, P_INCLUSION = 13, 14
P_HOME_RULE = 15
"""1 when the line service rule is ``home`` (see the reference's ``_window_hit``), 0 for
``fifo``."""
P_OFFSETS = 16
"""Segment offsets start here: for each dtype group, one slot per segment start plus an end."""

I32_SEGMENTS = (
    "owner", "ostate", "last_writer", "home", "holders", "n_holders", "l1_way", "l2_way",
    "l3_way", "l1_tag", "l2_tag", "l3_tag", "l3_dirty", "private_ptr", "l3_ptr", "set1", "set2",
    "set3", "core_domain", "cal_count", "l2_fill_victim", "cal_who", "tenure_owned",
)
I64_SEGMENTS = (
    "keys", "dirty_mask", "read_mask", "write_mask", "line_ops", "line_class",
    "line_invalidations", "line_false_hitm", "l1_stamp", "l2_stamp", "l3_stamp", "counters",
)
F64_SEGMENTS = ("cal_start", "cal_end", "line_wait_ns", "scalars", "transfer_ns", "dram_ns",
                "service_ns", "tenure_start", "tenure_end", "core_lock_end", "debt_ns")
P_SEGMENTS = ("transfer_class", "dram_class")
I32_BASE = P_OFFSETS
I64_BASE = I32_BASE + len(I32_SEGMENTS) + 1
F64_BASE = I64_BASE + len(I64_SEGMENTS) + 1
PSEG_BASE = F64_BASE + len(F64_SEGMENTS) + 1
HEADER_SIZE = PSEG_BASE + len(P_SEGMENTS) + 1
"""The parameter vector is this header followed by the P segments (class tables)."""

_u = np.uint64
"""Every array index is cast to unsigned: Numba then omits the negative-index wraparound (a
shift, a mask and a register for the length on every access). Indexes are never negative."""

WAY_BITS = 8
MAX_WAYS = 1 << WAY_BITS
"""Most ways per set. A way's LRU stamp is ``clock | way``: the clock advances by ``MAX_WAYS`` per
tick (its low bits are 0), so the low bits of a stamp are the way's index; an empty way's stamp is
its index alone, less than any filled way's."""
WAY_MASK = MAX_WAYS - 1

# Scalar latencies in the ``scalars`` float segment.
S_L1, S_L2, S_L3, S_SMT, S_ATOMIC, S_UPGRADE, S_PER_SHARER, S_WINDOW = 0, 1, 2, 3, 4, 5, 6, 7
S_OVERLAP, S_SERIAL = 8, 9
"""``transfer_overlap`` and 1 minus it (the ``home`` rule's pipelined transfers)."""
S_BATCH = 10
"""``local_batch`` (the ``home`` rule's arbitration; above 1: socket-local batching)."""
N_SCALARS = 11

# Protocol and inclusion codes (see codes.PROTOCOL_CODES / INCLUSION_CODES).
MESIF, MOESI = 1, 2
INCLUSIVE, VICTIM = 0, 2

# Line states, operation and class codes (see codes.py; repeated as plain ints for Numba).
ST_E, ST_M, ST_O, ST_F = 2, 3, 4, 5
OP_LOAD, OP_RMW = 0, 2
C_L1, C_L2, C_L3, C_SMT, C_UPGRADE = 0, 1, 2, 3, 12
K_READ_MODIFIED, K_READ_SHARED, K_OWNERSHIP = 0, 1, 2
O_LATENCY, O_WAIT, O_STALL = N_CLASSES, N_CLASSES + 1, N_CLASSES + 2
O_INVAL, O_FALSE, O_TRUE = N_CLASSES + 3, N_CLASSES + 4, N_CLASSES + 5

Views: Any = namedtuple(  # type: ignore[misc]  # computed field names
    "Views",
    (
        "n_lines", "n_cores", "n_domains", "n_homes", "tpc", "cpd", "dps",
        "s1", "w1", "s2", "w2", "s3", "w3", "protocol", "inclusion", "home_rule",
        "p", "i32", "i64", "f64",
        *I32_SEGMENTS, *I64_SEGMENTS, *F64_SEGMENTS, *P_SEGMENTS,
    ),
)
"""The four state arrays plus the geometry and the start offset of every segment.

Helpers index the flat arrays directly (``v.i32[_u(v.owner + line)]``): a tuple of four arrays
and integers is cheap to pass between compiled functions, whereas a tuple of one view per segment
costs a reference-count update per array on every call.
"""

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(*, inline: bool = False) -> Callable[[_F], _F]:
    """``numba.njit`` with the kernel's options.

    Cached, without reference counting (``_nrt=False``) and, for ``inline=True``, inlined into
    its callers at the Numba IR level.
    """
    options: dict[str, Any] = {"cache": True, "_nrt": False}
    if inline:
        options["inline"] = "always"
    return cast(Callable[[_F], _F], njit(**options))


@_jit()
def _views(p: Any, i32: Any, i64: Any, f64: Any) -> Any:
    a, b, c, d = I32_BASE, I64_BASE, F64_BASE, PSEG_BASE
    return Views(  # type: ignore[call-arg]
        p[P_LINES], p[P_CORES], p[P_DOMAINS], p[P_HOMES], p[P_TPC], p[P_CPD], p[P_DPS],
        p[P_S1], p[P_W1], p[P_S2], p[P_W2], p[P_S3], p[P_W3], p[P_PROTOCOL], p[P_INCLUSION],
        p[P_HOME_RULE],
        p, i32, i64, f64,
        p[a], p[a + 1], p[a + 2], p[a + 3], p[a + 4], p[a + 5], p[a + 6], p[a + 7],
        p[a + 8], p[a + 9], p[a + 10], p[a + 11], p[a + 12], p[a + 13], p[a + 14], p[a + 15],
        p[a + 16], p[a + 17], p[a + 18], p[a + 19], p[a + 20], p[a + 21], p[a + 22],
        p[b], p[b + 1], p[b + 2], p[b + 3], p[b + 4], p[b + 5], p[b + 6], p[b + 7],
        p[b + 8], p[b + 9], p[b + 10], p[b + 11],
        p[c], p[c + 1], p[c + 2], p[c + 3], p[c + 4], p[c + 5], p[c + 6], p[c + 7], p[c + 8],
        p[c + 9], p[c + 10],
        p[d], p[d + 1],
    )


# ---------------------------------------------------------------------------- cache primitives


@_jit(inline=True)
def _tick(v: Any) -> int:
    """The next LRU clock value (a multiple of :data:`MAX_WAYS`)."""
    v.i64[_u(v.counters + 0)] += MAX_WAYS
    return int(v.i64[_u(v.counters + 0)])


@_jit(inline=True)
def _least_key(i64: Any, stamp_base: int, ways: int) -> int:
    least = int(i64[_u(stamp_base)])
    for w in range(1, ways):
        least = min(least, int(i64[_u(stamp_base + w)]))
    return least


@_jit(inline=True)
def _least_key8(i64: Any, base: int) -> int:
    """The least of 8 stamps, as a tree of minimums (a short dependency chain)."""
    a = min(int(i64[_u(base)]), int(i64[_u(base + 1)]))
    b = min(int(i64[_u(base + 2)]), int(i64[_u(base + 3)]))
    c = min(int(i64[_u(base + 4)]), int(i64[_u(base + 5)]))
    d = min(int(i64[_u(base + 6)]), int(i64[_u(base + 7)]))
    return min(min(a, b), min(c, d))


@_jit(inline=True)
def _way_to_fill(i64: Any, stamp_base: int, ways: int) -> int:
    """First empty way of a set, else its least recently used way: the way of least stamp.

    The common associativities get unrolled copies (a tree of minimums, no loop).
    """
    if ways == 8:
        return _least_key8(i64, stamp_base) & WAY_MASK
    if ways == 16:
        return min(_least_key8(i64, stamp_base), _least_key8(i64, stamp_base + 8)) & WAY_MASK
    return _least_key(i64, stamp_base, ways) & WAY_MASK


@_jit(inline=True)
def _set_holder(v: Any, core: int, line: int, value: int) -> None:
    """Set the directory's holder flag of (core, line) and keep the line's holder count."""
    slot = v.holders + core * v.n_lines + line
    v.i32[_u(v.n_holders + line)] += value - v.i32[_u(slot)]
    v.i32[_u(slot)] = value


@_jit(inline=True)
def _any_holder(v: Any, line: int, except_core: int) -> bool:
    """Whether a core other than ``except_core`` (-1: none excepted) holds the line."""
    count = int(v.i32[_u(v.n_holders + line)])
    if except_core >= 0:
        count -= int(v.i32[_u(v.holders + except_core * v.n_lines + line)])
    return count != 0


@_jit(inline=True)
def _insert_l1(v: Any, core: int, index: int, line: int, stamp: int) -> None:
    base = (core * v.s1 + index) * v.w1
    w = _way_to_fill(v.i64, v.l1_stamp + base, v.w1)
    victim = v.i32[_u(v.l1_tag + base + w)]
    if victim >= 0:
        v.i32[_u(v.l1_way + core * v.n_lines + victim)] = -1  # an L1 victim stays in the L2
    v.i32[_u(v.l1_tag + base + w)] = line
    v.i64[_u(v.l1_stamp + base + w)] = stamp | w
    if line >= 0:
        v.i32[_u(v.l1_way + core * v.n_lines + line)] = w


@_jit(inline=True)
def _drop_l1(v: Any, core: int, line: int) -> None:
    slot = core * v.n_lines + line
    w = v.i32[_u(v.l1_way + slot)]
    if w >= 0:
        way = (core * v.s1 + v.i32[_u(v.set1 + line)]) * v.w1 + w
        v.i32[_u(v.l1_tag + way)] = EMPTY
        v.i64[_u(v.l1_stamp + way)] = w
        v.i32[_u(v.l1_way + slot)] = -1


@_jit(inline=True)
def _remove_private(v: Any, core: int, line: int) -> None:
    _drop_l1(v, core, line)
    slot = core * v.n_lines + line
    w = v.i32[_u(v.l2_way + slot)]
    if w >= 0:
        way = (core * v.s2 + v.i32[_u(v.set2 + line)]) * v.w2 + w
        v.i32[_u(v.l2_tag + way)] = EMPTY
        v.i64[_u(v.l2_stamp + way)] = w
        v.i32[_u(v.l2_way + slot)] = -1


@_jit(inline=True)
def _end_tenures(v: Any, core: int, line: int) -> None:
    """The core lost the line otherwise than through the queue: no window for its threads."""
    for thread in range(core * v.tpc, (core + 1) * v.tpc):
        v.f64[_u(v.tenure_end + thread * v.n_lines + line)] = 0.0


@_jit()
def _back_invalidate(v: Any, domain: int, line: int) -> None:
    """Inclusive L3 eviction: every core of the domain loses its copy (a real call: rare)."""
    first = domain * v.cpd
    for core in range(first, first + v.cpd):
        if v.i32[_u(v.holders + core * v.n_lines + line)] != 0:
            _remove_private(v, core, line)
            _set_holder(v, core, line, 0)
            if v.i32[_u(v.owner + line)] == core:
                v.i32[_u(v.owner + line)] = -1
                v.i32[_u(v.ostate + line)] = 0
            if v.home_rule:
                _end_tenures(v, core, line)


@_jit(inline=True)
def _insert_l3(v: Any, domain: int, index: int, line: int, dirty: bool, stamp: int) -> None:
    base = (domain * v.s3 + index) * v.w3
    if line >= 0:
        w = v.i32[_u(v.l3_way + domain * v.n_lines + line)]
        if w >= 0:
            if dirty:
                v.i32[_u(v.l3_dirty + base + w)] = 1
            v.i64[_u(v.l3_stamp + base + w)] = stamp | w
            return
    w = _least_key(v.i64, v.l3_stamp + base, v.w3) & WAY_MASK
    victim = v.i32[_u(v.l3_tag + base + w)]
    if victim >= 0:
        v.i32[_u(v.l3_way + domain * v.n_lines + victim)] = -1
        if v.inclusion == INCLUSIVE:
            _back_invalidate(v, domain, victim)
    v.i32[_u(v.l3_tag + base + w)] = line
    v.i32[_u(v.l3_dirty + base + w)] = 1 if dirty else 0
    v.i64[_u(v.l3_stamp + base + w)] = stamp | w
    if line >= 0:
        v.i32[_u(v.l3_way + domain * v.n_lines + line)] = w


@_jit(inline=True)
def _l3_remove(v: Any, domain: int, line: int) -> None:
    slot = domain * v.n_lines + line
    w = v.i32[_u(v.l3_way + slot)]
    if w >= 0:
        way = (domain * v.s3 + v.i32[_u(v.set3 + line)]) * v.w3 + w
        v.i32[_u(v.l3_tag + way)] = EMPTY
        v.i64[_u(v.l3_stamp + way)] = w
        v.i32[_u(v.l3_way + slot)] = -1


@_jit()
def _evicted_from_l2(v: Any, core: int, line: int) -> None:
    """A tracked line left a core's L2: drop the L1 copy, update the directory, spill to L3."""
    _drop_l1(v, core, line)
    _set_holder(v, core, line, 0)
    if v.home_rule:
        _end_tenures(v, core, line)
    dirty = False
    if v.i32[_u(v.owner + line)] == core:
        dirty = v.i32[_u(v.ostate + line)] in (ST_M, ST_O)
        v.i32[_u(v.owner + line)] = -1
        v.i32[_u(v.ostate + line)] = 0
    domain = v.i32[_u(v.core_domain + core)]
    index = v.i32[_u(v.set3 + line)]
    if v.inclusion == INCLUSIVE:
        w = v.i32[_u(v.l3_way + domain * v.n_lines + line)]
        if dirty and w >= 0:
            v.i32[_u(v.l3_dirty + (domain * v.s3 + index) * v.w3 + w)] = 1
    else:
        _insert_l3(v, domain, index, line, dirty, _tick(v))


@_jit(inline=True)
def _insert_l2(v: Any, core: int, index: int, line: int, stamp: int) -> None:
    base = (core * v.s2 + index) * v.w2
    w = _way_to_fill(v.i64, v.l2_stamp + base, v.w2)
    victim = v.i32[_u(v.l2_tag + base + w)]
    if victim >= 0:
        v.i32[_u(v.l2_way + core * v.n_lines + victim)] = -1
        v.i32[_u(v.l2_tag + base + w)] = EMPTY
        _evicted_from_l2(v, core, victim)
    v.i32[_u(v.l2_tag + base + w)] = line
    v.i64[_u(v.l2_stamp + base + w)] = stamp | w
    if line >= 0:
        v.i32[_u(v.l2_way + core * v.n_lines + line)] = w


@_jit(inline=True)
def _fill_private(v: Any, core: int, line: int) -> None:
    _insert_l2(v, core, v.i32[_u(v.set2 + line)], line, _tick(v))
    _insert_l1(v, core, v.i32[_u(v.set1 + line)], line, _tick(v))


@_jit(inline=True)
def _touch_private(v: Any, core: int, line: int, in_l1: bool) -> None:
    slot = core * v.n_lines + line
    if in_l1:
        w = v.i32[_u(v.l1_way + slot)]
        index = (core * v.s1 + v.i32[_u(v.set1 + line)]) * v.w1 + w
        v.i64[_u(v.l1_stamp + index)] = _tick(v) | w
    else:
        w = v.i32[_u(v.l2_way + slot)]
        index = (core * v.s2 + v.i32[_u(v.set2 + line)]) * v.w2 + w
        v.i64[_u(v.l2_stamp + index)] = _tick(v) | w
        _insert_l1(v, core, v.i32[_u(v.set1 + line)], line, _tick(v))


# ---------------------------------------------------------------------------- protocol helpers


@_jit(inline=True)
def _transfer_ns(v: Any, dirty: int, req: int, sup: int, home: int) -> float:
    nd, nh = v.n_domains, v.n_homes
    return float(v.f64[_u(v.transfer_ns + ((dirty * nd + req) * nd + sup) * nh + home)])


@_jit(inline=True)
def _transfer_class(v: Any, dirty: int, req: int, sup: int) -> int:
    nd = v.n_domains
    return int(v.p[_u(v.transfer_class + (dirty * nd + req) * nd + sup)])


@_jit(inline=True)
def _supplier(v: Any, domain: int, line: int) -> tuple[int, float, bool, bool, int]:
    """Find who serves a miss: ``(class, latency, from_owner, dirty, l3_domain_or_-1)``."""
    home = v.i32[_u(v.home + line)]
    owner = v.i32[_u(v.owner + line)]
    if owner >= 0:
        owner_domain = v.i32[_u(v.core_domain + owner)]
        dirty = v.i32[_u(v.ostate + line)] in (ST_M, ST_O)
        d = 1 if dirty else 0
        return (_transfer_class(v, d, domain, owner_domain),
                _transfer_ns(v, d, domain, owner_domain, home), True, dirty, -1)
    w = v.i32[_u(v.l3_way + domain * v.n_lines + line)]
    if w >= 0:
        index = (domain * v.s3 + v.i32[_u(v.set3 + line)]) * v.w3 + w
        v.i64[_u(v.l3_stamp + index)] = _tick(v) | w
        return C_L3, float(v.f64[_u(v.scalars + S_L3)]), False, False, domain
    # Other domains, nearest first: those of the same socket (contiguous), then the rest.
    first = domain // v.dps * v.dps
    for pass_ in range(2):
        for other in range(v.n_domains):
            same_socket = first <= other < first + v.dps
            if other == domain or same_socket != (pass_ == 0):
                continue
            w = v.i32[_u(v.l3_way + other * v.n_lines + line)]
            if w >= 0:
                index = (other * v.s3 + v.i32[_u(v.set3 + line)]) * v.w3 + w
                dirty = v.i32[_u(v.l3_dirty + index)] != 0
                v.i64[_u(v.l3_stamp + index)] = _tick(v) | w
                d = 1 if dirty else 0
                return (_transfer_class(v, d, domain, other),
                        _transfer_ns(v, d, domain, other, home), False, dirty, other)
    slot = domain * v.n_homes + home
    return (int(v.p[_u(v.dram_class + slot)]), float(v.f64[_u(v.dram_ns + slot)]),
            False, False, -1)


@_jit(inline=True)
def _attribute_hitm(v: Any, line: int, mask: int, out: Any) -> None:
    if mask & v.i64[_u(v.dirty_mask + line)]:
        out[O_TRUE] += 1.0
    else:
        out[O_FALSE] += 1.0
        v.i64[_u(v.line_false_hitm + line)] += 1


@_jit(inline=True)
def _make_room(v: Any, line: int) -> int:
    """A full calendar merges its two oldest reservations into one span; returns the count."""
    base = line * CALENDAR_SLOTS
    count = v.i32[_u(v.cal_count + line)]
    if count == CALENDAR_SLOTS:  # full: the two oldest reservations become one span
        v.f64[_u(v.cal_end + base)] = max(v.f64[_u(v.cal_end + base)],
                                          v.f64[_u(v.cal_end + base + 1)])
        if v.home_rule:
            v.i32[_u(v.cal_who + base)] = -1
        for index in range(1, count - 1):
            v.f64[_u(v.cal_start + base + index)] = v.f64[_u(v.cal_start + base + index + 1)]
            v.f64[_u(v.cal_end + base + index)] = v.f64[_u(v.cal_end + base + index + 1)]
            if v.home_rule:
                v.i32[_u(v.cal_who + base + index)] = v.i32[_u(v.cal_who + base + index + 1)]
        count -= 1
        v.i32[_u(v.cal_count + line)] = count
    return int(count)


@_jit(inline=True)
def _queue(v: Any, line: int, now: float, latency: float, who: int) -> float:
    """Serialize a transfer occupying the line for ``latency``; return its wait.

    ``who`` is recorded with the reservation under the ``home`` rule (``2 * thread + 1``
    ownership, ``2 * thread`` read).

    See :meth:`simulator.hardware.coherence.reference.ReferenceCoherence._queue` for the rule (FIFO
    by
    logical time, with the delay an out-of-order request imposes charged to it).
    """
    base = line * CALENDAR_SLOTS
    count = _make_room(v, line)
    start = now
    ahead = 0
    while ahead < count and v.f64[_u(v.cal_start + base + ahead)] <= start:
        start = max(start, v.f64[_u(v.cal_end + base + ahead)])
        ahead += 1
    wait = start - now
    shifted_end = start + latency
    for index in range(ahead, count):
        booked = v.f64[_u(v.cal_start + base + index)]
        if booked >= shifted_end:
            break
        wait += shifted_end - booked
        shifted_end = v.f64[_u(v.cal_end + base + index)] + (shifted_end - booked)
    position = count
    for index in range(ahead, count):
        if v.f64[_u(v.cal_start + base + index)] >= start + latency:
            position = index
            break
        start = max(start, v.f64[_u(v.cal_end + base + index)])
    for index in range(count, position, -1):
        v.f64[_u(v.cal_start + base + index)] = v.f64[_u(v.cal_start + base + index - 1)]
        v.f64[_u(v.cal_end + base + index)] = v.f64[_u(v.cal_end + base + index - 1)]
        if v.home_rule:
            v.i32[_u(v.cal_who + base + index)] = v.i32[_u(v.cal_who + base + index - 1)]
    v.f64[_u(v.cal_start + base + position)] = start
    v.f64[_u(v.cal_end + base + position)] = start + latency
    v.i32[_u(v.cal_count + line)] = count + 1
    if v.home_rule:
        v.i32[_u(v.cal_who + base + position)] = who
        _book_tenure(v, line, position, who)
    return wait


@_jit(inline=True)
def _window_hit(v: Any, thread: int, line: int, now: float, owned: bool) -> bool:
    """The ``home`` rule's owner window (see the reference's ``_window_hit``)."""
    slot = thread * v.n_lines + line
    end = v.f64[_u(v.tenure_end + slot)]
    return (v.f64[_u(v.tenure_start + slot)] <= now < end < np.inf
            and (v.i32[_u(v.tenure_owned + slot)] != 0 or not owned))


@_jit()
def _book_tenure(v: Any, line: int, position: int, who: int) -> None:
    """Note the new reservation's tenure and end its predecessor's (a real call: ``home``)."""
    base = line * CALENDAR_SLOTS
    thread = who >> 1
    if position > 0:
        before = v.i32[_u(v.cal_who + base + position - 1)]
        if before >= 0 and before >> 1 != thread:
            start = v.f64[_u(v.cal_start + base + position)]
            end = v.f64[_u(v.cal_end + base + position)]
            v.f64[_u(v.tenure_end + (before >> 1) * v.n_lines + line)] = (
                start + v.f64[_u(v.scalars + S_WINDOW)] * (end - start))
    slot = thread * v.n_lines + line
    v.f64[_u(v.tenure_start + slot)] = v.f64[_u(v.cal_start + base + position)]
    v.f64[_u(v.tenure_end + slot)] = np.inf
    v.i32[_u(v.tenure_owned + slot)] = who & 1


# ---------------------------------------------------------------------------- local batching
# The ``home`` rule with ``local_batch`` above 1; see the reference's ``_arbitrate``,
# ``_batched_read``, ``_batched_ownership`` and ``_queue_at`` for the rule. Real calls: they
# run only under that setting.


@_jit(inline=True)
def _domain_of(v: Any, who: int) -> int:
    """The L3 domain of a reservation's requester (``who``: ``2 * thread`` + 1 if ownership)."""
    return int(v.i32[_u(v.core_domain + (who >> 1) // v.tpc)])


@_jit(inline=True)
def _socket_of(v: Any, who: int) -> int:
    """The socket of a reservation's requester."""
    return int(_domain_of(v, who) // v.dps)


@_jit()
def _arbitrate(v: Any, thread: int, line: int, arrival: float) -> tuple[int, int, int]:
    """``(position, predecessor, owner)`` of a request reaching the home at ``arrival``."""
    base = line * CALENDAR_SLOTS
    count = int(v.i32[_u(v.cal_count + line)])
    start = arrival
    ahead = 0
    while ahead < count and v.f64[_u(v.cal_start + base + ahead)] <= start:
        start = max(start, v.f64[_u(v.cal_end + base + ahead)])
        ahead += 1
    if count == 0 or ahead < count:
        return -1, -1, -1
    socket = _socket_of(v, 2 * thread)
    batch = v.f64[_u(v.scalars + S_BATCH)]
    index = count - 1
    while index >= 0:
        who = int(v.i32[_u(v.cal_who + base + index)])
        if (who < 0 or _socket_of(v, who) == socket
                or v.f64[_u(v.cal_start + base + index)] < arrival):
            break
        index -= 1
    position = -1
    if 0 <= index < count - 1:
        who = int(v.i32[_u(v.cal_who + base + index)])
        if who >= 0 and _socket_of(v, who) == socket:
            run = 0
            j = index
            while j >= 0 and run < batch:
                who = int(v.i32[_u(v.cal_who + base + j)])
                if who < 0 or _socket_of(v, who) != socket:
                    break
                run += 1
                j -= 1
            if run < batch:
                position = index + 1
    predecessor = position - 1 if position >= 0 else count - 1
    owner = predecessor
    while owner >= 0:
        who = int(v.i32[_u(v.cal_who + base + owner)])
        if who < 0:
            return -1, -1, -1
        if who & 1:
            return position, predecessor, owner
        owner -= 1
    return -1, -1, -1


@_jit(inline=True)
def _calendar_supply(v: Any, line: int, owner: int, predecessor: int, dirty: bool,
                     domain: int) -> tuple[int, int, int, float]:
    """The copy a transfer booked after ``predecessor`` in ``line``'s calendar comes from.

    The last reservation before it (MESI, MESIF: the last reader forwards) or the last
    ownership transfer (MOESI: the Owned copy). Returns ``(calendar slot, its domain, class,
    latency_ns)`` of the transfer to ``domain``.
    """
    source = owner if v.protocol == MOESI else predecessor
    supplier = _domain_of(v, int(v.i32[_u(v.cal_who + line * CALENDAR_SLOTS + source)]))
    d = 1 if dirty else 0
    return (source, supplier, _transfer_class(v, d, domain, supplier),
            _transfer_ns(v, d, domain, supplier, int(v.i32[_u(v.home + line)])))


@_jit()
def _batched_read(
    v: Any, thread: int, domain: int, line: int, now: float, kind: int, dirty: bool, klass: int,
    latency: float, supplier: int,
) -> tuple[int, float, float]:
    """A read another cache serves, under local batching: ``(class, latency, wait)``."""
    _make_room(v, line)
    overlap = float(v.f64[_u(v.scalars + S_OVERLAP)])
    position, predecessor, owner = _arbitrate(v, thread, line, now + overlap * latency)
    if predecessor >= 0:
        _, supplier, klass, latency = _calendar_supply(v, line, owner, predecessor, dirty,
                                                       domain)
    occupancy = max(float(v.f64[_u(v.scalars + S_SERIAL)]) * latency,
                    _service_ns(v, kind, domain, supplier))
    arrival = now + overlap * latency
    if position >= 0:
        return klass, latency, _queue_at(v, line, position, arrival, occupancy, 2 * thread)
    return klass, latency, _queue(v, line, arrival, occupancy, 2 * thread)


@_jit()
def _batched_ownership(
    v: Any, thread: int, core: int, domain: int, line: int, klass: int, latency: float,
    floor_ns: float, supplier: int, dirty: bool, supplied: bool, now: float,
) -> tuple[int, float, float]:
    """A store or atomic that queues, under local batching: ``(class, latency, wait)``.

    ``supplier`` is the directory's supplier core (-1: none), left out of the sharer count.
    """
    _make_room(v, line)
    overlap = float(v.f64[_u(v.scalars + S_OVERLAP)])
    position, predecessor, owner = _arbitrate(v, thread, line, now + overlap * latency)
    if predecessor < 0:
        return klass, latency, _queue(v, line, now + overlap * latency,
                                      _ownership_occupancy(v, core, domain, line, latency),
                                      2 * thread + 1)
    base = line * CALENDAR_SLOTS
    home = int(v.i32[_u(v.home + line)])
    source = -1
    if supplied:
        source, _, klass, floor_ns = _calendar_supply(v, line, owner, predecessor, dirty,
                                                      domain)
    farthest = 0.0
    service = 0.0
    for index in range(owner, predecessor + 1):
        who = int(v.i32[_u(v.cal_who + base + index)])
        if (who >> 1) // v.tpc == core:
            continue
        other = _domain_of(v, who)
        service = max(service, _service_ns(v, K_OWNERSHIP, domain, other))
        if index != source:
            farthest = max(farthest, _transfer_ns(v, 0, domain, other, home))
    count = 0
    for other in range(v.n_cores):
        if (other != core and other != supplier
                and v.i32[_u(v.holders + other * v.n_lines + line)] != 0):
            count += 1
    latency = floor_ns
    if count > 0:
        reach = farthest
        if count > 1:
            reach = farthest + float(v.f64[_u(v.scalars + S_PER_SHARER)]) * (count - 1)
        latency = max(latency, max(reach, float(v.f64[_u(v.scalars + S_UPGRADE)])))
    occupancy = max(float(v.f64[_u(v.scalars + S_SERIAL)]) * latency, service)
    arrival = now + overlap * latency
    if position >= 0:
        return klass, latency, _queue_at(v, line, position, arrival, occupancy, 2 * thread + 1)
    return klass, latency, _queue(v, line, arrival, occupancy, 2 * thread + 1)


@_jit()
def _queue_at(v: Any, line: int, position: int, arrival: float, occupancy: float,
              who: int) -> float:
    """Book a transfer ahead of waiting requests; the later reservations move back."""
    base = line * CALENDAR_SLOTS
    count = int(v.i32[_u(v.cal_count + line)])
    start = max(arrival, float(v.f64[_u(v.cal_end + base + position - 1)]))
    wait = start - arrival
    for index in range(count, position, -1):
        v.f64[_u(v.cal_start + base + index)] = v.f64[_u(v.cal_start + base + index - 1)]
        v.f64[_u(v.cal_end + base + index)] = v.f64[_u(v.cal_end + base + index - 1)]
        v.i32[_u(v.cal_who + base + index)] = v.i32[_u(v.cal_who + base + index - 1)]
    v.f64[_u(v.cal_start + base + position)] = start
    v.f64[_u(v.cal_end + base + position)] = start + occupancy
    v.i32[_u(v.cal_who + base + position)] = who
    count += 1
    v.i32[_u(v.cal_count + line)] = count
    window = float(v.f64[_u(v.scalars + S_WINDOW)])
    edge = start + occupancy
    for index in range(position + 1, count):
        booked_start = v.f64[_u(v.cal_start + base + index)]
        if booked_start >= edge:
            break
        moved_end = edge + (v.f64[_u(v.cal_end + base + index)] - booked_start)
        v.f64[_u(v.cal_start + base + index)] = edge
        v.f64[_u(v.cal_end + base + index)] = moved_end
        booked = v.i32[_u(v.cal_who + base + index)] >> 1
        v.f64[_u(v.debt_ns + booked)] += edge - booked_start
        v.f64[_u(v.line_wait_ns + line)] += edge - booked_start
        slot = booked * v.n_lines + line
        if v.f64[_u(v.tenure_start + slot)] == booked_start:
            v.f64[_u(v.tenure_start + slot)] = edge
        if index > position + 1:
            before = v.i32[_u(v.cal_who + base + index - 1)] >> 1
            before_slot = before * v.n_lines + line
            if (before != booked and v.f64[_u(v.tenure_start + before_slot)]
                    == v.f64[_u(v.cal_start + base + index - 1)]):
                v.f64[_u(v.tenure_end + before_slot)] = edge + window * (moved_end - edge)
        edge = moved_end
    _book_tenure(v, line, position, who)
    next_start = v.f64[_u(v.cal_start + base + position + 1)]
    next_end = v.f64[_u(v.cal_end + base + position + 1)]
    v.f64[_u(v.tenure_end + (who >> 1) * v.n_lines + line)] = (
        next_start + window * (next_end - next_start))
    return wait


@_jit(inline=True)
def _service_ns(v: Any, kind: int, req: int, sup: int) -> float:
    nd = v.n_domains
    return float(v.f64[_u(v.service_ns + (kind * nd + req) * nd + sup)])


@_jit()
def _ownership_occupancy(v: Any, core: int, domain: int, line: int, latency: float) -> float:
    """How long an ownership transfer occupies the line (``home`` rule).

    The part of ``latency`` after the request reached the home, at least the ownership service
    time to the farthest other holder.
    """
    occupancy = float(v.f64[_u(v.scalars + S_SERIAL)]) * latency
    for other in range(v.n_cores):
        if other != core and v.i32[_u(v.holders + other * v.n_lines + line)] != 0:
            occupancy = max(occupancy, _service_ns(v, K_OWNERSHIP, domain,
                                                   v.i32[_u(v.core_domain + other)]))
    return occupancy


@_jit(inline=True)
def _invalidation_latency(v: Any, domain: int, line: int, skip_core: int, supplier: int) -> float:
    latency = 0.0
    sharers = 0
    home = v.i32[_u(v.home + line)]
    for core in range(v.n_cores):
        if core in (skip_core, supplier):
            continue
        if v.i32[_u(v.holders + core * v.n_lines + line)] != 0:
            other_domain = v.i32[_u(v.core_domain + core)]
            latency = max(latency, _transfer_ns(v, 0, domain, other_domain, home))
            sharers += 1
    if sharers > 1:
        latency += float(v.f64[_u(v.scalars + S_PER_SHARER)]) * (sharers - 1)
    if sharers > 0:  # a store missing on a Shared line: at least an upgrade (see the reference)
        latency = max(latency, float(v.f64[_u(v.scalars + S_UPGRADE)]))
    return latency


@_jit(inline=True)
def _invalidate_others(v: Any, core: int, line: int, out: Any) -> None:
    count = 0
    if _any_holder(v, line, core):
        for other in range(v.n_cores):
            if other != core and v.i32[_u(v.holders + other * v.n_lines + line)] != 0:
                _remove_private(v, other, line)
                _set_holder(v, other, line, 0)
                count += 1
    if v.i32[_u(v.owner + line)] != core:
        v.i32[_u(v.owner + line)] = -1
        v.i32[_u(v.ostate + line)] = 0
    v.i64[_u(v.line_invalidations + line)] += count
    out[O_INVAL] += count


@_jit(inline=True)
def _drop_l3_copies(v: Any, domain: int, line: int) -> None:
    for other in range(v.n_domains):
        if other == domain and v.inclusion == INCLUSIVE:
            continue
        _l3_remove(v, other, line)


@_jit()
def _take_ownership(
    v: Any, thread: int, core: int, domain: int, line: int, klass: int, floor_ns: float,
    supplier: int, dirty: bool, supplied: bool, now: float, out: Any,
) -> tuple[int, float, float]:
    """A store's common step: invalidate every other copy, become the M owner.

    The latency is the larger of ``floor_ns`` and the slowest invalidation (the supplier core,
    if any, is not invalidated separately); the wait is the queueing behind the line's earlier
    transfers, if anybody else held it. ``klass`` is the access's class (local batching may
    change it: ``dirty`` and ``supplied`` describe the fetch, see :func:`_batched_ownership`).
    Returns ``(class, latency, wait)``.
    """
    others = _any_holder(v, line, core)
    latency = max(floor_ns, _invalidation_latency(v, domain, line, core, supplier))
    wait = 0.0
    if others:
        if v.home_rule:
            if v.f64[_u(v.scalars + S_BATCH)] > 1.0:
                klass, latency, wait = _batched_ownership(
                    v, thread, core, domain, line, klass, latency, floor_ns, supplier, dirty,
                    supplied, now)
            else:
                wait = _queue(v, line, now + float(v.f64[_u(v.scalars + S_OVERLAP)]) * latency,
                              _ownership_occupancy(v, core, domain, line, latency),
                              2 * thread + 1)
        else:
            wait = _queue(v, line, now, latency, 2 * thread + 1)
    _invalidate_others(v, core, line, out)
    _drop_l3_copies(v, domain, line)
    v.i32[_u(v.owner + line)] = core
    v.i32[_u(v.ostate + line)] = ST_M
    return klass, latency, wait


# ---------------------------------------------------------------------------- access paths


@_jit(inline=True)
def _load_miss(
    v: Any, thread: int, core: int, domain: int, line: int, mask: int, now: float, out: Any
) -> tuple[int, float, float]:
    """A load that missed the core's private caches."""
    if v.home_rule and _window_hit(v, thread, line, now, False):
        return C_L1, float(v.f64[_u(v.scalars + S_L1)]), 0.0
    owner = v.i32[_u(v.owner + line)]
    klass, latency, from_owner, dirty, from_l3 = _supplier(v, domain, line)
    if from_l3 == domain and v.inclusion == VICTIM and not _any_holder(v, line, -1):
        _l3_remove(v, domain, line)
    wait = 0.0
    if v.home_rule and (from_owner or (from_l3 >= 0 and from_l3 != domain)):
        supplier = v.i32[_u(v.core_domain + owner)] if from_owner else from_l3
        kind = K_READ_MODIFIED if dirty else K_READ_SHARED
        if v.f64[_u(v.scalars + S_BATCH)] > 1.0:
            klass, latency, wait = _batched_read(v, thread, domain, line, now, kind, dirty,
                                                 klass, latency, supplier)
        else:
            occupancy = max(float(v.f64[_u(v.scalars + S_SERIAL)]) * latency,
                            _service_ns(v, kind, domain, supplier))
            wait = _queue(v, line, now + float(v.f64[_u(v.scalars + S_OVERLAP)]) * latency,
                          occupancy, 2 * thread)
    if from_owner:
        state = v.i32[_u(v.ostate + line)]
        if v.protocol == MOESI and state in (ST_M, ST_O):
            v.i32[_u(v.ostate + line)] = ST_O
        else:
            v.i32[_u(v.owner + line)] = -1
            v.i32[_u(v.ostate + line)] = 0
        if dirty:
            _attribute_hitm(v, line, mask, out)
            if not v.home_rule:
                wait = _queue(v, line, now, latency, 2 * thread)
    elif dirty:
        _attribute_hitm(v, line, mask, out)
    # Grant: E if alone, F (MESIF without owner) or S.
    if not _any_holder(v, line, -1):
        v.i32[_u(v.owner + line)] = core
        v.i32[_u(v.ostate + line)] = ST_E
    elif v.i32[_u(v.owner + line)] < 0 and v.protocol == MESIF:
        v.i32[_u(v.owner + line)] = core
        v.i32[_u(v.ostate + line)] = ST_F
    _set_holder(v, core, line, 1)
    if v.inclusion == INCLUSIVE and from_l3 != domain:
        _insert_l3(v, domain, v.i32[_u(v.set3 + line)], line, False, _tick(v))
    _fill_private(v, core, line)
    return klass, latency, wait


@_jit(inline=True)
def _load(
    v: Any, thread: int, core: int, domain: int, line: int, mask: int, now: float, out: Any
) -> tuple[int, float, float]:
    slot = core * v.n_lines + line
    w1 = v.i32[_u(v.l1_way + slot)]
    if w1 >= 0:
        index = (core * v.s1 + v.i32[_u(v.set1 + line)]) * v.w1 + w1
        v.i64[_u(v.l1_stamp + index)] = _tick(v) | w1
        return C_L1, float(v.f64[_u(v.scalars + S_L1)]), 0.0
    w2 = v.i32[_u(v.l2_way + slot)]
    if w2 >= 0:
        index = (core * v.s2 + v.i32[_u(v.set2 + line)]) * v.w2 + w2
        v.i64[_u(v.l2_stamp + index)] = _tick(v) | w2
        _insert_l1(v, core, v.i32[_u(v.set1 + line)], line, _tick(v))
        return C_L2, float(v.f64[_u(v.scalars + S_L2)]), 0.0
    return _load_miss(v, thread, core, domain, line, mask, now, out)


@_jit(inline=True)
def _hit_cost(
    v: Any, thread: int, core: int, line: int, op: int, in_l1: bool, now: float
) -> tuple[int, float, float]:
    level_class = C_L1 if in_l1 else C_L2
    level_ns = float(v.f64[_u(v.scalars + S_L1)]) if in_l1 else float(v.f64[_u(v.scalars + S_L2)])
    if op != OP_RMW:
        return level_class, level_ns, 0.0
    writer = v.i32[_u(v.last_writer + line)]
    if writer >= 0 and writer != thread and writer // v.tpc == core:
        smt_ns = float(v.f64[_u(v.scalars + S_SMT)])
        if v.home_rule:
            wait = max(0.0, v.f64[_u(v.core_lock_end + core)] - now)
            v.f64[_u(v.core_lock_end + core)] = now + wait + smt_ns
            return C_SMT, smt_ns, wait
        return C_SMT, smt_ns, _queue(v, line, now, smt_ns, 2 * thread + 1)
    return level_class, max(float(v.f64[_u(v.scalars + S_ATOMIC)]), level_ns), 0.0


@_jit(inline=True)
def _write(
    v: Any, thread: int, core: int, domain: int, line: int, op: int, mask: int, now: float,
    out: Any,
) -> tuple[int, float, float]:
    slot = core * v.n_lines + line
    if v.i32[_u(v.l2_way + slot)] >= 0:
        in_l1 = v.i32[_u(v.l1_way + slot)] >= 0
        _touch_private(v, core, line, in_l1)
        state = v.i32[_u(v.ostate + line)]
        if v.i32[_u(v.owner + line)] == core and state in (ST_M, ST_E):
            if state == ST_E:
                v.i64[_u(v.dirty_mask + line)] = mask
            else:
                v.i64[_u(v.dirty_mask + line)] |= mask
            v.i32[_u(v.ostate + line)] = ST_M
            return _hit_cost(v, thread, core, line, op, in_l1, now)
        owned_dirty = v.i32[_u(v.owner + line)] == core and state == ST_O
        _, latency, wait = _take_ownership(
            v, thread, core, domain, line, C_UPGRADE, float(v.f64[_u(v.scalars + S_UPGRADE)]),
            -1, False, False, now, out)
        if owned_dirty:
            v.i64[_u(v.dirty_mask + line)] |= mask
        else:
            v.i64[_u(v.dirty_mask + line)] = mask
        return C_UPGRADE, latency, wait
    if v.home_rule and _window_hit(v, thread, line, now, True):
        l1_ns = float(v.f64[_u(v.scalars + S_L1)])
        return C_L1, max(float(v.f64[_u(v.scalars + S_ATOMIC)]), l1_ns) if op == OP_RMW else (
            l1_ns), 0.0
    klass, latency, from_owner, dirty, from_l3 = _supplier(v, domain, line)
    if dirty:
        _attribute_hitm(v, line, mask, out)
    supplier = v.i32[_u(v.owner + line)] if from_owner else -1
    klass, latency, wait = _take_ownership(
        v, thread, core, domain, line, klass, latency, supplier, dirty,
        from_owner or (from_l3 >= 0 and from_l3 != domain), now, out)
    _set_holder(v, core, line, 1)
    v.i64[_u(v.dirty_mask + line)] = mask
    if v.inclusion == INCLUSIVE and from_l3 != domain:
        _insert_l3(v, domain, v.i32[_u(v.set3 + line)], line, False, _tick(v))
    _fill_private(v, core, line)
    return klass, latency, wait


@_jit()
def _access(
    v: Any, thread: int, core: int, line: int, op: int, mask: int, now: float, out: Any
) -> tuple[int, float, float]:
    """One access with its per-line statistics; returns ``(class, latency_ns, wait_ns)``.

    The caller adds the class, latency and wait to ``out`` (the protocol adds the invalidation
    and HITM counts itself).
    """
    domain = v.i32[_u(v.core_domain + core)]
    if op == OP_LOAD:
        klass, latency, wait = _load(v, thread, core, domain, line, mask, now, out)
        v.i64[_u(v.read_mask + line)] |= mask
    else:
        klass, latency, wait = _write(v, thread, core, domain, line, op, mask, now, out)
        v.i64[_u(v.write_mask + line)] |= mask
        v.i32[_u(v.last_writer + line)] = thread
    v.i64[_u(v.line_ops + op * v.n_lines + line)] += 1
    v.i64[_u(v.line_class + klass * v.n_lines + line)] += 1
    v.f64[_u(v.line_wait_ns + line)] += wait
    return klass, latency, wait


@_jit(inline=True)
def _take_debt(v: Any, thread: int) -> float:
    """The delay ``thread`` still owes under local batching (0.0: none), now cleared.

    A request that went ahead of others moved their reservations back; each delay is owed by
    the requester's thread and paid before its next memory operation (see the reference's
    ``_queue_at``). Adding a zero debt leaves every sum unchanged.
    """
    index = _u(v.debt_ns + thread)
    debt = float(v.f64[index])
    if debt > 0.0:
        v.f64[index] = 0.0
        return debt
    return 0.0


# ---------------------------------------------------------------------------- entry points


@_jit()
def access(
    p: Any, i32: Any, i64: Any, f64: Any, thread: int, line: int, op: int, mask: int,
    now: float, out: Any,
) -> tuple[int, float, float]:
    """One memory operation; returns ``(class, latency_ns, wait_ns)`` and adds to ``out``."""
    v = _views(p, i32, i64, f64)
    debt = _take_debt(v, thread)
    klass, latency, wait = _access(v, thread, thread // v.tpc, line, op, mask, now + debt, out)
    wait += debt
    out[klass] += 1.0
    out[O_LATENCY] += latency
    out[O_WAIT] += wait
    out[O_STALL] += latency + wait
    return klass, latency, wait


@_jit()
def sequence(
    p: Any, i32: Any, i64: Any, f64: Any, thread: int, lines: Any, ops: Any, masks: Any,
    now: float, out: Any,
) -> tuple[float, float]:
    """Dependent operations back to back, as :func:`access` on each.

    Operation ``k`` is issued at ``now`` plus the costs of the operations before it; returns
    ``(total cost, total wait)``.
    """
    v = _views(p, i32, i64, f64)
    core = thread // v.tpc
    total = 0.0
    waited = 0.0
    for index in range(lines.shape[0]):
        debt = _take_debt(v, thread)
        klass, latency, wait = _access(v, thread, core, lines[index], ops[index], masks[index],
                                       now + total + debt, out)
        wait += debt
        out[klass] += 1.0
        out[O_LATENCY] += latency
        out[O_WAIT] += wait
        out[O_STALL] += latency + wait
        total += latency + wait
        waited += wait
    return total, waited


@_jit()
def scan(
    p: Any, i32: Any, i64: Any, f64: Any, thread: int, lines: Any, masks: Any, op: int,
    mlp: float, now: float, out: Any,
) -> float:
    """Many independent accesses; returns the stall (misses overlap ``mlp`` at a time).

    A load scan serves L1/L2 hits in its own loop; misses take the protocol path. The LRU clock
    and ``out``'s hit counters, latency and wait sums are kept in locals, which receive exactly
    the additions, in the same order, that the general path makes to the array. The per-line
    read masks and load counts (which the protocol never reads) are updated in a second loop.
    """
    v = _views(p, i32, i64, f64)
    core = thread // v.tpc
    debt = _take_debt(v, thread)  # paid first
    now += debt
    out[O_WAIT] += debt
    out[O_STALL] += debt
    stall = 0.0
    if op != OP_LOAD:
        for index in range(lines.shape[0]):
            klass, latency, wait = _access(v, thread, core, lines[index], op, masks[index], now,
                                           out)
            out[klass] += 1.0
            out[O_LATENCY] += latency
            out[O_WAIT] += wait
            stall += wait
            if klass != C_L1:
                stall += latency / mlp
        out[O_STALL] += stall
        return stall + debt
    domain = v.i32[_u(v.core_domain + core)]
    l1_ns = float(v.f64[_u(v.scalars + S_L1)])
    l2_ns = float(v.f64[_u(v.scalars + S_L2)])
    l2_stall = l2_ns / mlp
    l1_hits, l2_hits = out[C_L1], out[C_L2]
    latency_sum, wait_sum = out[O_LATENCY], out[O_WAIT]
    clock = v.i64[_u(v.counters + 0)]
    core_lines = core * v.n_lines
    l1_set0, l2_set0 = core * v.s1, core * v.s2
    l1_class_row = v.line_class + C_L1 * v.n_lines
    l2_class_row = v.line_class + C_L2 * v.n_lines
    # Hits skip line_wait_ns += 0.0 and stall += 0.0: neither ever holds -0.0, so both are no-ops.
    for index in range(lines.shape[0]):
        line = lines[index]
        mask = masks[index]
        slot = core_lines + line
        w1 = v.i32[_u(v.l1_way + slot)]
        w2 = v.i32[_u(v.l2_way + slot)]
        if w1 >= 0:
            clock += MAX_WAYS
            v.i64[_u(v.l1_stamp + (l1_set0 + v.i32[_u(v.set1 + line)]) * v.w1 + w1)] = clock | w1
            v.i64[_u(l1_class_row + line)] += 1
            l1_hits += 1.0
            latency_sum += l1_ns
            wait_sum += 0.0
        elif w2 >= 0:
            clock += MAX_WAYS
            v.i64[_u(v.l2_stamp + (l2_set0 + v.i32[_u(v.set2 + line)]) * v.w2 + w2)] = clock | w2
            clock += MAX_WAYS
            _insert_l1(v, core, v.i32[_u(v.set1 + line)], line, clock)
            v.i64[_u(l2_class_row + line)] += 1
            l2_hits += 1.0
            latency_sum += l2_ns
            wait_sum += 0.0
            stall += l2_stall
        else:
            v.i64[_u(v.counters + 0)] = clock
            klass, latency, wait = _load_miss(v, thread, core, domain, line, mask, now, out)
            clock = v.i64[_u(v.counters + 0)]
            v.i64[_u(v.line_class + klass * v.n_lines + line)] += 1
            if klass == C_L1:  # the home rule's owner window (never an L2 hit)
                l1_hits += 1.0
            else:
                out[klass] += 1.0
            latency_sum += latency
            wait_sum += wait
            v.f64[_u(v.line_wait_ns + line)] += wait
            stall += wait
            stall += latency / mlp
    for index in range(lines.shape[0]):
        line = lines[index]
        v.i64[_u(v.read_mask + line)] |= masks[index]
        v.i64[_u(v.line_ops + OP_LOAD * v.n_lines + line)] += 1
    v.i64[_u(v.counters + 0)] = clock
    out[C_L1], out[C_L2] = l1_hits, l2_hits
    out[O_LATENCY], out[O_WAIT] = latency_sum, wait_sum
    out[O_STALL] += stall
    return stall + debt


@_jit()
def _fill_whole_l2(v: Any, core: int, index2: int, private_lines: int, clock: int) -> int:
    """:func:`pollute`'s L2 fills when every set receives at least as many as it has ways.

    The replay's fill ``j`` goes to set ``(index2 + j) % s2`` and takes the way of least stamp,
    so the ``r``-th fill of a set evicts the way of its ``r``-th least stamp: a tracked line of
    rank ``r`` in set ``s`` leaves at fill ``r * s2 + (s - index2) % s2``. The tracked victims
    are noted by fill in ``l2_fill_victim`` (one L2's worth of scratch, kept at -1 between
    calls) and evicted in that order, each at the clock the replay would have (``MAX_WAYS`` per
    fill plus the ticks of earlier spills), so the L3 and the directory end up exactly as after
    the replay. Then every way holds :data:`JUNK`. Returns the clock after the fills.
    """
    s2, w2 = v.s2, v.w2
    first = core * s2 * w2
    tracked = 0
    for index in range(s2):
        base = first + index * w2
        behind = (index - index2 + s2) % s2
        for w in range(w2):
            tag = v.i32[_u(v.l2_tag + base + w)]
            if tag >= 0:
                key = v.i64[_u(v.l2_stamp + base + w)]
                rank = 0
                for other in range(w2):
                    if v.i64[_u(v.l2_stamp + base + other)] < key:
                        rank += 1
                v.i32[_u(v.l2_fill_victim + rank * s2 + behind)] = tag
                tracked += 1
    extra = 0
    core_lines = core * v.n_lines
    fill = 0
    while tracked:
        victim = v.i32[_u(v.l2_fill_victim + fill)]
        if victim >= 0:
            v.i32[_u(v.l2_fill_victim + fill)] = -1
            at = clock + (fill + 1) * MAX_WAYS + extra
            v.i32[_u(v.l2_way + core_lines + victim)] = -1
            v.i64[_u(v.counters + 0)] = at
            _evicted_from_l2(v, core, victim)
            extra += v.i64[_u(v.counters + 0)] - at
            tracked -= 1
        fill += 1
    clock += private_lines * MAX_WAYS + extra
    for base in range(first, first + s2 * w2, w2):
        for w in range(w2):
            v.i32[_u(v.l2_tag + base + w)] = JUNK
            v.i64[_u(v.l2_stamp + base + w)] = clock | w
    return clock


@_jit()
def pollute(p: Any, i32: Any, i64: Any, f64: Any, core: int, private_lines: int,
            l3_lines: int) -> None:
    """Pass untracked lines through a core's private caches and its domain's L3.

    Untracked line ``j`` fills the next L2 set and then the next L1 set (round robin from the
    core's pointer); the L3 lines then fill the domain's next L3 sets. The LRU clock is kept in
    a local and stored back around the rare tracked victim of the L2, whose spill to the L3
    ticks the clock itself.

    When every L1 set receives at least as many fills as it has ways, the L1 ends up full of
    untracked lines whatever its state before: that case writes the end state directly (every
    tracked line leaves the core's L1, every way holds :data:`JUNK`) instead of replaying the
    fills. The L1 stamps then differ from a replay, and the clock advances less, but only the
    order of stamps within a set is ever compared, so the canonical state (JUNK ways carry no
    order that can be observed) and every later access are the same. When every L2 set receives
    at least as many fills as it has ways too (a footprint of the L2's size: a deep idle state's
    flush), :func:`_fill_whole_l2` does the same for the L2.
    """
    v = _views(p, i32, i64, f64)
    s1, w1, s2, w2 = v.s1, v.w1, v.s2, v.w2
    start = v.i32[_u(v.private_ptr + core)]
    index1, index2 = start % s1, start % s2
    set1_base, set2_base = core * s1, core * s2
    core_lines = core * v.n_lines
    clock = v.i64[_u(v.counters + 0)]
    whole_l1 = private_lines >= s1 * w1
    replayed = private_lines
    if whole_l1 and private_lines >= s2 * w2:
        clock = _fill_whole_l2(v, core, index2, private_lines, clock)
        replayed = 0
    for _ in range(replayed):
        clock += MAX_WAYS
        base = (set2_base + index2) * w2
        w = _way_to_fill(v.i64, v.l2_stamp + base, w2)
        victim = v.i32[_u(v.l2_tag + base + w)]
        stamp = clock | w
        if victim >= 0:
            v.i32[_u(v.l2_way + core_lines + victim)] = -1
            v.i32[_u(v.l2_tag + base + w)] = EMPTY
            v.i64[_u(v.counters + 0)] = clock
            _evicted_from_l2(v, core, victim)
            clock = v.i64[_u(v.counters + 0)]
        v.i32[_u(v.l2_tag + base + w)] = JUNK
        v.i64[_u(v.l2_stamp + base + w)] = stamp
        if not whole_l1:
            clock += MAX_WAYS
            base = (set1_base + index1) * w1
            w = _way_to_fill(v.i64, v.l1_stamp + base, w1)
            victim = v.i32[_u(v.l1_tag + base + w)]
            if victim >= 0:
                v.i32[_u(v.l1_way + core_lines + victim)] = -1  # an L1 victim stays in the L2
            v.i32[_u(v.l1_tag + base + w)] = JUNK
            v.i64[_u(v.l1_stamp + base + w)] = clock | w
            index1 += 1
            if index1 == s1:
                index1 = 0
        index2 += 1
        if index2 == s2:
            index2 = 0
    if whole_l1:
        clock += MAX_WAYS
        first = set1_base * w1
        for way in range(first, first + s1 * w1):
            victim = v.i32[_u(v.l1_tag + way)]
            if victim >= 0:
                v.i32[_u(v.l1_way + core_lines + victim)] = -1  # an L1 victim stays in the L2
            v.i32[_u(v.l1_tag + way)] = JUNK
            v.i64[_u(v.l1_stamp + way)] = clock | ((way - first) % w1)
    v.i32[_u(v.private_ptr + core)] = (start + private_lines) % (s1 * s2)
    domain = v.i32[_u(v.core_domain + core)]
    start3 = v.i32[_u(v.l3_ptr + domain)]
    index3 = start3
    for _ in range(l3_lines):
        clock += MAX_WAYS  # a JUNK fill of the L3 never ticks the clock itself
        _insert_l3(v, domain, index3, JUNK, False, clock)
        index3 += 1
        if index3 == v.s3:
            index3 = 0
    v.i32[_u(v.l3_ptr + domain)] = (start3 + l3_lines) % v.s3
    v.i64[_u(v.counters + 0)] = clock
