"""The README's first screen and its Python example stay true."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_first_screen_has_the_two_commands() -> None:
    first_screen = "\n".join(README.splitlines()[:30])
    assert "pip install -e '.[dev]' && snapsim ccbench" in first_screen
    assert "\npytest\n" in first_screen


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in ci.splitlines() if line and not line.startswith("#")]
    assert commands[-1] == "pytest"


def test_python_examples_run_and_print_what_they_say() -> None:
    import matplotlib

    matplotlib.use("Agg")
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    assert len(blocks) == 2
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        for block in blocks:
            exec(compile(block, "README.md", "exec"), {})
    text = output.getvalue()
    assert "share_get_snapshot" in text  # the PostgreSQL example's table
    assert "REMOTE_HITM" in text  # the machine example
    assert "latency_ns=115.6" in text
    assert "false_sharing_hitm" in text
