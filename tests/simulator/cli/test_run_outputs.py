"""metadata.yaml and columns.yaml of `snapsim run`; `simulator.load` of its output directory."""

from __future__ import annotations

import datetime
import hashlib
import subprocess
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest
import yaml
from matplotlib.axes import Axes

import simulator
from simulator.cli import main
from simulator.config.machine_file import load_machine, machines_dir
from simulator.errors import ConfigError
from simulator.study.metadata import PACKAGES, git_commit, machine_sha256
from simulator.study.workload_model import model_columns, workload_model
from tests.paths import REPO_ROOT

ARGV = ["run", "tiny", "--no-progress", "--jobs", "1", "--clients", "1,2",
        "--idle-clients", "0,50", "--duration-ms", "0.4", "--warmup-ms", "0.2"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("outputs") / "out"
    assert main([*ARGV, "--out", str(out)]) == 0
    return out


def test_metadata_records_versions_machine_times_and_command(run_dir: Path) -> None:
    data = yaml.safe_load((run_dir / "metadata.yaml").read_text(encoding="utf-8"))
    assert data["snapsim_version"] == simulator.__version__
    assert set(data["packages"]) == set(PACKAGES)
    assert data["packages"]["numpy"] == __import__("numpy").__version__
    assert data["python"].count(".") == 2
    machine_file = machines_dir() / "gold5215-2s.yaml"
    assert data["machine"]["sha256"] == hashlib.sha256(machine_file.read_bytes()).hexdigest()
    started = datetime.datetime.fromisoformat(data["started_utc"])
    assert started.utcoffset() == datetime.timedelta(0)
    assert 0 < data["wall_s"] < 600
    assert data["command"] == "snapsim " + " ".join([*ARGV, "--out", str(run_dir)])
    if (REPO_ROOT / ".git").exists():
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        assert data["git_commit"] == head


def test_metadata_stays_out_of_the_curve(run_dir: Path) -> None:
    curve = pd.read_csv(run_dir / "curve.csv")
    assert not {"snapsim_version", "git_commit", "wall_s", "started_utc"} & set(curve.columns)


@pytest.mark.parametrize("table", ["curve.csv", "curve_summary.csv", "lines.csv"])
def test_columns_yaml_documents_every_column_written(run_dir: Path, table: str) -> None:
    """The generic columns and the model's (its ``columns``), every one with unit and meaning."""
    tables = model_columns(workload_model()).tables
    documented = yaml.safe_load((run_dir / "columns.yaml").read_text(encoding="utf-8"))[table]
    written = list(pd.read_csv(run_dir / table, nrows=0).columns)
    assert list(documented) == written
    undocumented = [c for c, entry in documented.items()
                    if not entry["unit"] or not entry["meaning"]]
    assert not undocumented, f"{table} columns missing from analysis/columns.py: {undocumented}"
    for column in written:
        assert documented[column] == dict(zip(("unit", "meaning"), tables[table][column],
                                              strict=True))


def test_git_commit_is_null_outside_a_checkout(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None


def test_machine_hash_without_a_file_hashes_the_configuration() -> None:
    machine = load_machine("gold5215-2s")
    sha, hashed = machine_sha256(machine)
    assert hashed == "configuration"
    assert len(sha) == 64
    assert machine_sha256(load_machine("gold5215-2s"))[0] == sha
    assert machine_sha256(load_machine("threadripper-3990x"))[0] != sha


def test_load_returns_the_result_of_the_run(run_dir: Path) -> None:
    result = simulator.load(run_dir)
    expected = pd.read_parquet(run_dir / "curve.parquet")
    pd.testing.assert_frame_equal(result.curve, expected, check_dtype=False)
    assert len(result.curve) == 8
    assert (result.curve["tps"] > 0).all()
    assert list(result.lines.columns) == list(pd.read_csv(run_dir / "lines.csv", nrows=0).columns)
    assert len(result.lines) == len(pd.read_csv(run_dir / "lines.csv"))
    assert list(result.timings["wall_s"]) == list(pd.read_csv(run_dir / "timings.csv")["wall_s"])
    assert result.experiment is not None
    assert result.experiment.clients == (1, 2)
    assert result.experiment.idle_clients == (0, 50)
    assert result.experiment.machine == "gold5215-2s"
    assert result.experiment.duration_ms == 0.4
    assert result.measured is None
    assert result.work_scale == 1.0
    assert result.failures.empty
    assert isinstance(result.plot(), Axes)
    pd.testing.assert_frame_equal(result.curve_summary,
                                  pd.read_csv(run_dir / "curve_summary.csv"), check_dtype=False)


def test_one_seed_gives_a_summary_without_intervals(run_dir: Path) -> None:
    curve = pd.read_csv(run_dir / "curve.csv")
    summary = pd.read_csv(run_dir / "curve_summary.csv")
    assert len(summary) == len(curve) == 8
    assert (summary["n_seeds"] == 1).all()
    assert (summary["n_failed"] == 0).all()
    assert list(summary["tps_mean"]) == list(curve["tps"])
    assert summary[["tps_sd", "tps_low", "tps_high"]].isna().all(axis=None)


def test_load_refuses_a_missing_or_unfinished_directory(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a directory of snapsim results"):
        simulator.load(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="not the output of a finished snapsim run"):
        simulator.load(tmp_path)
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "config.resolved.yaml").write_bytes(
        (run_dir / "config.resolved.yaml").read_bytes())
    with pytest.raises(ConfigError, match=r"unfinished run .*curve\.csv"):
        simulator.load(unfinished)
