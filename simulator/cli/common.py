"""What every command shares: exit codes, progress messages on stderr, the ``--jobs`` check."""

from __future__ import annotations

import sys

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
