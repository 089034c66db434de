"""SOSP'13's contended-line rows on the model: hand-computed toy costs, lock properties, and the
published rows of the two SOSP'13 machine files."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.config.machine import LineServiceConfig, MachineConfig
from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.tools.contention import contention_sweep, placed_threads, placement_capacity
from simulator.tools.sosp13 import (
    SOSP13_COLUMNS,
    SOSP13_PUBLISHED,
    Sosp13Row,
    fai_pause_cycles,
    fai_pause_point,
    filled_threads,
    mcs_point,
    sosp13_comparison,
    store_shared_point,
    store_shared_threads,
    ticket_point,
)
from tests.toy_machines import toy_machine

WINDOW_NS = 20_000.0
WARMUP_NS = 2_000.0


def _rule(config: MachineConfig, rule: str) -> MachineConfig:
    return dataclasses.replace(config, line_service=LineServiceConfig(rule=rule,
                                                                      owner_window=0.2))


def test_fill_places_one_thread_per_core_socket_after_socket() -> None:
    toy = toy_machine()  # 2 sockets x 2 cores x 2 threads
    assert filled_threads(toy, 8) == [0, 2, 4, 6, 1, 3, 5, 7]
    assert placement_capacity(toy, "fill") == 8
    assert placed_threads(toy, "fill", 3) == [0, 2, 4]
    with pytest.raises(ConfigError, match="fill"):
        filled_threads(toy, 9)


def test_the_pause_after_a_fai_follows_libslock_test_sh() -> None:
    assert [fai_pause_cycles(n) for n in (1, 2, 3, 6, 7, 12, 13, 80)] == [
        0, 10, 30, 30, 80, 80, 150, 150]


@pytest.mark.parametrize("rule", ["fifo", "home"])
def test_a_store_on_shared_waits_for_the_farthest_sharer_plus_each_further_one(
        rule: str) -> None:
    """Toy latencies (ns): local HIT 40, remote HIT 170 with the home near the requester, 3 per
    further sharer, upgrade 20; the storer's copy is Shared, so the store is an upgrade."""
    toy = _rule(toy_machine(cores_per_domain=3, threads_per_core=1), rule)
    expected = {"same-die": 40.0 + 3.0,            # two sharers in the die
                "one-hop": 170.0 + 3.0,            # two sharers on the other socket
                "all": 170.0 + 3.0 * 4}            # 2 in the die, 3 on the other socket
    for where, latency_ns in expected.items():
        point = store_shared_point(toy, store_shared_threads(toy, where))
        assert point["latency_ns"] == pytest.approx(latency_ns), where
        assert point["wait_ns"] == 0.0
    assert store_shared_point(toy, [0])["latency_ns"] == 1.0  # alone: an L1 hit on its M copy
    with pytest.raises(ConfigError, match="same-package"):
        store_shared_threads(toy, "same-package")  # one die per socket


def test_one_thread_pays_its_own_hits() -> None:
    """Toy: L1 1 ns, atomic on an own M line 6 ns, 2 GHz clock."""
    toy = toy_machine()
    fai = fai_pause_point(toy, [0], WINDOW_NS, WARMUP_NS)  # no pause with one thread
    assert fai["latency_ns"] == pytest.approx(6.0)
    assert abs(fai["ops"] - WINDOW_NS / 6.0) <= 1
    # Ticket: FAI 6, the spin's load 1, the release's load 1 and store 1.
    ticket = ticket_point(toy, [0], WINDOW_NS, WARMUP_NS)
    assert ticket["latency_ns"] == pytest.approx(9.0)
    assert ticket["reads_per_op"] == 0.0
    # MCS: store to the own node 1, SWAP 6, the critical section's store 1, the release's load
    # 1 and CAS 6; then the pause of 100 cycles (50 ns).
    mcs = mcs_point(toy, [0], WINDOW_NS, WARMUP_NS)
    assert mcs["latency_ns"] == pytest.approx(15.0)
    assert mcs["ops_per_s"] == pytest.approx(1e9 / 65.0, rel=0.01)
    assert mcs["attempts"] == 2 * mcs["ops"]


def test_two_fai_threads_with_a_short_pause() -> None:
    """Two cores of a socket, a FAI then 10 cycles (5 ns): under fifo every FAI is a transfer
    (local HITM, 45 ns); under home the owner's next FAI, 5 ns after its transfer, falls inside
    its window (0.2 x 45 = 9 ns) and hits (6 ns), the one after that queues: 2 per 45 ns."""
    ids = filled_threads(toy_machine(), 2)
    fifo = fai_pause_point(_rule(toy_machine(), "fifo"), ids, WINDOW_NS, WARMUP_NS)
    home = fai_pause_point(_rule(toy_machine(), "home"), ids, WINDOW_NS, WARMUP_NS)
    assert fifo["ops_per_s"] == pytest.approx(1e9 / 45.0, rel=0.01)
    assert home["ops_per_s"] == pytest.approx(2e9 / 45.0, rel=0.01)


def test_every_ticket_spinner_rereads_the_line_at_each_hand_off() -> None:
    """SOSP'13 Figure 3's mechanism: after each release every spinner's copy is invalid and
    its next load misses; under the home rule those reads queue one after another, so a
    hand-off grows with the spinners."""
    config = load_machine("opteron-6172-4s")
    handoff_ns = {}
    for threads in (4, 8, 16):
        point = ticket_point(config, filled_threads(config, threads), 200_000.0, 50_000.0)
        assert threads - 1 <= point["reads_per_op"] <= 1.5 * threads
        assert point["read_wait_ns"] > 0
        # Each thread always has one acquire + release in flight: Little's law.
        in_flight = point["ops_per_s"] * point["latency_ns"] * 1e-9
        assert in_flight == pytest.approx(threads, rel=0.05)
        handoff_ns[threads] = 1e9 / point["ops_per_s"]
    assert handoff_ns[4] < handoff_ns[8] < handoff_ns[16]


def test_an_mcs_lock_spins_locally() -> None:
    """A queue lock's waiter spins on its own node: one re-read per hand-off (and its own
    acquisition's first load), none of them queued behind other readers."""
    config = load_machine("westmere-ex-80c")
    point = mcs_point(config, filled_threads(config, 20), 50_000.0, 10_000.0)
    assert point["ops"] > 0
    assert 1.5 <= point["reads_per_op"] <= 2.5
    assert point["read_wait_ns"] < 5.0


def test_the_sosp13_rows_of_the_shipped_files() -> None:
    """Store on Shared within a die is the machine file's upgrade (Table 2, exactly); the
    Opteron's naive ticket lock at 22 threads is within 15 % of Figure 3 under the home rule
    and slower under fifo."""
    opteron = load_machine("opteron-6172-4s")
    rows = (Sosp13Row("store-shared", "same-die", 3, 246, "cycles", "Table 2"),
            Sosp13Row("ticket-spin", "fill", 22, 6121, "cycles per hand-off", "Fig. 3"))
    home = sosp13_comparison(opteron, seeds=1, rows=rows)
    assert tuple(home.columns) == SOSP13_COLUMNS
    assert home["ratio"].iloc[0] == pytest.approx(1.0)
    assert 0.85 < home["ratio"].iloc[1] < 1.15
    fifo = sosp13_comparison(load_machine("opteron-6172-4s", ["line_service.rule=fifo"]),
                             seeds=1, rows=rows[1:])
    assert fifo["ratio"].iloc[0] > home["ratio"].iloc[1]
    xeon = sosp13_comparison(load_machine("westmere-ex-80c"), seeds=1, rows=[
        row for row in SOSP13_PUBLISHED["westmere-ex-80c"] if row.where == "same-die"])
    assert xeon["model"].tolist() == pytest.approx([116.0])
    with pytest.raises(ConfigError, match="no SOSP'13 rows"):
        sosp13_comparison(load_machine("gold5215-2s"))


def test_the_sosp13_operations_run_in_the_sweep() -> None:
    config = load_machine("opteron-6172-4s")
    table = contention_sweep(config, ["store-shared", "fai-pause"], [2], ["fill"], 2.0, 1.0)
    store = table[table["operation"] == "store-shared"]
    assert store["latency_ns"].tolist() == pytest.approx([246 / 2.1])  # one same-die sharer
    assert (table["placement"] == "fill").all()
