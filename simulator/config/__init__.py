"""Configuration at the boundary: YAML in, frozen typed values out.

The floor every other one stands on. It reads YAML (one safe, duplicate-rejecting loader), checks
values strictly and names the dotted key of any bad one, converts quantities with units, and
describes a machine as frozen dataclasses. It finds the shipped ``configs/`` directory in one
place, :func:`configs_dir`.
"""

from __future__ import annotations

from pathlib import Path

_SOURCE_CHECKOUT_CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def configs_dir() -> Path:
    """The directory of the shipped machines, experiments, measurements and cost files."""
    return _SOURCE_CHECKOUT_CONFIGS
