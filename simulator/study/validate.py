"""``snapsim validate``: the model against published measurements.

A measurement manifest (:mod:`simulator.study.measurements`) maps every measured TPS to a point:
machine, algorithm, workload, active and idle clients, idle kind. :func:`validate` simulates each
distinct point once (two series measuring the same point, e.g. PostgreSQL 12 and the pre-14 tree,
share a simulation), with the manifest's run settings and, where the manifest gives a machine's
single-client TPS, the work scale that reproduces it (that measured point is then excluded from
the errors, SPEC §3). It returns the point-by-point table::

    dataset, series, algorithm, machine, clients, idle_clients, measured_tps, predicted_tps,
    rel_error, calibration_point

and :func:`summarise` gives, per dataset and series, the median and maximum absolute relative
error against the manifest's thresholds. The command writes ``validation.csv``,
``summary.csv``, one predicted-vs-measured plot per dataset and a scatter of every point, prints
the summary and exits 1 when a series exceeds a threshold.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.analysis.tables import format_table
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.study.experiment import Experiment, plan, single_client_work_scale
from simulator.study.experiment_file import apply_overrides, experiment_from_document
from simulator.study.measurements import Manifest, load_manifest
from simulator.study.store import atomic_path
from simulator.study.sweep import PointTask, default_jobs, run_tasks
from simulator.study.workload_model import workload_model

DEFAULT_OUT = "snapsim-validation"
RUN_DEFAULTS = {"duration_ms": 5.0, "warmup_ms": 2.0, "seed": 0}
VALIDATION_COLUMNS = ("dataset", "series", "algorithm", "machine", "workload", "idle_kind",
                      "clients", "idle_clients", "measured_tps", "predicted_tps", "rel_error",
                      "calibration_point", "error")
EXIT_OK, EXIT_FAILED = 0, 1


def validate(manifest: Manifest, *, duration_ms: float = RUN_DEFAULTS["duration_ms"],
             warmup_ms: float = RUN_DEFAULTS["warmup_ms"], seed: int = 0,
             overrides: Sequence[str] = (), jobs: int = 1, client: Any = None,
             progress: bool = False, log: Callable[[str], None] | None = None,
             datasets: Sequence[str] | None = None) -> pd.DataFrame:
    """Simulate every measured point of the manifest; return the point-by-point table.

    ``overrides`` are ``--set``-style ``key=value`` strings applied to every point's experiment
    (e.g. ``options.costs.client=12000 cycles``); ``datasets`` restricts the run.
    """
    measured = _measured(manifest, datasets)
    machines: dict[str, MachineConfig] = {}
    tasks: dict[tuple[object, ...], PointTask] = {}
    scales: dict[str, float] = {}
    for (machine_name, workload, idle_kind), group in measured.groupby(
            ["machine", "workload", "idle_kind"], sort=False):
        machine = machines.get(str(machine_name)) or load_machine(str(machine_name))
        machines[str(machine_name)] = machine
        experiment = _experiment(machine, str(workload), str(idle_kind), group, duration_ms,
                                 warmup_ms, seed, overrides)
        model = experiment.validate()
        options = model.resolve_options(experiment.options)
        if str(machine_name) not in scales:
            scales[str(machine_name)] = _work_scale(manifest, experiment, machine, options, log)
        wanted = set(zip(group["algorithm"], group["clients"], group["idle_clients"], strict=True))
        for task in plan(experiment, machine, options, scales[str(machine_name)]):
            spec = task.spec
            point = (spec.algorithm, spec.clients, spec.idle_clients)
            key = (machine_name, workload, idle_kind, *point)
            if point in wanted and key not in tasks:
                tasks[key] = replace(task, key=f"{machine_name}-{workload}-{idle_kind}-{task.key}",
                                     index=len(tasks))
    if log is not None:
        log(f"validate: {len(measured)} measured points, {len(tasks)} simulations")
    records = run_tasks(list(tasks.values()), jobs=jobs, client=client, progress=progress)
    predicted = dict(zip(tasks, records, strict=True))
    rows = []
    for row in measured.to_dict("records"):
        record = predicted[(row["machine"], row["workload"], row["idle_kind"], row["algorithm"],
                            row["clients"], row["idle_clients"])]
        tps = float("nan") if record.failed else float(str(record.row["tps"]))
        rows.append({**row, "predicted_tps": tps,
                     "rel_error": tps / float(row["measured_tps"]) - 1, "error": record.error})
    table = pd.DataFrame(rows)
    table["calibration_point"] = _calibration_flags(manifest, table)
    return table[list(VALIDATION_COLUMNS)]


def _measured(manifest: Manifest, datasets: Sequence[str] | None) -> pd.DataFrame:
    names = list(manifest.datasets) if datasets is None else list(datasets)
    frames = [manifest.dataset(name).table() for name in names]
    if not frames:
        raise ConfigError("--dataset", "no dataset selected")
    return pd.concat(frames, ignore_index=True)


def _experiment(machine: MachineConfig, workload: str, idle_kind: str, group: pd.DataFrame,
                duration_ms: float, warmup_ms: float, seed: int,
                overrides: Sequence[str]) -> Experiment:
    document: dict[str, object] = {
        "algorithms": list(dict.fromkeys(group["algorithm"])),
        "workload": workload, "idle_kind": idle_kind,
        "clients": sorted({int(c) for c in group["clients"]}),
        "idle_clients": sorted({int(i) for i in group["idle_clients"]}),
        "duration_ms": duration_ms, "warmup_ms": warmup_ms, "seeds": [seed],
    }
    document = apply_overrides(document, overrides)
    experiment = experiment_from_document(document, "--set", default_name="validation")
    return replace(experiment, machine=machine)


def _work_scale(manifest: Manifest, experiment: Experiment, machine: MachineConfig,
                options: Mapping[str, object], log: Callable[[str], None] | None) -> float:
    target = manifest.single_client_tps(machine.name)
    if target is None:
        return 1.0
    point = manifest.calibration[machine.name]
    algorithm = manifest.dataset(point.dataset).series[point.series]
    probe = replace(experiment, algorithms=(algorithm,))
    return single_client_work_scale(probe, machine, options, target, log)


def _calibration_flags(manifest: Manifest, table: pd.DataFrame) -> pd.Series:
    flags = pd.Series(False, index=table.index)
    for point in manifest.calibration.values():
        flags |= ((table["dataset"] == point.dataset) & (table["series"] == point.series)
                  & (table["clients"] == point.clients)
                  & (table["idle_clients"] == point.idle_clients))
    return flags


def summarise(table: pd.DataFrame, manifest: Manifest) -> pd.DataFrame:
    """Per dataset and series: points, median and max absolute relative error, pass/fail.

    Calibration points are left out; a failed simulation counts as an error of infinity.
    """
    rows = []
    for (dataset, series), group in table.groupby(["dataset", "series"], sort=False):
        scored = group[~group["calibration_point"]]
        errors = scored["rel_error"].abs().fillna(np.inf)
        median = float(errors.median()) if len(errors) else float("nan")
        worst = float(errors.max()) if len(errors) else float("nan")
        rows.append({
            "dataset": dataset, "series": series, "algorithm": group["algorithm"].iloc[0],
            "points": len(scored), "median_abs_rel_error": median, "max_abs_rel_error": worst,
            "passed": bool(median <= manifest.median_abs_rel_error
                           and worst <= manifest.max_abs_rel_error),
        })
    return pd.DataFrame(rows)


def plot_validation(table: pd.DataFrame, directory: Path) -> list[Path]:
    """One predicted-vs-measured plot per dataset and a scatter of every point."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from simulator.analysis.plotting import plot_tps, tps_panels
    from simulator.study.outputs import save_png

    written = []
    for dataset, group in table.groupby("dataset", sort=False):
        ok = group[group["predicted_tps"].notna()]
        if ok.empty:
            continue
        predicted = (ok.drop(columns=["measured_tps"])
                     .rename(columns={"predicted_tps": "tps"})
                     .drop_duplicates(["series", "clients", "idle_clients"]))
        measured = ok[["algorithm", "clients", "idle_clients", "measured_tps", "series"]]
        panels = tps_panels(predicted, measured)

        def draw(figure: Figure, panels: list[tuple[str, pd.DataFrame, pd.DataFrame | None]]
                 = panels, dataset: object = dataset) -> None:
            for index, (title, part, measurements) in enumerate(panels, start=1):
                ax = plot_tps(part, ax=figure.add_subplot(len(panels), 1, index),
                              measurements=measurements)
                suffix = f", {title}" if title else ""
                ax.set_title(f"{dataset}{suffix}: predicted (solid) vs measured (dashed)")

        written.append(save_png(directory / f"validation_{dataset}.png", draw,
                                size=(8, 4.5 * len(panels))))

    def scatter(figure: Figure) -> None:
        ax = figure.add_subplot()
        for dataset, group in table.groupby("dataset", sort=False):
            ax.scatter(group["measured_tps"], group["predicted_tps"], label=str(dataset), s=18)
        bounds = [float(table[["measured_tps", "predicted_tps"]].min().min()),
                  float(table[["measured_tps", "predicted_tps"]].max().max())]
        ax.plot(bounds, bounds, color="grey", linewidth=1, label="predicted = measured")
        for factor in (0.75, 1.25):
            ax.plot(bounds, [b * factor for b in bounds], color="grey", linestyle=":",
                    linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("measured TPS")
        ax.set_ylabel("predicted TPS")
        ax.legend(fontsize="small")
        ax.grid(True, which="both", alpha=0.3)

    written.append(save_png(directory / "validation_scatter.png", scatter, size=(6, 6)))
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim validate``."""
    parser.add_argument("--manifest", metavar="FILE",
                        help="measurement manifest (default: the shipped one)")
    parser.add_argument("--out", metavar="DIR", help=f"output directory (default: ./{DEFAULT_OUT})")
    parser.add_argument("--dataset", action="append", metavar="NAME",
                        help="validate only this dataset (repeatable)")
    parser.add_argument("--duration-ms", type=float, metavar="MS",
                        help="simulated time per point (default: the manifest's run settings)")
    parser.add_argument("--warmup-ms", type=float, metavar="MS", help="warm-up per point")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override an experiment key for every point")
    parser.add_argument("--jobs", type=int, metavar="N",
                        help=f"local worker processes (default: the CPUs, here {default_jobs()})")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask cluster")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def main(args: argparse.Namespace) -> int:
    """``snapsim validate``."""
    started = time.perf_counter()
    manifest = load_manifest(args.manifest)
    settings = {**RUN_DEFAULTS, **manifest.run}
    duration = args.duration_ms if args.duration_ms is not None else settings["duration_ms"]
    warmup = args.warmup_ms if args.warmup_ms is not None else settings["warmup_ms"]
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError("--jobs", f"must be at least 1, got {args.jobs}")
    if not duration > 0:
        raise ConfigError("--duration-ms", f"must be positive, got {duration}")
    if not warmup >= 0:
        raise ConfigError("--warmup-ms", f"must not be negative, got {warmup}")
    workload_model()  # the model is installed
    out = Path(args.out or DEFAULT_OUT)
    _writable(out)
    client = None
    if args.scheduler:
        from simulator.study.sweep import connect_dask

        client = connect_dask(args.scheduler, "--scheduler")
    try:
        table = validate(manifest, duration_ms=float(duration), warmup_ms=float(warmup),
                         seed=int(settings["seed"]), overrides=args.set,
                         jobs=args.jobs or default_jobs(), client=client,
                         progress=not args.no_progress, log=_log, datasets=args.dataset)
    finally:
        if client is not None:
            client.close()
    summary = summarise(table, manifest)
    with atomic_path(out / "validation.csv") as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(out / "summary.csv") as tmp:
        summary.to_csv(tmp, index=False)
    plots = plot_validation(table, out)
    _print_summary(summary, manifest)
    _log(f"wrote {out}/: validation.csv, summary.csv, {len(plots)} plots "
         f"({len(table)} measured points, {time.perf_counter() - started:.1f} s)")
    return EXIT_OK if summary["passed"].all() else EXIT_FAILED


def _writable(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError("--out", f"{out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".snapsim-write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise ConfigError("--out", f"cannot write to {out}: {exc.strerror or exc}") from None


def _print_summary(summary: pd.DataFrame, manifest: Manifest) -> None:
    rows = [(str(r.dataset), str(r.series), str(r.algorithm), str(r.points),
             f"{r.median_abs_rel_error:.1%}", f"{r.max_abs_rel_error:.1%}",
             "ok" if r.passed else "FAIL") for r in summary.itertuples()]
    print(f"median |error| <= {manifest.median_abs_rel_error:.0%}, "
          f"max |error| <= {manifest.max_abs_rel_error:.0%} per series")
    for line in format_table(("DATASET", "SERIES", "ALGORITHM", "POINTS", "MEDIAN", "MAX",
                              "RESULT"), rows):
        print(line)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
