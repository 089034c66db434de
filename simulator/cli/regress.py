"""``snapsim regress BASELINE_DIR``: re-run a stored experiment and compare its curve.

A baseline is any output directory of ``snapsim run`` (or a committed copy of its
``experiment.yaml`` and ``curve.csv``), plus an optional ``tolerances.yaml`` (see
:mod:`simulator.tools.regress`). ``--set`` applies overrides as in ``snapsim run``. When a
value moved beyond its tolerance, or a compared column is missing on either side, the command
prints a table of what moved and exits 1; a baseline or tolerance file it cannot use is bad input
(exit 2), reported before anything runs.
``--update`` writes the new curve (and the overridden experiment) as the baseline.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simulator.analysis.tables import format_table
from simulator.cli.common import EXIT_FAILED, EXIT_OK, checked_jobs, prepare_kernel
from simulator.config.files import atomic_path, write_text_atomic
from simulator.errors import ConfigError
from simulator.study.experiment_file import (
    apply_overrides,
    dump_yaml,
    experiment_from_document,
    load_document,
)
from simulator.study.runner import run
from simulator.tools.regress import compare, load_baseline, load_tolerances


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim regress``."""
    parser.add_argument("baseline", metavar="BASELINE_DIR",
                        help="directory with experiment.yaml and curve.csv (a run's output)")
    parser.add_argument("--update", action="store_true",
                        help="write the new curve as the baseline instead of comparing")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override an experiment key for the re-run")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="local worker processes")


def main(args: argparse.Namespace) -> int:
    """Re-run the baseline's experiment; exit 1 if its curve moved (or update it)."""
    directory = Path(args.baseline)
    experiment_path = directory / "experiment.yaml"
    curve_path = directory / "curve.csv"
    if not experiment_path.exists():
        raise ConfigError("BASELINE_DIR", f"{experiment_path} does not exist "
                          "(a baseline is the output directory of snapsim run)")
    if args.update:
        load_tolerances(directory)  # the file is checked; the curve is about to be replaced
    elif not curve_path.exists():
        raise ConfigError("BASELINE_DIR", f"{curve_path} does not exist; create it with --update")
    else:
        baseline, tolerances = load_baseline(directory)
    document, source = load_document(str(experiment_path))
    document = apply_overrides(document, args.set)
    experiment = experiment_from_document(document, source,
                                          default_name=directory.name)
    prepare_kernel(experiment.machine_config())
    result = run(experiment, jobs=checked_jobs(args.jobs) or 1)
    if args.update:
        with atomic_path(curve_path) as tmp:
            result.curve.to_csv(tmp, index=False)
        if args.set:
            write_text_atomic(experiment_path, dump_yaml(document))
        print(f"updated the baseline {directory}/ ({len(result.curve)} points)")
        return EXIT_OK
    moved = compare(baseline, result.curve, tolerances)
    if moved.empty:
        print(f"ok: {len(baseline)} points of {directory}/ within tolerance "
              f"({', '.join(f'{c} {t.describe()}' for c, t in tolerances.items())})")
        return EXIT_OK
    print(f"REGRESSION: {len(moved)} value(s) of {directory}/ moved beyond tolerance",
          file=sys.stderr)
    for line in format_table(list(moved.columns), moved.astype(str).values.tolist()):
        print(line)
    return EXIT_FAILED
