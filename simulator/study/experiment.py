"""Experiments: a grid of points, run through a workload model, gathered into DataFrames.

An :class:`Experiment` is buildable in code: a machine, the algorithms to compare, a workload,
grids of active and idle clients, the idle kind, the simulated duration and warm-up, root seeds,
the model's options and, optionally, the machine's measured single-client TPS and a measurement
dataset to compare with. The machine, algorithms, workload and idle kind it does not name are
those of the shipped default experiment (``configs/experiments/default.yaml``), so this module
names no workload model's vocabulary. :func:`run` simulates every point of the grid (here, on
local processes or on a Dask cluster) and returns a :class:`Result` whose ``.curve`` has one row
per point and ``.lines`` the per-line tables, both tidy, with the point's parameters as columns.

Every point has its own seed, derived from a root seed and the point's identity (not its
position in the grid), so a point's result does not depend on which other points are run, in
which order, or where.

``single_client_tps``, the one per-machine calibration (every other cost comes from the global
cost model), rescales the model's base per-transaction work so that one client with no idle
connections simulates the machine's measured single-client TPS: :func:`single_client_work_scale`
finds the factor by a secant search on 1/TPS, which is affine in the work for a single client.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simulator.analysis.columns import POINT_KEYS
from simulator.analysis.plotting import algorithm_colours, plot_tps
from simulator.analysis.summary import curve_summary
from simulator.config import configs_dir
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine
from simulator.config.values import expect_list, expect_mapping, expect_str
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.study import estimate
from simulator.study.measurements import measurements_for
from simulator.study.store import PointStore, document_hash
from simulator.study.sweep import (
    OnRecord,
    PointRecord,
    PointTask,
    execute,
    failed_points,
    run_tasks,
)
from simulator.study.workload_model import DEFAULT_MODEL, PointSpec, WorkloadModel, workload_model
from simulator.version import __version__

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["GRID_KEYS", "Experiment", "Plan", "Result", "check_estimate", "experiment_hash",
           "point_seed", "run", "settings_hash", "single_client_work_scale", "solve_work_scale"]

CALIBRATION_MIN_DURATION_MS = 20.0
"""Single-client calibration points simulate at least this long (about 700 transactions)."""
CALIBRATION_TOLERANCE = 0.005
CALIBRATION_MAX_STEPS = 6
CALIBRATION_BISECTION_STEPS = 12
DEFAULT_EXPERIMENT = "default"
"""The shipped experiment whose machine, algorithms, workload and idle kind are the defaults."""


def experiments_dir() -> Path:
    """Directory of the shipped experiment files (``configs/experiments``)."""
    return configs_dir() / "experiments"


@functools.cache
def _default_document() -> Mapping[str, object]:
    path = experiments_dir() / f"{DEFAULT_EXPERIMENT}.yaml"
    return expect_mapping("", read_yaml(path))


def _default(key: str) -> object:
    """A key of the shipped default experiment file (a name, read as it is written)."""
    source = str(experiments_dir() / f"{DEFAULT_EXPERIMENT}.yaml")
    document = _default_document()
    if key not in document:
        raise ConfigError(key, "missing: the default experiment must name it", source)
    return document[key]


def _default_str(key: str) -> str:
    return expect_str(key, _default(key))


def _default_algorithms() -> tuple[str, ...]:
    items = expect_list("algorithms", _default("algorithms"))
    return tuple(expect_str(f"algorithms[{i}]", item) for i, item in enumerate(items))


@dataclass(frozen=True, slots=True, kw_only=True)
class Experiment:
    """A grid of points to simulate (lists are accepted and stored as tuples)."""

    name: str = "experiment"
    description: str = ""
    machine: MachineConfig | str = field(default_factory=lambda: _default_str("machine"))
    """A machine, or a shipped machine's name or a machine file's path."""
    machine_set: tuple[str, ...] = ()
    """Edits of the machine file, ``key=value`` with a dotted key and a YAML value
    (``scheduler.run_queues=global``), applied before it is checked: the machine of a what-if."""
    algorithms: tuple[str, ...] = field(default_factory=_default_algorithms)
    workload: str = field(default_factory=lambda: _default_str("workload"))
    clients: tuple[int, ...] = (1,)
    idle_clients: tuple[int, ...] = (0,)
    idle_kind: str = field(default_factory=lambda: _default_str("idle_kind"))
    duration_ms: float = 20.0
    warmup_ms: float = 2.0
    seeds: tuple[int, ...] = (0,)
    """Root seeds: every point runs once per root seed (replications)."""
    single_client_tps: float | None = None
    """The machine's measured single-client TPS, or ``None`` for the global cost model as is."""
    measurements: str | None = None
    """A measurement dataset to compare with
    (:func:`simulator.study.measurements.measurements_for`)."""
    model: str = DEFAULT_MODEL
    options: Mapping[str, object] = field(default_factory=dict)
    """The workload model's options (for example ``costs``, ``batch``, ``think_time``)."""

    def __post_init__(self) -> None:
        for name in ("algorithms", "clients", "idle_clients", "seeds", "machine_set"):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))

    def machine_config(self) -> MachineConfig:
        """The machine, loaded (with :attr:`machine_set`) if it was given by name or path.

        Raises:
            ConfigError: no such machine, an invalid machine file or edit, or ``machine_set``
                with a machine given as a :class:`MachineConfig` (edit that object instead).
        """
        if isinstance(self.machine, MachineConfig):
            if self.machine_set:
                raise ConfigError("machine_set", "applies to a machine given by name or path, "
                                  "not to a MachineConfig object")
            return self.machine
        return load_machine(self.machine, self.machine_set)

    def machine_name(self) -> str:
        """The machine's name without loading it when it is a shipped name."""
        if isinstance(self.machine, MachineConfig):
            return self.machine.name
        return self.machine_config().name

    def run_settings(self) -> dict[str, object]:
        """The keys that decide the points and their windows, as plain values, in file order.

        From ``algorithms`` to ``single_client_tps``: what ``config.resolved.yaml`` lists between
        the machine and the measurement overlay, and what a stored point's hash covers.
        """
        return {
            "algorithms": list(self.algorithms),
            "workload": self.workload,
            "clients": [int(c) for c in self.clients],
            "idle_clients": [int(i) for i in self.idle_clients],
            "idle_kind": self.idle_kind,
            "duration_ms": float(self.duration_ms),
            "warmup_ms": float(self.warmup_ms),
            "seeds": [int(s) for s in self.seeds],
            "single_client_tps": self.single_client_tps,
        }

    def grid(self) -> list[tuple[str, int, int, int]]:
        """``(algorithm, clients, idle_clients, root_seed)`` of every point, in grid order."""
        return [(a, c, i, s) for a in self.algorithms for c in self.clients
                for i in self.idle_clients for s in self.seeds]

    def validate(self) -> WorkloadModel:
        """Check names and ranges against the workload model; return the model.

        Raises:
            ConfigError: naming the offending key (and the valid names for a name).
        """
        model = workload_model(self.model)
        if not self.algorithms:
            raise ConfigError("algorithms", "must name at least one algorithm")
        for algorithm in self.algorithms:
            if algorithm not in model.algorithms:
                raise ConfigError("algorithms", f"unknown algorithm {algorithm!r} "
                                  f"(choose from {', '.join(model.algorithms)})")
        if len(set(self.algorithms)) != len(self.algorithms):
            raise ConfigError("algorithms", "lists an algorithm twice")
        if self.workload not in model.workloads:
            raise ConfigError("workload", f"unknown workload {self.workload!r} "
                              f"(choose from {', '.join(model.workloads)})")
        if self.idle_kind not in model.idle_kinds:
            raise ConfigError("idle_kind", f"unknown idle kind {self.idle_kind!r} "
                              f"(choose from {', '.join(model.idle_kinds)})")
        _check_counts("clients", self.clients, minimum=1)
        _check_counts("idle_clients", self.idle_clients, minimum=0)
        if not self.seeds:
            raise ConfigError("seeds", "must list at least one root seed")
        if len(set(self.seeds)) != len(self.seeds):
            raise ConfigError("seeds", "lists a seed twice")
        if not (self.duration_ms > 0 and math.isfinite(self.duration_ms)):
            raise ConfigError("duration_ms", f"must be positive, got {self.duration_ms}")
        if not (self.warmup_ms >= 0 and math.isfinite(self.warmup_ms)):
            raise ConfigError("warmup_ms", f"must not be negative, got {self.warmup_ms}")
        if self.single_client_tps is not None and not (
                self.single_client_tps > 0 and math.isfinite(self.single_client_tps)):
            raise ConfigError("single_client_tps",
                              f"must be positive, got {self.single_client_tps}")
        if self.measurements is not None:  # a misspelt dataset is found before any work
            measurements_for(self.measurements)
        # A model may also check that the options suit the workload and each algorithm
        # (optional hooks).
        check = getattr(model, "check_workload_options", None)
        if check is not None:
            check(self.workload, self.options)
        check_algorithm = getattr(model, "check_algorithm_options", None)
        if check_algorithm is not None:
            for algorithm in self.algorithms:
                check_algorithm(algorithm, self.options)
        check_experiment = getattr(model, "check_experiment_options", None)
        if check_experiment is not None:  # options against the algorithms run together
            check_experiment(self.algorithms, self.options)
        return model


def _check_counts(key: str, values: Sequence[int], minimum: int) -> None:
    if not values:
        raise ConfigError(key, "must be a non-empty list of integers")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
            raise ConfigError(key, f"must be integers >= {minimum}, got {value!r}")
    if len(set(values)) != len(values):
        raise ConfigError(key, "lists a value twice")


def point_seed(root: int, machine: str, algorithm: str, workload: str, clients: int,
               idle_clients: int, idle_kind: str) -> int:
    """A point's seed: a stable function of the root seed and the point's identity."""
    key = f"{root}|{machine}|{algorithm}|{workload}|{clients}|{idle_clients}|{idle_kind}"
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def point_key(algorithm: str, clients: int, idle_clients: int, root_seed: int) -> str:
    """A point's stable, file-name-safe key within an experiment."""
    return f"{algorithm}-c{clients}-i{idle_clients}-r{root_seed}"


def plan(experiment: Experiment, machine: MachineConfig, options: Mapping[str, object],
         work_scale: float = 1.0) -> list[PointTask]:
    """The tasks of every point of the grid, in grid order."""
    tasks = []
    for index, (algorithm, clients, idle, root) in enumerate(experiment.grid()):
        seed = point_seed(root, machine.name, algorithm, experiment.workload, clients, idle,
                          experiment.idle_kind)
        spec = PointSpec(machine=machine, algorithm=algorithm, workload=experiment.workload,
                         clients=clients, idle_clients=idle, idle_kind=experiment.idle_kind,
                         duration_ns=experiment.duration_ms * 1e6,
                         warmup_ns=experiment.warmup_ms * 1e6, seed=seed, options=options,
                         work_scale=work_scale)
        tasks.append(PointTask(key=point_key(algorithm, clients, idle, root), index=index,
                               model=experiment.model, spec=spec, root_seed=root))
    return tasks


GRID_KEYS = ("algorithms", "clients", "idle_clients", "seeds")
"""The run settings that list the grid's points: a point's result does not depend on them (its
own algorithm, counts and root seed are in its key), so a grid changed in these alone keeps the
points it shares (:func:`settings_hash`)."""


def _hashed_document(experiment: Experiment, machine: MachineConfig,
                     options: Mapping[str, object], work_scale: float) -> dict[str, object]:
    machine_document = dataclasses.asdict(machine)
    machine_document.pop("sources", None)
    return {
        "machine": machine_document,
        **experiment.run_settings(),
        "model": experiment.model,
        "options": dict(options),
        "work_scale": float(work_scale),
        "snapsim_version": __version__,
    }


def experiment_hash(experiment: Experiment, machine: MachineConfig,
                    options: Mapping[str, object], work_scale: float) -> str:
    """The hash that binds a stored point to the experiment that produced it.

    SHA-256 of what ``config.resolved.yaml`` holds minus what does not change results (the
    name, the description, the measurement overlay; the jobs and the scheduler are not in it):
    the machine's full configuration (not only its name or path, whose file may change), the
    grid, the simulated times, the model and its resolved options, the work scale and the
    snapsim version.
    """
    return document_hash(_hashed_document(experiment, machine, options, work_scale))


def settings_hash(experiment: Experiment, machine: MachineConfig,
                  options: Mapping[str, object], work_scale: float) -> str:
    """:func:`experiment_hash` without the grid (:data:`GRID_KEYS`).

    Two experiments with the same settings hash compute the same result for every point they
    share, so a stored point carries it too and a run of another grid reuses it.
    """
    document = _hashed_document(experiment, machine, options, work_scale)
    for key in GRID_KEYS:
        document.pop(key)
    return document_hash(document)


def single_client_work_scale(experiment: Experiment, machine: MachineConfig,
                             options: Mapping[str, object], target_tps: float,
                             log: Callable[[str], None] | None = None) -> float:
    """The work scale at which one client with no idle connections simulates ``target_tps``.

    Runs the experiment's first algorithm and workload with 1 client, 0 idle connections (of the
    model's ``calibration_idle_kind``) and the first root seed, for at least
    :data:`CALIBRATION_MIN_DURATION_MS`, and searches the scale with
    :func:`solve_work_scale`.

    Raises:
        ConfigError: the target cannot be reached (the fixed costs alone are slower).
    """
    duration = max(experiment.duration_ms, CALIBRATION_MIN_DURATION_MS)
    idle_kind = workload_model(experiment.model).calibration_idle_kind
    probe = replace(experiment, clients=(1,), idle_clients=(0,), idle_kind=idle_kind,
                    algorithms=experiment.algorithms[:1], seeds=experiment.seeds[:1],
                    duration_ms=duration, warmup_ms=max(experiment.warmup_ms, 1.0))

    def inverse_tps(scale: float) -> float:
        record = execute(plan(probe, machine, options, scale)[0])
        if record.failed:
            raise ConfigError("single_client_tps", f"the calibration point failed: {record.error}")
        tps = float(record.row["tps"])  # type: ignore[arg-type]
        if log is not None:
            log(f"calibration: work scale {scale:.4f} -> {tps:,.0f} TPS (target {target_tps:,.0f})")
        return 1.0 / tps if tps > 0 else math.inf

    return solve_work_scale(inverse_tps, target_tps)


def solve_work_scale(inverse_tps: Callable[[float], float], target_tps: float) -> float:
    """The work scale at which 1/TPS, ``inverse_tps(scale)``, is ``1 / target_tps``.

    ``inverse_tps`` grows with the scale; the result is within :data:`CALIBRATION_TOLERANCE`.

    Secant steps from scale 1 converge in two or three runs where 1/TPS is affine. Where it
    is not (an idle state's residency threshold crossed changes every wake-up's exit latency,
    so 1/TPS jumps), bisection on the bracket the runs so far give, for at most
    :data:`CALIBRATION_BISECTION_STEPS` more runs.

    Raises:
        ConfigError: the target cannot be reached: the fixed costs alone are slower, or 1/TPS
            jumps over the target (the error names both sides of the jump).
    """
    target = 1.0 / target_tps
    samples: list[tuple[float, float]] = []

    def sample(scale: float) -> float:
        value = inverse_tps(scale)
        samples.append((scale, value))
        return value

    def close(value: float, tolerance: float = CALIBRATION_TOLERANCE) -> bool:
        return abs(value / target - 1) <= tolerance

    x0, y0 = 1.0, sample(1.0)
    if not math.isfinite(y0):
        raise ConfigError("single_client_tps", "the calibration point completed no transaction")
    x1 = target / y0  # as if all of the time were work
    y1 = sample(x1)
    for _ in range(CALIBRATION_MAX_STEPS):
        if close(y1):
            return x1
        slope = (y1 - y0) / (x1 - x0) if x1 != x0 else 0.0
        if not slope > 0:
            break
        x2 = x1 + (target - y1) / slope
        if x2 <= 0:
            break
        x0, y0, x1, y1 = x1, y1, x2, sample(x2)
    low = max((x for x, y in samples if y < target), default=None)
    high = min((x for x, y in samples if y > target), default=None)
    if low is None:
        smallest = min(x for x, _ in samples) / 64
        if not sample(smallest) < target:
            raise ConfigError("single_client_tps", f"{target_tps:,.0f} TPS is faster than the "
                              "model's fixed per-transaction costs allow on this machine")
        low = smallest
    if high is None:
        high = max(x for x, _ in samples) * 2
        while not sample(high) > target:
            if high > 1e6:
                raise ConfigError("single_client_tps", f"could not slow the calibration point "
                                  f"down to {target_tps:,.0f} TPS")
            high *= 2
    for _ in range(CALIBRATION_BISECTION_STEPS):
        middle = (low + high) / 2
        value = sample(middle)
        if close(value):
            return middle
        if value < target:
            low = middle
        else:
            high = middle
    best_scale, best_value = min(samples, key=lambda item: abs(item[1] / target - 1))
    if close(best_value, 2 * CALIBRATION_TOLERANCE):
        return best_scale
    by_scale = dict(samples)
    raise ConfigError("single_client_tps",
                      f"could not reach {target_tps:,.0f} TPS: the model gives "
                      f"{1 / by_scale[low]:,.0f} TPS at work scale {low:.4f} and "
                      f"{1 / by_scale[high]:,.0f} at {high:.4f} (a jump, e.g. an idle state's "
                      "residency threshold, lies between); ask for a TPS on one side of it")


@dataclass(slots=True)
class Result:
    """The outcome of an experiment."""

    curve: pd.DataFrame
    """One row per point: the point's parameters, ``tps``, latencies, transfers per transaction
    by class, the time breakdown (``share_*``, ``*_us``) and, for a failed point, ``error``
    (see the README's column reference)."""
    lines: pd.DataFrame
    """The per-line tables of every point, with the point's parameters as leading columns."""
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Wall-clock seconds per point (kept out of ``curve`` so that curves are reproducible)."""
    experiment: Experiment | None = None
    measured: pd.DataFrame | None = None
    """The experiment's measurement dataset, if it names one (tidy measured rows)."""
    work_scale: float = 1.0

    @property
    def failures(self) -> pd.DataFrame:
        """The points that failed, with their error."""
        return self.curve[failed_points(self.curve)]

    @property
    def curve_summary(self) -> pd.DataFrame:
        """One row per point over its root seeds, as ``curve_summary.csv``.

        ``n_seeds``, ``n_failed`` and each result column's mean, standard deviation and 95 %
        interval of the mean (:func:`simulator.analysis.summary.curve_summary` of ``curve``).
        """
        return curve_summary(self.curve)

    def plot(self, x: str | None = None, ax: Axes | None = None) -> Axes:
        """TPS against idle or active clients (log x), measurements overlaid if named.

        Each algorithm has its colour of every snapsim plot.
        """
        model = workload_model(self.experiment.model if self.experiment is not None
                               else DEFAULT_MODEL)
        return plot_tps(self.curve, x=x, ax=ax, measurements=self.measured,
                        colours=algorithm_colours(model.algorithms))


@dataclass(frozen=True, slots=True)
class Plan:
    """What :func:`run` is about to do, handed to its ``on_start`` before the first point."""

    tasks: list[PointTask]
    """Every point of the grid, in grid order."""
    machine: MachineConfig
    options: dict[str, object]
    """The model's options, resolved."""
    work_scale: float
    done: dict[str, PointRecord]
    """The points not run again (given as ``done`` or found in the store), by key."""
    experiment_hash: str = ""
    """:func:`experiment_hash` of the run (every point it stores carries it)."""
    stored: int = 0
    """Point files the store held for this grid."""
    recomputed: dict[str, str] = field(default_factory=dict)
    """Stored points that did not verify and run again, by key: why
    (:meth:`~simulator.study.store.PointStore.verify`)."""


def run(experiment: Experiment, *, jobs: int = 1, client: Any = None,
        scheduler: str | None = None, progress: bool = False,
        on_record: OnRecord | None = None, done: Mapping[str, PointRecord] | None = None,
        log: Callable[[str], None] | None = None, store: PointStore | None = None,
        source: str | None = None, work_scale: float | None = None,
        on_start: Callable[[Plan], None] | None = None, force: bool = False,
        estimated: bool = False) -> Result:
    """Simulate every point of an experiment.

    Before anything is simulated (the single-client calibration included), every point's peak
    memory and wall time are estimated (:mod:`simulator.study.estimate`): ``log`` is told the
    estimate of a large sweep, and a local sweep whose largest point, times the concurrent
    workers, exceeds the available memory is refused unless ``force`` (a Dask run is not
    checked: its workers' memory is not this machine's).

    Args:
        experiment: the grid.
        jobs: local worker processes (1: in this process).
        client: a ``dask.distributed.Client`` to run the points on (overrides ``jobs``).
        scheduler: a Dask scheduler address to connect to (``tcp://host:8786``).
        progress: show a progress bar.
        on_record: called with every newly computed point as it completes.
        done: points already computed, by key (a resumed sweep); they are not run again.
        log: receives progress messages (the single-client calibration).
        store: finished points on disk: the successful points it holds that verify (this
            experiment's hash, checksums) are not run again, and every newly computed point is
            saved in it as it completes (so an interrupted sweep, run again with the same store,
            resumes). Stored points that do not verify are computed again, and ``log`` is told
            how many and why.
        source: the experiment file, named in errors and the base of relative paths in the
            options.
        work_scale: the single-client work scale an earlier run of the same experiment found;
            the calibration is then skipped (``None``: calibrate if ``single_client_tps`` is set,
            else 1).
        on_start: called once everything is planned, before the first point runs.
        force: run even when a point's memory estimate exceeds the available memory.
        estimated: the caller already ran :func:`check_estimate` on this experiment (the
            command line does, before it touches the output directory): not again.

    Raises:
        ConfigError: a bad name or value in the experiment, or a point estimated to need more
            memory than is available (without ``force``).
    """
    model = experiment.validate()
    options = model.resolve_options(experiment.options, source)
    machine = experiment.machine_config()
    if not estimated:
        check_estimate(experiment, machine, options, jobs=jobs,
                       local=client is None and scheduler is None, force=force, log=log)
    if work_scale is None:
        work_scale = 1.0
        if experiment.single_client_tps is not None:
            work_scale = single_client_work_scale(experiment, machine, options,
                                                  experiment.single_client_tps, log)
    tasks = plan(experiment, machine, options, work_scale)
    fingerprint = experiment_hash(experiment, machine, options, work_scale)
    settings = settings_hash(experiment, machine, options, work_scale)
    finished = dict(done or {})
    stored = 0
    recomputed: dict[str, str] = {}
    if store is not None:
        for task in tasks:
            if task.key in finished:
                continue
            found = store.verify(task.key, fingerprint, task.identity(), settings)
            stored += found.record is not None or bool(found.reason)
            if found.record is not None:  # stored by this grid or another one: this index
                finished[task.key] = dataclasses.replace(found.record, index=task.index)
            elif found.reason:
                recomputed[task.key] = found.reason
        on_record = _saving(store, fingerprint, settings, on_record)
    if on_start is not None:
        on_start(Plan(tasks=tasks, machine=machine, options=options, work_scale=work_scale,
                      done=dict(finished), experiment_hash=fingerprint, stored=stored,
                      recomputed=recomputed))
    if recomputed and log is not None:
        log(resume_message(stored, recomputed))
    todo = [task for task in tasks if task.key not in finished]
    for record in run_tasks(todo, jobs=jobs, client=client, scheduler=scheduler,
                            on_record=on_record, progress=progress):
        finished[record.key] = record
    records = [finished[task.key] for task in tasks]
    measured = None
    if experiment.measurements is not None:
        measured = measurements_for(experiment.measurements)
    return assemble(records, experiment, measured, work_scale)


def check_estimate(experiment: Experiment, machine: MachineConfig, options: Mapping[str, object],
                   *, jobs: int, local: bool = True, force: bool = False,
                   log: Callable[[str], None] | None = None) -> None:
    """Estimate every point's memory and wall time; refuse a local sweep that cannot fit.

    ``log`` is told the estimate of a large sweep (:mod:`simulator.study.estimate`). Simulates
    nothing. A Dask run (``local`` false) is neither reported nor checked.

    Raises:
        ConfigError: without ``force``, the largest point's estimate times the concurrent
            workers exceeds the available memory.
    """
    if not local:
        return
    sweep = estimate.estimate_sweep(plan(experiment, machine, options), workers=max(jobs, 1))
    if not force:  # a refusal is one line, which gives the figures
        estimate.check_memory(sweep, estimate.available_memory())
        estimate.check_windows(sweep)
    if log is not None and sweep.worth_reporting():
        log(sweep.line())


def resume_message(stored: int, recomputed: Mapping[str, str]) -> str:
    """One line: how many stored points a resume found, and how many it computes again and why.

    For example ``resume: 10 points stored, 2 recomputed (1 checksum mismatch, 1 from another
    experiment)``.
    """
    reasons = Counter(recomputed.values())
    why = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    return (f"resume: {stored} point{'s' if stored != 1 else ''} stored, "
            f"{len(recomputed)} recomputed ({why})")


def _saving(store: PointStore, fingerprint: str, settings: str,
            on_record: OnRecord | None) -> OnRecord:
    """A callback that stores a record (bound to both hashes), then hands it on."""
    def save(record: PointRecord) -> None:
        store.save(record, fingerprint, settings)
        if on_record is not None:
            on_record(record)

    return save


def assemble(records: Sequence[PointRecord], experiment: Experiment | None = None,
             measured: pd.DataFrame | None = None, work_scale: float = 1.0) -> Result:
    """Build a :class:`Result` from point records (in grid order)."""
    rows = []
    for record in records:
        row = dict(record.row)
        row["work_scale"] = work_scale
        row["error"] = record.error
        rows.append(row)
    curve = pd.DataFrame(rows)
    if measured is not None and not curve.empty:
        curve = _with_measured(curve, measured)
    tables = [record.lines for record in records if not record.failed and len(record.lines)]
    lines = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    timings = pd.DataFrame({
        **{key: [record.row.get(key) for record in records] for key in POINT_KEYS},
        "wall_s": [record.wall_s for record in records],
        "error": [record.error for record in records],
    })
    return Result(curve=curve, lines=lines, timings=timings, experiment=experiment,
                  measured=measured, work_scale=work_scale)


def _with_measured(curve: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """Add ``measured_tps`` (and ``rel_error``) where a measured point matches."""
    keys = ["algorithm", "clients", "idle_clients"]
    points = measured.groupby(keys, as_index=False)["measured_tps"].mean()
    merged = curve.merge(points, on=keys, how="left")
    merged["rel_error"] = merged["tps"] / merged["measured_tps"] - 1
    return merged
