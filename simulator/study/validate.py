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
    rel_error, work_scale_point, error, duration_ms, warmup_ms, window_converged

(``window_converged``: the simulated point's own verdict on its window, the curve column of that
name; false for a failed simulation) and :func:`summarise` gives, per dataset and series, the
median and maximum absolute relative error against the manifest's thresholds
(:data:`SUMMARY_COLUMNS`); :func:`plot_validation` draws one predicted-vs-measured plot per
dataset and a scatter of every point.

A series the manifest marks ``expected: fail`` (a known gap of the model, with its ``reason``) is
a gate like pytest's strict xfail: while it fails its outcome is ``expected fail`` and it does not
fail :func:`gate_passes`; once it passes its outcome is ``unexpected pass`` and it does, so that
the mark is removed.

The manifest's published ratios (:class:`~simulator.study.measurements.Ratio`) are checked beside
the curves: :func:`run_validation` simulates each ratio's two points in the same run (a point that
a curve also measures, with the same window and options, is simulated once) and
:func:`score_ratios` sets each ratio's predicted value (numerator TPS / denominator TPS), its
relative error against the published one, whether it lies within the tolerance, and its outcome,
gated like a series' (:data:`RATIO_COLUMNS`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from math import nan
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simulator.analysis.intervals import MeanInterval, mean_interval, ratio_interval
from simulator.analysis.plotting import plot_tps, tps_panels
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine, resolve_machine_path
from simulator.config.overrides import set_dotted
from simulator.config.values import join_key
from simulator.errors import ConfigError
from simulator.study.experiment import Experiment, plan
from simulator.study.experiment_file import apply_overrides, experiment_from_document
from simulator.study.measurements import MEASURED_COLUMNS, Manifest, Ratio, RatioSide
from simulator.study.outputs import algorithm_colours, plot_title, save_png
from simulator.study.sweep import PointRecord, PointTask, run_tasks
from simulator.study.work_scale import single_client_work_scale
from simulator.study.workload_model import workload_model

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RUN_DEFAULTS = {"duration_ms": 5.0, "warmup_ms": 2.0, "seed": 0}
SUMMARY_COLUMNS = ("dataset", "series", "algorithm", "points", "median_abs_rel_error",
                   "max_abs_rel_error", "passed", "expected", "outcome", "reason", "unconverged",
                   "inside_interval")
"""Columns of :func:`summarise`: ``passed`` (within both thresholds), ``expected`` (``pass`` or
``fail``, from the manifest), ``outcome`` (one of :data:`OUTCOMES`), ``reason`` (the manifest's
reason of an expected failure, else empty), ``unconverged`` (scored points whose window did
not converge: their error may be the window's, not the model's) and ``inside_interval`` (scored
points whose measured TPS lies inside the model's 95 % interval over the seeds; empty with one
seed)."""
OUTCOMES = ("pass", "fail", "expected fail", "unexpected pass")
"""``outcome`` of a series: as expected (``pass``, ``expected fail``) or not (the other two)."""
FAILING_OUTCOMES = ("fail", "unexpected pass")
VALIDATION_COLUMNS = ("dataset", "series", "algorithm", "machine", "workload", "idle_kind",
                      "clients", "idle_clients", "measured_tps", "predicted_tps", "rel_error",
                      "work_scale_point", "error", "duration_ms", "warmup_ms",
                      "window_converged", "seeds", "predicted_sd", "predicted_low",
                      "predicted_high", "measured_inside")
"""Columns of :func:`validate`'s table. With several seeds, ``predicted_tps`` is the mean over
the seeds (``seeds`` of them), ``predicted_sd`` their standard deviation, ``predicted_low`` /
``predicted_high`` the 95 % t-interval of the mean and ``measured_inside`` whether the measured
TPS lies in it (all four empty with one seed); ``rel_error`` is the mean's."""
RATIO_COLUMNS = ("ratio", "machine", "workload", "batch", "clients", "idle_clients", "idle_kind",
                 "numerator", "denominator", "numerator_tps", "denominator_tps", "published",
                 "predicted", "rel_error", "tolerance", "passed", "expected", "outcome", "reason",
                 "error", "duration_ms", "warmup_ms", "window_converged", "numerator_wall_s",
                 "denominator_wall_s", "seeds", "predicted_low", "predicted_high")
"""Columns of a ratio's row (``ratios.csv``): its configuration (``batch``: the ``options.batch``
of both points, empty when the manifest gives none), the two sides' labels (an algorithm, ``with``
its ``set:`` overrides) and simulated TPS, ``published`` and ``predicted`` (numerator TPS /
denominator TPS), ``rel_error`` (predicted / published - 1), ``tolerance`` (relative),
``passed`` (``|rel_error| <= tolerance``), ``expected``, ``outcome`` and ``reason`` as in
:data:`SUMMARY_COLUMNS`, ``error`` (a failed simulation's), the window, ``window_converged``
(both points' windows converged) and each point's wall time in seconds (a point shared with a
curve or another ratio is simulated once and shows its one wall time in each row; summed over
the seeds). With several seeds the two TPS are means over the ``seeds`` seeds and
``predicted_low`` / ``predicted_high`` the 95 % interval of their ratio (delta method; empty
with one seed)."""


@dataclass(frozen=True, slots=True)
class Validation:
    """What :func:`run_validation` returns."""

    points: pd.DataFrame
    """Every measured point of the selected datasets (:data:`VALIDATION_COLUMNS`)."""
    ratios: pd.DataFrame
    """Every selected ratio, scored (:data:`RATIO_COLUMNS`)."""
    ratio_simulations: int
    """Simulations that only the ratios need (their points that no curve measures)."""
    ratio_wall_s: float
    """Wall time of those simulations, summed over the workers, in seconds."""


TaskKey = tuple[object, ...]
SeedKeys = tuple[TaskKey, ...]
"""A point's task keys, one per root seed."""


def validate(manifest: Manifest, *, duration_ms: float = RUN_DEFAULTS["duration_ms"],
             warmup_ms: float = RUN_DEFAULTS["warmup_ms"], seed: int = 0, seeds: int = 1,
             overrides: Sequence[str] = (), jobs: int = 1, client: Any = None,
             progress: bool = False, log: Callable[[str], None] | None = None,
             datasets: Sequence[str] | None = None, fixed: Collection[str] = (),
             machine_overrides: Sequence[str] = ()) -> pd.DataFrame:
    """Simulate every measured point of the manifest; return the point-by-point table.

    The curves of :func:`run_validation` without its ratios (see there for the arguments).
    """
    return run_validation(manifest, duration_ms=duration_ms, warmup_ms=warmup_ms, seed=seed,
                          seeds=seeds, overrides=overrides, jobs=jobs, client=client,
                          progress=progress, log=log, datasets=datasets, ratios=(), fixed=fixed,
                          machine_overrides=machine_overrides).points


def run_validation(manifest: Manifest, *, duration_ms: float = RUN_DEFAULTS["duration_ms"],
                   warmup_ms: float = RUN_DEFAULTS["warmup_ms"], seed: int = 0, seeds: int = 1,
                   overrides: Sequence[str] = (), jobs: int = 1, client: Any = None,
                   progress: bool = False, log: Callable[[str], None] | None = None,
                   datasets: Sequence[str] | None = None, ratios: Sequence[str] | None = None,
                   fixed: Collection[str] = (),
                   machine_overrides: Sequence[str] = ()) -> Validation:
    """Simulate the measured points and the ratios' points in one run; return both tables.

    ``overrides`` are ``--set``-style ``key=value`` strings applied to every point's experiment
    (e.g. ``options.costs.client=12000 cycles``); ``datasets`` and ``ratios`` restrict the run
    (``None``: all of them, an empty list: none). A dataset's or a ratio's own ``run`` replaces
    ``duration_ms`` / ``warmup_ms`` for its points (a dataset's for those of at least its
    ``min_clients`` and at most its ``max_clients`` active clients), except the ones named in
    ``fixed`` (the caller chose them for every point). A point needed twice (two datasets, a
    dataset and a ratio) with the same window and options is simulated once. ``machine_overrides``
    (``--machine-set`` items) change every machine's file, for ablations
    (``scheduler.run_queues=global``). ``seeds``: every point runs with the root seeds
    ``seed`` to ``seed + seeds - 1`` and is reported as their mean with its interval (a
    machine's work scale is found with ``seed`` alone).

    Raises:
        ConfigError: ``seeds`` below 1, an unknown dataset or ratio, a ratio that names an
            unknown machine, algorithm, workload or idle kind or has a bad ``set:``, nothing
            selected.
    """
    if seeds < 1:
        raise ConfigError("--seeds", f"must be at least 1, got {seeds}")
    roots = list(range(seed, seed + seeds))
    selected = [manifest.ratio(name) for name in
                (manifest.ratios if ratios is None else ratios)]
    if datasets is not None and not datasets and not selected:
        raise ConfigError("--dataset", "no dataset or ratio selected")
    check_ratios(manifest, [ratio.name for ratio in selected], machine_overrides)
    measured = _measured(manifest, datasets)
    given = {"duration_ms": duration_ms, "warmup_ms": warmup_ms}
    for key, value in given.items():
        measured[key] = [
            value if key in fixed or not manifest.dataset(name).window_applies(int(clients))
            else manifest.dataset(name).run.get(key, value)
            for name, clients in zip(measured["dataset"], measured["clients"], strict=True)]
    machines: dict[str, MachineConfig] = {}
    scales: dict[str, float] = {}
    for machine_name in dict.fromkeys([*measured["machine"], *(r.machine for r in selected)]):
        machine = load_machine(str(machine_name), machine_overrides)
        machines[str(machine_name)] = machine
        scales[str(machine_name)] = _work_scale(manifest, machine, duration_ms, warmup_ms,
                                                seed, overrides, log)
    tasks: dict[TaskKey, PointTask] = {}
    row_keys: dict[object, SeedKeys] = {}
    # datasets measured under other options (their set:) are simulated apart
    measured["sets"] = [repr(manifest.dataset(name).sets) for name in measured["dataset"]]
    for (machine_name, workload, idle_kind, duration_value, warmup_value, _), group in \
            measured.groupby(["machine", "workload", "idle_kind", "duration_ms", "warmup_ms",
                              "sets"], sort=False):
        machine = machines[str(machine_name)]
        duration, warmup = float(str(duration_value)), float(str(warmup_value))
        sets = manifest.dataset(str(group["dataset"].iloc[0])).sets
        experiment = _experiment(machine, str(workload), str(idle_kind), group, duration,
                                 warmup, roots, overrides, sets)
        wanted = set(zip(group["algorithm"], group["clients"], group["idle_clients"], strict=True))
        keys = _schedule(tasks, experiment, machine, str(machine_name),
                         scales[str(machine_name)], wanted)
        for index, algorithm, clients, idle in zip(group.index, group["algorithm"],
                                                   group["clients"], group["idle_clients"],
                                                   strict=True):
            row_keys[index] = keys[(str(algorithm), int(clients), int(idle))]
    curve_tasks = len(tasks)
    ratio_keys: list[tuple[SeedKeys, SeedKeys]] = []
    windows: list[tuple[float, float]] = []
    for ratio in selected:
        machine = machines[ratio.machine]
        window = tuple(value if key in fixed else ratio.run.get(key, value)
                       for key, value in given.items())
        windows.append((float(window[0]), float(window[1])))
        sides = []
        for side in (ratio.numerator, ratio.denominator):
            experiment = _ratio_experiment(ratio, side, machine, windows[-1], roots, overrides)
            point = (side.algorithm, ratio.clients, ratio.idle_clients)
            keys = _schedule(tasks, experiment, machine, ratio.machine, scales[ratio.machine],
                             {point})
            sides.append(keys[point])
        ratio_keys.append((sides[0], sides[1]))
    if log is not None:
        extra = (f"; {len(selected)} ratios, {len(tasks) - curve_tasks} more simulations"
                 if selected else "")
        log(f"validate: {len(measured)} measured points, {curve_tasks} simulations{extra}")
    records = run_tasks(list(tasks.values()), jobs=jobs, client=client, progress=progress)
    predicted = dict(zip(tasks, records, strict=True))

    def seeded(keys: SeedKeys) -> list[PointRecord]:
        return [predicted[key] for key in keys]

    points = _point_table(manifest, measured, [seeded(row_keys[i]) for i in measured.index])
    rows = [_ratio_row(ratio, window, seeded(numerator), seeded(denominator))
            for ratio, window, (numerator, denominator) in
            zip(selected, windows, ratio_keys, strict=True)]
    ratio_only = records[curve_tasks:]
    return Validation(points=points, ratios=score_ratios(pd.DataFrame(rows)),
                      ratio_simulations=len(ratio_only),
                      ratio_wall_s=float(sum(record.wall_s for record in ratio_only)))


def _schedule(tasks: dict[TaskKey, PointTask], experiment: Experiment, machine: MachineConfig,
              machine_name: str, scale: float,
              wanted: Collection[tuple[object, object, object]]
              ) -> dict[tuple[str, int, int], SeedKeys]:
    """Add the ``wanted`` points of the experiment to ``tasks`` (once each); return their keys.

    Points are ``(algorithm, clients, idle clients)``; ``machine_name`` is the machine as the
    manifest names it. A task's key is its machine, workload, idle kind, window, resolved
    options, point and root seed: the same point asked for twice (with the same window and
    options) is simulated once per seed. A point's keys are one per root seed, in order.
    """
    prepared = experiment.prepare()
    fingerprint = json.dumps(prepared.options, sort_keys=True, default=str)
    digest = hashlib.sha256(fingerprint.encode()).hexdigest()[:8]
    duration, warmup = experiment.duration_ms, experiment.warmup_ms
    keys: dict[tuple[str, int, int], SeedKeys] = {}
    for task in plan(prepared, scale):
        spec = task.spec
        point = (spec.algorithm, spec.clients, spec.idle_clients)
        if point not in wanted:
            continue
        key: TaskKey = (machine_name, spec.workload, spec.idle_kind, duration, warmup,
                        fingerprint, *point, task.root_seed)
        if key not in tasks:
            tasks[key] = replace(
                task, key=f"{machine_name}-{spec.workload}-{spec.idle_kind}-{duration:g}ms-"
                f"{warmup:g}ms-{digest}-{task.key}-s{task.root_seed}", index=len(tasks))
        keys[point] = (*keys.get(point, ()), key)
    return keys


def _point_table(manifest: Manifest, measured: pd.DataFrame,
                 records: Sequence[Sequence[PointRecord]]) -> pd.DataFrame:
    """The measured rows with their predictions (:data:`VALIDATION_COLUMNS`).

    ``records`` are the rows' simulated points (one per seed), in the rows' order.
    """
    rows = []
    for row, seeded in zip(measured.to_dict("records"), records, strict=True):
        tps = _tps(seeded)
        measured_tps = float(row["measured_tps"])
        inside = (tps.low <= measured_tps <= tps.high) if tps.n >= 2 else None
        rows.append({**row, "predicted_tps": tps.mean,
                     "rel_error": tps.mean / measured_tps - 1, "error": _error(seeded),
                     "window_converged": _converged(seeded), "seeds": len(seeded),
                     "predicted_sd": tps.sd, "predicted_low": tps.low,
                     "predicted_high": tps.high,
                     "measured_inside": inside})
    added = ("predicted_tps", "rel_error", "error", "window_converged", "seeds",
             "predicted_sd", "predicted_low", "predicted_high", "measured_inside")
    table = pd.DataFrame(rows, columns=[*measured.columns, *added])
    table["measured_inside"] = table["measured_inside"].astype("boolean")
    table["work_scale_point"] = _work_scale_flags(manifest, table)
    return table[list(VALIDATION_COLUMNS)]


def _tps(records: Sequence[PointRecord]) -> MeanInterval:
    """The TPS over the seeds with its interval; a failed seed makes the mean ``nan``."""
    if any(record.failed for record in records):
        return MeanInterval(nan, nan, 0)
    return mean_interval([float(str(record.row["tps"])) for record in records])


def _error(records: Sequence[PointRecord]) -> str:
    return "; ".join(dict.fromkeys(record.error for record in records if record.error))


def _converged(records: Sequence[PointRecord]) -> bool:
    return all(not record.failed and bool(record.row.get("window_converged", True))
               for record in records)


def _measured(manifest: Manifest, datasets: Sequence[str] | None) -> pd.DataFrame:
    names = list(manifest.datasets) if datasets is None else list(datasets)
    frames = [manifest.dataset(name).table() for name in names]
    if not frames:
        return pd.DataFrame(columns=list(MEASURED_COLUMNS))
    return pd.concat(frames, ignore_index=True)


def _experiment(machine: MachineConfig, workload: str, idle_kind: str, group: pd.DataFrame,
                duration_ms: float, warmup_ms: float, seeds: Sequence[int],
                overrides: Sequence[str],
                sets: Sequence[tuple[str, object]] = ()) -> Experiment:
    """The experiment of a group of measured points.

    Their dataset's ``set:`` applies first, then ``--set`` over it (so that an ablation's
    ``--set`` changes every dataset alike).
    """
    document: dict[str, object] = {
        "algorithms": list(dict.fromkeys(group["algorithm"])),
        "workload": workload, "idle_kind": idle_kind,
        "clients": sorted({int(c) for c in group["clients"]}),
        "idle_clients": sorted({int(i) for i in group["idle_clients"]}),
        "duration_ms": duration_ms, "warmup_ms": warmup_ms, "seeds": list(seeds),
        # validate finds each machine's work scale from its own manifest and compares itself
        "single_client_tps": None, "measurements": None,
    }
    for dotted, value in sets:
        document = set_dotted(document, dotted.split("."), value, "set")
    document = apply_overrides(document, overrides)
    experiment = experiment_from_document(document, "--set", default_name="validation")
    return replace(experiment, machine=machine)


def _work_scale(manifest: Manifest, machine: MachineConfig, duration_ms: float,
                warmup_ms: float, seed: int, overrides: Sequence[str],
                log: Callable[[str], None] | None) -> float:
    """The machine's work scale, found with the run's window on its single-client point."""
    figure = manifest.single_client(machine.name)
    if figure is None:
        return 1.0
    group = pd.DataFrame({"algorithm": [figure.algorithm], "clients": [1], "idle_clients": [0]})
    probe = _experiment(machine, figure.workload, figure.idle_kind, group, duration_ms,
                        warmup_ms, [seed], overrides, manifest.dataset(figure.dataset).sets)
    return single_client_work_scale(probe.prepare(), figure, log)


def _ratio_experiment(ratio: Ratio, side: RatioSide, machine: MachineConfig,
                      window: tuple[float, float], seeds: Sequence[int],
                      overrides: Sequence[str]) -> Experiment:
    """One side's point as an experiment of one point.

    The ratio's configuration, then ``--set``, the ratio's ``batch`` and the side's own
    ``set:``, each over the ones before.
    """
    group = pd.DataFrame({"algorithm": [side.algorithm], "clients": [ratio.clients],
                          "idle_clients": [ratio.idle_clients]})
    experiment = _experiment(machine, ratio.workload, ratio.idle_kind, group, window[0],
                             window[1], seeds, overrides)
    document: dict[str, object] = {"options": dict(experiment.options)}
    batch = [] if ratio.batch is None else [("options.batch", ratio.batch)]
    for dotted, value in [*batch, *side.sets]:
        document = set_dotted(document, dotted.split("."), value, f"ratios.{ratio.name}")
    options = document["options"]
    assert isinstance(options, Mapping)
    return replace(experiment, options=options)


def check_datasets(manifest: Manifest, names: Sequence[str] | None = None,
                   machine_overrides: Sequence[str] = ()) -> None:
    """Read the datasets (default: all) and load their machines before any point runs.

    Raises:
        ConfigError: an unknown dataset, an unreadable measurement file, a machine that does
            not load (with ``machine_overrides`` applied), or a ``set:`` the workload model
            rejects (with the dataset's key, ``datasets.NAME.set``, and the manifest as the
            source).
    """
    for name in manifest.datasets if names is None else names:
        dataset = manifest.dataset(name)
        table = dataset.table()
        machine = load_machine(dataset.machine, machine_overrides)
        if not dataset.sets:
            continue
        group = table.head(1)[["algorithm"]].assign(clients=1, idle_clients=0)
        try:
            _experiment(machine, dataset.workload, dataset.idle_kind, group, 1.0, 0.0, [0], (),
                        dataset.sets).prepare()
        except ConfigError as exc:
            raise ConfigError(join_key(f"datasets.{name}.set", exc.key), exc.message,
                              str(manifest.path)) from None


def check_ratios(manifest: Manifest, names: Sequence[str] | None = None,
                 machine_overrides: Sequence[str] = ()) -> None:
    """Check the names and options of the ratios (default: all) before any point runs.

    Raises:
        ConfigError: an unknown ratio, machine, algorithm, workload or idle kind, or a ``set:``
            the workload model rejects, with the ratio's key (``ratios.NAME.numerator``) and the
            manifest as the source.
    """
    model = workload_model()
    source = str(manifest.path)
    for name in manifest.ratios if names is None else names:
        ratio = manifest.ratio(name)
        key = f"ratios.{name}"
        try:
            resolve_machine_path(ratio.machine)
        except ConfigError as exc:
            raise ConfigError(f"{key}.machine", exc.message, source) from None
        for item, value, choices in (("workload", ratio.workload, model.workloads),
                                     ("idle_kind", ratio.idle_kind, model.idle_kinds)):
            if value not in choices:
                raise ConfigError(f"{key}.{item}", f"unknown {item.replace('_', ' ')} "
                                  f"{value!r} (choose from {', '.join(choices)})", source)
        machine = load_machine(ratio.machine, machine_overrides)
        for part, side in (("numerator", ratio.numerator), ("denominator", ratio.denominator)):
            where = f"{key}.{part}"
            if side.algorithm not in model.algorithms:
                raise ConfigError(where if not side.sets else f"{where}.algorithm",
                                  f"unknown algorithm {side.algorithm!r} "
                                  f"(choose from {', '.join(model.algorithms)})", source)
            try:
                experiment = _ratio_experiment(ratio, side, machine, (1.0, 0.0), [0], ())
                experiment.prepare()
            except ConfigError as exc:
                raise ConfigError(join_key(f"{where}.set" if side.sets else where, exc.key),
                                  exc.message, source) from None


def _ratio_row(ratio: Ratio, window: tuple[float, float], numerator: Sequence[PointRecord],
               denominator: Sequence[PointRecord]) -> dict[str, object]:
    """A ratio's row before scoring: its configuration and its two simulated points (per seed)."""
    top, bottom = _tps(numerator), _tps(denominator)
    _, low, high = ratio_interval(top, bottom)
    return {
        "ratio": ratio.name, "machine": ratio.machine, "workload": ratio.workload,
        "batch": ratio.batch, "clients": ratio.clients, "idle_clients": ratio.idle_clients,
        "idle_kind": ratio.idle_kind, "numerator": ratio.numerator.label(),
        "denominator": ratio.denominator.label(), "numerator_tps": top.mean,
        "denominator_tps": bottom.mean, "published": ratio.published,
        "tolerance": ratio.tolerance, "reason": ratio.known_gap,
        "error": _error([*numerator, *denominator]),
        "duration_ms": window[0], "warmup_ms": window[1],
        "window_converged": _converged(numerator) and _converged(denominator),
        "numerator_wall_s": sum(record.wall_s for record in numerator),
        "denominator_wall_s": sum(record.wall_s for record in denominator),
        "seeds": len(numerator), "predicted_low": low, "predicted_high": high,
    }


def score_ratios(rows: pd.DataFrame) -> pd.DataFrame:
    """Score ratio rows (:data:`RATIO_COLUMNS`; ``predicted`` and the outcome are computed).

    ``predicted`` is ``numerator_tps / denominator_tps`` (NaN when a point failed, which
    fails the ratio); it passes when ``|predicted / published - 1| <= tolerance``; a non-empty
    ``reason`` marks it ``expected: fail``.
    """
    table = rows.reindex(columns=list(RATIO_COLUMNS))
    if table.empty:
        return table
    table["batch"] = table["batch"].astype("Int64")
    table["predicted"] = (table["numerator_tps"].astype(float)
                          / table["denominator_tps"].astype(float))
    table["rel_error"] = table["predicted"] / table["published"].astype(float) - 1
    table["passed"] = (table["rel_error"].abs() <= table["tolerance"].astype(float)).astype(bool)
    table["reason"] = table["reason"].fillna("").astype(str)
    table["expected"] = ["fail" if reason else "pass" for reason in table["reason"]]
    table["outcome"] = [outcome(str(expected), bool(passed)) for expected, passed in
                        zip(table["expected"], table["passed"], strict=True)]
    table["error"] = table["error"].fillna("").astype(str)
    return table


def outcome(expected: str, passed: bool) -> str:
    """The outcome (:data:`OUTCOMES`) of a series or ratio expected to ``pass`` or ``fail``."""
    return {("pass", True): "pass", ("pass", False): "fail", ("fail", False): "expected fail",
            ("fail", True): "unexpected pass"}[expected, passed]


def _work_scale_flags(manifest: Manifest, table: pd.DataFrame) -> pd.Series:
    flags = pd.Series(False, index=table.index)
    for point in manifest.work_scale_points.values():
        flags |= ((table["dataset"] == point.dataset) & (table["series"] == point.series)
                  & (table["clients"] == point.clients)
                  & (table["idle_clients"] == point.idle_clients))
    return flags


def summarise(table: pd.DataFrame, manifest: Manifest) -> pd.DataFrame:
    """Per dataset and series: points, median and max absolute relative error, pass/fail.

    Work-scale points are left out; a failed simulation counts as an error of infinity.
    """
    rows = []
    for (dataset, series), group in table.groupby(["dataset", "series"], sort=False):
        scored = group[~group["work_scale_point"]]
        errors = scored["rel_error"].abs().fillna(np.inf)
        median = float(errors.median()) if len(errors) else float("nan")
        worst = float(errors.max()) if len(errors) else float("nan")
        passed = bool(median <= manifest.median_abs_rel_error
                      and worst <= manifest.max_abs_rel_error)
        reason = manifest.dataset(str(dataset)).known_gaps.get(str(series), "")
        expected = "fail" if reason else "pass"
        rows.append({
            "dataset": dataset, "series": series, "algorithm": group["algorithm"].iloc[0],
            "points": len(scored), "median_abs_rel_error": median, "max_abs_rel_error": worst,
            "passed": passed, "expected": expected, "outcome": outcome(expected, passed),
            "reason": reason,
            "unconverged": int((~scored["window_converged"].astype(bool)).sum())
            if "window_converged" in scored else 0,
            "inside_interval": _inside(scored),
        })
    summary = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    summary["inside_interval"] = summary["inside_interval"].astype("Int64")
    return summary


def _inside(scored: pd.DataFrame) -> int | None:
    """Scored points whose measured TPS lies in the model's interval (``None``: no interval)."""
    if "measured_inside" not in scored:
        return None
    known = scored["measured_inside"].dropna()
    return int(known.astype(bool).sum()) if len(known) else None


def gate_passes(summary: pd.DataFrame, ratios: pd.DataFrame | None = None) -> bool:
    """Whether every series and ratio came out as expected: no fail, no unexpected pass."""
    tables = [summary] if ratios is None else [summary, ratios]
    return not any(table["outcome"].isin(FAILING_OUTCOMES).any() for table in tables)


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
