"""Single-line micro-tests in the ccbench vocabulary: each class costs its configured value.

Each test puts one line in a chosen state and place, then times one operation on it, on the
shipped machines and with both implementations (compiled kernel and plain-Python reference).
"""

from __future__ import annotations

import dataclasses

import pytest

from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine
from simulator.hardware.codes import AccessClass, Op
from simulator.hardware.machine import Machine

BACKENDS = ["compiled", "reference"]
PAGE = 4096


def interleaved(name: str) -> MachineConfig:
    """A shipped machine whose lines rotate over the home nodes page by page."""
    config = load_machine(name)
    memory = dataclasses.replace(config.memory, placement="interleave", interleave_bytes=PAGE)
    return dataclasses.replace(config, memory=memory)


def machine(name: str, implementation: str, n_pages: int = 8) -> Machine:
    """One tracked line at the start of each page: line i is homed on node i % nodes."""
    return Machine(interleaved(name), [i * PAGE for i in range(n_pages)],
                   implementation=implementation)  # type: ignore[arg-type]


def thread(m: Machine, name: str) -> int:
    return m.topology.thread_by_name(name)


@pytest.fixture(params=BACKENDS)
def gold(request: pytest.FixtureRequest) -> Machine:
    return machine("gold5215-2s", request.param)


@pytest.fixture(params=BACKENDS)
def tr(request: pytest.FixtureRequest) -> Machine:
    return machine("threadripper-3990x", request.param)


def test_gold_latencies_are_the_cited_values(gold: Machine) -> None:
    lat = gold.config.latency
    assert lat.remote_hitm is not None
    assert (lat.remote_hitm.holder, lat.remote_hitm.requester) == (115.6, 178.2)
    assert (lat.local_hit_ns, lat.local_hitm_ns, lat.smt_sibling_ns) == (55.5, 55.6, 7.4)
    assert (gold.config.memory.dram_near_ns, gold.config.memory.dram_far_ns) == (81.2, 130.2)


@pytest.mark.parametrize(("line", "home_is"), [(0, "holder"), (1, "requester")])
def test_load_from_modified_on_other_socket_costs_remote_hitm_per_home(
    gold: Machine, line: int, home_is: str
) -> None:
    writer, reader = thread(gold, "s0.d0.c2.t0"), thread(gold, "s1.d0.c5.t0")
    assert gold.homes[line] == line  # line 0 on node 0 (writer's socket), line 1 on node 1
    gold.access(writer, line, Op.STORE)
    result = gold.access(reader, line, Op.LOAD)
    expected = getattr(gold.config.latency.remote_hitm, home_is)
    assert result.access_class == AccessClass.REMOTE_HITM
    assert result.latency_ns == expected
    assert result.wait_ns == 0.0


def test_load_from_modified_same_socket_costs_local_hitm(gold: Machine) -> None:
    gold.access(thread(gold, "s0.d0.c0.t0"), 0, Op.STORE)
    result = gold.access(thread(gold, "s0.d0.c7.t1"), 0, Op.LOAD)
    assert result.access_class == AccessClass.LOCAL_HITM
    assert result.latency_ns == gold.config.latency.local_hitm_ns


def test_load_from_exclusive_same_socket_costs_local_hit(gold: Machine) -> None:
    gold.access(thread(gold, "s0.d0.c0.t0"), 0, Op.LOAD)  # E in core 0
    result = gold.access(thread(gold, "s0.d0.c1.t0"), 0, Op.LOAD)
    assert result.access_class == AccessClass.LOCAL_HIT
    assert result.latency_ns == gold.config.latency.local_hit_ns


def test_load_from_exclusive_other_socket_costs_remote_hit(gold: Machine) -> None:
    gold.access(thread(gold, "s0.d0.c0.t0"), 0, Op.LOAD)
    result = gold.access(thread(gold, "s1.d0.c0.t0"), 0, Op.LOAD)
    assert result.access_class == AccessClass.REMOTE_HIT
    assert gold.config.latency.remote_hit is not None
    assert result.latency_ns == gold.config.latency.remote_hit.holder


def test_store_on_shared_by_three_cores_invalidates_all_three(gold: Machine) -> None:
    sharers = ["s0.d0.c1.t0", "s0.d0.c2.t0", "s1.d0.c3.t0"]
    for name in sharers:
        gold.access(thread(gold, name), 0, Op.LOAD)
    writer = thread(gold, "s0.d0.c4.t0")
    result = gold.access(writer, 0, Op.STORE)
    assert gold.totals[AccessClass.UPGRADE] == 0  # the writer held no copy: a fetch for ownership
    assert gold.class_counts()["invalidations"] == 3
    state = gold.canonical_state()
    assert state["holders"][0] == [gold.topology.core_of(writer)]  # type: ignore[index]
    # MESIF: the last reader (socket 1) holds the line in F and supplies it; the line's home is
    # the writer's socket, so the transfer costs remote HIT "home = requester"; invalidating the
    # two same-socket sharers (local HIT, plus 2 ns for the second) overlaps with it.
    assert gold.config.latency.remote_hit is not None
    assert result.access_class == AccessClass.REMOTE_HIT
    assert result.latency_ns == gold.config.latency.remote_hit.requester == 178.2


def test_store_by_a_sharer_upgrades_and_invalidates_the_others(gold: Machine) -> None:
    names = ["s0.d0.c1.t0", "s0.d0.c2.t0", "s0.d0.c3.t0"]
    for name in names:
        gold.access(thread(gold, name), 0, Op.LOAD)
    result = gold.access(thread(gold, names[0]), 0, Op.STORE)
    assert result.access_class == AccessClass.UPGRADE
    assert gold.class_counts()["invalidations"] == 2
    lat = gold.config.latency
    # two sharers invalidated in parallel: the farthest, plus one per-extra-sharer increment
    assert lat.invalidation_per_extra_sharer_ns == 2.0
    assert result.latency_ns == max(lat.upgrade_ns, lat.local_hit_ns + 2.0) == 57.5


@pytest.mark.parametrize("per_extra_ns", [0.0, 2.0, 10.0])
@pytest.mark.parametrize("implementation", BACKENDS)
def test_a_store_waits_for_the_farthest_sharer_plus_each_extra_one(
    per_extra_ns: float, implementation: str
) -> None:
    config = interleaved("gold5215-2s")
    config = dataclasses.replace(config, latency=dataclasses.replace(
        config.latency, invalidation_per_extra_sharer_ns=per_extra_ns))
    m = Machine(config, [0], implementation=implementation)  # type: ignore[arg-type]
    readers = [f"s0.d0.c{core}.t0" for core in range(1, 8)] + ["s1.d0.c0.t0"]
    for name in readers:
        m.access(thread(m, name), 0, Op.LOAD)
    writer = thread(m, "s0.d0.c1.t0")  # a sharer: an upgrade that invalidates the other 7
    result = m.access(writer, 0, Op.STORE)
    assert result.access_class == AccessClass.UPGRADE
    assert m.class_counts()["invalidations"] == 7
    remote = config.latency.remote_hit
    assert remote is not None
    # the farthest is the socket-1 reader (home node 0 is the writer's socket: "holder" is the
    # sharer's, "requester" the writer's relation to the home)
    farthest = remote.requester
    assert farthest is not None
    assert result.latency_ns == pytest.approx(farthest + 6 * per_extra_ns)


def test_cas_on_line_owned_by_smt_sibling_costs_sibling_latency(gold: Machine) -> None:
    first, sibling = thread(gold, "s0.d0.c3.t0"), thread(gold, "s0.d0.c3.t1")
    gold.access(first, 0, Op.RMW)
    result = gold.access(sibling, 0, Op.RMW)
    assert result.access_class == AccessClass.SMT_SIBLING
    assert result.latency_ns == gold.config.latency.smt_sibling_ns == 7.4


def test_cas_on_own_modified_line_costs_uncontended_atomic(gold: Machine) -> None:
    t = thread(gold, "s0.d0.c3.t0")
    gold.access(t, 0, Op.RMW)
    result = gold.access(t, 0, Op.RMW)
    assert result.access_class == AccessClass.L1_HIT
    assert result.latency_ns == gold.config.latency.atomic_local_ns


def test_cas_on_line_modified_in_other_core_costs_a_transfer(gold: Machine) -> None:
    gold.access(thread(gold, "s0.d0.c0.t0"), 0, Op.RMW)
    result = gold.access(thread(gold, "s0.d0.c1.t0"), 0, Op.RMW)
    assert result.access_class == AccessClass.LOCAL_HITM
    assert result.latency_ns == gold.config.latency.local_hitm_ns


def test_l2_hit_after_l1_eviction(gold: Machine) -> None:
    l1_sets, l1_ways = gold.config.l1d.sets, gold.config.l1d.ways
    # Lines 64 apart (in line numbers) share an L1 set but not an L2 set.
    m = Machine(gold.config, [k * l1_sets * 64 for k in range(l1_ways + 1)],
                implementation=gold.implementation)
    t = thread(m, "s0.d0.c0.t0")
    assert m.access(t, 0, Op.LOAD).access_class == AccessClass.DRAM_LOCAL
    assert m.access(t, 0, Op.LOAD).access_class == AccessClass.L1_HIT
    for line in range(1, l1_ways + 1):
        m.access(t, line, Op.LOAD)
    result = m.access(t, 0, Op.LOAD)
    assert result.access_class == AccessClass.L2_HIT
    assert result.latency_ns == gold.config.l2.latency_ns == pytest.approx(14 / 2.5)


def test_clean_line_only_in_l3(gold: Machine) -> None:
    first, second = thread(gold, "s0.d0.c0.t0"), thread(gold, "s0.d0.c1.t0")
    gold.access(first, 0, Op.LOAD)
    gold.pollute(gold.topology.core_of(first), private_bytes=gold.config.l2.size_bytes)
    state = gold.canonical_state()
    assert state["holders"][0] == []  # type: ignore[index]  # evicted from core 0 into the L3
    result = gold.access(second, 0, Op.LOAD)
    assert result.access_class == AccessClass.L3_HIT
    assert result.latency_ns == gold.config.l3.latency_ns == pytest.approx(77 / 2.5)


@pytest.mark.parametrize(
    ("reader", "klass", "attr"),
    [
        ("s0.d0.c0.t0", AccessClass.DRAM_LOCAL, "dram_near_ns"),
        ("s1.d0.c0.t0", AccessClass.DRAM_REMOTE, "dram_far_ns"),
    ],
)
def test_dram_read_local_and_remote(
    gold: Machine, reader: str, klass: AccessClass, attr: str
) -> None:
    result = gold.access(thread(gold, reader), 0, Op.LOAD)  # line 0 is homed on node 0
    assert result.access_class == klass
    assert result.latency_ns == getattr(gold.config.memory, attr)


def test_tr_same_ccx_transfer(tr: Machine) -> None:
    tr.access(thread(tr, "s0.d0.c0.t0"), 0, Op.STORE)
    result = tr.access(thread(tr, "s0.d0.c3.t0"), 0, Op.LOAD)
    assert result.access_class == AccessClass.LOCAL_HITM
    assert result.latency_ns == tr.config.latency.local_hitm_ns == 20.0


def _cross_ccx(tr: Machine, writer_domain: int, reader_domain: int, line: int = 0) -> float:
    tr.access(thread(tr, f"s0.d{writer_domain}.c0.t0"), line, Op.STORE)
    result = tr.access(thread(tr, f"s0.d{reader_domain}.c1.t0"), line, Op.LOAD)
    assert result.access_class == AccessClass.CROSS_DOMAIN_HITM
    return result.latency_ns


def test_tr_ccx_to_ccx_same_ccd_costs_the_same_as_across_ccds(tr: Machine) -> None:
    # CCD k holds CCX 2k and 2k+1; domains 0-7 are near home node 0 (line 0).
    same_ccd = _cross_ccx(tr, 0, 1, line=0)
    other_ccd = _cross_ccx(tr, 2, 5, line=2)  # line 2 is also homed on node 0
    assert tr.homes[0] == tr.homes[2] == 0
    assert same_ccd == other_ccd == 87.0


@pytest.mark.parametrize(
    ("writer", "reader", "expected"),
    [
        (0, 1, 87.0),  # both near the home
        (8, 9, 103.0),  # neither near
        (0, 8, 108.0),  # holder near, requester far
        (8, 0, 108.0),  # requester near, holder far
    ],
)
def test_tr_cross_ccx_latency_depends_on_home(
    tr: Machine, writer: int, reader: int, expected: float
) -> None:
    assert _cross_ccx(tr, writer, reader) == expected


# -- the remaining classes on the 3990X (one socket, 16 CCX, MOESI, victim L3) ------------------


def test_tr_cas_on_line_owned_by_smt_sibling_costs_sibling_latency(tr: Machine) -> None:
    tr.access(thread(tr, "s0.d0.c3.t0"), 0, Op.RMW)
    result = tr.access(thread(tr, "s0.d0.c3.t1"), 0, Op.RMW)
    assert result.access_class == AccessClass.SMT_SIBLING
    assert result.latency_ns == tr.config.latency.smt_sibling_ns == 6.5


def test_tr_l2_hit_after_l1_eviction(tr: Machine) -> None:
    l1_sets, l1_ways = tr.config.l1d.sets, tr.config.l1d.ways
    m = Machine(tr.config, [k * l1_sets * 64 for k in range(l1_ways + 1)],
                implementation=tr.implementation)
    t = thread(m, "s0.d0.c0.t0")
    assert m.access(t, 0, Op.LOAD).access_class == AccessClass.DRAM_LOCAL
    for line in range(1, l1_ways + 1):  # same L1 set, different L2 sets
        m.access(t, line, Op.LOAD)
    result = m.access(t, 0, Op.LOAD)
    assert result.access_class == AccessClass.L2_HIT
    assert result.latency_ns == tr.config.l2.latency_ns == pytest.approx(12 / 2.9)


def test_tr_clean_line_only_in_the_victim_l3(tr: Machine) -> None:
    first, second = thread(tr, "s0.d0.c0.t0"), thread(tr, "s0.d0.c1.t0")
    tr.access(first, 0, Op.LOAD)
    tr.pollute(tr.topology.core_of(first), private_bytes=2 * tr.config.l2.size_bytes)
    state = tr.canonical_state()
    assert state["holders"][0] == []  # type: ignore[index]
    assert any(entry[0] == 0 for s in state["l3"][0] for entry in s)  # type: ignore[index]
    result = tr.access(second, 0, Op.LOAD)
    assert result.access_class == AccessClass.L3_HIT
    assert result.latency_ns == tr.config.l3.latency_ns == pytest.approx(39 / 2.9)


@pytest.mark.parametrize(
    ("reader", "line", "klass", "expected"),
    [
        ("s0.d0.c0.t0", 0, AccessClass.DRAM_LOCAL, 90.0),  # CCX 0 is near node 0
        ("s0.d8.c0.t0", 0, AccessClass.DRAM_REMOTE, 100.0),  # CCX 8 is near node 1 only
        ("s0.d8.c0.t0", 1, AccessClass.DRAM_LOCAL, 90.0),
        ("s0.d0.c0.t0", 1, AccessClass.DRAM_REMOTE, 100.0),
    ],
)
def test_tr_dram_read_near_and_far(
    tr: Machine, reader: str, line: int, klass: AccessClass, expected: float
) -> None:
    assert tr.homes[line] == line
    result = tr.access(thread(tr, reader), line, Op.LOAD)
    assert result.access_class == klass
    assert result.latency_ns == expected


def test_tr_store_on_shared_by_three_cores_invalidates_all_three(tr: Machine) -> None:
    sharers = ["s0.d0.c1.t0", "s0.d0.c2.t0", "s0.d1.c0.t0"]  # two in CCX 0, one in CCX 1
    for name in sharers:
        tr.access(thread(tr, name), 0, Op.LOAD)
    writer = thread(tr, "s0.d0.c3.t0")
    result = tr.access(writer, 0, Op.STORE)
    assert tr.class_counts()["invalidations"] == 3
    state = tr.canonical_state()
    assert state["holders"][0] == [tr.topology.core_of(writer)]  # type: ignore[index]
    # MOESI leaves no owner after clean sharing (E -> S), so the data comes from DRAM (90 ns,
    # near); invalidating the CCX-1 sharer (cross-CCX clean, both near the home: 87 ns) overlaps.
    # The three invalidations add 2 ns for each sharer after the first.
    assert result.access_class == AccessClass.DRAM_LOCAL
    assert tr.config.latency.invalidation_per_extra_sharer_ns == 2.0
    assert result.latency_ns == max(90.0, 87.0 + 2 * 2.0)


@pytest.mark.parametrize("implementation", BACKENDS)
@pytest.mark.parametrize("op", [Op.RMW, Op.STORE])
def test_a_store_or_atomic_missing_on_a_shared_line_costs_at_least_an_upgrade(
        implementation: str, op: Op) -> None:
    """SOSP'13 Table 2 on the Westmere-EX: in a die an atomic on a line two other cores share
    costs 113 cycles, a store 116 (the file's ``upgrade``), a load 44 (``local_hit``). Core 3's
    miss on the line cores 1 and 2 share is served by a clean copy (44 cycles) but waits for the
    invalidations: the upgrade's 116 cycles. On a line only one other core held, modified, it
    costs that transfer (``local_hitm``, 120 cycles)."""
    m = Machine(load_machine("westmere-ex-80c"), [0],
                implementation=implementation)  # type: ignore[arg-type]
    cycle_ns = 1.0 / m.config.clock_ghz
    t0, t1, t2, t3 = (thread(m, f"s0.d0.c{k}.t0") for k in range(4))
    m.access(t0, 0, Op.STORE, now=0.0)
    m.access(t1, 0, Op.LOAD, now=1_000.0)
    m.access(t2, 0, Op.LOAD, now=2_000.0)
    shared = m.access(t3, 0, op, now=3_000.0)
    assert shared.latency_ns == pytest.approx(116 * cycle_ns)
    modified = m.access(t0, 0, op, now=4_000.0)
    assert modified.latency_ns == pytest.approx(120 * cycle_ns)
