"""The code is ruff- and mypy-clean (both tools come with the dev extra)."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False)


def test_ruff_is_clean() -> None:
    result = run("ruff", "check", "simulator", "models", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
