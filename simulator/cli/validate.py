"""``snapsim validate``: run the model on published measurements and report its errors.

Writes ``validation.csv`` (every measured point with its prediction), ``summary.csv`` (per
dataset and series), ``ratios.csv`` (per published ratio) and the plots of
:func:`simulator.tools.validate.plot_validation` into ``--out``, prints the summary and the
ratios and exits 1 when a series exceeds a threshold of the manifest or a ratio leaves its
tolerance, unless the manifest marks it ``expected: fail`` (a known gap, reported with its
reason); one so marked that passes exits 1 too (remove the mark), like pytest's strict xfail.
``--dataset`` and ``--ratio`` select what runs: without either, every dataset and ratio; with
some, only those named. ``--seeds N`` runs every point with N root seeds: predictions are then
means over the seeds with their 95 % intervals, errors are the means' errors, and the table
counts the measured values that lie inside the model's interval.
"""

from __future__ import annotations

import argparse
import shlex
import time
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from simulator.analysis.intervals import format_ratio
from simulator.analysis.tables import format_table
from simulator.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_precision_arguments,
    checked_jobs,
    log,
    precision_settings,
    prepare_kernel,
    show_progress,
    writable_directory,
)
from simulator.config import configs_dir
from simulator.config.files import atomic_path
from simulator.errors import ConfigError
from simulator.measure.manifest import Manifest, load_manifest
from simulator.measure.noise import REST_SHARE_LIMIT
from simulator.study.provenance import (
    PROVENANCE_FILE,
    changed,
    read_provenance,
    write_provenance,
)
from simulator.study.sweep import connect_dask, default_jobs
from simulator.study.workload_model import workload_model
from simulator.tools.scoring import gate_passes, plot_validation, summarise, validation_provenance
from simulator.tools.validate import (
    RUN_DEFAULTS,
    check_datasets,
    check_ratios,
    check_validation_estimate,
    run_validation,
    validation_estimate,
)

DEFAULT_OUT = "snapsim-validation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim validate``."""
    parser.add_argument("--manifest", metavar="FILE",
                        help="measurement manifest, or a directory holding one (snapsim "
                        "measure's --out) (default: the shipped one)")
    parser.add_argument("--out", metavar="DIR", help=f"output directory (default: ./{DEFAULT_OUT})")
    parser.add_argument("--dataset", action="append", metavar="NAME",
                        help="validate only this dataset (repeatable; with --ratio too)")
    parser.add_argument("--ratio", action="append", metavar="NAME",
                        help="validate only this published ratio (repeatable; with --dataset "
                        "too)")
    parser.add_argument("--duration-ms", type=float, metavar="MS",
                        help="simulated time per point (default: the manifest's run settings, "
                        "a dataset's own where it has them)")
    parser.add_argument("--warmup-ms", type=float, metavar="MS", help="warm-up per point")
    add_precision_arguments(parser)
    parser.add_argument("--seeds", type=int, default=1, metavar="N",
                        help="run every point with N root seeds (the manifest's seed and the "
                             "next N-1): predictions are means with 95 %% intervals, and the "
                             "table says how many measured values lie inside (default 1)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override an experiment key for every point")
    parser.add_argument("--machine-set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a machine-file key of every machine "
                        "(e.g. scheduler.run_queues=global, idle.states=[])")
    parser.add_argument("--jobs", type=int, metavar="N",
                        help=f"local worker processes (default: the CPUs, here {default_jobs()})")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask cluster")
    parser.add_argument("--force", action="store_true",
                        help="run even when a point's memory estimate exceeds the available "
                             "memory")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--check", action="store_true",
                        help="run nothing: say whether --out's validation is current (exit 0) "
                             "or what changed since it was made: the model's code, a machine, "
                             "the cost file, the manifest or a dataset (exit 1); default --out: "
                             "the shipped docs/validation in a checkout")


def main(args: argparse.Namespace) -> int:
    """Validate, write the tables and plots, print the summary; exit 1 if a series fails."""
    if args.check:
        return _check(Path(args.out) if args.out else _default_check_dir())
    started = time.perf_counter()
    manifest = load_manifest(args.manifest)
    settings = {**RUN_DEFAULTS, **manifest.run}
    duration = args.duration_ms if args.duration_ms is not None else settings["duration_ms"]
    warmup = args.warmup_ms if args.warmup_ms is not None else settings["warmup_ms"]
    jobs = checked_jobs(args.jobs) or default_jobs()
    if not duration > 0:
        raise ConfigError("--duration-ms", f"must be positive, got {duration}")
    if not warmup >= 0:
        raise ConfigError("--warmup-ms", f"must not be negative, got {warmup}")
    if args.seeds < 1:
        raise ConfigError("--seeds", f"must be at least 1, got {args.seeds}")
    precision, cap, precision_flags = precision_settings(args, manifest.run)
    workload_model()  # the model is installed
    selecting = bool(args.dataset or args.ratio)
    datasets = (args.dataset or []) if selecting else None
    ratios = (args.ratio or []) if selecting else None
    # every input is read before the output directory is made and before the long part
    check_datasets(manifest, datasets, args.machine_set)
    check_ratios(manifest, ratios, args.machine_set)
    fixed = [*(key for key, value in (("duration_ms", args.duration_ms),
                                      ("warmup_ms", args.warmup_ms)) if value is not None),
             *precision_flags]
    if not args.scheduler:  # a point that cannot fit is refused as by `run`, before any work
        check_validation_estimate(validation_estimate(
            manifest, duration_ms=float(duration), warmup_ms=float(warmup),
            seed=int(settings["seed"]), seeds=args.seeds, overrides=args.set, jobs=jobs,
            datasets=datasets, ratios=ratios, fixed=fixed,
            machine_overrides=args.machine_set, precision=precision, max_duration_ms=cap),
            force=args.force, log=log)
    out = Path(args.out or DEFAULT_OUT)
    writable_directory(out, "--out")
    prepare_kernel()
    client = connect_dask(args.scheduler, "--scheduler") if args.scheduler else None
    try:
        result = run_validation(
            manifest, duration_ms=float(duration), warmup_ms=float(warmup),
            seed=int(settings["seed"]), seeds=args.seeds, overrides=args.set, jobs=jobs,
            client=client,
            progress=show_progress(args.no_progress), log=log, datasets=datasets,
            ratios=ratios, machine_overrides=args.machine_set, precision=precision,
            max_duration_ms=cap, fixed=fixed, force=True)  # checked above
    finally:
        if client is not None:
            client.close()
    table = result.points
    summary = summarise(table, manifest)
    with atomic_path(out / "validation.csv") as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(out / "summary.csv") as tmp:
        summary.to_csv(tmp, index=False)
    with atomic_path(out / "ratios.csv") as tmp:
        result.ratios.to_csv(tmp, index=False)
    recipe = _recipe(args, manifest, precision, cap)
    write_provenance(out / PROVENANCE_FILE, validation_provenance(manifest, recipe), recipe)
    plots = plot_validation(table, out) if not table.empty else []
    if not summary.empty:
        _print_summary(summary, manifest)
        _print_disturbed(table)
    if not result.ratios.empty:
        _print_ratios(result.ratios)
        log(f"the ratios' own {result.ratio_simulations} simulations (points no curve "
            f"measures) took {result.ratio_wall_s:.1f} s of worker time")
    log(f"wrote {out}/: validation.csv, summary.csv, ratios.csv, {len(plots)} plots "
        f"({len(table)} measured points, {len(result.ratios)} ratios, "
        f"{time.perf_counter() - started:.1f} s)")
    return EXIT_OK if gate_passes(summary, result.ratios) else EXIT_FAILED


def _recipe(args: argparse.Namespace, manifest: Manifest, precision: float | None,
            cap: float | None) -> dict[str, object]:
    """What ``--check`` needs to recompute the provenance: the run's settings."""
    return {"manifest": args.manifest, "seeds": args.seeds, "duration_ms": args.duration_ms,
            "warmup_ms": args.warmup_ms, "precision": precision, "max_duration_ms": cap,
            "set": list(args.set), "machine_set": list(args.machine_set),
            "dataset": list(args.dataset or []), "ratio": list(args.ratio or []),
            "run": dict(manifest.run)}


def _default_check_dir() -> Path:
    """The shipped validation in a checkout (``docs/validation``), else ``./{DEFAULT_OUT}``."""
    shipped = configs_dir().parent / "docs" / "validation"
    return shipped if shipped.is_dir() else Path(DEFAULT_OUT)


def _check(out: Path) -> int:
    """Compare ``out``'s recorded provenance with the current inputs; 0 current, 1 stale."""
    recorded, recipe = read_provenance(out / PROVENANCE_FILE)
    manifest_arg = recipe.get("manifest")
    manifest = load_manifest(None if manifest_arg is None else str(manifest_arg))
    current = validation_provenance(manifest, {**recipe, "run": dict(manifest.run)})
    stale = changed(recorded, current)
    if not stale:
        print(f"{out}: current (made by what is here now)")
        return EXIT_OK
    print(f"{out}: stale; changed since it was made: {', '.join(stale)}")
    command = shlex.join(["snapsim", "validate", *_recipe_flags(recipe), "--out", str(out)])
    print(f"regenerate it with: {command}")
    return EXIT_FAILED


def _recipe_flags(recipe: Mapping[str, object]) -> list[str]:
    """The command-line flags of a recorded recipe."""
    flags: list[str] = []
    if recipe.get("manifest") is not None:
        flags += ["--manifest", str(recipe["manifest"])]
    if recipe.get("seeds") not in (None, 1):
        flags += ["--seeds", str(recipe["seeds"])]
    for key in ("duration_ms", "warmup_ms", "precision", "max_duration_ms"):
        if recipe.get(key) is not None:
            flags += [f"--{key.replace('_', '-')}", f"{recipe[key]:g}"]
    for key, flag in (("set", "--set"), ("machine_set", "--machine-set"),
                      ("dataset", "--dataset"), ("ratio", "--ratio")):
        value = recipe.get(key)
        for item in value if isinstance(value, list) else []:
            flags += [flag, str(item)]
    return flags


def _print_summary(summary: pd.DataFrame, manifest: Manifest) -> None:
    intervals = bool(summary["inside_interval"].notna().any())
    rows = [(str(r.dataset), str(r.series), str(r.algorithm), str(r.points),
             f"{r.median_abs_rel_error:.1%}", f"{r.max_abs_rel_error:.1%}",
             *([f"{r.inside_interval}/{r.points}"] if intervals else []),
             str(r.unconverged), _RESULTS[str(r.outcome)]) for r in summary.itertuples()]
    print(f"median |error| <= {manifest.median_abs_rel_error:.0%}, "
          f"max |error| <= {manifest.max_abs_rel_error:.0%} per series"
          + (" (errors of the mean over the seeds; IN 95 %: measured values inside the "
             "model's interval)" if intervals else ""))
    for line in format_table(("DATASET", "SERIES", "ALGORITHM", "POINTS", "MEDIAN", "MAX",
                              *(["IN 95 %"] if intervals else []), "UNCONVERGED", "RESULT"),
                             rows):
        print(line)
    for r in summary.itertuples():
        if r.outcome == "expected fail":
            print(f"known gap {r.dataset}/{r.series}: {r.reason}")
        elif r.outcome == "unexpected pass":
            print(f"UNEXPECTED PASS {r.dataset}/{r.series}: within the thresholds although the "
                  f"manifest expects it to fail ({r.reason}); remove its expected: fail")
    unconverged = int(summary["unconverged"].sum())
    if unconverged:
        print(f"{unconverged} scored points are not precise enough to trust (window_converged "
              "false in validation.csv: the 95 % interval of the TPS, tps_ci_rel, wider than its "
              "target, or a window stopped at its cap, max_duration_reached): their errors may be "
              "the window's; run them with --precision and a larger --max-duration-ms")


def _print_disturbed(table: pd.DataFrame) -> None:
    """Name the points whose measured TPS comes from runs other work disturbed."""
    disturbed = table[table["disturbed_runs"].fillna(0) > 0]
    if disturbed.empty:
        return
    names = [f"{r.dataset} {r.series} {r.clients} clients {r.idle_clients} idle "
             f"({r.disturbed_runs} run{'s' if r.disturbed_runs != 1 else ''}"
             f"{', the work-scale point' if r.work_scale_point else ''})"
             for r in disturbed.itertuples()]
    print(f"{len(names)} points were judged on disturbed runs (disturbed_runs in "
          f"validation.csv: other work took more than {REST_SHARE_LIMIT:.0%} of the measuring "
          f"machine's CPUs in their windows; their errors may be the noise's; measure again "
          f"on a quieter machine): {'; '.join(names)}")


def _print_ratios(ratios: pd.DataFrame) -> None:
    rows = [(str(r.ratio), str(r.machine), str(r.clients), str(r.numerator), str(r.denominator),
             f"{r.published:.3f}", _ratio_text(r.predicted, r.predicted_low, r.predicted_high),
             f"{r.rel_error:+.1%}",
             f"±{r.tolerance:.0%}", "" if r.window_converged else "no",
             _RESULTS[str(r.outcome)]) for r in ratios.itertuples()]
    print("published ratios: predicted = numerator TPS / denominator TPS, within the tolerance "
          "of the published one")
    for line in format_table(("RATIO", "MACHINE", "CLIENTS", "NUMERATOR", "DENOMINATOR",
                              "PUBLISHED", "PREDICTED", "ERROR", "TOLERANCE", "UNCONVERGED",
                              "RESULT"), rows):
        print(line)
    for r in ratios.itertuples():
        if r.error:
            print(f"ratio {r.ratio}: a simulation failed: {r.error!s}")
        if r.outcome == "expected fail":
            print(f"known gap ratio {r.ratio}: {r.reason}")
        elif r.outcome == "unexpected pass":
            print(f"UNEXPECTED PASS ratio {r.ratio}: within its tolerance although the manifest "
                  f"expects it to fail ({r.reason}); remove its expected: fail")


def _ratio_text(predicted: object, low: object, high: object) -> str:
    """A predicted ratio, with its 95 % interval when there is one."""
    value, bottom, top = (float(str(item)) for item in (predicted, low, high))
    return format_ratio((value, bottom, top))


_RESULTS = {"pass": "ok", "fail": "FAIL", "expected fail": "known gap",
            "unexpected pass": "UNEXPECTED PASS"}
