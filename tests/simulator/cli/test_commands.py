"""The command line is a thin layer: the libraries it calls never need it, nor argparse."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from simulator.cli import COMMANDS, build_parser
from tests.paths import REPO_ROOT

LIBRARIES = ("simulator", "simulator.tools.validate", "simulator.tools.calibrate",
             "simulator.tools.regress", "simulator.tools.ccbench", "simulator.tools.contention",
             "simulator.tools.sosp13", "simulator.tools.bench",
             "simulator.study.experiment", "simulator.analysis.c2c")


def test_importing_the_libraries_loads_no_command_and_no_argparse() -> None:
    code = ("import sys\n"
            + "".join(f"import {name}\n" for name in LIBRARIES)
            + "print(sorted(m for m in sys.modules if m == 'argparse' "
              "or m.startswith('simulator.cli')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO_ROOT, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("floor", ["study", "analysis"])
def test_no_library_module_parses_arguments(floor: str) -> None:
    for path in sorted((REPO_ROOT / "simulator" / floor).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module}
        assert "argparse" not in imported, path
        names = {node.name for node in tree.body
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
        assert not {"add_arguments", "main"} & names, path


def test_every_command_module_is_in_the_table() -> None:
    modules = {path.stem.replace("_", "-") for path in (REPO_ROOT / "simulator" / "cli").glob(
        "*.py") if path.stem not in ("__init__", "common", "experiment_args")}  # helpers
    assert modules <= set(COMMANDS), modules - set(COMMANDS)
    parser = build_parser()
    for name in COMMANDS:  # every command parses its own --help
        with pytest.raises(SystemExit) as info:
            parser.parse_args([name, "--help"])
        assert info.value.code == 0
