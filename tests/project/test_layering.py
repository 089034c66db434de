"""The tree is the architecture: floors of ``simulator`` import only downwards, no module cycle.

``simulator`` is a generic machine in floors (``errors``, ``types`` and ``version``, then
``config``, ``hardware`` and ``host``, ``runtime``, ``analysis`` and ``measure``, ``study``,
``tools``, ``cli``); a module imports from its own subpackage or a lower floor, and the experiment
pipeline (``study``) never imports the tools over it. The PostgreSQL model, the folder
``models/`` installed as ``snapsim_models``, stands on the machine and never on the command line,
and nothing in ``simulator`` imports it. Imports inside functions count like any other, and
relative imports count as the modules they name.

No code of the project imports a top-level ``models``: that name belongs to the user (a
``models.py`` in the working directory), and the folder imported under it would be a second copy
of ``snapsim_models``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT

FLOORS = {
    "simulator.errors": 1,
    "simulator.types": 1,
    "simulator.version": 1,
    "simulator.config": 2,
    "simulator.hardware": 3,
    "simulator.host": 3,  # this computer, read and timed; knows nothing of PostgreSQL
    "simulator.runtime": 4,
    "simulator.analysis": 4,
    "simulator.measure": 4,  # real PostgreSQL and pgbench, and the manifest; never the model
    "simulator.study": 5,  # the experiment pipeline alone
    "simulator.tools": 6,  # the library half of the commands that judge, report or benchmark
    "simulator.cli": 7,
    "simulator": 8,  # the package's public API and ``python -m simulator``
}
"""Floor of each part of ``simulator``: the longest matching prefix of a module's name."""

FOLDER_OF_MODELS = "models"
MODELS = "snapsim_models"
"""Import name of the folder ``models/`` (the package is installed under it, see ``setup.py``)."""

MODELS_MAY_IMPORT = ("simulator.errors", "simulator.types", "simulator.config",
                     "simulator.hardware", "simulator.runtime", "simulator.study.workload_model")

SNAPSHOTS = f"{MODELS}.snapshots"
SNAPSHOT_FLOORS = {
    "base": 1,  # the interface every algorithm implements
    "group_clear": 2,  # the 9.6+ group clear, shared by pre14 and 14
    "pg91": 2,
    "csn": 2,
    "pre14": 3,
    "post14": 3,  # pgxact_split, post14 and the two what-ifs on it
    "running_xids": 4,  # a what-if on pgxact_split
}
"""Floor of each module of the snapshot algorithms (one module per version family); the package's
``__init__`` (``ALGORITHMS``) stands on all of them."""

SHMEM = f"{MODELS}.shmem"
"""The shared-memory layouts: the algorithms stand on them, and they never on the algorithms."""

SCHEDULER_FLOORS = {
    "simulator.runtime.scheduler_stats": 1,  # counters and trace tables
    "simulator.runtime.placement": 1,  # the searches for a thread, over plain state
    "simulator.runtime.idle": 1,  # the idle governor
    "simulator.runtime.working_set": 1,  # private working sets: LRU stacks and refills
    "simulator.runtime.idle_threads": 2,
    "simulator.runtime.task": 2,  # sees its scheduler through the TaskScheduler protocol
    "simulator.runtime.scheduler": 3,
}
"""Floor of each module of the CPU scheduler inside ``runtime``: ``Task`` and ``CpuScheduler``
use each other, and only the task's module may stand below the scheduler's."""


def module_name(path: Path) -> str:
    """The name ``path`` is imported under (files in ``models/`` as ``snapsim_models``)."""
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[0] == FOLDER_OF_MODELS:
        parts[0] = MODELS
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {module_name(path): path
            for folder in ("simulator", FOLDER_OF_MODELS)
            for path in sorted((REPO_ROOT / folder).rglob("*.py"))}


def absolute_module(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute name of the module ``node`` imports from, inside module ``importer``."""
    if node.level == 0:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    assert len(base) >= 1, f"{importer}: relative import beyond the top-level package"
    return ".".join([*base, node.module] if node.module else base)


def imported_modules(path: Path, known: set[str] | None = None) -> set[str]:
    """Every module ``path`` imports, at any depth; ``from pkg import mod`` names ``pkg.mod``.

    Relative imports are resolved against the name ``path`` is imported under.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    importer = module_name(path)
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = absolute_module(node, importer, is_package)
            names.add(module)
            if known is not None:
                names.update(f"{module}.{alias.name}" for alias in node.names
                             if f"{module}.{alias.name}" in known)
    return names


def part_of(module: str) -> str:
    """The entry of :data:`FLOORS` a ``simulator`` module belongs to."""
    return max((key for key in FLOORS if module == key or module.startswith(key + ".")), key=len)


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    known = set(modules)
    return {name: {m for m in imported_modules(path, known) if m in known and m != name}
            for name, path in modules.items()}


def names_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_simulator_does_not_import_models() -> None:
    offenders = sorted(name for name, targets in import_graph().items()
                       if name.startswith("simulator")
                       and any(names_package(t, MODELS) for t in targets))
    assert offenders == []


def python_sources() -> dict[str, str]:
    """Every piece of Python of the repository, by where it is: modules, scripts, notebook cells."""
    sources = {str(path.relative_to(REPO_ROOT)): path.read_text(encoding="utf-8")
               for folder in ("simulator", FOLDER_OF_MODELS, "tests", "docs", "notebooks")
               for path in sorted((REPO_ROOT / folder).rglob("*.py"))}
    sources["setup.py"] = (REPO_ROOT / "setup.py").read_text(encoding="utf-8")
    for notebook in sorted((REPO_ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for index, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                sources[f"{notebook.relative_to(REPO_ROOT)}[{index}]"] = "".join(cell["source"])
    return sources


def top_level_imports(source: str) -> set[str]:
    """The top-level package of every absolute import in ``source``, at any depth."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_nothing_imports_a_top_level_models() -> None:
    """``models`` is the user's name; the PostgreSQL package is imported as ``snapsim_models``."""
    sources = python_sources()
    assert "tests/models/test_pg_runs.py" in sources
    assert any(name.startswith("notebooks/") for name in sources)
    offenders = sorted(where for where, source in sources.items()
                       if FOLDER_OF_MODELS in top_level_imports(source))
    assert offenders == []


def test_the_model_imports_itself_relatively() -> None:
    """Inside ``models/`` every import of the package is relative, so it works under any name."""
    offenders = sorted(f"{name}: {node.module}"
                       for name, path in project_modules().items() if names_package(name, MODELS)
                       for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                       if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                       and node.module.split(".")[0] in (MODELS, FOLDER_OF_MODELS))
    assert offenders == []


def test_each_floor_imports_only_from_itself_or_below() -> None:
    offenders = []
    for name, targets in import_graph().items():
        if not name.startswith("simulator"):
            continue
        own = part_of(name)
        for target in targets:
            if not target.startswith("simulator"):
                continue
            other = part_of(target)
            if other != own and FLOORS[other] >= FLOORS[own]:
                offenders.append(f"{name} -> {target}")
    assert sorted(offenders) == []


def test_the_pipeline_does_not_import_the_tools() -> None:
    """``study`` is the experiment pipeline; the commands' libraries in ``tools`` stand on it."""
    offenders = sorted(f"{name} -> {target}" for name, targets in import_graph().items()
                       if names_package(name, "simulator.study")
                       for target in targets if names_package(target, "simulator.tools"))
    assert offenders == []
    assert any(names_package(target, "simulator.study")
               for target in import_graph()["simulator.tools.validate"])


def test_models_stand_on_the_machine_not_on_the_commands() -> None:
    offenders = [f"{name} -> {target}"
                 for name, targets in import_graph().items() if names_package(name, MODELS)
                 for target in targets
                 if target.startswith("simulator")
                 and not any(target == allowed or target.startswith(allowed + ".")
                             for allowed in MODELS_MAY_IMPORT)]
    assert sorted(offenders) == []


def test_every_snapshot_module_has_a_floor() -> None:
    modules = {name.removeprefix(SNAPSHOTS + ".") for name in project_modules()
               if name.startswith(SNAPSHOTS + ".")}
    assert modules == set(SNAPSHOT_FLOORS)


def test_snapshot_modules_import_only_lower_floors() -> None:
    """An algorithm module stands on the interface and on older families, never on the registry
    or on a family of its own floor or above."""
    offenders = []
    for name, targets in import_graph().items():
        if not name.startswith(SNAPSHOTS + "."):
            continue
        floor = SNAPSHOT_FLOORS[name.removeprefix(SNAPSHOTS + ".")]
        for target in targets:
            if target == SNAPSHOTS or (target.startswith(SNAPSHOTS + ".") and SNAPSHOT_FLOORS[
                    target.removeprefix(SNAPSHOTS + ".")] >= floor):
                offenders.append(f"{name} -> {target}")
    assert sorted(offenders) == []


def test_the_shared_memory_does_not_import_the_algorithms() -> None:
    """The memory builder is handed each version (its key, layout family and what-if regions:
    the algorithm's class) by its caller and never asks the algorithm registry, which stands
    on the memory."""
    graph = import_graph()
    offenders = sorted(f"{name} -> {target}" for name, targets in graph.items()
                       if names_package(name, SHMEM)
                       for target in targets if names_package(target, SNAPSHOTS))
    assert offenders == []
    assert "snapsim_models.shmem.memory" in graph["snapsim_models.snapshots.base"]


def test_scheduler_modules_import_only_lower_floors() -> None:
    floors = SCHEDULER_FLOORS
    offenders = [f"{name} -> {target}"
                 for name, targets in import_graph().items() if name in floors
                 for target in targets if target in floors and floors[target] >= floors[name]]
    assert sorted(offenders) == []
    assert set(SCHEDULER_FLOORS) <= set(project_modules())


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (its modules in order), or ``[]`` if there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_no_import_cycle_between_modules() -> None:
    graph = import_graph()
    # A package's __init__ re-exporting its own modules is not a cycle between modules.
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    assert find_cycle(graph) == []


@pytest.mark.parametrize(("graph", "cyclic"), [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, False),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
    ({"a": {"a2"}, "a2": set(), "b": {"b"}}, True),
])
def test_the_cycle_check_finds_cycles(graph: dict[str, set[str]], cyclic: bool) -> None:
    assert bool(find_cycle(graph)) is cyclic


def test_the_checks_see_imports_at_any_depth() -> None:
    graph = import_graph()
    assert "simulator.hardware.machine" in graph["simulator.tools.bench"]
    assert "simulator.analysis.plotting" in graph["simulator.study.outputs"]
    # relative imports of the model: ``from .backend import``, ``from . import structs``
    assert "snapsim_models.backend" in graph["snapsim_models.clients"]
    assert "snapsim_models.shmem.structs" in graph["snapsim_models.shmem.build"]
    assert "snapsim_models.shmem.build" in graph["snapsim_models.population"]
    assert "snapsim_models.snapshots.group_clear" in graph["snapsim_models.snapshots.post14"]
    assert "snapsim_models.snapshots.base" in graph["snapsim_models.snapshots"]
    assert "simulator.study.workload_model" in graph["snapsim_models.plugin"]
    assert part_of("simulator.hardware.coherence.kernel") == "simulator.hardware"
