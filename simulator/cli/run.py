"""``snapsim run``: an experiment from the command line into a directory.

``snapsim run [EXPERIMENT] [flags]`` loads the experiment (default: the shipped ``default``),
applies the flags and ``--set`` overrides, validates everything before touching the output
directory, then runs the sweep into ``--out`` (default ``./snapsim-out``):

* a missing or empty directory is created and filled;
* a directory holding an unfinished or finished run of the *same* resolved configuration is
  resumed: points already stored are not computed again (so a killed sweep, rerun, ends equal to
  an uninterrupted one);
* a directory holding a run of the same settings with another grid (``algorithms``, ``clients``,
  ``idle_clients``, ``seeds``) is refused (exit 2) unless ``--extend``: its stored points that
  the new grid shares are reused, the others computed, and the tables rewritten for the new
  grid (the stored points of the old one stay in ``points/``);
* any other non-empty directory is refused (exit 2) unless ``--overwrite``, which removes only
  the files snapsim writes (see :data:`simulator.study.outputs.OWNED`).

The run holds the directory's lock (:class:`~simulator.study.store.DirectoryLock`) from before it
looks at the directory until its last file is written: a second run into the same directory is
refused (exit 2), or waits with ``--wait``.

Finished points are stored as they complete, each bound to the hash of the experiment that
produced it and checksummed; a resume uses only the points that verify and says how many it
computes again and why. A failing point records its error and the run exits 1 at the end, after
writing everything else. SIGINT and SIGTERM stop the workers, keep every point that finished and
exit 130 or 143. The running, storing and resuming are :func:`simulator.study.runner.run`'s;
this module owns the output directory, the signals and the messages.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import shutil
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType

import pandas as pd

from simulator.analysis.columns import WINDOW_CONVERGED
from simulator.analysis.summary import curve_summary
from simulator.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    checked_jobs,
    detail,
    log,
    prepare_kernel,
    show_progress,
    warn,
)
from simulator.cli.experiment_args import (
    add_experiment_arguments,
    blame_file,
    flag_keys,
    load_experiment,
)
from simulator.config.files import write_text_atomic
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.study.experiment import GRID_KEYS, Experiment
from simulator.study.experiment_file import (
    blame_overrides,
    dropped_grid_values,
    dump_yaml,
    resolved_document,
)
from simulator.study.metadata import run_metadata, utc_now_iso
from simulator.study.outputs import OWNED, POINTS_DIR, write_metadata, write_results
from simulator.study.provenance import experiment_provenance
from simulator.study.runner import Plan, check_estimate, run
from simulator.study.store import LOCK_NAME, DirectoryLock, PointStore
from simulator.study.sweep import PointRecord, connect_dask, default_jobs

DEFAULT_OUT = "snapsim-out"

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim run``."""
    add_experiment_arguments(parser)
    parser.add_argument("--jobs", type=int, metavar="N",
                        help=f"local worker processes (default: the CPUs, here {default_jobs()})")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the points on a Dask cluster, e.g. tcp://host:8786")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override an experiment key, e.g. options.costs.client='20000 cycles'")
    parser.add_argument("--out", metavar="DIR", help=f"output directory (default: ./{DEFAULT_OUT})")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the results of another experiment in --out")
    parser.add_argument("--extend", action="store_true",
                        help="--out holds a run of the same settings with other algorithms, "
                             "clients, idle_clients or seeds: reuse its points, compute the new "
                             "ones, write the tables of this grid")
    parser.add_argument("--wait", action="store_true",
                        help="wait while another run uses --out (default: refuse at once)")
    parser.add_argument("--force", action="store_true",
                        help="run even when a point's memory estimate exceeds the available "
                             "memory")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--seeds", type=int, metavar="N",
                        help="run every point with N root seeds (the experiment's first seed, "
                             "or --seed, and the next N-1): the tables give means with 95 %% "
                             "intervals")


class Interrupted(KeyboardInterrupt):
    """A termination signal, raised in the main thread like SIGINT's ``KeyboardInterrupt``.

    Built from the signal's number or its name: SimPy re-raises an exception that escapes a
    process as ``type(exc)(*exc.args)``, and the arguments hold the name.
    """

    def __init__(self, signum: int | str) -> None:
        sig = signal.Signals[signum] if isinstance(signum, str) else signal.Signals(signum)
        super().__init__(sig.name)
        self.signum = int(sig)


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` once; a repeat during cleanup is ignored.

    Outside the main thread (where handlers cannot be set) the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise Interrupted(signum)

    previous = {signum: signal.signal(signum, handler)
                for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def main(args: argparse.Namespace) -> int:
    """``snapsim run``: check everything, lock and prepare ``--out``, run or resume, write.

    Returns 0, 1 when a point failed, or 128 + the signal's number when interrupted (130 for
    SIGINT, 143 for SIGTERM), after the workers stopped and every finished point was stored.
    """
    out = Path(args.out or DEFAULT_OUT)
    progress = _Progress()
    with interrupt_on_signals():
        try:
            return _main(args, out, progress)
        except KeyboardInterrupt as exc:
            signum = exc.signum if isinstance(exc, Interrupted) else int(signal.SIGINT)
            warn(f"snapsim: interrupted by {signal.Signals(signum).name}: "
                 f"{progress.interrupted(out / POINTS_DIR)}")
            return 128 + signum


@dataclasses.dataclass
class _Progress:
    """This run's points, once it is about to run them: their keys in the point store."""

    keys: tuple[str, ...] | None = None
    """The grid's point keys; ``None`` until the first point is about to run."""

    def interrupted(self, points: Path) -> str:
        """What an interruption kept, counting this run's points only (not another run's files).

        A point is kept once its file is in the store (resumed, or finished by this run).
        """
        if self.keys is None:
            return "stopped before any point ran (nothing to resume)"
        stored = sum((points / f"{key}.json").exists() for key in self.keys)
        return (f"{stored} of this run's {len(self.keys)} point(s) stored in {points}; run the "
                "same command again to resume")


def _main(args: argparse.Namespace, out: Path, progress: _Progress) -> int:
    started = time.perf_counter()
    started_utc = utc_now_iso()
    with blame_overrides(args.set):
        experiment, document, source = load_experiment(args)
        with blame_file(source, flag_keys(args)):
            prepared = experiment.prepare(source)
    for key, measured_as, here in prepared.overlay_differences():
        shown = json.dumps(measured_as, separators=(",", ":"))
        warn(f"measurements: {prepared.measurements} was measured with {key}={shown}, this run "
             f"has {json.dumps(here, separators=(',', ':'))}; add --set {key}={shown} to "
             "compare like for like")
    jobs = checked_jobs(args.jobs) or default_jobs()
    # Before the output directory is touched and before anything is simulated.
    check_estimate(prepared, jobs=jobs, local=not args.scheduler, force=args.force, log=log)
    resolved = resolved_document(experiment, prepared.options)
    client = connect_dask(args.scheduler, "--scheduler") if args.scheduler else None
    lock = DirectoryLock(out)
    try:
        previous = _prepare_out_dir(out, resolved, overwrite=args.overwrite, lock=lock,
                                    wait=args.wait, extend=args.extend)
        prepare_kernel(prepared.machine)  # once --out is known to take the run
        result = run(prepared, jobs=jobs, client=client,
                     progress=show_progress(args.no_progress),
                     on_record=_point_detail,
                     log=log, store=PointStore(out / POINTS_DIR),
                     work_scale=_previous_work_scale(experiment, previous),
                     force=args.force,
                     on_start=lambda plan: _start(plan, args, experiment, document, out, jobs,
                                                  progress))
        written = write_results(result, out)
        written.append(write_metadata(out, {**run_metadata(
            experiment.machine, started_utc=started_utc,
            wall_s=time.perf_counter() - started, argv=getattr(args, "argv", None)),
            "provenance": experiment_provenance(prepared)}))
    finally:
        lock.release()
        if client is not None:
            client.close()
    _print_summary(result.curve)
    names = ", ".join(path.name for path in written)
    points = len(experiment.grid())
    log(f"wrote {out}/: {names} ({points} points, {time.perf_counter() - started:.1f} s)")
    failures = result.failures
    if len(failures):
        for _, row in failures.iterrows():
            warn(f"failed: {row['algorithm']} clients={row['clients']} "
                f"idle_clients={row['idle_clients']}: {row['error']}")
        return EXIT_FAILED
    return EXIT_OK


def _point_detail(record: PointRecord) -> None:
    """``-v``: one line per finished point."""
    row = record.row
    what = " ".join(f"{key}={row[key]}" for key in ("algorithm", "clients", "idle_clients")
                    if key in row)
    outcome = f"failed: {record.error}" if record.failed else f"{row.get('tps', 0):,.0f} TPS"
    detail(f"point {record.key}: {what}: {outcome} ({record.wall_s:.1f} s)")


def _previous_work_scale(experiment: Experiment,
                         previous: Mapping[str, object] | None) -> float | None:
    """The work scale a resumed run found already (``None``: none, or no single-client TPS)."""
    if experiment.single_client_tps is None:
        return None
    computed = (previous or {}).get("computed")
    if isinstance(computed, Mapping) and "work_scale" in computed:
        return float(str(computed["work_scale"]))
    return None


def _start(plan: Plan, args: argparse.Namespace, experiment: Experiment,
           document: dict[str, object], out: Path, jobs: int, progress: _Progress) -> None:
    """Before the first point: record what runs (so a killed run resumes) and say so."""
    resolved = resolved_document(experiment, plan.options, plan.work_scale)
    computed = resolved.get("computed")
    if isinstance(computed, dict):
        computed["experiment_hash"] = plan.experiment_hash
    write_text_atomic(out / "config.resolved.yaml", dump_yaml(resolved))
    write_text_atomic(out / "experiment.yaml", dump_yaml(document))
    tasks = len(plan.tasks)
    where = f"on {args.scheduler}" if args.scheduler else f"with {min(jobs, tasks)} job(s)"
    log(f"{experiment.name}: {tasks} points on {plan.machine.name} {where} -> {out}/")
    if plan.done:
        log(f"resuming: {len(plan.done)} of {tasks} points already done")
    progress.keys = tuple(task.key for task in plan.tasks)


def _prepare_out_dir(out: Path, resolved: dict[str, object], overwrite: bool,
                     lock: DirectoryLock, wait: bool = False,
                     extend: bool = False) -> dict[str, object] | None:
    """Lock, check and prepare ``out``; return the previous resolved configuration when resuming.

    ``None`` when there is nothing to resume, and when ``extend`` takes a run of another grid
    (its work scale, found for that grid's first algorithm and seed, is not reused). The lock
    is taken before anything in ``out`` is read, so that the check and the run see the same
    directory.
    """
    if out.exists() and not out.is_dir():
        raise ConfigError("--out", f"{out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError("--out", f"cannot write to {out}: {exc.strerror or exc}") from None
    lock.acquire(wait=wait, on_wait=log)
    previous: dict[str, object] | None = None
    if any(path.name != LOCK_NAME for path in out.iterdir()):
        previous = _previous_config(out)
        same = previous is not None and _without_computed(previous) == resolved
        if not same:
            other = _differing_settings(previous, resolved) if previous is not None else []
            if previous is not None and not other and (extend or not overwrite):
                if not extend:
                    raise ConfigError("--out", f"{out} holds a run of the same settings with "
                                      "another grid, name or measurement overlay; use --extend "
                                      "to add this grid's points to it, --overwrite to replace "
                                      "it, or choose another --out")
                dropped = dropped_grid_values(previous, resolved)
                if dropped:  # the tables would silently lose those rows
                    raise ConfigError("--extend", f"the run in {out} also has "
                                      f"{'; '.join(dropped)}, which this grid leaves out; "
                                      "--extend only adds points: give a grid that includes "
                                      "them, or choose another --out")
                log(f"extending the run in {out}: its stored points of this grid are reused")
                return None
            if not overwrite:
                what = ("the results of another experiment" if previous is not None
                        else "files that are not snapsim results")
                hint = (f", which differs in {', '.join(other)}, not only in the grid"
                        if extend and other else "")
                raise ConfigError("--out", f"{out} is not empty (it holds {what}{hint}); use "
                                  "--overwrite to replace them or choose another --out")
            _remove_owned(out)
            previous = None
    try:
        probe = out / f".snapsim-write-test-{id(out)}"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise ConfigError("--out", f"cannot write to {out}: {exc.strerror or exc}") from None
    return previous


def _differing_settings(previous: Mapping[str, object],
                        resolved: Mapping[str, object]) -> list[str]:
    """The keys whose values differ but the grid's, the name, the description and the overlay.

    No point's result depends on those: its settings hash leaves them out.
    """
    ignored = {*GRID_KEYS, "name", "description", "measurements", "computed"}
    keys = [k for k in resolved if k not in ignored]
    keys += [k for k in previous if k not in ignored and k not in resolved]
    return [k for k in keys if previous.get(k) != resolved.get(k)]


def _previous_config(out: Path) -> dict[str, object] | None:
    path = out / "config.resolved.yaml"
    if not path.exists():
        return None
    try:
        data = read_yaml(path)
    except ConfigError:
        return None
    return dict(data) if isinstance(data, Mapping) else None


def _without_computed(document: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in document.items() if k != "computed"}


def _remove_owned(out: Path) -> None:
    for name in OWNED:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def _print_summary(curve: pd.DataFrame) -> None:
    """TPS per point: rows (clients, idle clients), one column per algorithm.

    With several seeds a cell is the mean and the half-width of its 95 % interval
    (``30,100 ±250``). A point whose window did not converge (``window_converged`` false) is
    marked ``*``, with a footnote; a curve without the column (an older run) is printed unmarked.
    """
    if curve.empty or "tps" not in curve.columns:
        return
    table = curve.pivot_table(index=["clients", "idle_clients"], columns="algorithm",
                              values="tps", aggfunc="mean", sort=False)
    table = table[[a for a in dict.fromkeys(curve["algorithm"]) if a in table.columns]]
    formatted = table.map(lambda v: f"{v:,.0f}" if pd.notna(v) else "failed")
    seeded = False
    summary = curve_summary(curve)
    for clients, idle, algorithm, n_seeds, mean, high in zip(
            summary["clients"], summary["idle_clients"], summary["algorithm"],
            summary["n_seeds"], summary["tps_mean"], summary["tps_high"], strict=True):
        if int(n_seeds) >= 2 and not math.isnan(float(high)):
            formatted.loc[(clients, idle), algorithm] = (
                f"{float(mean):,.0f} ±{float(high) - float(mean):,.0f}")
            seeded = True
    short = _short_windows(curve)
    marked = 0
    for (algorithm, clients, idle) in short:
        if algorithm in formatted.columns and (clients, idle) in formatted.index:
            cell = str(formatted.loc[(clients, idle), algorithm])
            formatted.loc[(clients, idle), algorithm] = f"{cell} *"
            marked += 1
    print("TPS (mean over the seeds ± the half-width of its 95 % interval)" if seeded else "TPS")
    print(formatted.to_string())
    if marked:
        print(f"* not precise enough to trust ({marked} point(s)): the 95 % interval of its TPS "
              f"is wider than its target, or its warm-up outlasted half its window (tps_ci_rel, "
              f"{WINDOW_CONVERGED} in curve.csv); run with --precision 0.02, or a longer "
              "--duration-ms")


def _short_windows(curve: pd.DataFrame) -> set[tuple[str, int, int]]:
    """``(algorithm, clients, idle_clients)`` of the points whose window did not converge."""
    if WINDOW_CONVERGED not in curve.columns:
        return set()
    converged = curve[WINDOW_CONVERGED]
    short = curve[converged.notna() & (converged.astype(str) == "False")]
    return {(str(algorithm), int(clients), int(idle)) for algorithm, clients, idle in zip(
        short["algorithm"], short["clients"], short["idle_clients"], strict=True)}
