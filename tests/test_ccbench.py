"""``snapsim ccbench`` reports the configured latency of every class it exercises."""

from __future__ import annotations

import pytest

from simulator.ccbench import measure
from simulator.cli import main
from simulator.machine_loader import load_machine


def test_gold_table_matches_the_machine_file() -> None:
    config = load_machine("gold5215-2s")
    rows = {row.scenario: row for row in measure(config)}
    assert rows["load from modified, same L3 domain"].value == config.latency.local_hitm_ns
    assert rows["CAS on line owned by the SMT sibling"].value == 7.4
    assert rows["load from modified, other socket (line homed on node 0)"].value == 115.6
    assert rows["load from modified, other socket (line homed on node 1)"].value == 178.2
    assert rows["load from DRAM, line homed on node 1"].access_class == "dram_remote"
    assert rows["hot line, 4 threads in one L3 domain"].value == pytest.approx(1e3 / 55.6, rel=0.02)


def test_cli_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ccbench", "threadripper-3990x"]) == 0
    out = capsys.readouterr().out
    assert "cross_domain_hitm" in out
    assert "87.0 ns" in out


def test_cli_unknown_machine_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ccbench", "no-such-machine"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "no-such-machine" in err[0]
