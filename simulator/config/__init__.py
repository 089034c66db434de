"""Configuration at the boundary: YAML in, frozen typed values out.

The floor every other one stands on. It reads YAML (one safe, duplicate-rejecting loader), checks
values strictly and names the dotted key of any bad one, converts quantities with units, and
describes a machine as frozen dataclasses. It finds the shipped ``configs/`` directory in one
place, :func:`configs_dir`, and writes every file snapsim writes through one atomic writer
(:mod:`.files`).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from simulator.errors import ConfigError

_PACKAGE_ROOT = Path(__file__).resolve().parents[1]
_CHECKOUT_CONFIGS = _PACKAGE_ROOT.parent / "configs"


def _in_source_checkout() -> bool:
    """Whether ``simulator`` is imported from the repository (source tree or editable install)."""
    repository = _PACKAGE_ROOT.parent
    return (repository / "pyproject.toml").is_file() and _CHECKOUT_CONFIGS.is_dir()


def configs_dir() -> Path:
    """The directory of the shipped machines, experiments, measurements and cost files.

    In a source checkout, and so in an editable install, it is the repository's top-level
    ``configs/``, the files people edit. An installed wheel carries a copy of that directory as
    the package data ``simulator/_configs`` (the build copies it there, see ``setup.py``).

    Raises:
        ConfigError: neither exists (an install built without its configuration files).
    """
    if _in_source_checkout():
        return _CHECKOUT_CONFIGS
    # Wheels install as plain files, so the package data is a directory on disk.
    installed = Path(str(resources.files("simulator") / "_configs"))
    if not installed.is_dir():
        raise ConfigError("", f"the shipped configuration directory {installed} is missing")
    return installed
