"""``snapsim bench``: measure the speed of snapsim and print the figures (text or JSON).

The figures and groups are those of :mod:`simulator.tools.bench`; the exit code is 1 when a
group failed (its error is in ``conditions.failed_groups``), the other figures still printed.
"""

from __future__ import annotations

import argparse
import json
import math

from simulator.cli.common import EXIT_FAILED, EXIT_OK
from simulator.errors import ConfigError
from simulator.tools.bench import (
    DEFAULT_GROUPS,
    EXPERIMENT,
    GROUPS,
    N15000_DURATION_MS,
    SWEEP_DURATION_MS,
    Settings,
    run_benchmarks,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim bench``."""
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--repeats", type=int, default=3, metavar="N",
                        help="runs per figure; the median is reported (default 3)")
    parser.add_argument("--full", action="store_true",
                        help="also time 'snapsim validate' and the default experiment "
                        "(validate_wall_s, default_experiment_wall_s; minutes)")
    parser.add_argument("--skip", default="", metavar="GROUPS",
                        help=f"comma-separated groups to leave out ({', '.join(GROUPS)})")
    parser.add_argument("--duration-ms", type=float, metavar="MS",
                        help=f"simulated time of the {EXPERIMENT!r} experiment's points "
                        "(default: the experiment's)")
    parser.add_argument("--n15000-duration-ms", type=float, default=N15000_DURATION_MS,
                        metavar="MS", help="simulated time of the 15000-client point "
                        "(default %(default)s)")
    parser.add_argument("--sweep-duration-ms", type=float, default=SWEEP_DURATION_MS,
                        metavar="MS", help="simulated time per sweep point (default %(default)s)")
    parser.add_argument("--scale", type=float, default=1.0, metavar="F",
                        help="multiply client and connection counts (smoke tests only)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override a key of the {EXPERIMENT!r} experiment for the "
                        "end-to-end points (repeatable), e.g. options.working_sets=false to "
                        "price a mechanism against the model without it; not --full's commands")


def main(args: argparse.Namespace) -> int:
    """Run the benchmarks and print the figures."""
    if args.repeats < 1:
        raise ConfigError("--repeats", f"must be at least 1, got {args.repeats}")
    for option in ("duration_ms", "n15000_duration_ms", "sweep_duration_ms", "scale"):
        value = getattr(args, option)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise ConfigError(f"--{option.replace('_', '-')}", f"must be positive, got {value}")
    skipped = [name.strip() for name in args.skip.split(",") if name.strip()]
    for name in skipped:
        if name not in GROUPS:
            raise ConfigError("--skip", f"unknown group {name!r} (choose from {', '.join(GROUPS)})")
    wanted = GROUPS if args.full else DEFAULT_GROUPS
    groups = tuple(g for g in wanted if g not in skipped)
    settings = Settings(repeats=args.repeats, duration_ms=args.duration_ms,
                        n15000_duration_ms=args.n15000_duration_ms,
                        sweep_duration_ms=args.sweep_duration_ms, scale=args.scale,
                        overrides=tuple(args.set))
    settings.base().prepare()  # a bad --set is named before any figure is timed
    figures = run_benchmarks(groups, settings)
    conditions = figures["conditions"]
    assert isinstance(conditions, dict)
    status = EXIT_FAILED if conditions.get("failed_groups") else EXIT_OK
    if args.json:
        print(json.dumps(figures, indent=2))
        return status
    for name, value in figures.items():
        if isinstance(value, float | int):
            print(f"{name:32s} {value:14.4g}")
    print("conditions: " + ", ".join(f"{k}={v}" for k, v in conditions.items()))
    return status
