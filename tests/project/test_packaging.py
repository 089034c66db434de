"""A non-editable install carries everything ``snapsim`` reads: modules, marker and ``configs/``.

The wheel is built with ``pip wheel`` from a copy of the files a source distribution holds, so
stale ``build/`` output of the checkout cannot leak into it. Its file list must hold every module
of ``simulator`` and of ``models/`` (as ``snapsim_models``, its import name, which the
``snapsim.models`` entry point names), the ``py.typed`` marker and every shipped machine,
experiment, measurement and cost file (as ``simulator/_configs/...``). The unpacked wheel, with the
checkout off the path, must then find its own copy of ``configs/`` and list the shipped machines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from simulator.config import configs_dir
from tests.paths import REPO_ROOT

SOURCE_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md")
SOURCE_DIRS = ("simulator", "models", "configs")
CONFIGS = REPO_ROOT / "configs"
INSTALLED_CONFIGS = "simulator/_configs"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCE_FILES:
        shutil.copy2(REPO_ROOT / name, source / name)
    for name in SOURCE_DIRS:
        shutil.copytree(REPO_ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist),
         str(source)],
        check=True, cwd=dist,
    )
    (built,) = dist.glob("snapsim-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _repo_files(folder: str, pattern: str) -> set[Path]:
    return {path.relative_to(REPO_ROOT / folder)
            for path in (REPO_ROOT / folder).rglob(pattern)
            if path.is_file() and "__pycache__" not in path.parts}


def test_wheel_carries_every_shipped_config_file(wheel_files: set[str]) -> None:
    shipped = _repo_files("configs", "*")
    kinds = {path.parts[0] if len(path.parts) > 1 else path.name for path in shipped}
    assert kinds == {"machines", "experiments", "measurements", "postgres-costs.yaml"}
    expected = {f"{INSTALLED_CONFIGS}/{path.as_posix()}" for path in shipped}
    assert sorted(expected - wheel_files) == []


def test_wheel_carries_every_module_and_the_typed_marker(wheel_files: set[str]) -> None:
    modules = {f"{package}/{path.as_posix()}"
               for folder, package in (("simulator", "simulator"), ("models", "snapsim_models"))
               for path in _repo_files(folder, "*.py")}
    assert "simulator/hardware/coherence/kernel.py" in modules  # a nested subpackage
    assert "snapsim_models/shmem/build.py" in modules  # a namespace subpackage, renamed
    assert sorted(modules - wheel_files) == []
    assert "simulator/py.typed" in wheel_files


def test_wheel_carries_no_test_or_notebook(wheel_files: set[str]) -> None:
    top_level = {name.split("/", 1)[0] for name in wheel_files}
    assert top_level == {"simulator", "snapsim_models", "snapsim-0.1.0.dist-info"}


def test_unpacked_wheel_finds_its_own_configs(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "from simulator.config import configs_dir; print(configs_dir())"],
        check=True, cwd=elsewhere, env=env, capture_output=True, text=True,
    )
    assert Path(where.stdout.strip()) == site / INSTALLED_CONFIGS
    machines = subprocess.run(
        [sys.executable, "-m", "simulator", "machines"],
        check=True, cwd=elsewhere, env=env, capture_output=True, text=True,
    )
    for path in (CONFIGS / "machines").glob("*.yaml"):
        assert path.stem in machines.stdout


def test_wheel_registers_the_model_under_its_import_name(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        entry_points = archive.read("snapsim-0.1.0.dist-info/entry_points.txt").decode()
    assert "postgres = snapsim_models.plugin:MODEL" in entry_points


def test_configs_dir_is_the_checkout_in_a_source_tree() -> None:
    assert configs_dir() == CONFIGS
