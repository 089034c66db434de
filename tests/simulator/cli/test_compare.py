"""``snapsim compare``: two finished runs side by side, and its refusals."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

from simulator.cli import main

GRID = ["--no-progress", "--jobs", "1", "--idle-clients", "0,300", "--duration-ms", "3.0",
        "--warmup-ms", "2.0"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """pre14 (A) and post14 (B) on the same grid, and post14 on another grid (C)."""
    base = tmp_path_factory.mktemp("compare")
    for name, algorithm, clients in (("a", "pre14", "1,2"), ("b", "post14", "1,2"),
                                     ("c", "post14", "3")):
        assert main(["run", "tiny", *GRID, "--algorithms", algorithm, "--clients", clients,
                     "--out", str(base / name)]) == 0
    return base / "a", base / "b", base / "c"


def test_compare_writes_the_ratio_and_line_changes(
        runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, _ = runs
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    for name in ("compare.csv", "compare_lines.csv", "compare.png"):
        assert (out / name).stat().st_size > 0, name
    compared = pd.read_csv(out / "compare.csv")
    assert len(compared) == 4
    assert set(compared["algorithm_a"]) == {"pre14"}
    assert set(compared["algorithm_b"]) == {"post14"}
    keys = ["clients", "idle_clients"]
    curves = pd.read_csv(a / "curve.csv").merge(pd.read_csv(b / "curve.csv"), on=keys,
                                                suffixes=("_a", "_b"))
    merged = compared.merge(curves, on=keys)
    assert (merged["tps_a_x"] == merged["tps_a_y"]).all()
    pd.testing.assert_series_equal(merged["ratio"], merged["tps_b_y"] / merged["tps_a_y"],
                                   check_names=False)
    # post14 beats pre14 with 300 idle connections
    assert (merged.loc[merged["idle_clients"] == 300, "ratio"] > 1).all()
    lines = pd.read_csv(out / "compare_lines.csv")
    assert (lines["change"] - (lines["per_txn_b"] - lines["per_txn_a"])).abs().max() < 1e-12
    curve_a = pd.read_csv(a / "curve.csv")
    lines_a = pd.read_csv(a / "lines.csv")
    point = curve_a[(curve_a["clients"] == 2) & (curve_a["idle_clients"] == 300)].iloc[0]
    of_point = lines_a[lines_a["seed"] == point["seed"]]
    row = of_point.loc[of_point["l1_hit"].idxmax()]
    got = lines[(lines["clients"] == 2) & (lines["idle_clients"] == 300)
                & (lines["label"] == row["label"]) & (lines["class"] == "l1_hit")]
    assert got["per_txn_a"].tolist() == pytest.approx([row["l1_hit"] / point["transactions"]])
    printed = capsys.readouterr().out
    assert "ratio" in printed
    assert "transfers per transaction" in printed


@pytest.mark.parametrize("case", ["not a run", "no common point", "unknown key"])
def test_compare_bad_input_is_one_line_exit_2(
        runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        case: str) -> None:
    a, b, c = runs
    argv, expected = {
        "not a run": ([str(tmp_path), str(b)], "DIR_A"),
        "no common point": ([str(a), str(c)], "no common successful point"),
        "unknown key": ([str(a), str(b), "--key", "nope"], "--key"),
    }[case]
    assert main(["compare", *argv, "--out", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("snapsim: error: ")
    assert expected in err[0]
    assert not (tmp_path / "cmp").exists()
