"""Numeric codes shared by the coherence reference, the compiled kernel and the results.

States, operations and access classes are small integers so that the compiled kernel can store
them in arrays; the enums give them names and descriptions (the protocol as data, as gem5's
SLICC and ZSim's ``MESIState`` do).
"""

from __future__ import annotations

from enum import IntEnum


class LineState(IntEnum):
    """State of one cache's copy of a line (only owners carry M/E/O/F; others are S)."""

    I = 0  # noqa: E741  (the protocol's own name)
    """Invalid: no copy."""
    S = 1
    """Shared: clean, read-only; not a forwarder."""
    E = 2
    """Exclusive: the only copy, clean; a store upgrades it silently to M."""
    M = 3
    """Modified: the only copy, dirty."""
    O = 4  # noqa: E741
    """Owned (MOESI): dirty and shared; this copy forwards and will write back."""
    F = 5
    """Forward (MESIF): clean and shared; this copy answers reads."""


DIRTY_STATES = frozenset({LineState.M, LineState.O})


class Op(IntEnum):
    """Memory operation issued by a hardware thread."""

    LOAD = 0
    STORE = 1
    RMW = 2
    """Locked read-modify-write (CAS, fetch-add, exchange, test-and-set)."""


class AccessClass(IntEnum):
    """Where an access was served from: the latency class it is charged under.

    Names follow perf c2c / Intel MLC: HIT = clean line supplied by another cache, HITM = modified
    (dirty) line. ``LOCAL`` = same L3 domain, ``CROSS_DOMAIN`` = another L3 domain of the same
    socket (AMD CCX to CCX), ``REMOTE`` = another socket.
    """

    L1_HIT = 0
    L2_HIT = 1
    L3_HIT = 2
    SMT_SIBLING = 3
    LOCAL_HIT = 4
    LOCAL_HITM = 5
    CROSS_DOMAIN_HIT = 6
    CROSS_DOMAIN_HITM = 7
    REMOTE_HIT = 8
    REMOTE_HITM = 9
    DRAM_LOCAL = 10
    DRAM_REMOTE = 11
    UPGRADE = 12
    """A store or RMW on a line held shared: only invalidations, no data transfer."""


N_CLASSES = len(AccessClass)
CLASS_NAMES: tuple[str, ...] = tuple(c.name.lower() for c in AccessClass)
HITM_CLASSES = frozenset(
    {AccessClass.LOCAL_HITM, AccessClass.CROSS_DOMAIN_HITM, AccessClass.REMOTE_HITM}
)
TRANSFER_CLASSES = frozenset(
    {
        AccessClass.LOCAL_HIT,
        AccessClass.LOCAL_HITM,
        AccessClass.CROSS_DOMAIN_HIT,
        AccessClass.CROSS_DOMAIN_HITM,
        AccessClass.REMOTE_HIT,
        AccessClass.REMOTE_HITM,
    }
)


class Out(IntEnum):
    """Slots of the per-call output vector (after the ``N_CLASSES`` class counters)."""

    LATENCY_NS = N_CLASSES
    """Sum of the access latencies (before memory-level parallelism)."""
    WAIT_NS = N_CLASSES + 1
    """Time spent queued behind other ownership transfers of the same line."""
    STALL_NS = N_CLASSES + 2
    """Time the issuing thread is stalled (latency after MLP, plus waits)."""
    INVALIDATIONS = N_CLASSES + 3
    """Private copies invalidated in other cores."""
    FALSE_SHARING_HITM = N_CLASSES + 4
    """HITM transfers where the bytes accessed and the bytes dirtied are disjoint."""
    TRUE_SHARING_HITM = N_CLASSES + 5
    """HITM transfers where they overlap."""
    CAS_ATTEMPTS = N_CLASSES + 6
    """Compare-and-swap attempts, failed ones included (counted by the processes that issue
    them, :class:`simulator.runtime.atomic_word.AtomicWord`; the coherence kernel sees RMWs)."""
    CAS_FAILURES = N_CLASSES + 7
    """Compare-and-swap attempts that failed because the word changed since it was read."""


OUT_SIZE = N_CLASSES + 8

# Codes of the machine-level choices, as stored in the kernel's parameter vector.
PROTOCOL_CODES = {"MESI": 0, "MESIF": 1, "MOESI": 2}
INCLUSION_CODES = {"inclusive": 0, "non_inclusive": 1, "victim": 2}

EMPTY = -1
"""Tag of an empty cache way."""
JUNK = -2
"""Tag of a way holding an untracked line (private footprint of other work)."""
CALENDAR_SLOTS = 32
"""Reservations of ownership transfers kept per line by the hot-line queue (when full, the two
oldest merge into one span, so a queue of any length is kept)."""
