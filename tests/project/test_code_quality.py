"""The code is ruff- and mypy-clean (both tools come with the dev extra), docs scripts too."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False)


def test_ruff_is_clean() -> None:
    result = run("ruff", "check", "simulator", "models", "tests", "docs")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_docs_scripts_are_mypy_clean() -> None:
    """The scripts that regenerate the docs pages (not a package: checked as files)."""
    scripts = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").glob("*.py"))
    assert scripts
    result = run("mypy", *scripts)
    assert result.returncode == 0, result.stdout + result.stderr
