"""PostgreSQL shared-memory layouts: struct offsets, allocation, line sharing and line counts."""

from __future__ import annotations

import itertools
import math

import pytest

from simulator.errors import ConfigError
from simulator.hardware.layout import Struct
from snapsim_models.shmem import structs as st
from snapsim_models.shmem.build import build_shared_memory
from snapsim_models.shmem.memory import CSN_COUNTER_FIELD, PgSharedMemory, ProcCounts
from snapsim_models.snapshots import ALGORITHMS, VERSIONS

M = 100  # max_connections of most tests

MODERN = ("pre14", "pgxact_split", "post14", "csn")
V14 = ("pgxact_split", "post14", "post14_lockfree", "csn", "post14_shared_cache", "running_xids")


def shm(version: str, max_connections: int = M, **kwargs: int) -> PgSharedMemory:
    return build_shared_memory(ALGORITHMS[version], max_connections, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- struct sizes


@pytest.mark.parametrize(
    ("struct", "size"),
    [
        (st.PGPROC_91, 656),
        (st.PGPROC_13, 856),
        (st.PGPROC_14, 880),
        (st.PGXACT_13, 12),
        (st.PROCARRAY_91, 32),
        (st.PROCARRAY_13, 40),
        (st.VARIABLE_CACHE_91, 40),
        (st.VARIABLE_CACHE_13, 56),
        (st.VARIABLE_CACHE_14, 72),
        (st.VARIABLE_CACHE_CSN, 72),
        (st.LWLOCK_91, 24),
        (st.LWLOCK_13, 16),
        (st.BUFFER_DESC_13, 52),
    ],
)
def test_struct_sizes(struct: Struct, size: int) -> None:
    assert struct.size == size


COMPILED_OFFSETS = [
    # 9.1 PGPROC (proc.h:68-140@9.1)
    (st.PGPROC_91, "lxid", 28),
    (st.PGPROC_91, "xid", 32),
    (st.PGPROC_91, "xmin", 36),
    (st.PGPROC_91, "inCommit", 56),
    (st.PGPROC_91, "vacuumFlags", 57),
    (st.PGPROC_91, "recoveryConflictPending", 58),
    (st.PGPROC_91, "myProcLocks", 136),
    (st.PGPROC_91, "subxids.overflowed", 392),
    (st.PGPROC_91, "subxids.nxids", 396),
    (st.PGPROC_91, "subxids.xids", 400),
    # 13 PGXACT, PGPROC, ProcArrayStruct, PROC_HDR (proc.h, procarray.c @13)
    (st.PGXACT_13, "xid", 0),
    (st.PGXACT_13, "xmin", 4),
    (st.PGXACT_13, "vacuumFlags", 8),
    (st.PGXACT_13, "overflowed", 9),
    (st.PGXACT_13, "nxids", 10),
    (st.PGPROC_13, "subxids.xids", 416),
    (st.PROCARRAY_13, "numProcs", 0),
    (st.PROCARRAY_13, "maxProcs", 4),
    (st.PROCARRAY_13, "replication_slot_xmin", 32),
    (st.PROCARRAY_13, "replication_slot_catalog_xmin", 36),
    (st.PROC_HDR_13, "freeProcs", 24),
    (st.PROC_HDR_13, "procArrayGroupFirst", 56),
    (st.PROC_HDR_13, "clogGroupFirst", 60),
    # 14 PGPROC and PROC_HDR (proc.h:121-254, :315-360@14)
    (st.PGPROC_14, "xid", 52),
    (st.PGPROC_14, "xmin", 56),
    (st.PGPROC_14, "lxid", 60),
    (st.PGPROC_14, "pgxactoff", 68),
    (st.PGPROC_14, "pgprocno", 72),
    (st.PGPROC_14, "delayChkpt", 144),
    (st.PGPROC_14, "statusFlags", 145),
    (st.PGPROC_14, "subxidStatus", 440),
    (st.PGPROC_14, "subxids.xids", 444),
    (st.PGPROC_14, "procArrayGroupMember", 700),
    (st.PGPROC_14, "procArrayGroupNext", 704),
    (st.PROC_HDR_14, "xids", 8),
    (st.PROC_HDR_14, "subxidStates", 16),
    (st.PROC_HDR_14, "statusFlags", 24),
    (st.PROC_HDR_14, "procArrayGroupFirst", 72),
    (st.PROC_HDR_14, "clogGroupFirst", 76),
    # VariableCacheData (transam.h @9.1, @13, @14)
    (st.VARIABLE_CACHE_91, "nextXid", 8),
    (st.VARIABLE_CACHE_91, "latestCompletedXid", 36),
    (st.VARIABLE_CACHE_13, "nextFullXid", 8),
    (st.VARIABLE_CACHE_13, "oldestXid", 16),
    (st.VARIABLE_CACHE_13, "latestCompletedXid", 48),
    (st.VARIABLE_CACHE_13, "oldestClogXid", 52),
    (st.VARIABLE_CACHE_14, "nextXid", 8),
    (st.VARIABLE_CACHE_14, "oldestXid", 16),
    (st.VARIABLE_CACHE_14, "latestCompletedXid", 48),
    (st.VARIABLE_CACHE_14, "xactCompletionCount", 56),
    (st.VARIABLE_CACHE_14, "oldestClogXid", 64),
    # LWLock (lwlock.h@13), BufferDesc (buf_internals.h@13)
    (st.LWLOCK_13, "state", 4),
    (st.BUFFER_DESC_13, "state", 24),
    (st.BUFFER_DESC_13, "content_lock", 36),
]


@pytest.mark.parametrize(("struct", "field", "offset"), COMPILED_OFFSETS)
def test_compiled_offsets(struct: Struct, field: str, offset: int) -> None:
    assert struct.field(field)[0] == offset


def test_pgproc_13_assumed_offsets_reproduce_compiled_numbers() -> None:
    # the recomputed layout ends exactly at 856 and puts subxids.xids at 416
    off, size = st.PGPROC_13.field("lockGroupLink")
    assert off + size == 856
    off, size = st.PGPROC_13.field("myProcLocks")
    assert off + size == 416


def test_csn_pgproc_extends_14() -> None:
    for name, span in st.PGPROC_14.fields.items():
        assert st.PGPROC_CSN.field(name) == span
    assert st.PGPROC_CSN.field("snapshotcsn") == (880, 8)


# --------------------------------------------------------------------------- build


def test_versions() -> None:
    assert VERSIONS == ("pg91", "pre14", "pgxact_split", "post14", "post14_lockfree", "csn",
                        "post14_shared_cache", "running_xids")


def test_each_algorithm_names_its_layout_family_and_what_if_regions() -> None:
    """The layout and the regions a what-if appends are the algorithm class's; the builder is
    handed the class and looks no name up."""
    assert {name: cls.layout for name, cls in ALGORITHMS.items()} == {
        "pg91": "pg91", "pre14": "pg13", "pgxact_split": "pg14", "post14": "pg14",
        "post14_lockfree": "pg14", "csn": "csn", "post14_shared_cache": "pg14",
        "running_xids": "pg14"}
    assert [name for name, cls in ALGORITHMS.items() if cls.shared_snapshot] == [
        "post14_shared_cache"]
    assert [name for name, cls in ALGORITHMS.items() if cls.running_xids_array] == [
        "running_xids"]
    for name, cls in ALGORITHMS.items():
        memory = build_shared_memory(cls, 2)
        assert (memory.version, memory.layout) == (name, cls.layout)
        assert (memory.shared_snapshot is not None) is cls.shared_snapshot
        assert (memory.running_xids is not None) is cls.running_xids_array


@pytest.mark.parametrize("version", VERSIONS)
def test_regions_are_disjoint_and_present(version: str) -> None:
    mem = shm(version)
    spans = sorted((r.base, r.end, r.name) for r in mem.memory.regions)
    for (_, end, a), (start, _, b) in itertools.pairwise(spans):
        assert end <= start, (a, b)
    assert mem.procarray.count == 1
    assert mem.pgproc.element.name == "PGPROC"
    assert (mem.pgxact is not None) == (version == "pre14")
    assert (mem.xids is not None) == (version in V14)
    assert (mem.subxid_states is not None) == (version in V14)
    assert (mem.status_flags is not None) == (version in V14)
    assert (mem.csn_log is not None) == (version == "csn")
    assert (mem.csn_counter is not None) == (version == "csn")
    assert (mem.commit_seq_no_lock is not None) == (version == "csn")
    assert (mem.shared_snapshot is not None) == (version == "post14_shared_cache")
    assert (mem.shared_snapshot_xids is not None) == (version == "post14_shared_cache")
    assert (mem.running_xids is not None) == (version == "running_xids")
    assert (mem.running_hdr is not None) == (version == "running_xids")


@pytest.mark.parametrize("other", ["post14", "post14_lockfree"])
def test_pgxact_split_and_post14_share_memory(other: str) -> None:
    a, b = shm("pgxact_split"), shm(other)
    assert [(r.name, r.base, r.count, r.stride) for r in a.memory.regions] == [
        (r.name, r.base, r.count, r.stride) for r in b.memory.regions
    ]


def test_shared_cache_appends_the_shared_snapshot_to_post14s_memory() -> None:
    """post14_shared_cache: post14's regions at post14's addresses, then the header alone on a
    128-aligned line (32 B) and the xid array from the next 128-B boundary, one 4-B slot per
    procArray entry (maxProcs = 10 + 3 + 1 + 8 + 10 = 32 for max_connections 10: 128 B, 2
    lines)."""
    base, shared = shm("post14", 10), shm("post14_shared_cache", 10)
    regions = [(r.name, r.base, r.count, r.stride) for r in shared.memory.regions]
    assert regions[:-2] == [(r.name, r.base, r.count, r.stride) for r in base.memory.regions]
    header, xids = shared.shared_snapshot, shared.shared_snapshot_xids
    assert header is not None
    assert xids is not None
    names = [r.name for r in shared.memory.regions[-2:]]
    assert names == ["SharedSnapshot", "sharedSnapshotXids"]
    assert header.base % 128 == 0
    assert xids.base == header.base + 128
    assert xids.count == shared.procs.procarray_max_procs == 32
    assert {header.line_of(0, name) for name in ("count", "claim", "xmin", "xmax", "xcnt")} == {
        header.base // 64}
    assert {xids.line_of(i, None) for i in range(32)} == {xids.base // 64, xids.base // 64 + 1}


def test_running_xids_adds_its_two_regions_after_14s() -> None:
    """The what-if's count (8 B, 128-aligned) and its 8-B entries right after it, allocated last:
    every 14 region keeps its address, and the count shares its line with entries 0..6."""
    base, what_if = shm("pgxact_split"), shm("running_xids")
    regions = [(r.name, r.base, r.count, r.stride) for r in what_if.memory.regions]
    assert regions[:-2] == [(r.name, r.base, r.count, r.stride) for r in base.memory.regions]
    hdr, entries = what_if.running_hdr, what_if.running_xids
    assert hdr is not None
    assert entries is not None
    assert [name for name, *_ in regions[-2:]] == ["RunningXids", "runningXids"]
    assert hdr.base % 128 == 0
    assert entries.base == hdr.base + 8
    assert entries.count == what_if.procs.procarray_max_procs
    line = hdr.line_of(0, "numRunning")
    assert {entries.line_of(i, None) for i in range(7)} == {line}
    assert entries.line_of(7, None) == line + 1


def test_bad_inputs_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="max_connections"):
        build_shared_memory(ALGORITHMS["pre14"], 0)
    with pytest.raises(ConfigError, match="pg91_pgproc_phase"):
        build_shared_memory(ALGORITHMS["pg91"], 10, pg91_pgproc_phase=4)
    with pytest.raises(ConfigError, match="base"):
        build_shared_memory(ALGORITHMS["post14"], 10, base=64)
    with pytest.raises(ConfigError, match=r"procs\.max_connections"):
        build_shared_memory(ALGORITHMS["post14"], 10, procs=ProcCounts(11))


def test_proc_counts() -> None:
    pg13 = ProcCounts.for_layout("pg13", 100)
    assert pg13.max_backends == 100 + 3 + 1 + 8 + 10
    assert pg13.total_procs == 122 + 4
    assert pg13.procarray_max_procs == 122
    assert pg13.autovacuum_launcher_pgprocno == 103
    assert pg13.logical_launcher_pgprocno == 111
    pg91 = ProcCounts.for_layout("pg91", 100)
    assert pg91.max_backends == 104
    assert pg91.logical_launcher_pgprocno is None
    assert shm("pg91").pgproc.count == 104
    assert shm("pre14").pgxact.count == 126  # type: ignore[union-attr]
    assert shm("post14").xids.count == 127  # type: ignore[union-attr]
    assert shm("post14").pgprocnos.count == 122


# --------------------------------------------------------------------------- PGXACT (pre14)


def test_pgxact_is_128_aligned_and_5_33_per_line() -> None:
    pgxact = shm("pre14", 1000).pgxact
    assert pgxact is not None
    assert pgxact.base % 128 == 0
    assert 64 / pgxact.stride == pytest.approx(5.33, abs=0.01)
    # 16 entries per 192-B period = 3 lines
    assert len(pgxact.lines_touched(0, 16)) == 3


def test_pgxact_straddlers_are_k5_and_k10_of_each_period() -> None:
    pgxact = shm("pre14", 1000).pgxact
    assert pgxact is not None
    straddlers = [k for k in range(pgxact.count) if pgxact.straddles(k)]
    assert straddlers == [k for k in range(pgxact.count) if k % 16 in (5, 10)]
    for k in straddlers:
        xid, xmin, flags = (pgxact.line_of(k, f) for f in ("xid", "xmin", "vacuumFlags"))
        assert not any(pgxact.straddles(k, f) for f in ("xid", "xmin", "vacuumFlags"))
        if k % 16 == 5:  # bytes 60..71: xid on one line, xmin and the flags on the next
            assert (xmin, flags) == (xid + 1, xid + 1)
        else:  # k = 10, bytes 56..67: xid and xmin on one line, only the flags on the next
            assert (xmin, flags) == (xid, xid + 1)


def test_pgxact_field_span_masks() -> None:
    pgxact = shm("pre14").pgxact
    assert pgxact is not None
    first = pgxact.base // 64
    # entry 5: bytes 60..71 of the array = xid at 60..63, xmin at 0..3 of the next line
    assert pgxact.field_span(5, "xid") == [(first, 0xF << 60)]
    assert pgxact.field_span(5, "xmin") == [(first + 1, 0xF)]
    assert pgxact.field_span(5, "vacuumFlags") == [(first + 1, 1 << 4)]
    assert pgxact.field_span(5) == [(first, 0xF << 60), (first + 1, 0xFF)]
    # entry 10: bytes 120..131 = 56..67 of line 1: xid and xmin on line 1, flags on line 2
    assert pgxact.field_span(10, "xid") == [(first + 1, 0xF << 56)]
    assert pgxact.field_span(10, "xmin") == [(first + 1, 0xF << 60)]
    assert pgxact.fields_span(10, ["xid", "xmin", "vacuumFlags", "nxids"]) == [
        (first + 1, 0xFF << 56),
        (first + 2, 0b101),
    ]


def test_pgxact_labels() -> None:
    mem = shm("pre14")
    assert mem.pgxact is not None
    first = mem.pgxact.base // 64
    assert [mem.label_for_line(first + i) for i in range(4)] == [
        "PGXACT[0..5]",
        "PGXACT[5..10]",
        "PGXACT[10..15]",
        "PGXACT[16..21]",
    ]


# --------------------------------------------------------------------------- 14 dense arrays


@pytest.mark.parametrize(
    ("attr", "per_line", "name"),
    [
        ("xids", 16, "xids"),
        ("subxid_states", 32, "subxidStates"),
        ("status_flags", 64, "statusFlags"),
    ],
)
@pytest.mark.parametrize("version", V14)
def test_dense_arrays(version: str, attr: str, per_line: int, name: str) -> None:
    mem = shm(version, 1000)
    region = getattr(mem, attr)
    assert region.base % 128 == 0
    assert region.stride == 64 // per_line
    first = region.base // 64
    assert len(region.elements_on_line(first)) == per_line
    assert mem.label_for_line(first + 1) == f"{name}[{per_line}..{2 * per_line - 1}]"
    assert not any(region.straddles(k) for k in range(region.count))


def test_subxid_state_fields() -> None:
    states = shm("post14").subxid_states
    assert states is not None
    assert states.element.field("count") == (0, 1)
    assert states.element.field("overflowed") == (1, 1)


# --------------------------------------------------------------------------- PGPROC phases


@pytest.mark.parametrize("version", ["pgxact_split", "post14"])
def test_pgproc_14_hot_bytes_never_straddle(version: str) -> None:
    pgproc = shm(version, 200).pgproc
    assert pgproc.base % 128 == 0
    assert {pgproc.element_address(k) % 64 for k in range(pgproc.count)} == {0, 16, 32, 48}
    for k in range(pgproc.count):
        assert len(pgproc.fields_span(k, ["xid", "xmin", "lxid"])) == 1
        assert pgproc.line_of(k, "xid") == pgproc.line_of(k, "lxid")


def test_csn_snapshotcsn_in_own_pgproc() -> None:
    pgproc = shm("csn", 200).pgproc
    assert pgproc.stride == 888
    assert not any(pgproc.straddles(k, "snapshotcsn") for k in range(pgproc.count))


def test_pgproc_880_is_48_mod_64() -> None:
    assert 880 % 64 == 48
    assert 856 % 64 == 24


def test_pg91_pgproc_phase_shift() -> None:
    pgproc = shm("pg91").pgproc
    assert 656 % 64 == 16
    assert pgproc.base % 64 == 0
    assert [pgproc.element_address(k) % 64 for k in range(5)] == [0, 16, 32, 48, 0]


@pytest.mark.parametrize(("phase", "per_four"), [(0, 1), (32, 1), (8, 2), (40, 2)])
def test_pg91_hot_bytes_straddle(phase: int, per_four: int) -> None:
    pgproc = shm("pg91", 400, pg91_pgproc_phase=phase).pgproc
    assert pgproc.base % 64 == phase
    straddling = [
        k
        for k in range(pgproc.count)
        if len({p.line for p in pgproc.fields_span(k, ["xid", "xmin", "vacuumFlags"])}) > 1
    ]
    assert len(straddling) == per_four * pgproc.count // 4
    # the S line (overflowed, nxids) never straddles at these phases
    assert not any(
        len(pgproc.fields_span(k, ["subxids.overflowed", "subxids.nxids"])) > 1
        for k in range(pgproc.count)
    )


# --------------------------------------------------------------------------- VariableCache


@pytest.mark.parametrize("version", V14)
def test_variable_cache_14_line_zero(version: str) -> None:
    vc = shm(version).variable_cache
    assert vc.base % 128 == 0
    fields = ["nextXid", "oldestXid", "latestCompletedXid"]
    fields += (
        ["xactCompletionCount"] if version != "csn" else [CSN_COUNTER_FIELD, "oldestActiveXid"]
    )
    assert {vc.line_of(0, f) for f in fields} == {vc.base // 64}
    assert all(not vc.straddles(0, f) for f in fields)
    assert vc.line_of(0, "oldestClogXid") == vc.base // 64 + 1


def test_variable_cache_13_one_line() -> None:
    vc = shm("pre14").variable_cache
    assert vc.base % 128 == 0
    assert len(vc.lines()) == 1
    assert vc.line_of(0, "nextFullXid") == vc.line_of(0, "latestCompletedXid")


def test_variable_cache_91_at_offset_56() -> None:
    mem = shm("pg91")
    vc = mem.variable_cache
    assert vc.base == 56
    assert vc.line_of(0, "nextOid") == 0  # ShmemLock's line
    assert mem.memory["ShmemLock"].line_of(0) == 0
    assert {vc.line_of(0, f) for f in ("nextXid", "oldestXid", "latestCompletedXid")} == {1}
    assert mem.label_for_line(0) == "PGShmemHeader & ShmemLock & VariableCache"
    assert mem.label_for_line(1) == "VariableCache+8"


def test_csn_counter_is_on_the_variable_cache() -> None:
    mem = shm("csn")
    assert mem.csn_counter is mem.variable_cache
    assert mem.variable_cache.address(0, CSN_COUNTER_FIELD) == mem.variable_cache.base + 40


# --------------------------------------------------------------------------- LWLocks


@pytest.mark.parametrize("version", MODERN)
def test_proc_array_lock_alone_on_its_line(version: str) -> None:
    mem = shm(version)
    lock = mem.proc_array_lock
    assert mem.lwlocks.base % 128 == 0
    assert mem.lwlocks.stride == 128
    assert lock.address(0) == mem.lwlocks.base + 4 * 128
    line = lock.line_of(0, mem.lwlock_word)
    assert lock.address(0, "state") == lock.address(0) + 4
    assert [r.name for r in mem.memory.regions_on_line(line)] == ["MainLWLockArray"]
    assert mem.lwlocks.elements_on_line(line) == range(4, 5)
    assert mem.label_for_line(line) == "ProcArrayLock"
    assert mem.label_for_line(line + 1) == "ProcArrayLock+64"
    assert mem.xid_gen_lock.address(0) == mem.lwlocks.base + 3 * 128
    assert mem.label_for_line(mem.xid_gen_lock.line_of(0)) == "XidGenLock"


def test_pg91_proc_array_lock_shares_with_sinval_read_lock() -> None:
    mem = shm("pg91")
    assert mem.lwlocks.base == 128  # 96 + 8 counter bytes, rounded up to 32
    assert mem.lwlocks.stride == 32
    line = mem.proc_array_lock.line_of(0, "mutex")
    assert mem.proc_array_lock.address(0) == 256
    assert list(mem.lwlocks.elements_on_line(line)) == [4, 5]
    assert mem.label_for_line(line) == "ProcArrayLock & SInvalReadLock"
    assert mem.xid_gen_lock.line_of(0) == line - 1


def test_csn_locks_have_their_own_lines() -> None:
    mem = shm("csn")
    assert mem.commit_seq_no_lock is not None
    assert mem.csn_log_control_lock is not None
    lines = {
        mem.commit_seq_no_lock.line_of(0, "state"),
        mem.csn_log_control_lock.line_of(0, "state"),
        mem.proc_array_lock.line_of(0, "state"),
    }
    assert len(lines) == 3
    assert mem.label_for_line(mem.commit_seq_no_lock.line_of(0)) == "CommitSeqNoLock"
    assert mem.label_for_line(mem.csn_log_control_lock.line_of(0)) == "CSNLogControlLock"


def test_csn_log_eight_per_line() -> None:
    mem = shm("csn")
    log = mem.csn_log
    assert log is not None
    assert log.base % 128 == 0
    assert log.stride == 8
    assert len(log.elements_on_line(log.base // 64)) == 8
    assert mem.label_for_line(log.base // 64 + 1) == "CSNLog[8..15]"
    assert mem.csn_log_slot(8192 + 9) == 9
    with pytest.raises(ValueError, match="no CSN log"):
        shm("post14").csn_log_slot(1)


# --------------------------------------------------------------------------- PROC_HDR


def test_proc_hdr_13_group_fields_on_line_zero() -> None:
    hdr = shm("pre14").proc_hdr
    assert hdr.base % 128 == 0
    line = hdr.base // 64
    assert {hdr.line_of(0, f) for f in ("freeProcs", "procArrayGroupFirst", "clogGroupFirst")} == {
        line
    }


@pytest.mark.parametrize("version", V14)
def test_proc_hdr_14_group_fields_on_line_one(version: str) -> None:
    hdr = shm(version).proc_hdr
    line = hdr.base // 64
    assert {hdr.line_of(0, f) for f in ("xids", "subxidStates", "statusFlags")} == {line}
    assert {hdr.line_of(0, f) for f in ("procArrayGroupFirst", "clogGroupFirst")} == {line + 1}


# --------------------------------------------------------------------------- buffers


@pytest.mark.parametrize("version", MODERN)
def test_pinned_pages_13_14(version: str) -> None:
    mem = shm(version)
    lines = set()
    for page in (mem.btree_root, mem.btree_inner[0][0]):
        assert page.descriptor.stride == 64
        desc_line = page.descriptor.line_of(0, page.header_field)
        assert page.content_lock.line_of(0, page.content_lock_field) == desc_line
        assert page.descriptor.address(0, "content_lock.state") - page.descriptor.address(0) == 40
        map_line = page.mapping_lock.line_of(0, page.mapping_lock_field)
        assert mem.label_for_line(map_line) == f"BufMappingLock[{page.partition}]"
        assert len(mem.lwlocks.elements_on_line(map_line)) == 1
        lines |= {desc_line, map_line}
    assert len(lines) == 4
    assert mem.label_for_line(mem.btree_root.descriptor.line_of(0)) == "BtreeRootBuf"


def test_pinned_pages_91() -> None:
    mem = shm("pg91")
    root = mem.btree_root
    assert root.descriptor.stride == 52
    assert root.header_field == "buf_hdr_lock"
    assert root.descriptor.line_of(0, "refcount") == root.descriptor.line_of(0, "buf_hdr_lock")
    assert root.content_lock.stride == 32
    assert root.mapping_lock.element.field("mutex") == (0, 1)
    assert root.content_lock.line_of(0) != mem.btree_inner[0][0].content_lock.line_of(0)


@pytest.mark.parametrize("version", ["pg91", *MODERN])
def test_inner_pages_have_their_own_descriptors_and_spread_partitions(version: str) -> None:
    mem = build_shared_memory(ALGORITHMS[version], 10, btree_inner_pages=(4, 300))
    assert [len(level) for level in mem.btree_inner] == [4, 300]
    pages = [mem.btree_root, *(page for level in mem.btree_inner for page in level)]
    assert len({page.buffer_id for page in pages}) == 305
    assert "BtreeInner2Buf[7]" in mem.label_for_line(mem.btree_inner[1][7].descriptor.line_of(0))
    assert mem.btree_inner[1][7].name == "BtreeInner2[7]"
    n_partitions = 16 if version == "pg91" else 128
    partitions = [page.partition for page in pages[1:]]
    assert set(partitions) == set(range(n_partitions))  # a hash spreads 304 pages over them all
    assert max(partitions.count(p) for p in set(partitions)) <= -(-304 // n_partitions)


def test_a_root_over_the_leaves_has_no_inner_pages() -> None:
    assert build_shared_memory(ALGORITHMS["post14"], 10, btree_inner_pages=()).btree_inner == ()


@pytest.mark.parametrize("pages", [(0,), (20000,)])
def test_impossible_inner_pages_are_named(pages: tuple[int, ...]) -> None:
    with pytest.raises(ConfigError, match="btree_inner_pages"):
        build_shared_memory(ALGORITHMS["post14"], 10, btree_inner_pages=pages)


# --------------------------------------------------------------------------- ProcArray header


@pytest.mark.parametrize("version", MODERN)
def test_procarray_header_and_pgprocnos(version: str) -> None:
    mem = shm(version)
    assert mem.procarray.base % 128 == 0
    assert mem.pgprocnos.base == mem.procarray.base + 40
    assert mem.pgprocnos.stride == 4
    first = mem.procarray.base // 64
    assert mem.label_for_line(first) == "ProcArrayStruct & pgprocnos[0..5]"
    assert mem.label_for_line(first + 1) == "pgprocnos[6..21]"
    assert mem.procarray.line_of(0, "replication_slot_catalog_xmin") == first


def test_procarray_91_pointer_array() -> None:
    mem = shm("pg91")
    assert mem.pgprocnos.name == "procs"
    assert mem.pgprocnos.base == mem.procarray.base + 32
    assert mem.pgprocnos.stride == 8
    first = mem.procarray.base // 64
    assert mem.label_for_line(first) == "ProcArrayStruct & procs[0..3]"
    assert mem.label_for_line(first + 1) == "procs[4..11]"


# --------------------------------------------------------------------------- pgprocno, order


@pytest.mark.parametrize("version", VERSIONS)
def test_lifo_pgprocno(version: str) -> None:
    mem = shm(version, 50)
    assert [mem.pgprocno_for_connection(k) for k in range(3)] == [49, 48, 47]
    assert mem.pgprocno_for_connection(49) == 0
    with pytest.raises(IndexError):
        mem.pgprocno_for_connection(50)


def test_procarray_order_sorted() -> None:
    mem = shm("pre14", 10)
    assert mem.procarray_sorted
    entries: list[int] = []
    assert [mem.procarray_add(entries, mem.pgprocno_for_connection(k)) for k in range(4)] == [
        0,
        0,
        0,
        0,
    ]
    assert entries == [6, 7, 8, 9]
    assert mem.procarray_add(entries, 13) == 4  # the autovacuum launcher
    assert entries == [6, 7, 8, 9, 13]
    assert mem.procarray_build([9, 8, 7, 13, 6]) == entries  # the adds' order does not matter
    with pytest.raises(ValueError, match="already"):
        mem.procarray_add(entries, 8)
    with pytest.raises(ValueError, match="twice"):
        mem.procarray_build([9, 8, 9])


def test_procarray_order_91_unsorted() -> None:
    mem = shm("pg91", 10)
    assert not mem.procarray_sorted
    entries: list[int] = []
    assert [mem.procarray_add(entries, mem.pgprocno_for_connection(k)) for k in range(4)] == [
        0,
        1,
        2,
        3,
    ]
    assert entries == [9, 8, 7, 6]
    assert mem.procarray_build([6, 9, 8]) == [6, 9, 8]  # in the order of the adds


def test_procarray_remove_sorted_moves_the_tail_down_91_swaps_the_last_in() -> None:
    """13/14 ``ProcArrayRemove`` memmoves the later entries down; 9.1's moves the last entry into
    the freed slot (pa:323@9.1)."""
    mem = shm("pre14", 10)
    entries = [5, 6, 7, 8, 13]
    assert mem.procarray_remove(entries, 6) == 1
    assert entries == [5, 7, 8, 13]
    assert mem.procarray_add(entries, 6) == 1
    assert entries == [5, 6, 7, 8, 13]
    old = shm("pg91", 10)
    entries = [9, 8, 7, 6]
    assert old.procarray_remove(entries, 8) == 1
    assert entries == [9, 6, 7]
    assert old.procarray_remove(entries, 7) == 2  # the last one: nothing moves
    assert entries == [9, 6]
    with pytest.raises(ValueError, match="not in the procArray"):
        old.procarray_remove(entries, 8)


@pytest.mark.parametrize("version", VERSIONS)
def test_free_list_is_a_stack_of_the_unused_pgprocnos(version: str) -> None:
    """``InitProcGlobal`` pushes 0..max_connections-1 (the top is the highest), each connected
    client has popped one: the next ``InitProcess`` pops ``max_connections - 1 - connected``."""
    mem = shm(version, 10)
    free = mem.free_pgprocnos(3)
    assert free[-1] == mem.pgprocno_for_connection(3) == 6
    assert free == [0, 1, 2, 3, 4, 5, 6]
    assert mem.free_pgprocnos(10) == []
    with pytest.raises(IndexError):
        mem.free_pgprocnos(11)


@pytest.mark.parametrize("version", VERSIONS)
def test_proc_struct_lock_alone_on_its_line_after_the_versions_regions(version: str) -> None:
    """``ProcStructLock`` (an ``slock_t``) is placed after the version's PostgreSQL regions and
    before any what-if's: no line of it holds another region, and every region of the version
    without a what-if keeps its address."""
    mem = shm(version, 10)
    lock = mem.proc_struct_lock
    assert lock is not None
    assert mem.memory.regions_on_line(lock.line_of(0)) == [lock]
    names = [r.name for r in mem.memory.regions]
    own = names[:names.index("ProcStructLock")]
    assert own[-1] in ("procs", "pgprocnos", "CSNLog")
    assert not {"SharedSnapshot", "RunningXids"} & set(own)


# --------------------------------------------------------------------------- line counts

NS = (1, 5, 100, 1000)


@pytest.mark.parametrize("n", NS)
def test_pre14_pgprocnos_lines(n: int) -> None:
    mem = shm("pre14", max(n, M))
    lines = set(mem.procarray.lines()) | set(mem.pgprocnos.lines_touched(0, n))
    assert len(lines) == math.ceil((40 + 4 * n) / 64)


@pytest.mark.parametrize("n", NS)
def test_pre14_pgxact_lines(n: int) -> None:
    expected = math.ceil(12 * n / 64)
    observed = set()
    for max_connections in range(n, n + 16):  # every phase of the clients' range in a period
        mem = shm("pre14", max_connections)
        pgxact = mem.pgxact
        assert pgxact is not None
        # entries 0..n-1 start on a line boundary (the array is 128-aligned)
        assert len(pgxact.lines_touched(0, n)) == expected
        clients = [mem.pgprocno_for_connection(k) for k in range(n)]
        observed.add(len({p.line for k in clients for p in pgxact.field_span(k)}))
    assert observed <= {expected, expected + 1}  # ceil(12N/64), +1 for the range's phase
    assert expected + 1 in observed


@pytest.mark.parametrize("n", NS)
def test_pre14_snapshot_lines_vs_formula(n: int) -> None:
    mem = shm("pre14", 1024)
    assert mem.pgxact is not None
    clients = [mem.pgprocno_for_connection(k) for k in range(n)]
    distinct = {mem.proc_array_lock.line_of(0, "state"), mem.variable_cache.line_of(0)}
    distinct |= set(mem.procarray.lines()) | set(mem.pgprocnos.lines_touched(0, n))
    distinct |= {p.line for k in clients for p in mem.pgxact.field_span(k)}
    formula = 3 + math.ceil((40 + 4 * n) / 64) + math.ceil(12 * n / 64) + 1
    # the formula counts the header line twice (in the 3 and in the pgprocnos term),
    # and its "+1" is an upper bound
    assert formula - 2 <= len(distinct) <= formula - 1


@pytest.mark.parametrize(("n", "expected_total"), [(100, 30), (1000, 256)])
def test_pre14_formula_worked_numbers(n: int, expected_total: int) -> None:
    # ≈ 3 + N/4 lines per snapshot (N=100: ~30-32; N=1000: ~256)
    assert 3 + math.ceil((40 + 4 * n) / 64) + math.ceil(12 * n / 64) + 1 == expected_total


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("version", V14)
def test_14_xids_lines(version: str, n: int) -> None:
    mem = shm(version, max(n, M))
    assert mem.xids is not None
    assert len(mem.xids.lines_touched(0, n)) == math.ceil(4 * n / 64)
    total = {mem.proc_array_lock.line_of(0, "state"), mem.variable_cache.line_of(0)}
    total |= {mem.procarray.line_of(0, "numProcs")} | set(mem.xids.lines_touched(0, n))
    assert len(total) == 3 + math.ceil(4 * n / 64)  # N=100 -> 10, N=1000 -> 66


@pytest.mark.parametrize("n", NS)
def test_91_lines(n: int) -> None:
    mem = shm("pg91", max(n, M))
    pointer_lines = set(mem.procarray.lines()) | set(mem.pgprocnos.lines_touched(0, n))
    assert len(pointer_lines) == math.ceil((32 + 8 * n) / 64)
    procs = [mem.pgprocno_for_connection(k) for k in range(n)]
    h_lines = {
        p.line for k in procs for p in mem.pgproc.fields_span(k, ["xid", "xmin", "vacuumFlags"])
    }
    s_lines = {
        p.line
        for k in procs[1:]
        for p in mem.pgproc.fields_span(k, ["subxids.overflowed", "subxids.nxids"])
    }
    assert 1.25 * n - 1 <= len(h_lines) <= 1.25 * n + 1
    assert len(s_lines) == n - 1
