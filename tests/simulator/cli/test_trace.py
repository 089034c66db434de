"""``snapsim trace``: one traced point, its files, its summary and bad input."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simulator.cli import main
from simulator.runtime.scheduler_stats import IDLE_TRACE_COLUMNS, TRACE_COLUMNS

POINT = ["--machine", "gold5215-2s", "--algorithms", "post14", "--clients", "2",
         "--idle-clients", "50", "--idle-kind", "mostly-idle", "--duration-ms", "3",
         "--warmup-ms", "1", "--precision", "none"]  # a fixed window: the default grows it


def test_trace_writes_the_scheduler_and_idle_tables_of_one_point(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "trace"
    assert main(["trace", *POINT, "--out", str(out)]) == 0
    scheduler = pd.read_csv(out / "scheduler.csv")
    idle = pd.read_csv(out / "idle.csv")
    point = pd.read_csv(out / "point.csv")
    assert tuple(scheduler.columns) == TRACE_COLUMNS
    assert tuple(idle.columns) == IDLE_TRACE_COLUMNS
    assert len(point) == 1
    assert point.loc[0, "clients"] == 2
    assert set(scheduler["event"]) <= {"on_cpu", "preempt", "block", "release"}
    # Both active pairs (after the 50 mostly-idle connections) and the background pgbench
    # threads appear; times cover the whole run.
    assert {"pgbench50", "pgbench51", "backend50", "backend51"} <= set(scheduler["task"])
    assert any(name.startswith("pgbench-bg") for name in scheduler["task"])
    assert scheduler["time_ns"].is_monotonic_increasing
    assert scheduler["time_ns"].max() <= 4e6
    # Every idle period is one the governor chose from the machine's table, and its exit
    # cost is that state's (bare metal: no IPI cost).
    assert set(idle["state"]) <= {"POLL", "C1", "C1E", "C6"}
    assert (idle["idle_ns"] >= 0).all()
    c6 = idle[idle["state"] == "C6"]
    assert (c6["exit_latency_ns"] == 92_000.0).all()
    # Idle exits in the window agree with the curve's count per transaction.
    window = idle[(idle["time_ns"] >= 1e6) & (idle["time_ns"] < 4e6)]
    per_txn = float(point["idle_exits_per_txn"].iloc[0]) * int(point["transactions"].iloc[0])
    assert len(window) == pytest.approx(per_txn, abs=1.0)
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].split() == ["state", "periods", "mean", "idle", "us", "mean",
                                               "exit", "us"]


def test_trace_refuses_more_than_one_point(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["trace", "--machine", "gold5215-2s", "--clients", "1,2", "--out",
                 str(tmp_path / "t")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--clients" in err
    assert "one point" in err
    assert not (tmp_path / "t").exists()
