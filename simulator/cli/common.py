"""What every command shares: exit codes, progress messages, the ``--jobs`` and ``--out`` checks."""

from __future__ import annotations

import sys
from pathlib import Path

from simulator.errors import ConfigError

EXIT_OK = 0
EXIT_FAILED = 1
"""A regression moved, a validation series failed, a point or a benchmark group failed."""
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def log(message: str) -> None:
    """Print a progress message on stderr (stdout carries the command's result)."""
    print(message, file=sys.stderr, flush=True)


def checked_jobs(jobs: int | None) -> int | None:
    """``--jobs`` as given, after checking it is at least 1.

    Raises:
        ConfigError: ``jobs`` is below 1.
    """
    if jobs is not None and jobs < 1:
        raise ConfigError("--jobs", f"must be at least 1, got {jobs}")
    return jobs


def writable_directory(directory: Path, flag: str) -> Path:
    """``directory``, created if needed, after checking that a file can be written into it.

    Raises:
        ConfigError: naming ``flag``: the path is a file, or the directory cannot be created or
            written (read-only, no permission, no space).
    """
    if directory.exists() and not directory.is_dir():
        raise ConfigError(flag, f"{directory} exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / ".snapsim-write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(flag, f"cannot write to {directory}: {exc.strerror or exc}") from None
    return directory
