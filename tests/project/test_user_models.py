"""A ``models.py`` or ``models/`` of the user's own in the working directory changes nothing.

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
from pathlib import Path

import pytest

from simulator.study.workload_model import workload_model

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
