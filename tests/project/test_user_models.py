"""A user's workload model, and a ``models.py`` or ``models/`` of the user's own.

A minimal workload model (:class:`tests.toy_models.MinimalModel`) subclasses
:class:`~simulator.study.workload_model.WorkloadModelBase` and runs with the base class's
defaults for every optional hook; an entry point's object that is no such subclass is refused.

A ``models.py`` or ``models/`` of the user's own in the working directory changes nothing.

``python -m simulator``, ``python -c`` and notebooks put the working directory first on
``sys.path``. The PostgreSQL model is therefore installed as ``snapsim_models``, not under the
name of its folder ``models/``, which would resolve to the user's module (and fail with
``'models' is not a package``). These run the real commands in a temporary working directory
holding such a module, with the installed ``snapsim`` (whatever kind of install it is).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

import simulator
import simulator.study.workload_model
from simulator.errors import ConfigError
from simulator.study.workload_model import WorkloadModelBase, workload_model
from snapsim_models.plugin import PostgresModel
from tests.toy_models import MinimalModel

MESSAGE = "the user's own models was imported"
HOSTILE = {
    "models.py": {"models.py": f"raise SystemExit({MESSAGE!r})\n"},
    "models/": {"models/__init__.py": "", "models/plugin.py": f"raise SystemExit({MESSAGE!r})\n"},
}
"""The user's files, by case: a module, and a package with a ``plugin`` module."""

RUN_IN_NOTEBOOK = (
    "import simulator\n"
    "r = simulator.run(simulator.Experiment(algorithms=('post14',), clients=(1,), "
    "idle_clients=(0,), duration_ms=0.5, warmup_ms=0.2))\n"
    "print('tps', *r.curve.tps)\n"
)


@pytest.fixture(params=sorted(HOSTILE))
def user_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    for name, text in HOSTILE[request.param].items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def python(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    # PYTHONSAFEPATH (3.11) would keep the working directory off sys.path: not the user's case.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONSAFEPATH"}
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False, timeout=300)


def test_the_user_s_models_is_what_a_top_level_models_import_finds(user_dir: Path) -> None:
    """The setting is hostile: without the distinct name, the user's module would be loaded."""
    result = python(user_dir, "-c", "import models.plugin")
    assert result.returncode != 0
    assert MESSAGE in result.stderr


def test_python_m_simulator_run(user_dir: Path) -> None:
    result = python(user_dir, "-m", "simulator", "run", "tiny", "--algorithms", "post14",
                    "--clients", "1", "--idle-clients", "0", "--duration-ms", "0.5",
                    "--warmup-ms", "0.2", "--jobs", "1", "--no-progress", "--out", "out")
    assert result.returncode == 0, result.stderr
    with (user_dir / "out" / "curve.csv").open(encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert [(row["algorithm"], row["clients"]) for row in rows] == [("post14", "1")]
    assert float(rows[0]["tps"]) > 0


def test_simulator_run_with_the_working_directory_on_the_path(user_dir: Path) -> None:
    result = python(user_dir, "-c", RUN_IN_NOTEBOOK)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("tps ")]
    assert float(line.split()[1]) > 0


def test_the_installed_entry_point_loads_snapsim_models() -> None:
    """Metadata written before the rename (an old install, a stale ``snapsim.egg-info`` of the
    checkout) names ``models.plugin``, which loads the folder a second time as ``models``."""
    module = type(workload_model()).__module__
    assert module == "snapsim_models.plugin", f"{module}: reinstall snapsim (pip install -e .)"


@dataclass(frozen=True)
class _EntryPoint:
    name: str
    value: object

    def load(self) -> object:
        return self.value


def _installed(monkeypatch: pytest.MonkeyPatch, **models: object) -> None:
    """Make ``models`` the installed workload models, by name."""
    points = [_EntryPoint(name, model) for name, model in models.items()]
    monkeypatch.setattr(simulator.study.workload_model, "metadata",
                        SimpleNamespace(entry_points=lambda group: points))


def test_a_minimal_model_runs_with_the_base_class_defaults(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(monkeypatch, minimal=MinimalModel())
    result = simulator.run(simulator.Experiment(
        model="minimal", machine="gold5215-2s", algorithms=("spin",), workload="loop",
        idle_kind="idle", clients=(1, 2), idle_clients=(0,), single_client_tps=None,
        measurements=None))
    assert list(result.curve["tps"]) == [1000.0, 2000.0]
    assert list(result.curve.columns[:8]) == ["machine", "algorithm", "workload", "clients",
                                              "idle_clients", "idle_kind", "seed", "root_seed"]


def test_an_entry_point_that_is_no_workload_model_base_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(monkeypatch, plain=object())
    with pytest.raises(ConfigError, match=r"'plain' is a builtins\.object, not an instance of a "
                       r"subclass of simulator\.study\.workload_model\.WorkloadModelBase"):
        workload_model("plain")


def test_the_shipped_model_defines_only_what_the_base_class_declares() -> None:
    """A misspelt optional hook would be a new name, silently never called."""
    declared = set(dir(WorkloadModelBase)) | set(WorkloadModelBase.__annotations__)
    own = {name for name in vars(PostgresModel) if not name.startswith("_")}
    assert own <= declared, own - declared
