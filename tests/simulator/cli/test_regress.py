"""``snapsim regress`` against the committed baseline of the tiny experiment."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pandas as pd
import pytest

from simulator.cli import main
from tests.paths import BASELINES_DIR

BASELINE = BASELINES_DIR / "tiny"
SLOWER_BACKEND = "options.costs.backend.select_only=60000 cycles"  # default: 30000 cycles


def digests(directory: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(directory.iterdir()) if path.is_file()}


def test_the_committed_baseline_passes(capsys: pytest.CaptureFixture[str]) -> None:
    before = digests(BASELINE)
    assert main(["regress", str(BASELINE)]) == 0
    assert f"ok: 8 points of {BASELINE}/ within tolerance" in capsys.readouterr().out
    assert digests(BASELINE) == before


def test_a_changed_cost_fails_with_a_table_of_what_moved(
        capsys: pytest.CaptureFixture[str]) -> None:
    before = digests(BASELINE)
    assert main(["regress", str(BASELINE), "--set", SLOWER_BACKEND]) == 1
    captured = capsys.readouterr()
    assert "REGRESSION:" in captured.err
    assert "moved beyond tolerance" in captured.err
    table = captured.out.splitlines()
    assert table[0].split() == ["point", "column", "baseline", "new", "change", "tolerance"]
    tps_rows = [row for row in table[1:] if "  tps  " in row]
    assert len(tps_rows) == 8  # every point slowed down beyond the 2 % tolerance
    assert all("-" in row.split()[-2] for row in tps_rows)
    assert digests(BASELINE) == before  # no --update: the baseline is untouched


def test_update_writes_a_new_baseline_that_then_passes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "tiny"
    shutil.copytree(BASELINE, copy)
    assert main(["regress", str(copy), "--update", "--set", SLOWER_BACKEND]) == 0
    assert "60000 cycles" in (copy / "experiment.yaml").read_text(encoding="utf-8")
    old = pd.read_csv(BASELINE / "curve.csv")
    new = pd.read_csv(copy / "curve.csv")
    assert (new["tps"] < 0.8 * old["tps"]).all()
    capsys.readouterr()
    assert main(["regress", str(copy)]) == 0
    assert main(["regress", str(BASELINE)]) == 0


def test_a_directory_without_a_baseline_is_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["regress", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "experiment.yaml does not exist" in err[0]


@pytest.mark.parametrize(("curve", "tolerances", "message"), [
    ("", None, "curve.csv: is empty"),
    ("garbage\x00\n", None, "curve.csv: has no points"),
    (None, "tsp: {rel: 0.1}\n", "tolerances.yaml: tsp: unknown column"),
])
def test_an_unusable_baseline_or_tolerance_file_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], curve: str | None,
        tolerances: str | None, message: str) -> None:
    copy = tmp_path / "tiny"
    shutil.copytree(BASELINE, copy)
    if curve is not None:
        (copy / "curve.csv").write_text(curve, encoding="utf-8")
    if tolerances is not None:
        (copy / "tolerances.yaml").write_text(tolerances, encoding="utf-8")
    assert main(["regress", str(copy)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("snapsim: error: ")
    assert message in err[0]
