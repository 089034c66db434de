"""``snapsim ccbench``: the table of a machine, and bad input."""

from __future__ import annotations

import pytest

from simulator.cli import main


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
