"""The tree is the architecture: floors of ``simulator`` import only downwards, no module cycle.

``simulator`` is a generic machine in floors (``errors``, ``types`` and ``version``, then
``config``, ``hardware``, ``runtime`` and ``analysis``, ``study``, ``cli``); a module imports from
its own subpackage or a lower floor. ``models`` (PostgreSQL) stands on the machine and never on
the command line, and nothing in ``simulator`` imports ``models``. Imports inside functions count
like any other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT

FLOORS = {
    "simulator.errors": 1,
    "simulator.types": 1,
    "simulator.version": 1,
    "simulator.config": 2,
    "simulator.hardware": 3,
    "simulator.runtime": 4,
    "simulator.analysis": 4,
    "simulator.study": 5,
    "simulator.cli": 6,
    "simulator": 7,  # the package's public API and ``python -m simulator``
}
"""Floor of each part of ``simulator``: the longest matching prefix of a module's name."""

MODELS_MAY_IMPORT = ("simulator.errors", "simulator.types", "simulator.config",
                     "simulator.hardware", "simulator.runtime", "simulator.study.workload_model")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {module_name(path): path
            for package in ("simulator", "models")
            for path in sorted((REPO_ROOT / package).rglob("*.py"))}


def imported_modules(path: Path, known: set[str] | None = None) -> set[str]:
    """Every module ``path`` imports, at any depth; ``from pkg import mod`` names ``pkg.mod``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if known is not None:
                names.update(f"{node.module}.{alias.name}" for alias in node.names
                             if f"{node.module}.{alias.name}" in known)
    return names


def part_of(module: str) -> str:
    """The entry of :data:`FLOORS` a ``simulator`` module belongs to."""
    return max((key for key in FLOORS if module == key or module.startswith(key + ".")), key=len)


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    known = set(modules)
    return {name: {m for m in imported_modules(path, known) if m in known and m != name}
            for name, path in modules.items()}


def test_simulator_does_not_import_models() -> None:
    offenders = sorted(name for name, targets in import_graph().items()
                       if name.startswith("simulator")
                       and any(t == "models" or t.startswith("models.") for t in targets))
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


def test_models_stand_on_the_machine_not_on_the_commands() -> None:
    offenders = [f"{name} -> {target}"
                 for name, targets in import_graph().items() if name.startswith("models")
                 for target in targets
                 if target.startswith("simulator")
                 and not any(target == allowed or target.startswith(allowed + ".")
                             for allowed in MODELS_MAY_IMPORT)]
    assert sorted(offenders) == []


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
    assert "simulator.hardware.machine" in graph["simulator.study.bench"]
    assert "simulator.analysis.plotting" in graph["simulator.study.outputs"]
    assert part_of("simulator.hardware.coherence.kernel") == "simulator.hardware"
