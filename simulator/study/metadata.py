"""Run metadata: what produced an output directory (``metadata.yaml``).

The snapsim version and git commit, Python and the key packages' versions, the machine's
SHA-256, the start time, the wall time and the command line. Kept out of ``curve.csv`` so that
curves stay byte-identical; nothing here is read back to change a result.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import platform
import shlex
import subprocess
from collections.abc import Sequence
from importlib import metadata as importlib_metadata
from pathlib import Path

from simulator.config.machine import MachineConfig
from simulator.config.machine_file import resolve_machine_path
from simulator.errors import ConfigError
from simulator.study.store import document_hash
from simulator.version import __version__

PACKAGES = ("simpy", "numpy", "pandas", "numba", "matplotlib", "pyyaml")
"""The packages whose installed versions a run records (distribution names)."""
GIT_TIMEOUT_S = 2.0


def utc_now_iso() -> str:
    """The current time, UTC, ISO 8601 to the second (``2026-11-24T03:52:04+00:00``)."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()


def git_commit(directory: Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the source checkout holding snapsim, or ``None``.

    ``None`` when the package is not in a git checkout (an installed wheel), git is missing, or
    it does not answer within :data:`GIT_TIMEOUT_S`.
    """
    root = directory or Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution (``None`` when it is not installed)."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def machine_sha256(machine: MachineConfig | str) -> tuple[str, str]:
    """SHA-256 of the machine file's bytes, and what was hashed (the file's path).

    A machine given as a :class:`MachineConfig` (no file) is hashed by its canonical document
    (sorted-key JSON of its fields) and described as ``"configuration"``.
    """
    if isinstance(machine, str):
        try:
            path = resolve_machine_path(machine)
        except ConfigError:
            raise FileNotFoundError(machine) from None
        if path.is_file():
            return hashlib.sha256(path.read_bytes()).hexdigest(), str(path.resolve())
    if isinstance(machine, MachineConfig):
        return document_hash(dataclasses.asdict(machine)), "configuration"
    raise FileNotFoundError(machine)


def run_metadata(machine: MachineConfig | str, *, started_utc: str, wall_s: float,
                 argv: Sequence[str] | None) -> dict[str, object]:
    """The document of ``metadata.yaml`` for one run.

    Args:
        machine: the experiment's machine (a name, a file's path, or a configuration); a name or
            path that no longer resolves to a file is recorded with a ``null`` hash.
        started_utc: when the run started (:func:`utc_now_iso`).
        wall_s: the run's wall-clock seconds.
        argv: the command's arguments after ``snapsim`` (``None``: not run from the command line).
    """
    try:
        sha, hashed = machine_sha256(machine)
    except FileNotFoundError:
        sha, hashed = None, None
    name = machine.name if isinstance(machine, MachineConfig) else machine
    return {
        "snapsim_version": __version__,
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "packages": package_versions(),
        "machine": {"name": name, "sha256": sha, "hashed": hashed},
        "started_utc": started_utc,
        "wall_s": round(float(wall_s), 3),
        "command": None if argv is None else shlex.join(["snapsim", *argv]),
    }
