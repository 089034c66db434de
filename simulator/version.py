"""snapsim's version: the installed distribution's, the one place it is read."""

from __future__ import annotations

from importlib import metadata


def _installed_version() -> str:
    try:
        return metadata.version("snapsim")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


__version__ = _installed_version()
