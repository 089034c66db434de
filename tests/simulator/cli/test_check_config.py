"""``snapsim check-config`` on experiment files and measurement manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.study.experiment_file import experiments_dir
from simulator.study.measurements import shipped_manifest_path


def test_check_config_validates_experiments_and_manifests(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(experiments_dir() / "default.yaml")]) == 0
    assert "experiment default: 24 points (pre14, post14) on gold5215-2s" in capsys.readouterr().out
    assert main(["check-config", str(shipped_manifest_path())]) == 0
    assert "5 datasets, 108 measured points" in capsys.readouterr().out
    bad = tmp_path / "e.yaml"
    bad.write_text("extends: default\nalgorithms: [pre14, post15]\n", encoding="utf-8")
    assert main(["check-config", str(bad)]) == 2
    assert "unknown algorithm 'post15'" in capsys.readouterr().err
