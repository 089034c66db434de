"""``-q`` and ``-v`` on every command, and the kernel's preparation announced before a run."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import simulator.cli.common as common
from simulator.cli import COMMANDS, build_parser, main
from simulator.hardware.warmup import kernel_compiled, warm_kernel

TINY_ONE_POINT = ["run", "tiny", "--clients", "1", "--idle-clients", "0", "--algorithms",
                  "post14", "--no-progress"]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_takes_q_and_v(command: str) -> None:
    parser = build_parser()
    assert {"-q", "--quiet", "-v", "--verbose"} <= set(parser._option_string_actions)
    subcommands = next(action for action in parser._actions
                       if isinstance(action, argparse._SubParsersAction))
    options = set(subcommands.choices[command]._option_string_actions)
    assert {"-q", "--quiet", "-v", "--verbose"} <= options


@pytest.mark.parametrize("argv", [["-q", "machines"], ["machines", "-q"], ["-v", "machines"],
                                  ["machines", "--verbose"]])
def test_before_or_after_the_command(argv: list[str],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    assert "gold5215-2s" in capsys.readouterr().out


def test_quiet_run_prints_only_its_result(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-q", *TINY_ONE_POINT, "--out", str(tmp_path / "q")]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "TPS" in captured.out or "post14" in captured.out  # the result table
    assert (tmp_path / "q" / "curve.csv").exists()


def test_verbose_run_prints_a_line_per_point(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*TINY_ONE_POINT, "-v", "--out", str(tmp_path / "v")]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("point ")]
    assert len(lines) == 1
    assert "algorithm=post14 clients=1 idle_clients=0" in lines[0]
    assert "TPS" in lines[0]
    assert "wrote " in err
    assert common.verbosity() == common.NORMAL  # reset after the command


def test_q_and_v_together_are_bad_input(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-q", *TINY_ONE_POINT, "-v", "--out", str(tmp_path / "x")]) == 2
    assert "-q and -v exclude each other" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_kernel_preparation_is_announced_once(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[object] = []
    monkeypatch.setattr(common, "kernel_compiled", lambda: bool(calls))
    monkeypatch.setattr(common, "warm_kernel", lambda config=None: calls.append(config))
    common.prepare_kernel()
    common.prepare_kernel()  # compiled now: silent
    err = capsys.readouterr().err.splitlines()
    assert len(calls) == 1
    assert err[0].startswith("preparing the coherence kernel")
    assert err[1].startswith("kernel ready in ")
    assert len(err) == 2
    common.set_verbosity(common.QUIET)
    try:
        calls.clear()
        common.prepare_kernel()
        assert capsys.readouterr().err == ""
        assert len(calls) == 1
    finally:
        common.set_verbosity(common.NORMAL)


def test_warming_compiles_every_entry_point() -> None:
    warm_kernel()
    assert kernel_compiled()
