"""Connections that come and go (``options.churn``): whole runs, options and the command line.

The per-operation counts of each version's connect and disconnect are in
``test_pg_churn_steps``; here the rate realised, ``pgbench -C``, determinism, every algorithm,
the options' validation (a bad value is one line naming its key, exit 2) and the columns.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from simulator.cli import main
from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from snapsim_models.costs import load_costs
from snapsim_models.options import parse_options, resolve_options
from snapsim_models.plugin import MODEL
from snapsim_models.point import PointResult
from snapsim_models.snapshots import ALGORITHMS
from tests.models.points import simulate

GOLD = replace(load_machine("gold5215-2s"), idle=None)
"""The Gold 5215 without idle states (the steps are timed to the nanosecond)."""
COSTS = load_costs()


# ---------------------------------------------------------------------------- whole runs


def _point(algorithm: str = "pre14", **overrides: object) -> PointResult:
    settings: dict[str, object] = {"clients": 4, "idle_clients": 100, "duration_ns": 8e6,
                                   "warmup_ns": 1e6}
    settings.update(overrides)
    return simulate(GOLD, algorithm, **settings)


def _value(result: PointResult, column: str) -> float:
    return float(result.row[column])  # type: ignore[arg-type]


@pytest.mark.parametrize("algorithm", ["pre14", "post14"])
def test_connects_and_disconnects_per_second_match_the_rate(algorithm: str) -> None:
    """5,000 connects/s (half the postmaster's default ceiling) over an 8-ms window: 40 of each;
    within 5 % (2 connections). Each costs one exclusive ProcArrayLock acquisition to join and
    one to leave, and select-only commits take none: the window's exclusive acquisitions are the
    connects plus the disconnects."""
    result = _point(algorithm, churn_rate_per_s=5000.0)
    connects, disconnects = _value(result, "connects_per_s"), _value(result, "disconnects_per_s")
    assert connects == pytest.approx(5000, rel=0.05)
    assert disconnects == pytest.approx(5000, rel=0.05)
    exclusive = _value(result, "procarray_exclusive_per_txn") * _value(result, "tps")
    assert exclusive == pytest.approx(connects + disconnects, abs=2 / 8e-3)
    assert _value(result, "tps") > 0


def test_without_churn_no_connect_and_no_exclusive_acquisition() -> None:
    row = _point(duration_ns=2e6).row
    assert (row["connects_per_s"], row["disconnects_per_s"]) == (0.0, 0.0)
    assert row["procarray_exclusive_per_txn"] == 0.0
    assert row["connection_us"] == 0.0


def test_churn_runs_are_deterministic() -> None:
    a, b = (_point("post14", churn_rate_per_s=3000.0, duration_ns=3e6, seed=5) for _ in range(2))
    drop = {"wall_s"}
    assert {k: v for k, v in a.row.items() if k not in drop} == {
        k: v for k, v in b.row.items() if k not in drop}
    pd.testing.assert_frame_equal(a.lines, b.lines)


@pytest.mark.parametrize(("algorithm", "full"), [("pre14", 3.0), ("post14", 1.0)])
def test_reconnecting_clients_connect_once_per_transaction(algorithm: str, full: float) -> None:
    """``pgbench -C``: a connect and a disconnect per transaction (the window cuts at most one per
    client), two exclusive ProcArrayLock acquisitions per transaction, the start-up's snapshot
    (13: 2 + 1 full snapshots; 14: the start-up's full one, then reuse), and the connection's
    work in the transaction's time."""
    result = _point(algorithm, churn_per_transaction=True, idle_clients=20)
    tps = _value(result, "tps")
    window = 8e-3
    assert _value(result, "connects_per_s") == pytest.approx(tps, abs=4 / window)
    assert _value(result, "disconnects_per_s") == pytest.approx(tps, abs=4 / window)
    assert _value(result, "procarray_exclusive_per_txn") == pytest.approx(2.0, abs=0.2)
    assert _value(result, "full_snapshots") == pytest.approx(full, abs=0.05)
    startup_us = COSTS.connection.backend_startup / GOLD.clock_ghz / 1e3
    assert _value(result, "connection_us") > startup_us
    assert _value(result, "latency_mean_us") > startup_us


def test_every_algorithm_but_csn_churns() -> None:
    for algorithm, cls in ALGORITHMS.items():
        assert cls.supports_churn == (algorithm != "csn")
        if algorithm in ("csn", "pre14", "post14"):
            continue
        result = _point(algorithm, churn_rate_per_s=3000.0, duration_ns=2e6)
        assert _value(result, "connects_per_s") > 0, algorithm
    with pytest.raises(ConfigError, match="the csn algorithm models no connect") as info:
        MODEL.check_algorithm_options("csn", {"churn": {"rate_per_s": 100.0}})
    assert info.value.key == "options.churn"


# ------------------------------------------------------------------ options and command line


def test_options_resolve_and_parse() -> None:
    assert resolve_options({})["churn"] == {"rate_per_s": 0.0, "per_transaction": False}
    resolved = resolve_options({"churn": {"rate_per_s": 250}})
    assert resolved["churn"] == {"rate_per_s": 250.0, "per_transaction": False}
    assert resolve_options(resolved) == resolved
    options = parse_options(resolve_options({"churn": {"per_transaction": True}}))
    assert (options.churn_rate_per_s, options.churn_per_transaction) == (0.0, True)


@pytest.mark.parametrize(("value", "key", "message"), [
    ({"rate_per_s": -5}, "options.churn.rate_per_s", "must be a non-negative number, got -5"),
    ({"rate_per_s": "fast"}, "options.churn.rate_per_s", "expected connections per second"),
    ({"rate_per_s": float("inf")}, "options.churn.rate_per_s", "non-negative number"),
    ({"rate": 5}, "options.churn.rate", "unknown key"),
    ({"per_transaction": "yes"}, "options.churn.per_transaction", "expected true or false"),
    (5, "options.churn", "expected a mapping"),
])
def test_bad_churn_options_name_their_key(value: object, key: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        resolve_options({"churn": value})
    assert info.value.key == key


def test_lwlock_queue_option() -> None:
    assert resolve_options({})["lwlock_queue"] == "overtake"  # PostgreSQL's own
    assert parse_options(resolve_options({"lwlock_queue": "fifo"})).lwlock_queue == "fifo"
    assert parse_options(resolve_options({"lwlock_queue": "overtake"})).lwlock_queue == "overtake"
    with pytest.raises(ConfigError, match="expected fifo or overtake, got 'lifo'") as info:
        resolve_options({"lwlock_queue": "lifo"})
    assert info.value.key == "options.lwlock_queue"


def test_overtake_lets_snapshots_pass_a_waiting_connect() -> None:
    """13 with 3000 idle connections and 48 clients scanning them (~30 us a snapshot, most of
    the time several in progress), 2000 connects/s: with the FIFO queue the snapshots wait behind
    each connecting backend's exclusive request, with PostgreSQL's they pass it, and it waits for
    a moment without readers: the clients wait much less for the lock, the connects fewer
    (starved). A 4-ms window: 8 connects at the rate (2 ms held 4, too few to judge the
    ratio of the waits by)."""
    rows = {queue: _point("pre14", clients=48, idle_clients=3000, duration_ns=4e6,
                          warmup_ns=1e6, churn_rate_per_s=2000.0, lwlock_queue=queue).row
            for queue in ("fifo", "overtake")}
    waits = {queue: float(row["lock_wait_us"]) for queue, row in rows.items()}  # type: ignore[arg-type]
    connects = {queue: float(row["connects_per_s"]) for queue, row in rows.items()}  # type: ignore[arg-type]
    assert waits["overtake"] < waits["fifo"] / 2
    assert connects["overtake"] < connects["fifo"]


def test_churn_with_csn_is_refused_by_the_model() -> None:
    with pytest.raises(ConfigError, match="csn algorithm models no connect") as info:
        MODEL.check_algorithm_options("csn", {"churn": {"rate_per_s": 10}})
    assert info.value.key == "options.churn"
    MODEL.check_algorithm_options("csn", {"churn": {"rate_per_s": 0}})  # no churn: fine
    MODEL.check_algorithm_options("post14", {"churn": {"per_transaction": True}})


@pytest.mark.parametrize(("args", "line"), [
    (["--set", "options.churn.rate_per_s=-10"],
     "options.churn.rate_per_s: must be a non-negative number, got -10"),
    (["--set", "options.churn.rates=10"],
     "options.churn.rates: unknown key (expected one of: rate_per_s, per_transaction)"),
    (["--algorithms", "pre14,csn", "--set", "options.churn.rate_per_s=10"],
     "options.churn: the csn algorithm models no connect or disconnect"),
])
def test_command_line_bad_churn_exits_2_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], line: str) -> None:
    code = main(["run", "tiny", *args, "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert line in err[0]
    assert not (tmp_path / "out" / "curve.csv").exists()


def test_command_line_runs_churn_and_documents_its_columns(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(["-q", "run", "tiny", "--clients", "2", "--idle-clients", "50",
                 "--duration-ms", "1", "--warmup-ms", "0.5",
                 "--set", "options.churn.rate_per_s=4000", "--out", str(out)])
    assert code == 0
    curve = pd.read_csv(out / "curve.csv")
    assert (curve["connects_per_s"] > 0).all()
    columns = (out / "columns.yaml").read_text(encoding="utf-8")
    for name in ("connects_per_s", "disconnects_per_s", "procarray_exclusive_per_txn",
                 "connection_us", "share_connection"):
        assert f"{name}:" in columns
