"""Whole runs with the machines' idle states: the curve's idle, IPI and flush columns."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.config.machine_file import load_machine
from tests.models.points import simulate

GOLD = load_machine("gold5215-2s")
PLATINUM = load_machine("platinum8168-2s-vm")


def number(row: dict[str, object], key: str) -> float:
    value = row[key]
    assert isinstance(value, int | float)
    return float(value)


IDLE_COLUMNS = ("idle_exits_per_txn", "idle_exit_us_per_txn", "ipis_per_txn",
                "migrations_per_txn", "private_flushes_per_txn")


def test_mostly_idle_backends_wake_from_deep_states_on_bare_metal_without_ipis() -> None:
    row = simulate(GOLD, "post14", idle_clients=100,
                                idle_kind="mostly-idle", duration_ns=20e6,
                                warmup_ns=5e6).row
    assert row["ipis_per_txn"] == 0.0  # MWAIT idle: the waker's store wakes the thread
    # 100 backends wake every 100 ms: about 1,000 wake-ups per second, each from a core that
    # slept long enough for C6 (92 us), for ~33,000 transactions per second.
    assert 0.01 < number(row, "private_flushes_per_txn") < 0.1
    exits = number(row, "idle_exits_per_txn")
    assert exits > 0.0
    assert number(row, "idle_exit_us_per_txn") > 0.02 * 92.0  # some of them C6 exits


def test_without_idle_states_no_exit_latency_is_paid() -> None:
    row = simulate(replace(GOLD, idle=None), "post14",
                                idle_clients=100, idle_kind="mostly-idle", duration_ns=20e6,
                                warmup_ns=5e6).row
    assert row["idle_exit_us_per_txn"] == 0.0
    assert row["private_flushes_per_txn"] == 0.0


def test_every_wake_up_of_an_idle_vcpu_is_an_ipi() -> None:
    row = simulate(PLATINUM, "pgxact_split", clients=8,
                                duration_ns=5e6, warmup_ns=1e6).row
    assert number(row, "ipis_per_txn") > 0.0
    assert row["ipis_per_txn"] == pytest.approx(row["idle_exits_per_txn"])
    assert row["idle_exit_us_per_txn"] == 0.0  # HLT: the cost is the hypervisor's exit


def test_the_idle_columns_are_in_every_row() -> None:
    row = simulate(GOLD, "pre14", duration_ns=2e6,
                                warmup_ns=1e6).row
    for column in IDLE_COLUMNS:
        assert column in row
