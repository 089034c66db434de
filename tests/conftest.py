"""Shared fixtures: parsed shipped machine files, a writer for (bad) machine files, and a
recorder of the points a sweep computes."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import simulator.study.sweep
from simulator.config.machine_file import machines_dir
from simulator.study.sweep import PointRecord, PointTask

WriteYaml = Callable[[Any], Path]


def _shipped_data(name: str) -> dict[str, Any]:
    data = yaml.safe_load((machines_dir() / f"{name}.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture
def gold_data() -> dict[str, Any]:
    """A fresh, mutable copy of the parsed gold5215-2s machine file."""
    return copy.deepcopy(_shipped_data("gold5215-2s"))


@pytest.fixture
def tr_data() -> dict[str, Any]:
    """A fresh, mutable copy of the parsed threadripper-3990x machine file."""
    return copy.deepcopy(_shipped_data("threadripper-3990x"))


@pytest.fixture
def write_yaml(tmp_path: Path) -> WriteYaml:
    """Write a document (or raw text) to ``tmp_path/machine.yaml`` and return the path."""

    def write(document: Any) -> Path:
        path = tmp_path / "machine.yaml"
        text = document if isinstance(document, str) else yaml.safe_dump(document, sort_keys=False)
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def computed_points(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the points simulated from now on, in order (stored points are not)."""
    computed: list[str] = []
    execute = simulator.study.sweep.execute

    def counted(task: PointTask) -> PointRecord:
        computed.append(task.key)
        return execute(task)

    monkeypatch.setattr(simulator.study.sweep, "execute", counted)
    return computed
