"""The snapsim command line: `machines`, `check-config`, error lines and exit codes."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from simulator import cli
from simulator.cli import COMMANDS, Command, main
from simulator.config.machine_file import machines_dir, shipped_machines
from simulator.errors import ConfigError
from tests.paths import REPO_ROOT

WriteYaml = Callable[[Any], Path]
REPO = REPO_ROOT


def _stderr_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_machines_lists_every_shipped_machine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["machines"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "TOPOLOGY", "PROTOCOL", "L3", "CLOCK", "VIRTUALIZED",
                                "DESCRIPTION"]
    for name in shipped_machines():
        assert any(line.startswith(name + " ") for line in lines)
    gold = next(line for line in lines if line.startswith("gold5215-2s "))
    assert gold.split()[1:6] == ["2x1x10x2", "MESIF", "non_inclusive", "2.5", "GHz"]
    tr = next(line for line in lines if line.startswith("threadripper-3990x "))
    assert tr.split()[1:4] == ["1x16x4x2", "MOESI", "victim"]


@pytest.mark.parametrize("name", shipped_machines())
def test_check_config_accepts_shipped_files(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-config", str(machines_dir() / f"{name}.yaml")]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"ok: {name} (")
    assert captured.err == ""


def test_check_config_summary(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check-config", str(machines_dir() / "gold5215-2s.yaml")])
    assert capsys.readouterr().out.strip() == (
        "ok: gold5215-2s (2 sockets x 1 domain x 10 cores x 2 threads, MESIF, "
        "non_inclusive L3, 2.5 GHz)"
    )


def _unknown_nested(data: dict[str, Any]) -> None:
    data["caches"]["l2"]["wayz"] = data["caches"]["l2"].pop("ways")


def _no_requester(data: dict[str, Any]) -> None:
    del data["latency"]["remote_hitm"]["requester"]


def _bad_home(data: dict[str, Any]) -> None:
    data["memory"]["home_nodes"][1]["near_domains"] = [5]


def _string_sockets(data: dict[str, Any]) -> None:
    data["topology"]["sockets"] = "two"


def _zero_threads(data: dict[str, Any]) -> None:
    data["topology"]["threads_per_core"] = 0


def _odd_ways(data: dict[str, Any]) -> None:
    data["caches"]["l2"]["ways"] = 12


def _negative_size(data: dict[str, Any]) -> None:
    data["caches"]["l3"]["size"] = "-1 MiB"


def _unknown_top(data: dict[str, Any]) -> None:
    data["colour"] = "red"


@pytest.mark.parametrize(
    ("mutation", "key"),
    [
        (_unknown_top, "colour"),
        (_unknown_nested, "caches.l2.wayz"),
        (_no_requester, "latency.remote_hitm.requester"),
        (_bad_home, "memory.home_nodes[1].near_domains"),
        (_string_sockets, "topology.sockets"),
        (_zero_threads, "topology.threads_per_core"),
        (_odd_ways, "caches.l2.ways"),
        (_negative_size, "caches.l3.size"),
    ],
)
def test_check_config_bad_file_prints_one_line(
    gold_data: dict[str, Any],
    write_yaml: WriteYaml,
    capsys: pytest.CaptureFixture[str],
    mutation: Callable[[dict[str, Any]], None],
    key: str,
) -> None:
    mutation(gold_data)
    path = write_yaml(gold_data)
    assert main(["check-config", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"snapsim: error: {path}: {key}: ")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a: [1,\n", "malformed YAML at line"),
        ("- 1\n", "top level must be a mapping"),
        ("colour: blue\n", "not a recognised configuration file"),
        ("topology: {}\ntopology: {}\n", "topology: duplicate key (line 2)"),
    ],
)
def test_check_config_non_machine_files(
    write_yaml: WriteYaml, capsys: pytest.CaptureFixture[str], text: str, fragment: str
) -> None:
    assert main(["check-config", str(write_yaml(text))]) == 2
    lines = _stderr_lines(capsys)
    assert len(lines) == 1
    assert lines[0].startswith("snapsim: error: ")
    assert fragment in lines[0]


def test_check_config_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "absent.yaml"
    assert main(["check-config", str(path)]) == 2
    assert _stderr_lines(capsys) == [f"snapsim: error: {path}: no such file"]


@pytest.mark.parametrize("argv_prefix", [["--debug"], []])
def test_debug_shows_traceback(
    gold_data: dict[str, Any],
    write_yaml: WriteYaml,
    capsys: pytest.CaptureFixture[str],
    argv_prefix: list[str],
) -> None:
    gold_data["caches"]["l2"]["ways"] = 12
    path = str(write_yaml(gold_data))
    argv = [*argv_prefix, "check-config", path] + ([] if argv_prefix else ["--debug"])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "ConfigError" in err
    assert err.splitlines()[-1].startswith("snapsim: error: ")


def test_no_traceback_without_debug(
    write_yaml: WriteYaml, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-config", str(write_yaml("- 1\n"))]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [[], ["no-such-command"], ["check-config"], ["machines", "--bogus"]]
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "usage: snapsim" in capsys.readouterr().err


def test_help_and_version_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "machines" in out
    assert "check-config" in out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("snapsim ")


def _register(monkeypatch: pytest.MonkeyPatch, name: str, handler: cli.Handler) -> None:
    def no_arguments(parser: argparse.ArgumentParser) -> None:
        del parser

    monkeypatch.setitem(COMMANDS, name, Command("test command", no_arguments, handler))


def test_keyboard_interrupt_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    _register(monkeypatch, "sleep", interrupted)
    assert main(["sleep"]) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_handler_exit_code_and_multiline_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fails(args: argparse.Namespace) -> int:
        raise ConfigError("a.b", "first\nsecond")

    def regresses(args: argparse.Namespace) -> int:
        return 1

    _register(monkeypatch, "fails", fails)
    _register(monkeypatch, "regresses", regresses)
    assert main(["fails"]) == 2
    assert _stderr_lines(capsys) == ["snapsim: error: a.b: first second"]
    assert main(["regresses"]) == 1


def test_every_command_is_in_the_table_and_in_the_help(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert list(COMMANDS) == ["machines", "machine", "check-config", "run", "plot", "regress",
                              "validate", "measure", "get-postgres", "calibrate", "ccbench",
                              "bench", "c2c", "trace", "compare", "report"]
    assert main(["--help"]) == 0
    listing = capsys.readouterr().out.split("COMMAND\n", 1)[1].split("\n\n", 1)[0]
    names = [line.split()[0] for line in listing.splitlines() if line.startswith("    ")
             and not line.startswith("     ")]
    assert names == list(COMMANDS)


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "simulator"],
        [str(Path(sys.executable).with_name("snapsim"))],
    ],
    ids=["python-m", "console-script"],
)
def test_end_to_end_exit_codes(command: list[str], tmp_path: Path) -> None:
    if not Path(command[0]).exists():
        pytest.skip(f"{command[0]} is not installed")
    ok = subprocess.run([*command, "machines"], capture_output=True, text=True, cwd=REPO,
                        check=False)
    assert ok.returncode == 0, ok.stderr
    assert "gold5215-2s" in ok.stdout
    assert "threadripper-3990x" in ok.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nwhat: 1\n", encoding="utf-8")
    failed = subprocess.run([*command, "check-config", str(bad)], capture_output=True,
                            text=True, check=False)
    assert failed.returncode == 2
    assert failed.stdout == ""
    (line,) = failed.stderr.splitlines()
    assert line.startswith(f"snapsim: error: {bad}: not a recognised configuration file")
    usage = subprocess.run([*command, "frobnicate"], capture_output=True, text=True, check=False)
    assert usage.returncode == 2
