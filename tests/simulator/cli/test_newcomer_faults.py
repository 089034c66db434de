"""Faults a newcomer met: options that would change nothing, machines too large to build, a full
disk, windows too short or too long; each is one line naming the cause and exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("snapsim: error: ")
    return err[0]


MIX_EXPERIMENT = ("name: mixed\nworkload: mix\nclients: [1]\nidle_clients: [0]\n"
                  "algorithms: [post14]\nduration_ms: 0.5\nwarmup_ms: 0.1\n"
                  "options: {mix: {select-only: 9, tpcb: 1}}\n")


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_mix_for_another_workload_is_refused_even_when_inherited(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    (tmp_path / "mixed.yaml").write_text(MIX_EXPERIMENT, encoding="utf-8")
    child = tmp_path / "child.yaml"
    child.write_text("extends: mixed.yaml\nname: child\nworkload: select-only\n",
                     encoding="utf-8")
    flags = ["--out", str(tmp_path / "out")] if command == "run" else []
    assert main([command, str(child), *flags]) == 2
    assert ("options.mix: scripts and weights apply to the mix workload only, not select-only "
            "(they would change nothing; drop options.mix or run workload: mix)"
            in error_line(capsys))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_batch_for_a_workload_of_single_statements_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("extends: tiny\noptions: {batch: 4}\n", encoding="utf-8")
    flags = ["--out", str(tmp_path / "out")] if command == "run" else []
    assert main([command, str(path), *flags]) == 2
    assert ("options.batch: 4 statements per round trip apply to the batched and mix workloads "
            "only, not select-only" in error_line(capsys))

