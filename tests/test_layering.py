"""The generic machine (``simulator``) never imports the PostgreSQL programs (``models``).

The CLI is the single composition root allowed to cross that line.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPOSITION_ROOTS = {"cli.py"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_simulator_does_not_import_models() -> None:
    offenders = []
    for path in sorted((ROOT / "simulator").rglob("*.py")):
        if path.name in COMPOSITION_ROOTS:
            continue
        if any(name == "models" or name.startswith("models.") for name in imported_modules(path)):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_the_check_sees_imports() -> None:
    assert "simulator.machine" in imported_modules(ROOT / "simulator" / "bench.py")
