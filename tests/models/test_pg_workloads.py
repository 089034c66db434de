"""Workload scripts: batched statements per round trip, think time, select1."""

from __future__ import annotations

import pytest

from simulator.config.machine_file import load_machine
from snapsim_models.workloads import workload
from tests.models.points import simulate

GOLD = load_machine("gold5215-2s")


def run(**kwargs: object) -> dict[str, object]:
    algorithm = kwargs.pop("algorithm")
    assert isinstance(algorithm, str)
    return simulate(GOLD, algorithm, duration_ns=2e6, warmup_ns=0.5e6, **kwargs).row


def test_batched_counts_every_statement_and_saves_round_trips() -> None:
    single = run(algorithm="pre14", workload="select-only", clients=1)
    batched = run(algorithm="pre14", workload="batched", batch=10, clients=1)
    # One round trip (two wake-ups and the client's work) serves ten statements.
    assert batched["tps"] > 1.3 * single["tps"]  # type: ignore[operator]
    assert batched["full_snapshots"] == pytest.approx(2.0)  # per statement, as select-only


def test_think_time_slows_a_closed_loop_client() -> None:
    busy = run(algorithm="post14", clients=1)
    thinking = run(algorithm="post14", clients=1, think_time_ns=100_000.0)
    assert thinking["tps"] < busy["tps"] / 3  # type: ignore[operator]


def test_select1_takes_two_snapshots_and_pins_no_page() -> None:
    row = run(algorithm="pre14", workload="select1", clients=1)
    assert row["full_snapshots"] == pytest.approx(2.0)
    assert row["tps"] > run(algorithm="pre14", clients=1)["tps"]  # type: ignore[operator]


def test_unknown_workload_and_bad_batch() -> None:
    with pytest.raises(ValueError, match="unknown workload"):
        workload("ycsb")
    with pytest.raises(ValueError, match="batch must be at least 1"):
        workload("batched", batch=0)
