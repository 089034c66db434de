"""The model against published measurements (the library of ``snapsim validate``).

A measurement manifest (:mod:`simulator.measure.manifest`) maps every measured TPS to a point:
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
name; false for a failed simulation). How it is judged, summarised and drawn is
:mod:`simulator.tools.scoring`'s.

The manifest's published ratios (:class:`~simulator.measure.manifest.Ratio`) are checked beside
the curves: :func:`run_validation` simulates each ratio's two points in the same run (a point that
a curve also measures, with the same window and options, is simulated once) and
:func:`~simulator.tools.scoring.score_ratios` sets each ratio's predicted value (numerator TPS
/ denominator TPS), its relative error against the published one, whether it lies within the
tolerance, and its outcome, gated like a series'.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from math import nan
from typing import TYPE_CHECKING, Any

import pandas as pd

from simulator.analysis.intervals import MeanInterval, mean_interval, ratio_interval
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine, resolve_machine_path
from simulator.config.overrides import set_dotted
from simulator.config.values import join_key
from simulator.errors import ConfigError
from simulator.measure.manifest import MEASURED_COLUMNS, Manifest, Ratio, RatioSide
from simulator.measure.noise import disturbed_counts
from simulator.study import estimate
from simulator.study.estimate import SweepEstimate, estimate_sweep
from simulator.study.experiment import Experiment, plan
from simulator.study.experiment_file import apply_overrides, experiment_from_document
from simulator.study.sweep import PointRecord, PointTask, run_tasks
from simulator.study.work_scale import single_client_work_scale
from simulator.study.workload_model import workload_model
from simulator.tools.scoring import score_ratios

if TYPE_CHECKING:
    pass

RUN_DEFAULTS = {"duration_ms": 5.0, "warmup_ms": 2.0, "seed": 0}
VALIDATION_COLUMNS = ("dataset", "series", "algorithm", "machine", "workload", "idle_kind",
                      "clients", "idle_clients", "measured_tps", "predicted_tps", "rel_error",
                      "work_scale_point", "error", "duration_ms", "warmup_ms", "precision",
                      "max_duration_ms", "window_converged", "tps_ci_rel",
                      "max_duration_reached", "seeds", "predicted_sd", "predicted_low",
                      "predicted_high", "measured_inside", "disturbed_runs")
"""Columns of :func:`validate`'s table. ``duration_ms`` to ``max_duration_ms``: the window asked
for (a precision and its cap, or empty for a fixed window); ``window_converged`` whether every
seed's interval met its target, ``tps_ci_rel`` the largest of the seeds' own relative
half-widths (each seed's window's interval, :mod:`simulator.runtime.precision`) and
``max_duration_reached`` whether a seed's window stopped at its cap. With several seeds,
``predicted_tps`` is the mean over the seeds (``seeds`` of them), ``predicted_sd`` their standard
deviation, ``predicted_low`` / ``predicted_high`` the 95 % t-interval of the mean and
``measured_inside`` whether the measured TPS lies in it (all four empty with one seed);
``rel_error`` is the mean's. ``disturbed_runs``: of the runs whose median is the measured TPS,
those that other work on the machine disturbed (:mod:`simulator.measure.noise`, from the
``repetitions.csv`` that ``snapsim measure`` writes beside its datasets; empty for a dataset
without one)."""
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

WINDOW_KEYS = ("duration_ms", "warmup_ms", "precision", "max_duration_ms")
"""A point's window settings (the experiment's keys): fixed, or grown to a precision."""


@dataclass(frozen=True, slots=True)
class Window:
    """A group of points' window: its length and warm-up, and its precision stopping."""

    duration_ms: float
    warmup_ms: float
    precision: float | None = None
    max_duration_ms: float | None = None

    def document(self) -> dict[str, object]:
        """The window's keys of an experiment document (no cap without a precision)."""
        return {"duration_ms": self.duration_ms, "warmup_ms": self.warmup_ms,
                "precision": self.precision,
                "max_duration_ms": self.max_duration_ms if self.precision is not None else None}

    def label(self) -> str:
        """A short, file-name-safe label (``5ms-5ms``, ``5ms-5ms-p0.02-c100ms``)."""
        text = f"{self.duration_ms:g}ms-{self.warmup_ms:g}ms"
        if self.precision is not None:
            text += f"-p{self.precision:g}"
            if self.max_duration_ms is not None:
                text += f"-c{self.max_duration_ms:g}ms"
        return text


def _nan_if_none(value: float | None) -> float:
    return nan if value is None else float(value)


def _window(values: Sequence[object]) -> Window:
    """A :class:`Window` from :data:`WINDOW_KEYS`' values (``nan`` or ``None``: not set)."""
    def optional(value: object) -> float | None:
        if value is None:
            return None
        number = float(str(value))
        return None if number != number else number

    duration, warmup, precision, cap = (optional(value) for value in values)
    assert duration is not None
    assert warmup is not None
    return Window(duration, warmup, precision, cap)


SeedKeys = tuple[TaskKey, ...]
"""A point's task keys, one per root seed."""


def validate(manifest: Manifest, *, duration_ms: float = RUN_DEFAULTS["duration_ms"],
             warmup_ms: float = RUN_DEFAULTS["warmup_ms"], seed: int = 0, seeds: int = 1,
             overrides: Sequence[str] = (), jobs: int = 1, client: Any = None,
             progress: bool = False, log: Callable[[str], None] | None = None,
             datasets: Sequence[str] | None = None, fixed: Collection[str] = (),
             machine_overrides: Sequence[str] = (), precision: float | None = None,
             max_duration_ms: float | None = None) -> pd.DataFrame:
    """Simulate every measured point of the manifest; return the point-by-point table.

    The curves of :func:`run_validation` without its ratios (see there for the arguments).
    """
    return run_validation(manifest, duration_ms=duration_ms, warmup_ms=warmup_ms, seed=seed,
                          seeds=seeds, overrides=overrides, jobs=jobs, client=client,
                          progress=progress, log=log, datasets=datasets, ratios=(), fixed=fixed,
                          machine_overrides=machine_overrides, precision=precision,
                          max_duration_ms=max_duration_ms).points


def run_validation(manifest: Manifest, *, duration_ms: float = RUN_DEFAULTS["duration_ms"],
                   warmup_ms: float = RUN_DEFAULTS["warmup_ms"], seed: int = 0, seeds: int = 1,
                   overrides: Sequence[str] = (), jobs: int = 1, client: Any = None,
                   progress: bool = False, log: Callable[[str], None] | None = None,
                   datasets: Sequence[str] | None = None, ratios: Sequence[str] | None = None,
                   fixed: Collection[str] = (),
                   machine_overrides: Sequence[str] = (), precision: float | None = None,
                   max_duration_ms: float | None = None, force: bool = False) -> Validation:
    """Simulate the measured points and the ratios' points in one run; return both tables.

    ``overrides`` are ``--set``-style ``key=value`` strings applied to every point's experiment
    (e.g. ``options.costs.client=12000 cycles``); ``datasets`` and ``ratios`` restrict the run
    (``None``: all of them, an empty list: none). A dataset's or a ratio's own ``run`` replaces
    ``duration_ms`` / ``warmup_ms`` / ``precision`` / ``max_duration_ms`` for its points (a
    dataset's for those of at least its ``min_clients`` and at most its ``max_clients`` active
    clients), except the ones named in ``fixed`` (the caller chose them for every point). With a
    ``precision``, every point's window grows until the 95 % interval of its TPS is within that
    fraction of it, up to ``max_duration_ms`` (the experiment's keys of the same names); the
    work scale's single-client point keeps its fixed window. A point needed twice (two
    datasets, a dataset and a ratio) with the same window and options is simulated once.
    ``machine_overrides``
    (``--machine-set`` items) change every machine's file, for ablations
    (``scheduler.run_queues=global``). ``seeds``: every point runs with the root seeds
    ``seed`` to ``seed + seeds - 1`` and is reported as their mean with its interval (a
    machine's work scale is found with ``seed`` alone). On local workers (no ``client``) a
    point whose memory estimate, times the workers, exceeds the available memory is refused
    before any point runs, as by ``snapsim run``, unless ``force``
    (:func:`check_validation_estimate`).

    Raises:
        ConfigError: ``seeds`` below 1, an unknown dataset or ratio, a ratio that names an
            unknown machine, algorithm, workload or idle kind or has a bad ``set:``, nothing
            selected, a point that cannot fit in memory.
    """
    planned = _plan_validation(
        manifest, duration_ms=duration_ms, warmup_ms=warmup_ms, seed=seed, seeds=seeds,
        overrides=overrides, datasets=datasets, ratios=ratios, fixed=fixed,
        machine_overrides=machine_overrides, precision=precision,
        max_duration_ms=max_duration_ms)
    measured, selected = planned.measured, planned.selected
    curve_tasks, row_keys = planned.curve_tasks, planned.row_keys
    ratio_keys, windows = planned.ratio_keys, planned.windows
    if client is None:  # local workers: refuse what cannot fit before the first point runs
        check_validation_estimate(
            estimate_sweep(list(planned.tasks.values()), workers=max(jobs, 1)), force=force)
    scales = {name: _work_scale(manifest, machine, duration_ms, warmup_ms, seed, overrides, log)
              for name, machine in planned.machines.items()}
    tasks = {key: replace(task, spec=replace(task.spec, work_scale=scales[str(key[0])]))
             for key, task in planned.tasks.items()}
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


@dataclass(frozen=True, slots=True)
class _Planned:
    """The simulations of a validation and where each measured row and ratio finds its own."""

    measured: pd.DataFrame
    selected: list[Ratio]
    machines: dict[str, MachineConfig]
    """Every machine, by the name the manifest gives it (a task key's first item)."""
    tasks: dict[TaskKey, PointTask]
    """Every simulation, with a work scale of 1 (the machine's is found by simulating)."""
    curve_tasks: int
    """The first ``curve_tasks`` of ``tasks`` are the curves' (the rest only ratios need)."""
    row_keys: dict[object, SeedKeys]
    ratio_keys: list[tuple[SeedKeys, SeedKeys]]
    windows: list[Window]


def _plan_validation(manifest: Manifest, *, duration_ms: float, warmup_ms: float, seed: int,
                     seeds: int, overrides: Sequence[str], datasets: Sequence[str] | None,
                     ratios: Sequence[str] | None, fixed: Collection[str],
                     machine_overrides: Sequence[str], precision: float | None = None,
                     max_duration_ms: float | None = None) -> _Planned:
    """Every simulation :func:`run_validation` runs, planned without running one."""
    if seeds < 1:
        raise ConfigError("--seeds", f"must be at least 1, got {seeds}")
    roots = list(range(seed, seed + seeds))
    selected = [manifest.ratio(name) for name in
                (manifest.ratios if ratios is None else ratios)]
    if datasets is not None and not datasets and not selected:
        raise ConfigError("--dataset", "no dataset or ratio selected")
    check_ratios(manifest, [ratio.name for ratio in selected], machine_overrides)
    measured = _measured(manifest, datasets)
    given: dict[str, float | None] = {"duration_ms": duration_ms, "warmup_ms": warmup_ms,
                                      "precision": precision, "max_duration_ms": max_duration_ms}
    for key, value in given.items():
        measured[key] = [
            _nan_if_none(
                value if key in fixed or not manifest.dataset(name).window_applies(int(clients))
                else manifest.dataset(name).run.get(key, value))
            for name, clients in zip(measured["dataset"], measured["clients"], strict=True)]
    machines: dict[str, MachineConfig] = {}
    for machine_name in dict.fromkeys([*measured["machine"], *(r.machine for r in selected)]):
        machines[str(machine_name)] = load_machine(str(machine_name), machine_overrides)
    tasks: dict[TaskKey, PointTask] = {}
    row_keys: dict[object, SeedKeys] = {}
    # datasets measured under other options (their set:) are simulated apart
    measured["sets"] = [repr(manifest.dataset(name).sets) for name in measured["dataset"]]
    for (machine_name, workload, idle_kind, *window, _), group in measured.groupby(
            ["machine", "workload", "idle_kind", *WINDOW_KEYS, "sets"], sort=False, dropna=False):
        machine = machines[str(machine_name)]
        sets = manifest.dataset(str(group["dataset"].iloc[0])).sets
        experiment = _experiment(machine, str(workload), str(idle_kind), group,
                                 _window(window), roots, overrides, sets)
        wanted = set(zip(group["algorithm"], group["clients"], group["idle_clients"], strict=True))
        keys = _schedule(tasks, experiment, machine, str(machine_name), wanted)
        for index, algorithm, clients, idle in zip(group.index, group["algorithm"],
                                                   group["clients"], group["idle_clients"],
                                                   strict=True):
            row_keys[index] = keys[(str(algorithm), int(clients), int(idle))]
    curve_tasks = len(tasks)
    ratio_keys: list[tuple[SeedKeys, SeedKeys]] = []
    windows: list[Window] = []
    for ratio in selected:
        machine = machines[ratio.machine]
        windows.append(_window([value if key in fixed else ratio.run.get(key, value)
                                for key, value in given.items()]))
        sides = []
        for side in (ratio.numerator, ratio.denominator):
            experiment = _ratio_experiment(ratio, side, machine, windows[-1], roots, overrides)
            point = (side.algorithm, ratio.clients, ratio.idle_clients)
            keys = _schedule(tasks, experiment, machine, ratio.machine, {point})
            sides.append(keys[point])
        ratio_keys.append((sides[0], sides[1]))
    return _Planned(measured=measured, selected=selected, machines=machines, tasks=tasks,
                    curve_tasks=curve_tasks, row_keys=row_keys, ratio_keys=ratio_keys,
                    windows=windows)


def validation_estimate(manifest: Manifest, *, duration_ms: float = RUN_DEFAULTS["duration_ms"],
                        warmup_ms: float = RUN_DEFAULTS["warmup_ms"], seed: int = 0,
                        seeds: int = 1, overrides: Sequence[str] = (), jobs: int = 1,
                        datasets: Sequence[str] | None = None,
                        ratios: Sequence[str] | None = None, fixed: Collection[str] = (),
                        machine_overrides: Sequence[str] = (), precision: float | None = None,
                        max_duration_ms: float | None = None) -> SweepEstimate:
    """The memory and time estimate of :func:`run_validation`'s simulations on ``jobs`` workers.

    The same arguments; nothing is simulated (:mod:`simulator.study.estimate`).
    """
    planned = _plan_validation(manifest, duration_ms=duration_ms, warmup_ms=warmup_ms, seed=seed,
                               seeds=seeds, overrides=overrides, datasets=datasets,
                               ratios=ratios, fixed=fixed, machine_overrides=machine_overrides,
                               precision=precision, max_duration_ms=max_duration_ms)
    return estimate_sweep(list(planned.tasks.values()), workers=max(jobs, 1))


def check_validation_estimate(estimated: SweepEstimate, *, force: bool = False,
                              log: Callable[[str], None] | None = None) -> None:
    """Refuse a validation whose largest point cannot fit in memory, as ``snapsim run`` does.

    Also refuses a point whose window cannot hold one transaction; ``log`` is told the estimate
    of a large validation. ``force`` skips the refusals.

    Raises:
        ConfigError: naming the point, its estimate and the available memory (or its window).
    """
    if not force:
        estimate.check_memory(estimated, estimate.available_memory())
        estimate.check_windows(estimated)
    if log is not None and estimated.worth_reporting():
        log(estimated.line())


def _schedule(tasks: dict[TaskKey, PointTask], experiment: Experiment, machine: MachineConfig,
              machine_name: str, wanted: Collection[tuple[object, object, object]]
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
    window = Window(experiment.duration_ms, experiment.warmup_ms, experiment.precision,
                    experiment.max_duration_ms)
    keys: dict[tuple[str, int, int], SeedKeys] = {}
    for task in plan(prepared, 1.0):  # run_validation sets each machine's work scale
        spec = task.spec
        point = (spec.algorithm, spec.clients, spec.idle_clients)
        if point not in wanted:
            continue
        key: TaskKey = (machine_name, spec.workload, spec.idle_kind, window, fingerprint,
                        *point, task.root_seed)
        if key not in tasks:
            tasks[key] = replace(
                task, key=f"{machine_name}-{spec.workload}-{spec.idle_kind}-{window.label()}-"
                f"{digest}-{task.key}-s{task.root_seed}", index=len(tasks))
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
                     "window_converged": _converged(seeded),
                     "tps_ci_rel": _largest(seeded, "tps_ci_rel"),
                     "max_duration_reached": _largest(seeded, "max_duration_reached") > 0,
                     "seeds": len(seeded),
                     "predicted_sd": tps.sd, "predicted_low": tps.low,
                     "predicted_high": tps.high,
                     "measured_inside": inside})
    added = ("predicted_tps", "rel_error", "error", "window_converged", "tps_ci_rel",
             "max_duration_reached", "seeds",
             "predicted_sd", "predicted_low", "predicted_high", "measured_inside")
    table = pd.DataFrame(rows, columns=[*measured.columns, *added])
    table["measured_inside"] = table["measured_inside"].astype("boolean")
    table["work_scale_point"] = _work_scale_flags(manifest, table)
    table["disturbed_runs"] = _disturbed_runs(manifest, table)
    return table[list(VALIDATION_COLUMNS)]


def _disturbed_runs(manifest: Manifest, table: pd.DataFrame) -> pd.Series:
    """Per measured row, its disturbed runs (``<NA>`` where no ``repetitions.csv`` says)."""
    counts: dict[str, Mapping[tuple[str, int, int], tuple[int, int]] | None] = {}
    values: list[int | None] = []
    for name, series, clients, idle in zip(table["dataset"], table["series"], table["clients"],
                                           table["idle_clients"], strict=True):
        dataset = manifest.dataset(str(name))
        if dataset.name not in counts:
            runs = dataset.path.parent / "repetitions.csv"
            counts[dataset.name] = (disturbed_counts(runs, dataset.idle_kind,
                                                     _threads(dataset.machine))
                                    if runs.is_file() else None)
        found = counts[dataset.name]
        values.append(None if found is None
                      else found.get((str(series), int(clients), int(idle)), (0, 0))[0])
    return pd.Series(values, index=table.index, dtype="Int64")


def _threads(machine: str) -> int:
    """The hardware threads of a dataset's machine (1 if its file does not load)."""
    try:
        topology = load_machine(machine).topology
    except ConfigError:
        return 1
    return (topology.sockets * topology.domains_per_socket * topology.cores_per_domain
            * topology.threads_per_core)


def _tps(records: Sequence[PointRecord]) -> MeanInterval:
    """The TPS over the seeds with its interval; a failed seed makes the mean ``nan``."""
    if any(record.failed for record in records):
        return MeanInterval(nan, nan, 0)
    return mean_interval([float(str(record.row["tps"])) for record in records])


def _error(records: Sequence[PointRecord]) -> str:
    return "; ".join(dict.fromkeys(record.error for record in records if record.error))


def _largest(records: Sequence[PointRecord], column: str) -> float:
    """The largest value of a numeric (or boolean) curve column over the seeds that ran."""
    values = [float(str(record.row[column]) == "True") if isinstance(record.row.get(column), bool)
              else float(str(record.row[column])) for record in records
              if not record.failed and column in record.row]
    return max(values) if values else nan


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
                window: Window, seeds: Sequence[int], overrides: Sequence[str],
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
        **window.document(), "seeds": list(seeds),
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
    single_client = _experiment(machine, figure.workload, figure.idle_kind, group,
                                Window(duration_ms, warmup_ms), [seed], overrides,
                                manifest.dataset(figure.dataset).sets)
    return single_client_work_scale(single_client.prepare(), figure, log)


def _ratio_experiment(ratio: Ratio, side: RatioSide, machine: MachineConfig,
                      window: Window, seeds: Sequence[int],
                      overrides: Sequence[str]) -> Experiment:
    """One side's point as an experiment of one point.

    The ratio's configuration, then ``--set``, the ratio's ``batch`` and the side's own
    ``set:``, each over the ones before.
    """
    group = pd.DataFrame({"algorithm": [side.algorithm], "clients": [ratio.clients],
                          "idle_clients": [ratio.idle_clients]})
    experiment = _experiment(machine, ratio.workload, ratio.idle_kind, group, window, seeds,
                             overrides)
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
            _experiment(machine, dataset.workload, dataset.idle_kind, group, Window(1.0, 0.0),
                        [0], (), dataset.sets).prepare()
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
                experiment = _ratio_experiment(ratio, side, machine, Window(1.0, 0.0), [0], ())
                experiment.prepare()
            except ConfigError as exc:
                raise ConfigError(join_key(f"{where}.set" if side.sets else where, exc.key),
                                  exc.message, source) from None


def _ratio_row(ratio: Ratio, window: Window, numerator: Sequence[PointRecord],
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
        "duration_ms": window.duration_ms, "warmup_ms": window.warmup_ms,
        "window_converged": _converged(numerator) and _converged(denominator),
        "numerator_wall_s": sum(record.wall_s for record in numerator),
        "denominator_wall_s": sum(record.wall_s for record in denominator),
        "seeds": len(numerator), "predicted_low": low, "predicted_high": high,
    }


def _work_scale_flags(manifest: Manifest, table: pd.DataFrame) -> pd.Series:
    flags = pd.Series(False, index=table.index)
    for point in manifest.work_scale_points.values():
        flags |= ((table["dataset"] == point.dataset) & (table["series"] == point.series)
                  & (table["clients"] == point.clients)
                  & (table["idle_clients"] == point.idle_clients))
    return flags


