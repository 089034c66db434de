"""The model against published measurements (the library of ``snapsim validate``).

A measurement manifest (:mod:`simulator.study.measurements`) maps every measured TPS to a point:
machine, algorithm, workload, active and idle clients, idle kind. :func:`validate` simulates each
distinct point once (two series measuring the same point, e.g. PostgreSQL 12 and the pre-14 tree,
share a simulation), with the manifest's run settings (a dataset's own ``run`` overrides them for
its points, unless the caller fixes the window for all) and, where the manifest gives a machine's
single-client TPS, the work scale that reproduces it (that measured point is then excluded from
the errors: it was fitted, so it matches by construction). It returns the point-by-point
table::

    dataset, series, algorithm, machine, clients, idle_clients, measured_tps, predicted_tps,
    rel_error, calibration_point, error, duration_ms, warmup_ms, window_converged

(``window_converged``: the simulated point's own verdict on its window, the curve column of that
name; false for a failed simulation) and :func:`summarise` gives, per dataset and series, the
median and maximum absolute relative error against the manifest's thresholds
(:data:`SUMMARY_COLUMNS`); :func:`plot_validation` draws one predicted-vs-measured plot per
dataset and a scatter of every point.

A series the manifest marks ``expected: fail`` (a known gap of the model, with its ``reason``) is
a gate like pytest's strict xfail: while it fails its outcome is ``expected fail`` and it does not
fail :func:`gate_passes`; once it passes its outcome is ``unexpected pass`` and it does, so that
the mark is removed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simulator.analysis.plotting import plot_tps, tps_panels
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.study.experiment import Experiment, plan, single_client_work_scale
from simulator.study.experiment_file import apply_overrides, experiment_from_document
from simulator.study.measurements import Manifest
from simulator.study.outputs import algorithm_colours, plot_title, save_png
from simulator.study.sweep import PointTask, run_tasks

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RUN_DEFAULTS = {"duration_ms": 5.0, "warmup_ms": 2.0, "seed": 0}
SUMMARY_COLUMNS = ("dataset", "series", "algorithm", "points", "median_abs_rel_error",
                   "max_abs_rel_error", "passed", "expected", "outcome", "reason", "unconverged")
"""Columns of :func:`summarise`: ``passed`` (within both thresholds), ``expected`` (``pass`` or
``fail``, from the manifest), ``outcome`` (one of :data:`OUTCOMES`), ``reason`` (the manifest's
reason of an expected failure, else empty) and ``unconverged`` (scored points whose window did
not converge: their error may be the window's, not the model's)."""
OUTCOMES = ("pass", "fail", "expected fail", "unexpected pass")
"""``outcome`` of a series: as expected (``pass``, ``expected fail``) or not (the other two)."""
FAILING_OUTCOMES = ("fail", "unexpected pass")
VALIDATION_COLUMNS = ("dataset", "series", "algorithm", "machine", "workload", "idle_kind",
                      "clients", "idle_clients", "measured_tps", "predicted_tps", "rel_error",
                      "calibration_point", "error", "duration_ms", "warmup_ms",
                      "window_converged")


def validate(manifest: Manifest, *, duration_ms: float = RUN_DEFAULTS["duration_ms"],
             warmup_ms: float = RUN_DEFAULTS["warmup_ms"], seed: int = 0,
             overrides: Sequence[str] = (), jobs: int = 1, client: Any = None,
             progress: bool = False, log: Callable[[str], None] | None = None,
             datasets: Sequence[str] | None = None, fixed: Collection[str] = (),
             machine_overrides: Sequence[str] = ()) -> pd.DataFrame:
    """Simulate every measured point of the manifest; return the point-by-point table.

    ``overrides`` are ``--set``-style ``key=value`` strings applied to every point's experiment
    (e.g. ``options.costs.client=12000 cycles``); ``datasets`` restricts the run. A dataset's
    own ``run`` replaces ``duration_ms`` / ``warmup_ms`` for its points, except the ones named
    in ``fixed`` (the caller chose them for every point). A point measured by two datasets with
    different windows is simulated once per window. ``machine_overrides`` (``--machine-set``
    items) change every machine's file, for ablations (``scheduler.run_queues=global``).
    """
    measured = _measured(manifest, datasets)
    given = {"duration_ms": duration_ms, "warmup_ms": warmup_ms}
    for key, value in given.items():
        own = {name: manifest.dataset(name).run.get(key, value) for name in
               measured["dataset"].unique()}
        measured[key] = [value if key in fixed else own[name] for name in measured["dataset"]]
    machines: dict[str, MachineConfig] = {}
    tasks: dict[tuple[object, ...], PointTask] = {}
    scales: dict[str, float] = {}
    for machine_name in measured["machine"].unique():
        machine = load_machine(str(machine_name), machine_overrides)
        machines[str(machine_name)] = machine
        scales[str(machine_name)] = _work_scale(manifest, machine, duration_ms, warmup_ms,
                                                seed, overrides, log)
    for (machine_name, workload, idle_kind, duration_value, warmup_value), group in \
            measured.groupby(["machine", "workload", "idle_kind", "duration_ms", "warmup_ms"],
                             sort=False):
        machine = machines[str(machine_name)]
        duration, warmup = float(str(duration_value)), float(str(warmup_value))
        experiment = _experiment(machine, str(workload), str(idle_kind), group, duration,
                                 warmup, seed, overrides)
        model = experiment.validate()
        options = model.resolve_options(experiment.options)
        wanted = set(zip(group["algorithm"], group["clients"], group["idle_clients"], strict=True))
        for task in plan(experiment, machine, options, scales[str(machine_name)]):
            spec = task.spec
            point = (spec.algorithm, spec.clients, spec.idle_clients)
            point_key = (machine_name, workload, idle_kind, duration, warmup, *point)
            if point in wanted and point_key not in tasks:
                tasks[point_key] = replace(
                    task, key=f"{machine_name}-{workload}-{idle_kind}-{duration:g}ms-{task.key}",
                    index=len(tasks))
    if log is not None:
        log(f"validate: {len(measured)} measured points, {len(tasks)} simulations")
    records = run_tasks(list(tasks.values()), jobs=jobs, client=client, progress=progress)
    predicted = dict(zip(tasks, records, strict=True))
    rows = []
    for row in measured.to_dict("records"):
        record = predicted[(row["machine"], row["workload"], row["idle_kind"],
                            row["duration_ms"], row["warmup_ms"], row["algorithm"],
                            row["clients"], row["idle_clients"])]
        tps = float("nan") if record.failed else float(str(record.row["tps"]))
        converged = not record.failed and bool(record.row.get("window_converged", True))
        rows.append({**row, "predicted_tps": tps,
                     "rel_error": tps / float(row["measured_tps"]) - 1, "error": record.error,
                     "window_converged": converged})
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


def _work_scale(manifest: Manifest, machine: MachineConfig, duration_ms: float,
                warmup_ms: float, seed: int, overrides: Sequence[str],
                log: Callable[[str], None] | None) -> float:
    """The machine's work scale, calibrated with the run's window on its calibration point."""
    target = manifest.single_client_tps(machine.name)
    if target is None:
        return 1.0
    point = manifest.calibration[machine.name]
    dataset = manifest.dataset(point.dataset)
    algorithm = dataset.series[point.series]
    group = pd.DataFrame({"algorithm": [algorithm], "clients": [point.clients],
                          "idle_clients": [point.idle_clients]})
    probe = _experiment(machine, dataset.workload, dataset.idle_kind, group, duration_ms,
                        warmup_ms, seed, overrides)
    options = probe.validate().resolve_options(probe.options)
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
        passed = bool(median <= manifest.median_abs_rel_error
                      and worst <= manifest.max_abs_rel_error)
        reason = manifest.dataset(str(dataset)).known_gaps.get(str(series), "")
        expected = "fail" if reason else "pass"
        outcome = {("pass", True): "pass", ("pass", False): "fail",
                   ("fail", False): "expected fail", ("fail", True): "unexpected pass"}
        rows.append({
            "dataset": dataset, "series": series, "algorithm": group["algorithm"].iloc[0],
            "points": len(scored), "median_abs_rel_error": median, "max_abs_rel_error": worst,
            "passed": passed, "expected": expected, "outcome": outcome[expected, passed],
            "reason": reason,
            "unconverged": int((~scored["window_converged"].astype(bool)).sum())
            if "window_converged" in scored else 0,
        })
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def gate_passes(summary: pd.DataFrame) -> bool:
    """Whether every series came out as expected: no ``fail`` and no ``unexpected pass``."""
    return not summary["outcome"].isin(FAILING_OUTCOMES).any()


def plot_validation(table: pd.DataFrame, directory: Path) -> list[Path]:
    """One predicted-vs-measured plot per dataset and a scatter of every point."""
    import matplotlib  # only when plotting: importing it is slow

    matplotlib.use("Agg")
    written = []
    colours = algorithm_colours()
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
                 = panels, dataset: object = dataset, title: str = plot_title(ok)) -> None:
            figure.suptitle(title)
            for index, (panel, part, measurements) in enumerate(panels, start=1):
                ax = plot_tps(part, ax=figure.add_subplot(len(panels), 1, index),
                              measurements=measurements, colours=colours)
                suffix = f", {panel}" if panel else ""
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
