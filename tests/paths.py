"""Paths of the repository and of the test data, for tests in any subfolder."""

from __future__ import annotations

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
BASELINES_DIR = TESTS_DIR / "baselines"
