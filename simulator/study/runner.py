"""Running a prepared experiment: every point of its grid, stored, resumed, gathered.

:func:`run` takes an :class:`~simulator.study.experiment.Experiment` (prepared on entry) or a
:class:`~simulator.study.experiment.Prepared` one, checks the sweep's memory estimate, finds the
single-client work scale (:mod:`simulator.study.work_scale`), runs the points not already stored
(here, on local processes or on a Dask cluster) and returns a :class:`Result` whose ``.curve``
has one row per point and ``.lines`` the per-line tables, both tidy, with the point's
parameters as columns.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from simulator.analysis.columns import POINT_KEYS
from simulator.analysis.plotting import algorithm_colours, plot_tps
from simulator.analysis.summary import curve_summary
from simulator.config.machine import MachineConfig
from simulator.measure.manifest import measurements_for
from simulator.study import estimate
from simulator.study.experiment import (
    Experiment,
    Prepared,
    experiment_hash,
    plan,
    settings_hash,
)
from simulator.study.store import PointStore
from simulator.study.sweep import (
    OnRecord,
    PointRecord,
    PointTask,
    failed_points,
    run_tasks,
)
from simulator.study.work_scale import single_client_work_scale
from simulator.study.workload_model import DEFAULT_MODEL, workload_model

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["Plan", "Result", "assemble", "check_estimate", "resume_message", "run"]


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


def run(experiment: Experiment | Prepared, *, jobs: int = 1, client: Any = None,
        scheduler: str | None = None, progress: bool = False,
        on_record: OnRecord | None = None, done: Mapping[str, PointRecord] | None = None,
        log: Callable[[str], None] | None = None, store: PointStore | None = None,
        source: str | None = None, work_scale: float | None = None,
        on_start: Callable[[Plan], None] | None = None, force: bool = False) -> Result:
    """Simulate every point of an experiment.

    Before anything is simulated (the single-client work scale included), every point's peak
    memory and wall time are estimated (:mod:`simulator.study.estimate`): ``log`` is told the
    estimate of a large sweep, and a local sweep whose largest point, times the concurrent
    workers, exceeds the available memory is refused unless ``force`` (a Dask run is not
    checked: its workers' memory is not this machine's).

    Args:
        experiment: the grid, or the grid prepared (:meth:`Experiment.prepare`), as the
            command line does before it touches the output directory.
        jobs: local worker processes (1: in this process).
        client: a ``dask.distributed.Client`` to run the points on (overrides ``jobs``).
        scheduler: a Dask scheduler address to connect to (``tcp://host:8786``).
        progress: show a progress bar.
        on_record: called with every newly computed point as it completes.
        done: points already computed, by key (a resumed sweep); they are not run again.
        log: receives progress messages (the single-client work scale's search).
        store: finished points on disk: the successful points it holds that verify (this
            experiment's hash, checksums) are not run again, and every newly computed point is
            saved in it as it completes (so an interrupted sweep, run again with the same store,
            resumes). Stored points that do not verify are computed again, and ``log`` is told
            how many and why.
        source: the experiment file, named in errors and the base of relative paths in the
            options (of an experiment not prepared yet; a prepared one has its own).
        work_scale: the single-client work scale an earlier run of the same experiment found;
            the search is then skipped (``None``: search it if ``single_client_tps`` is set,
            else 1).
        on_start: called once everything is planned, before the first point runs.
        force: run even when a point's memory estimate exceeds the available memory. A
            prepared experiment is not estimated again (the command line checks it before it
            touches the output directory).

    Raises:
        ConfigError: a bad name or value in the experiment, or a point estimated to need more
            memory than is available (without ``force``).
    """
    if isinstance(experiment, Prepared):
        prepared = experiment
    else:
        prepared = experiment.prepare(source)
        check_estimate(prepared, jobs=jobs, local=client is None and scheduler is None,
                       force=force, log=log)
    experiment = prepared.experiment
    if work_scale is None:
        work_scale = 1.0
        if prepared.single_client is not None:
            work_scale = single_client_work_scale(prepared, prepared.single_client, log)
    if log is not None:
        log(prepared.work_scale_note(work_scale))
    tasks = plan(prepared, work_scale)
    fingerprint = experiment_hash(prepared, work_scale)
    settings = settings_hash(prepared, work_scale)
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
        on_start(Plan(tasks=tasks, machine=prepared.machine, options=prepared.options,
                      work_scale=work_scale,
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
    if prepared.measurements is not None:
        measured = measurements_for(prepared.measurements, prepared.source)
    return assemble(records, experiment, measured, work_scale)


def check_estimate(prepared: Prepared, *, jobs: int, local: bool = True, force: bool = False,
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
    sweep = estimate.estimate_sweep(plan(prepared), workers=max(jobs, 1))
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
    """Add ``measured_tps`` (and ``rel_error``) where a measured point matches.

    A curve whose every point failed has no ``tps``: its ``rel_error`` is empty.
    """
    keys = ["algorithm", "clients", "idle_clients"]
    points = measured.groupby(keys, as_index=False)["measured_tps"].mean()
    merged = curve.merge(points, on=keys, how="left")
    tps = merged["tps"] if "tps" in merged.columns else float("nan")
    merged["rel_error"] = tps / merged["measured_tps"] - 1
    return merged
