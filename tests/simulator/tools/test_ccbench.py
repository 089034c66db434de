"""``snapsim ccbench`` reports the configured latency of every class it exercises."""

from __future__ import annotations

import pytest

from simulator.config.machine import HomeRelation, home_relation
from simulator.config.machine_file import load_machine, shipped_machines
from simulator.errors import ConfigError
from simulator.hardware.topology import Topology
from simulator.tools.ccbench import CONTENTION_COLUMNS, scenarios
from simulator.tools.contention import (
    PLACEMENTS,
    contention_point,
    contention_sweep,
    placed_threads,
    placement_capacity,
)


def test_gold_table_matches_the_machine_file() -> None:
    config = load_machine("gold5215-2s", ["line_service.rule=fifo"])
    rows = {row.scenario: row for row in scenarios(config)}
    assert rows["load from modified, same L3 domain"].value == config.latency.local_hitm_ns
    assert rows["CAS on line owned by the SMT sibling"].value == 7.4
    assert rows["load from modified, other socket (line homed on node 0)"].value == 115.6
    assert rows["load from modified, other socket (line homed on node 1)"].value == 178.2
    assert rows["load from DRAM, line homed on node 1"].access_class == "dram_remote"
    assert rows["hot line, 4 threads in one L3 domain"].value == pytest.approx(1e3 / 55.6, rel=0.02)


@pytest.mark.parametrize("name", shipped_machines())
def test_every_shipped_machine_reads_back_its_file(name: str) -> None:
    """Each class ccbench exercises is charged the configured latency; a hot line under fifo is
    a queue of hand-offs, and under the file's own rule (home) it serves at least as many."""
    shipped_hot = {row.scenario: row for row in scenarios(load_machine(name))}[
        "hot line, 4 threads in one L3 domain"].value
    config = load_machine(name, ["line_service.rule=fifo"])
    lat = config.latency
    rows = {row.scenario: row for row in scenarios(config)}
    assert rows["load from modified, same L3 domain"].value == lat.local_hitm_ns
    assert rows["load from exclusive, same L3 domain"].value == lat.local_hit_ns
    assert rows["load, clean only in the L3"].value == pytest.approx(config.l3.latency_ns)
    assert rows["load from DRAM, line homed on node 0"].value == config.memory.dram_near_ns
    if config.topology.threads_per_core > 1:
        assert rows["CAS on line owned by the SMT sibling"].value == lat.smt_sibling_ns
    if config.topology.domains_per_socket > 1:
        assert lat.cross_domain_hitm is not None
        # Domain 1 reads line 0 (homed on node 0) from domain 0.
        near = set(config.memory.home_nodes[0].near_domains)
        scenario = rows["load from modified, other L3 domain"]
        assert scenario.value == lat.cross_domain_hitm.get(home_relation(1 in near, 0 in near))
    hot = rows["hot line, 4 threads in one L3 domain"].value
    assert hot == pytest.approx(1e3 / lat.local_hitm_ns, rel=0.02)
    assert shipped_hot >= 0.98 * hot
    if config.topology.sockets > 1:
        assert lat.remote_hitm is not None
        # The line is homed on node 0 (socket 0): handoffs alternate between "home = holder"
        # (socket 1 takes it from socket 0) and "home = requester" (socket 0 takes it back).
        holder = lat.remote_hitm.get(HomeRelation.HOLDER)
        requester = lat.remote_hitm.get(HomeRelation.REQUESTER)
        assert holder is not None
        assert requester is not None
        assert rows["load from modified, other socket (line homed on node 0)"].value == holder
        assert rows["hot line, 2 threads on two sockets"].value == pytest.approx(
            2e3 / (holder + requester), rel=0.02
        )


# ---------------------------------------------------------------------- contention sweep

WINDOW_NS = 20_000.0
WARMUP_NS = 2_000.0


def _point(machine: str, operation: str, placement: str, threads: int,
           rule: str | None = None) -> dict[str, float]:
    """One contention point on a shipped machine, under its own line service or ``rule``."""
    config = load_machine(machine, [f"line_service.rule={rule}"] if rule else [])
    ids = placed_threads(config, placement, threads)
    return contention_point(config, operation, ids, WINDOW_NS, WARMUP_NS)


@pytest.mark.parametrize("machine", ["gold5215-2s", "threadripper-3990x"])
def test_one_thread_fetch_add_runs_at_the_isolated_rmw_latency(machine: str) -> None:
    """Alone, a fetch-add hits its own M copy every time: 1 / atomic_local ops per second."""
    local_ns = load_machine(machine).latency.atomic_local_ns
    point = _point(machine, "fetch-add", "socket", 1)
    assert point["latency_ns"] == pytest.approx(local_ns, rel=1e-12)
    assert point["wait_ns"] == 0.0
    # Completions are local_ns apart, so the window holds its length / local_ns of them, +-1.
    assert abs(point["ops"] - WINDOW_NS / local_ns) <= 1
    assert point["ops_per_s"] == pytest.approx(1e9 / local_ns, rel=2 * local_ns / WINDOW_NS)
    assert point["failures"] == 0


def test_two_fetch_adders_pass_the_line_back_and_forth() -> None:
    """Two threads of a socket under fifo: each op waits for the other's transfer, then makes
    its own."""
    config = load_machine("gold5215-2s", ["line_service.rule=fifo"])
    hitm_ns = config.latency.local_hitm_ns
    point = _point("gold5215-2s", "fetch-add", "socket", 2, rule="fifo")
    assert point["latency_ns"] == pytest.approx(2 * hitm_ns)
    assert point["wait_ns"] == pytest.approx(hitm_ns)
    assert point["ops_per_s"] == pytest.approx(1e9 / hitm_ns, rel=0.01)
    remote = config.latency.remote_hitm
    assert remote is not None
    holder, requester = remote.get(HomeRelation.HOLDER), remote.get(HomeRelation.REQUESTER)
    assert holder is not None
    assert requester is not None
    cross = _point("gold5215-2s", "fetch-add", "cross", 2, rule="fifo")
    assert cross["latency_ns"] == pytest.approx(holder + requester, rel=1e-6)


def test_interleaved_load_cas_fails_and_a_lone_thread_never_does() -> None:
    """A CAS fails when another thread's successful RMW came between its load and it."""
    alone = _point("gold5215-2s", "load-cas", "socket", 1)
    assert alone["attempts"] > 0
    assert alone["failures"] == 0
    assert alone["successes"] == alone["attempts"] == alone["ops"]
    pair = _point("gold5215-2s", "load-cas", "socket", 2)
    assert pair["failures"] > 0
    assert pair["successes"] > 0
    assert pair["attempts"] == pair["failures"] + pair["successes"] == pair["ops"]
    # Only successful CASes change the value: successes are the value-changing RMWs.
    assert pair["successes_per_s"] == pytest.approx(pair["successes"] / (WINDOW_NS * 1e-9))


def test_a_cas_loop_retries_until_every_operation_succeeds() -> None:
    lone = _point("gold5215-2s", "cas-loop", "socket", 1)
    config = load_machine("gold5215-2s")
    # Load (an L1 hit) then the CAS on the own M copy.
    assert lone["latency_ns"] == pytest.approx(
        config.l1d.latency_ns + config.latency.atomic_local_ns)
    four = _point("gold5215-2s", "cas-loop", "socket", 4)
    assert four["failures"] > 0
    assert four["successes"] == four["ops"]
    assert four["attempts"] > four["ops"]
    fetch_add = _point("gold5215-2s", "fetch-add", "socket", 4)
    assert four["ops_per_s"] < fetch_add["ops_per_s"]


@pytest.mark.parametrize("operation", ["cas-loop", "fetch-add", "load-cas"])
def test_threads_in_a_closed_loop_obey_littles_law(operation: str) -> None:
    """Each thread always has one operation in flight: throughput x latency = threads.

    Operations straddling the window's ends blur it by about a latency per thread, so the window
    is long against the slowest operation (a CAS loop of 8 threads takes ~10 µs).
    """
    config = load_machine("westmere-ex-8s")
    for placement, threads in (("socket", 8), ("cross", 8), ("core", 2)):
        ids = placed_threads(config, placement, threads)
        point = contention_point(config, operation, ids, 1_000_000.0, WARMUP_NS)
        in_flight = point["ops_per_s"] * point["latency_ns"] * 1e-9
        assert in_flight == pytest.approx(threads, rel=0.05)


def test_placements_fill_a_core_a_socket_or_go_round_the_sockets() -> None:
    gold = load_machine("gold5215-2s")
    topology = Topology.from_config(gold)
    names = [topology.thread_name(t) for t in placed_threads(gold, "core", 2)]
    assert names == ["s0.d0.c0.t0", "s0.d0.c0.t1"]
    names = [topology.thread_name(t) for t in placed_threads(gold, "socket", 11)]
    assert names[:2] == ["s0.d0.c0.t0", "s0.d0.c1.t0"]
    assert names[10] == "s0.d0.c0.t1"
    names = [topology.thread_name(t) for t in placed_threads(gold, "cross", 4)]
    assert names == ["s0.d0.c0.t0", "s1.d0.c0.t0", "s0.d0.c1.t0", "s1.d0.c1.t0"]
    assert [placement_capacity(gold, p) for p in PLACEMENTS] == [2, 20, 40]
    ripper = load_machine("threadripper-3990x")
    ripper_topology = Topology.from_config(ripper)
    spread = placed_threads(ripper, "cross", 16)
    assert len({ripper_topology.domain_of(t) for t in spread}) == 16
    assert placement_capacity(ripper, "socket") == 8  # one CCX
    assert placement_capacity(load_machine("graviton3"), "cross") == 0
    with pytest.raises(ConfigError):
        placed_threads(gold, "core", 3)


def test_sweep_skips_what_a_placement_cannot_hold() -> None:
    config = load_machine("gold5215-2s")
    table = contention_sweep(config, ["fetch-add"], [1, 4, 31, 32], duration_us=2.0,
                             warmup_us=1.0)
    assert tuple(table.columns) == CONTENTION_COLUMNS
    assert list(zip(table["placement"], table["threads"], strict=True)) == [
        ("core", 1), ("socket", 1), ("socket", 4), ("cross", 1), ("cross", 4), ("cross", 31),
        ("cross", 32)]
    # A queue of 32 or more requesters is kept whole: the line's throughput does not jump.
    rates = dict(zip(table["threads"][table["placement"] == "cross"],
                     table["ops_per_s"][table["placement"] == "cross"], strict=True))
    assert rates[32] < 1.2 * rates[31]
    with pytest.raises(ConfigError, match="threads"):
        contention_sweep(config, ["fetch-add"], [41])
    with pytest.raises(ConfigError, match="operations"):
        contention_sweep(config, ["swap"], [1])
    with pytest.raises(ConfigError, match="no thread count fits"):
        contention_sweep(config, ["fetch-add"], [4], placements=["core"])


def _handoff_ns(machine: str, operation: str, placement: str, rule: str) -> float:
    config = load_machine(machine, [f"line_service.rule={rule}"])
    point = contention_point(config, operation, placed_threads(config, placement, 2),
                             20_000.0, WARMUP_NS)
    return 1e9 / point["ops_per_s"]


def test_a_strict_handoff_costs_one_transfer_per_cas_and_two_per_read_then_cas() -> None:
    """perfbook's cachetorture: a blind CAS hand-off is one transfer; a read then CAS is two,
    and under the home rule the read of the line modified on the other socket occupies its home
    for the 300 ns of the machine file, which puts the hand-off at the published 446 ns."""
    gold = load_machine("gold5215-2s")
    assert gold.latency.remote_hitm is not None
    remote = gold.latency.remote_hitm
    assert remote.holder is not None
    assert remote.requester is not None
    mean_remote = (remote.holder + remote.requester) / 2
    assert _handoff_ns("gold5215-2s", "handoff-cas", "cross", "fifo") == pytest.approx(
        mean_remote, rel=0.02)
    assert _handoff_ns("gold5215-2s", "handoff-load-cas", "cross", "fifo") == pytest.approx(
        2 * mean_remote, rel=0.02)
    assert _handoff_ns("gold5215-2s", "handoff-load-cas", "cross", "home") == pytest.approx(
        446.1, rel=0.03)
    local = _handoff_ns("gold5215-2s", "handoff-load-cas", "socket", "home")
    assert local == pytest.approx(gold.latency.local_hitm_ns + gold.latency.local_hit_ns,
                                  rel=0.02)


def test_the_owner_window_serves_several_operations_per_tenure() -> None:
    """A tight fetch-add loop over both sockets: one operation per transfer under fifo, several
    under home (perfbook's count_atomic, 31-45 M ops/s at 2-64 threads, and SOSP'13's paused
    loops set the window and the overlap: 38 M ops/s, 0.88 of the 16-thread row)."""
    config = load_machine("platinum8168-2s-vm", ["line_service.rule=fifo"])
    ids = placed_threads(config, "cross", 16)
    fifo = contention_point(config, "fetch-add", ids, 20_000.0, WARMUP_NS)
    home = contention_point(load_machine("platinum8168-2s-vm"), "fetch-add", ids, 20_000.0,
                            WARMUP_NS)
    assert fifo["ops_per_s"] == pytest.approx(6.86e6, rel=0.05)
    assert home["ops_per_s"] == pytest.approx(38e6, rel=0.1)


def test_read_mostly_misses_queue_at_the_home_only_under_the_home_rule() -> None:
    """Many readers and a few writers on one line: after each write the readers' misses are
    served one at a time under home, so a missed load waits for the others."""
    latencies = {}
    for rule in ("fifo", "home"):
        config = load_machine("sapphire-rapids-2s", [f"line_service.rule={rule}"])
        point = contention_point(config, "read-mostly", placed_threads(config, "cross", 16),
                                 20_000.0, WARMUP_NS)
        assert point["ops"] > 0
        latencies[rule] = point["latency_ns"]
    assert latencies["fifo"] < 200.0
    assert latencies["home"] > 5 * latencies["fifo"]


def test_splitting_a_read_mostly_line_per_socket_cuts_its_misses_cost() -> None:
    """P5 (perf c2c, a cpumask split per NUMA node): about 4x fewer cycles per load. The split
    saves more under the home rule, whose queue it halves and keeps on one socket."""
    falls = {}
    for rule in ("fifo", "home"):
        config = load_machine("platinum8168-2s-vm", [f"line_service.rule={rule}"])
        ids = placed_threads(config, "cross", 16)
        one = contention_point(config, "read-mostly", ids, 20_000.0, WARMUP_NS)
        split = contention_point(config, "read-mostly-split", ids, 20_000.0, WARMUP_NS)
        falls[rule] = one["latency_ns"] / split["latency_ns"]
    assert 1.2 < falls["fifo"] < 3.0
    assert falls["home"] > 3.0
