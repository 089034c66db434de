"""Fixtures of the measure tests: a directory every user may read and the fakes' PID file."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.simulator.measure.fakes import shared_directory


@pytest.fixture
def shared() -> Iterator[Path]:
    directory = shared_directory()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def pids_file(shared: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = shared / "pids"
    path.touch()
    path.chmod(0o666)
    monkeypatch.setenv("FAKE_PG_PIDS", str(path))
    return path
