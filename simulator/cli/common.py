"""What every command shares: exit codes, progress messages, the ``--jobs`` and ``--out`` checks."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from simulator.config.machine import MachineConfig
from simulator.errors import ConfigError
from simulator.hardware.warmup import kernel_compiled, warm_kernel

EXIT_OK = 0
EXIT_FAILED = 1
"""A regression moved, a validation series failed, a point or a benchmark group failed."""
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


QUIET, NORMAL, VERBOSE = -1, 0, 1
"""Verbosity levels: ``-q`` (results and errors only), the default, ``-v`` (per-point detail)."""

_verbosity = NORMAL


def set_verbosity(level: int) -> None:
    """Set the verbosity of :func:`log` and :func:`detail` (``-q``: -1, ``-v``: 1)."""
    global _verbosity
    _verbosity = max(QUIET, min(VERBOSE, level))


def verbosity() -> int:
    """The verbosity in effect."""
    return _verbosity


def _write(message: str) -> None:
    """``message`` on its own line of stderr, above a progress bar if one is drawn.

    ``tqdm.write`` clears the bar's line, writes the message and redraws the bar below it
    (without a bar it is a plain write).
    """
    from tqdm import tqdm

    tqdm.write(message, file=sys.stderr)
    sys.stderr.flush()


def log(message: str) -> None:
    """Print a progress message on stderr (stdout carries the command's result); not with -q."""
    if _verbosity >= NORMAL:
        _write(message)


def detail(message: str) -> None:
    """Print a message on stderr with ``-v`` only."""
    if _verbosity >= VERBOSE:
        _write(message)


def warn(message: str) -> None:
    """Print a message on stderr whatever the verbosity (failed points, interruptions)."""
    _write(message)


def show_progress(no_progress: bool) -> bool:
    """Whether to draw a progress bar: not with ``--no-progress`` nor ``-q``."""
    return not no_progress and _verbosity >= NORMAL


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


def prepare_kernel(config: MachineConfig | None = None) -> None:
    """Compile the coherence kernel (or load it from Numba's cache) before simulating, and say so.

    The first run after an install compiles it (tens of seconds, once); later runs load it
    from the cache in about a second. Without this the first point would carry that time and a
    progress bar would sit at 0 with a meaningless estimate.
    """
    if kernel_compiled():
        return
    log("preparing the coherence kernel (Numba compiles it once per install, then loads it "
        "from its cache)")
    started = time.perf_counter()
    warm_kernel(config)
    log(f"kernel ready in {time.perf_counter() - started:.1f} s")


def add_precision_arguments(parser: argparse.ArgumentParser) -> None:
    """``--precision`` and ``--max-duration-ms``, as ``snapsim run`` has them."""
    parser.add_argument("--precision", type=float, metavar="REL",
                        help="grow each point's window until the 95 %% interval of its TPS is "
                             "within this fraction of it (e.g. 0.02; default: the manifest's "
                             "run settings, else the fixed window)")
    parser.add_argument("--max-duration-ms", type=float, metavar="MS",
                        help="with --precision, the longest window a point may grow to "
                             "(default: 20 x its duration)")


def precision_settings(args: argparse.Namespace,
                       run: Mapping[str, float]) -> tuple[float | None, float | None, list[str]]:
    """The precision and cap of ``--precision`` / ``--max-duration-ms`` over a manifest's ``run``.

    Returns the two values (``None``: not set) and the flags given, which apply to every point
    (a dataset's own ``run:`` does not replace them).

    Raises:
        ConfigError: a precision outside (0, 1), a cap that is not positive, or a cap without a
            precision.
    """
    precision = args.precision if args.precision is not None else run.get("precision")
    cap = args.max_duration_ms if args.max_duration_ms is not None else run.get("max_duration_ms")
    if args.precision is not None and not 0.0 < args.precision < 1.0:
        raise ConfigError("--precision", "expected a fraction between 0 and 1 (e.g. 0.02), got "
                          f"{args.precision}")
    if args.max_duration_ms is not None:
        if not args.max_duration_ms > 0.0:
            raise ConfigError("--max-duration-ms", f"must be positive, got {args.max_duration_ms}")
        if precision is None:
            raise ConfigError("--max-duration-ms", "applies only with --precision")
    given = [key for key, value in (("precision", args.precision),
                                    ("max_duration_ms", args.max_duration_ms))
             if value is not None]
    return precision, cap, given
