"""Running the points of a sweep: in this process, on local processes, or on a Dask cluster.

A point is a picklable :class:`PointTask` (its :class:`~simulator.study.workload_model.PointSpec`
and the name
of the workload model); :func:`execute` runs one anywhere the package is installed and always
returns a :class:`PointRecord`: a point that raises records its error instead of stopping the
sweep. :func:`run_tasks` runs many, reporting each record as it completes (so a
:class:`~simulator.study.store.PointStore` can keep it), with a progress bar of points done, ETA
and failures.

Parallel runs submit the most expensive points first (a rough estimate from clients and
connections) so that two workers finish together; results never depend on the order, because
every point has its own seed. Local workers are forked on Linux (no re-import of the caller's
script, so a sweep works from any script, ``python -`` or a notebook; the workers are started
before this module starts any thread) and spawned elsewhere. Workers ignore SIGINT and die of
SIGTERM: when the sweep is interrupted (``KeyboardInterrupt`` or any exception, for example one a
SIGTERM handler raises), the points that already finished are still reported, the workers are
terminated and waited for, and the exception goes on. Dask runs use an existing
``distributed.Client`` or a scheduler address; the cluster's workers need snapsim installed.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

import numpy as np
import pandas as pd

from simulator.analysis.columns import POINT_KEYS
from simulator.errors import ConfigError
from simulator.study.progress import NotebookProgress, in_notebook
from simulator.study.workload_model import PointSpec, workload_model


@dataclass(frozen=True, slots=True)
class PointTask:
    """One point to simulate: a stable key, its grid position, the model and the spec."""

    key: str
    index: int
    model: str
    spec: PointSpec
    root_seed: int

    def identity(self) -> dict[str, object]:
        """The point's identifying columns (:data:`POINT_KEYS` plus ``root_seed``)."""
        return {**self.spec.identity(), "root_seed": self.root_seed}

    def cost_estimate(self) -> float:
        """Relative wall-time estimate: transactions grow with clients, scans with connections."""
        spec = self.spec
        connections = spec.clients + spec.idle_clients
        simulated_ns = spec.duration_ns + spec.warmup_ns
        return simulated_ns * min(spec.clients, 64) * (1 + connections / 2000)


@dataclass(slots=True)
class PointRecord:
    """The outcome of one point: its curve row and per-line table, or its error."""

    key: str
    index: int
    row: dict[str, object]
    lines: pd.DataFrame = field(default_factory=pd.DataFrame)
    wall_s: float = 0.0
    error: str = ""

    @property
    def failed(self) -> bool:
        """Whether the point raised instead of producing a result."""
        return bool(self.error)


def failed_points(curve: pd.DataFrame) -> pd.Series:
    """Which rows of a curve are failed points: those whose ``error`` is not empty.

    The rule of :attr:`PointRecord.failed`, for the rows a curve holds (``error`` is missing,
    ``NaN`` or ``""`` for a point that succeeded).
    """
    if "error" not in curve.columns:
        return pd.Series(False, index=curve.index)
    errors = curve["error"]
    return errors.notna() & (errors.astype(str) != "")


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (reference counting goes on) for a block.

    A point builds its objects (shared memory, tracked accesses, processes) once and keeps them
    to its end, so every collection would walk all of them again for little garbage; on large
    points that walking dominates, while pausing costs only a little more peak memory. The
    collector resumes (if it was on) when the block ends.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def execute(task: PointTask) -> PointRecord:
    """Simulate one point; an exception becomes the record's ``error`` (``Type: message``).

    The point runs with the cyclic garbage collector paused (:func:`paused_gc`).
    """
    start = time.perf_counter()
    identity = task.identity()
    try:
        with paused_gc():
            output = workload_model(task.model).run_point(task.spec)
    except Exception as exc:  # a failing point is recorded and the sweep goes on
        return PointRecord(key=task.key, index=task.index, row=identity,
                           wall_s=time.perf_counter() - start,
                           error=f"{type(exc).__name__}: {exc}")
    # The identity, then the model's results (a repeated identity column is the identity's).
    row = {**identity, **{k: v for k, v in output.row.items() if k not in identity}}
    row.pop("wall_s", None)  # timings are kept apart so that curves are reproducible bytes
    lines = output.lines.copy()
    for position, key in enumerate(POINT_KEYS):
        lines.insert(position, key, identity[key])  # type: ignore[arg-type]
    return PointRecord(key=task.key, index=task.index, row=_plain(row), lines=lines,
                       wall_s=time.perf_counter() - start)


def _plain(row: dict[str, object]) -> dict[str, object]:
    """NumPy scalars as Python scalars (JSON-serialisable, identical values)."""
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}


# --------------------------------------------------------------------------------------------
# Running many points
# --------------------------------------------------------------------------------------------

OnRecord = Callable[[PointRecord], None]


def run_tasks(tasks: Sequence[PointTask], *, jobs: int = 1, client: Any = None,
              scheduler: str | None = None, on_record: OnRecord | None = None,
              progress: bool = False) -> list[PointRecord]:
    """Run ``tasks`` and return their records in the order of ``tasks``.

    Args:
        tasks: the points to simulate.
        jobs: local worker processes (1: in this process). Ignored with a Dask cluster.
        client: a ``distributed.Client`` to run the points on.
        scheduler: the address of a Dask scheduler (``tcp://host:8786``) to connect to.
        on_record: called in this process with every record as it completes.
        progress: show a progress bar on stderr.

    Raises:
        ConfigError: ``jobs`` < 1, or the Dask scheduler cannot be reached.
    """
    if jobs < 1:
        raise ConfigError("jobs", f"must be at least 1, got {jobs}")
    records: dict[str, PointRecord] = {}
    failures = 0
    bar: Any = None

    def done(record: PointRecord) -> None:
        nonlocal failures
        records[record.key] = record
        if on_record is not None:
            on_record(record)
        failures += record.failed
        if bar is not None:
            bar.set_postfix_str(f"failed={failures}" if failures else "", refresh=False)
            bar.update(1)

    def start_progress() -> None:
        nonlocal bar
        bar = _progress_bar(len(tasks), progress)

    try:
        if client is not None or scheduler is not None:
            start_progress()
            _run_dask(tasks, client, scheduler, done)
        elif jobs == 1 or len(tasks) <= 1:
            start_progress()
            for task in tasks:
                done(execute(task))
        else:
            _run_processes(tasks, jobs, done, start_progress)
    finally:
        if bar is not None:
            bar.close()
    return [records[task.key] for task in tasks]


def _by_cost(tasks: Sequence[PointTask]) -> list[PointTask]:
    return sorted(tasks, key=lambda task: (-task.cost_estimate(), task.index))


def _worker_signals() -> None:
    """In a worker: the interrupt is the parent's to handle; SIGTERM ends the worker.

    A forked worker inherits the parent's handlers (a SIGTERM handler that raises would be
    caught as a failing point), so both are reset before the first point.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_processes(tasks: Sequence[PointTask], jobs: int, done: OnRecord,
                   started: Callable[[], None]) -> None:
    method = "fork" if sys.platform == "linux" else "spawn"
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=get_context(method),
                               initializer=_worker_signals)
    pending: set[Future[PointRecord]] = set()
    try:
        # The first submit forks every worker, before the progress bar starts its thread.
        pending = {pool.submit(execute, task) for task in _by_cost(tasks)}
        started()
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                done(future.result())
    except BaseException:
        _stop_workers(pool, pending, done)
        raise
    pool.shutdown(wait=True)


def _stop_workers(pool: ProcessPoolExecutor, pending: set[Future[PointRecord]],
                  done: OnRecord) -> None:
    """After an interrupt: report the points that finished, then terminate every worker."""
    with contextlib.suppress(Exception):
        for future in [f for f in pending if f.done() and not f.cancelled()]:
            if future.exception() is None:
                done(future.result())
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)


def connect_dask(address: str, key: str = "scheduler", timeout_s: float = 10.0) -> Any:
    """A ``distributed.Client`` connected to the scheduler at ``address``.

    Raises:
        ConfigError: ``distributed`` is not installed or the scheduler cannot be reached.
    """
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError(key, "Dask sweeps need the 'distributed' package: "
                          "pip install -e '.[dask]'") from None
    try:
        return Client(address, timeout=f"{timeout_s}s")  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError, ValueError) as exc:
        raise ConfigError(key, f"cannot connect to the Dask scheduler {address}: {exc}") from None


def _run_dask(tasks: Sequence[PointTask], client: Any, scheduler: str | None,
              done: OnRecord) -> None:
    from distributed import as_completed

    own_client = client is None
    if own_client:
        assert scheduler is not None
        client = connect_dask(scheduler)
    futures: list[Any] = []
    try:
        futures = [client.submit(execute, task, pure=False) for task in _by_cost(tasks)]
        for future in as_completed(futures):  # type: ignore[no-untyped-call]
            done(future.result())
    except BaseException:
        with contextlib.suppress(Exception):
            client.cancel(futures)  # an interrupted sweep leaves no work on the cluster
        raise
    finally:
        if own_client:
            client.close()


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    if in_notebook():  # one output line updated in place, not a redraw per line
        return NotebookProgress(total)
    from tqdm import tqdm

    return tqdm(total=total, desc="points", unit="pt", dynamic_ncols=True,
                bar_format="{desc}: {n}/{total} |{bar}| {elapsed}<{remaining} {postfix}")


def default_jobs() -> int:
    """Local workers by default: the CPUs this process may use."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not on Linux
        return max(os.cpu_count() or 1, 1)

