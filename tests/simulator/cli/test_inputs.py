"""Bad input to ``validate``, ``check-config`` and ``plot`` is one line and exit 2; known gaps."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import simulator.cli.plot
from simulator.cli import main
from simulator.tools.scoring import SUMMARY_COLUMNS
from tests.paths import BASELINES_DIR
from tests.simulator.tools.test_validate import CSV, write_manifest


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("snapsim: error: ")
    return err[0]


@pytest.mark.parametrize("command", [["validate", "--no-progress"], ["check-config"]])
def test_a_non_numeric_measurement_is_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    manifest = write_manifest(tmp_path)
    (tmp_path / "m.csv").write_text(CSV.replace("31088", "31O88"), encoding="utf-8")
    args = ([*command, "--manifest", str(manifest), "--out", str(tmp_path / "o")]
            if command[0] == "validate" else [*command, str(manifest)])
    assert main(args) == 2
    line = one_error_line(capsys)
    assert f"{tmp_path / 'm.csv'}: line 3, column tps_pre14" in line
    assert "'31O88'" in line


def test_validate_reports_a_known_gap_and_fails_when_it_passes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gap = "tps_pre14: {algorithm: pre14, expected: fail, reason: not modelled yet}"
    strict = write_manifest(tmp_path, thresholds="{median_abs_rel_error: 0.0001, "
                                                 "max_abs_rel_error: 0.0001}")
    strict.write_text(strict.read_text(encoding="utf-8")
                      .replace("tps_post14: post14", "tps_post14: {algorithm: post14, expected: "
                               "fail, reason: too strict}").replace("tps_pre14: pre14", gap),
                      encoding="utf-8")
    out = tmp_path / "out"
    assert main(["validate", "--manifest", str(strict), "--out", str(out), "--jobs", "1",
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "known gap" in printed
    assert "known gap tiny/tps_pre14: not modelled yet" in printed
    summary = pd.read_csv(out / "summary.csv", keep_default_na=False)
    assert list(summary.columns) == list(SUMMARY_COLUMNS)
    assert summary[["series", "expected", "outcome", "reason"]].values.tolist() == [
        ["tps_pre14", "fail", "expected fail", "not modelled yet"],
        ["tps_post14", "fail", "expected fail", "too strict"]]
    loose = write_manifest(tmp_path)
    loose.write_text(loose.read_text(encoding="utf-8").replace("tps_pre14: pre14", gap),
                     encoding="utf-8")
    assert main(["validate", "--manifest", str(loose), "--out", str(out), "--jobs", "1",
                 "--no-progress"]) == 1
    assert "UNEXPECTED PASS tiny/tps_pre14" in capsys.readouterr().out
    summary = pd.read_csv(out / "summary.csv", keep_default_na=False)
    assert summary["outcome"].tolist() == ["unexpected pass", "pass"]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "run"
    shutil.copytree(BASELINES_DIR / "tiny", directory)
    return directory


def test_plot_into_an_unwritable_directory_is_bad_input(
        run_dir: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> list[Path]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(simulator.cli.plot, "write_plots", refuse)
    assert main(["plot", str(run_dir)]) == 2
    assert f"DIR: cannot write the plots into {run_dir}: Permission denied" in one_error_line(
        capsys)


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """``directory`` read-only (for root too, with the immutable attribute where it works)."""
    directory.chmod(0o555)
    immutable = False
    try:
        if os.access(directory, os.W_OK):
            immutable = subprocess.run(["chattr", "+i", str(directory)], capture_output=True,
                                       check=False).returncode == 0 \
                if shutil.which("chattr") else False
            if not immutable:
                pytest.skip("cannot make a directory read-only for this user")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
        directory.chmod(0o755)


def test_plot_into_a_read_only_directory_is_bad_input_and_writes_nothing(
        run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(path.name for path in run_dir.iterdir())
    with read_only(run_dir):
        assert main(["plot", str(run_dir)]) == 2
    assert "DIR: cannot write to" in one_error_line(capsys)
    assert sorted(path.name for path in run_dir.iterdir()) == before
