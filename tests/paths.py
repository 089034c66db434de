"""Paths of the repository and of the test data, for tests in any subfolder."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
BASELINES_DIR = TESTS_DIR / "baselines"


def load_docs_script(name: str) -> ModuleType:
    """Import ``docs/<name>.py`` (a script, not a package module) as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "docs" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module
