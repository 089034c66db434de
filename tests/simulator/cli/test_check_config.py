"""``snapsim check-config`` on experiment files and measurement manifests."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.measure.manifest import shipped_manifest_path
from simulator.study import estimate
from simulator.study.experiment_file import experiments_dir
from tests.simulator.tools.test_ratios import RATIO, ratio_manifest


def test_check_config_validates_experiments_and_manifests(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(experiments_dir() / "default.yaml")]) == 0
    assert "experiment default: 24 points (pre14, post14) on gold5215-2s" in capsys.readouterr().out
    assert main(["check-config", str(shipped_manifest_path())]) == 0
    assert "6 datasets, 172 measured points, 5 ratios" in capsys.readouterr().out
    bad = tmp_path / "e.yaml"
    bad.write_text("extends: default\nalgorithms: [pre14, post15]\n", encoding="utf-8")
    assert main(["check-config", str(bad)]) == 2
    assert "unknown algorithm 'post15'" in capsys.readouterr().err
    ratios = ratio_manifest(tmp_path, RATIO.replace("numerator: post14", "numerator: post15"))
    assert main(["check-config", str(ratios)]) == 2
    assert "ratios.tiny_ratio.numerator: unknown algorithm 'post15'" in capsys.readouterr().err


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("snapsim: error: ")
    return err[0]


def test_an_unknown_key_of_an_experiment_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("extends: tiny\nalgoritms: [pre14]\n", encoding="utf-8")
    assert main(["check-config", str(path)]) == 2
    assert f"{path}: algoritms: unknown key (expected one of: extends, " in error_line(capsys)


def test_an_unknown_key_of_a_machine_file_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("name: m\ntopolgy: {sockets: 1}\ncaches: {}\n", encoding="utf-8")
    assert main(["check-config", str(path)]) == 2
    assert "topolgy: unknown key" in error_line(capsys)


def test_a_machine_file_s_kernel_thread_is_summarised_and_its_bad_share_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from simulator.config import configs_dir

    host = configs_dir() / "measurements" / "kvm-epyc-2vcpu" / "host.yaml"
    assert main(["check-config", str(host)]) == 0
    assert ("kernel thread kdamond: 0.56 % of a CPU + 0.0091 % per process"
            in capsys.readouterr().out)
    path = tmp_path / "host.yaml"
    path.write_text(host.read_text(encoding="utf-8").replace(
        "cpu_share: 0.0056", "cpu_share: -0.0056"), encoding="utf-8")
    assert main(["check-config", str(path)]) == 2
    assert (f"{path}: kernel_thread.cpu_share: must not be negative, got -0.0056"
            in error_line(capsys))


def test_an_unrecognised_file_lists_the_kinds_with_their_articles(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("colour: blue\n", encoding="utf-8")
    assert main(["check-config", str(path)]) == 2
    line = error_line(capsys)
    assert "not a recognised configuration file (a machine file has" in line
    assert "a measurement manifest file has" in line
    assert "an experiment file has" in line
    assert "a experiment" not in line


INVALID_EXPERIMENT = "extends: tiny\nalgorithms: [pre14, post15]\n"


def test_dev_stdin_is_read_once(tmp_path: Path) -> None:
    for text, code in ((INVALID_EXPERIMENT, 2), ("extends: tiny\n", 0)):
        done = subprocess.run([sys.executable, "-m", "simulator", "check-config", "/dev/stdin"],
                              input=text, capture_output=True, text=True, check=False,
                              cwd=tmp_path)
        assert done.returncode == code, done.stderr
    assert "unknown algorithm 'post15'" in subprocess.run(
        [sys.executable, "-m", "simulator", "check-config", "/dev/stdin"],
        input=INVALID_EXPERIMENT, capture_output=True, text=True, check=False).stderr


def test_a_dash_reads_standard_input(capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("extends: tiny\nclients: [1]\n"))
    assert main(["check-config", "-"]) == 0
    assert "ok: experiment tiny: 4 points (pre14, post14) on gold5215-2s" in (
        capsys.readouterr().out)
    monkeypatch.setattr(sys, "stdin", io.StringIO(INVALID_EXPERIMENT))
    assert main(["check-config", "-"]) == 2
    assert "<stdin>: algorithms: unknown algorithm 'post15'" in error_line(capsys)
    monkeypatch.setattr(sys, "stdin", io.StringIO(shipped_manifest_path().read_text(
        encoding="utf-8").replace("    file: ", f"    file: {shipped_manifest_path().parent}/")))
    assert main(["check-config", "-"]) == 0
    assert "6 datasets" in capsys.readouterr().out


def test_a_misspelt_measurements_dataset_is_refused_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("extends: tiny\nmeasurements: gold5215_idel\n", encoding="utf-8")
    assert main(["check-config", str(path)]) == 2
    assert "no dataset 'gold5215_idel'" in error_line(capsys)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--jobs", "1"]) == 2
    assert "measurements: no dataset 'gold5215_idel'" in error_line(capsys)
    assert not (out / "points").exists()


def test_an_experiment_whose_points_cannot_fit_in_memory_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(estimate, "available_memory", lambda: (16e9, "MemAvailable"))
    path = tmp_path / "huge.yaml"
    path.write_text("extends: tiny\nclients: [2000000]\n", encoding="utf-8")
    assert main(["check-config", str(path)]) == 2
    line = error_line(capsys)
    assert "clients=2000000" in line
    assert "GB" in line
    assert "available" in line
