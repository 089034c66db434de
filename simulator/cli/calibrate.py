"""``snapsim calibrate``: fit global model parameters to published measurements.

Runs :func:`simulator.tools.calibrate.calibrate` and writes into ``--out`` ``calibration.csv``
(every evaluation) and ``best.yaml`` (the command, the objective, the best values as ``--set``
overrides and as ``fitted`` values, the fixed overrides, the datasets and the date: its
``command``, ``datasets``, ``objective``, ``evaluations``, ``fitted``, ``date`` and
``sensitivity`` are the cost file's ``calibration:`` record); prints the best values. With
``--sensitivity F`` it then moves each best value by -F and +F
(:func:`simulator.tools.calibrate.sensitivity`), writes ``sensitivity.csv``, adds the moves to
``best.yaml`` and prints them.
"""

from __future__ import annotations

import argparse
import datetime
import shlex
from pathlib import Path

import numpy as np

from simulator.cli.common import (
    EXIT_OK,
    add_precision_arguments,
    checked_jobs,
    log,
    precision_settings,
    prepare_kernel,
    writable_directory,
)
from simulator.config.files import atomic_path, write_text_atomic
from simulator.errors import ConfigError
from simulator.measure.manifest import load_manifest
from simulator.study.experiment_file import dump_yaml
from simulator.study.sweep import default_jobs
from simulator.tools.calibrate import (
    Evaluator,
    calibrate,
    check_parameters,
    parse_parameter,
    sensitivity,
)
from simulator.tools.validate import RUN_DEFAULTS, check_datasets

DEFAULT_OUT = "snapsim-calibration"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim calibrate``."""
    parser.add_argument("--param", action="append", default=[], required=True,
                        metavar="KEY=LOW:HIGH[:UNIT[:START]]",
                        help="a fitted experiment key with its bounds (repeatable)")
    parser.add_argument("--manifest", metavar="FILE", help="measurement manifest")
    parser.add_argument("--dataset", action="append", metavar="NAME",
                        help="fit on this dataset only (repeatable; default: all)")
    parser.add_argument("--max-evaluations", type=int, default=30, metavar="N",
                        help="budget of validation runs (default 30)")
    parser.add_argument("--duration-ms", type=float, metavar="MS", help="simulated time per point")
    parser.add_argument("--warmup-ms", type=float, metavar="MS", help="warm-up per point")
    add_precision_arguments(parser)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a fixed override for every point")
    parser.add_argument("--jobs", type=int, metavar="N", help="local worker processes")
    parser.add_argument("--sensitivity", type=float, default=0.0, metavar="F",
                        help="then move each best value by -F and +F (e.g. 0.1), one at a time: "
                             "objective and worst series of each move (2 runs per parameter "
                             "and one of the best point; default: none)")
    parser.add_argument("--out", metavar="DIR", help=f"output directory (default: ./{DEFAULT_OUT})")


def main(args: argparse.Namespace) -> int:
    """Fit the parameters, write the evaluations and the best values, print the best."""
    parameters = [parse_parameter(text) for text in args.param]
    if len({p.key for p in parameters}) != len(parameters):
        raise ConfigError("--param", "a key is given twice")
    if args.max_evaluations < len(parameters) + 1:
        raise ConfigError("--max-evaluations",
                          f"must be at least {len(parameters) + 1} (the first simplex)")
    if not 0.0 <= args.sensitivity < 1.0:
        raise ConfigError("--sensitivity", f"must lie in [0, 1), got {args.sensitivity}")
    check_parameters(parameters, args.set)  # before the kernel is prepared
    manifest = load_manifest(args.manifest)
    jobs = checked_jobs(args.jobs) or default_jobs()
    check_datasets(manifest, args.dataset)  # before the output directory is made
    settings = {**RUN_DEFAULTS, **manifest.run}
    precision, cap, _ = precision_settings(args, manifest.run)
    out = Path(args.out or DEFAULT_OUT)
    writable_directory(out, "--out")
    prepare_kernel()
    evaluator = Evaluator(
        manifest, parameters, datasets=args.dataset,
        duration_ms=float(args.duration_ms or settings["duration_ms"]),
        warmup_ms=float(args.warmup_ms if args.warmup_ms is not None else settings["warmup_ms"]),
        overrides=args.set, jobs=jobs, log=log, precision=precision, max_duration_ms=cap)
    history = calibrate(evaluator, max_evaluations=args.max_evaluations)
    with atomic_path(out / "calibration.csv") as tmp:
        history.to_csv(tmp, index=False)
    best = history.iloc[int(np.argmin(history["objective"].to_numpy()))]
    sets = [p.override(float(best[p.key])) for p in parameters]
    document: dict[str, object] = {
        "command": shlex.join(["snapsim", *getattr(args, "argv", [])]),
        "evaluations": len(history),
        "objective": float(best["objective"]),
        "fitted": {item.partition("=")[0]: item.partition("=")[2] for item in sets},
        "date": datetime.date.today().isoformat(),
        "set": sets,
        "fixed": list(args.set),
        "datasets": list(args.dataset or manifest.datasets),
    }
    write_text_atomic(out / "best.yaml", dump_yaml(document))
    print(f"best objective {best['objective']:.4f} after {len(history)} evaluations:")
    for item in sets:
        print(f"  --set {item}")
    log(f"wrote {out}/calibration.csv and {out}/best.yaml")
    if args.sensitivity:
        moves = sensitivity(evaluator, [float(best[p.key]) for p in parameters],
                            fraction=args.sensitivity)
        with atomic_path(out / "sensitivity.csv") as tmp:
            moves.to_csv(tmp, index=False)
        records = [{str(k): v for k, v in m.items()} for m in moves.to_dict("records")]
        document["sensitivity"] = [
            {"parameter": str(m["parameter"]), "factor": float(m["factor"]),
             "objective": round(float(m["objective"]), 6),
             "worst_series": str(m["worst_series"]),
             "worst_max_abs_rel_error": round(float(m["worst_max_abs_rel_error"]), 6)}
            for m in records]
        write_text_atomic(out / "best.yaml", dump_yaml(document))
        print(f"sensitivity (each value moved by -{args.sensitivity:g} and "
              f"+{args.sensitivity:g}, one at a time):")
        for m in records:
            print(f"  {m['parameter']:<48} x{m['factor']:<5.3g} objective "
                  f"{m['objective']:.4f} ({m['objective_change']:+.4f}); worst "
                  f"{m['worst_series']} {100 * m['worst_max_abs_rel_error']:.1f} %")
        log(f"wrote {out}/sensitivity.csv")
    return EXIT_OK
