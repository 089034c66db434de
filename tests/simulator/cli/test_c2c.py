"""``snapsim c2c DIR``: the per-line report of a run directory, as text or CSV, and bad input."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

import simulator
from simulator.analysis.c2c import C2C_COLUMNS
from simulator.cli import main
from simulator.study.experiment import Experiment
from tests.simulator.analysis.test_c2c import ORDERS, POINTS, make_curve, make_lines


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    make_lines().to_csv(tmp_path / "lines.csv", index=False)
    make_curve().to_csv(tmp_path / "curve.csv", index=False)
    return tmp_path


def test_cli_prints_one_section_per_point_sorted_by_total_hitm(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default sort is total HITMs, as perf c2c's."""
    assert main(["c2c", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "Shared Data Cache Line Table" in out
    assert out.count("# machine=m algorithm=") == len(POINTS)
    assert "# machine=m algorithm=post workload=w clients=4 idle_clients=100" in out
    assert "transactions: 12" in out
    header = next(line for line in out.splitlines() if line.startswith("Index"))
    for title in ("Cacheline", "Label", "Rmt HITM", "Lcl HITM", "Total HITM", "Tot HITM %",
                  "False-sharing HITM", "Stores", "Loads", "RMWs", "Invalidations",
                  "Fields read", "Fields written"):
        assert title in header
    rows = [line.split()[2] for line in out.splitlines() if line.lstrip()[:1].isdigit()]
    assert rows == ORDERS["tot"] * len(POINTS)
    assert ORDERS["tot"] != ORDERS["rmt"]


def test_cli_top_and_sort(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["c2c", str(run_dir), "--sort", "rmt", "--top", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.lstrip()[:1].isdigit()]
    assert [row[2] for row in rows] == [ORDERS["rmt"][0]] * len(POINTS)
    assert "Rmt HITM %" in out
    assert "top 1 of 4" in out


def test_cli_filters_points(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["c2c", str(run_dir), "--algorithm", "pre", "--clients", "4"]) == 0
    out = capsys.readouterr().out
    assert out.count("# machine=m") == 1
    assert "algorithm=pre workload=w clients=4 idle_clients=0" in out
    assert main(["c2c", str(run_dir), "--idle-clients", "100,0", "--clients", "4"]) == 0
    assert capsys.readouterr().out.count("# machine=m") == 2


def test_cli_csv_is_machine_readable(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["c2c", str(run_dir), "--csv", "--sort", "lcl", "--top", "3"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(table.columns) == ["machine", "algorithm", "workload", "clients",
                                   "idle_clients", "idle_kind", "seed", "transactions",
                                   *C2C_COLUMNS]
    assert len(table) == 3 * len(POINTS)
    assert list(table["transactions"]) == [10] * 3 + [11] * 3 + [12] * 3
    assert list(table["label"]) == ["Y", "Z", "X"] * len(POINTS)


def test_cli_works_without_curve_csv(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run_dir / "curve.csv").unlink()
    assert main(["c2c", str(run_dir), "--csv"]) == 0
    assert "transactions" not in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ([], "no such directory"),
        (["--clients", "7"], "--clients: no point has 7 (present: 1, 4)"),
        (["--algorithm", "nope"], "--algorithm: no point has nope"),
        (["--clients", "four"], "--clients: expected comma-separated integers"),
        (["--top", "0"], "--top: must be a positive integer"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    directory = run_dir / "missing" if not extra else run_dir
    assert main(["c2c", str(directory), *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("snapsim: error: ")
    assert expected in err[0]
    if not extra:
        assert str(directory) in err[0]


def test_cli_without_lines_csv_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["c2c", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert str(tmp_path / "lines.csv") in err[0]


def test_cli_reports_a_simulated_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = simulator.run(Experiment(algorithms=("pre14",), clients=(2,), idle_clients=(0,),
                                      duration_ms=1.0, warmup_ms=0.5))
    result.curve.to_csv(tmp_path / "curve.csv", index=False)
    result.lines.to_csv(tmp_path / "lines.csv", index=False)
    assert main(["c2c", str(tmp_path), "--csv", "--sort", "tot", "--top", "1000"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(table) == len(result.lines)
    assert (table["transactions"] == result.curve["transactions"].iloc[0]).all()
    assert table["tot_hitm"].is_monotonic_decreasing
    assert table["tot_hitm"].iloc[0] > 0  # two clients do share lines
    expected = result.lines["local_hitm"] + result.lines["remote_hitm"]
    assert table["tot_hitm"].sum() == expected.sum()
