"""``snapsim run`` and ``snapsim plot``: experiments from the command line into a directory.

``snapsim run [EXPERIMENT] [flags]`` loads the experiment (default: the shipped ``default``),
applies the flags and ``--set`` overrides, validates everything before touching the output
directory, then runs the sweep into ``--out`` (default ``./snapsim-out``):

* a missing or empty directory is created and filled;
* a directory holding an unfinished or finished run of the *same* resolved configuration is
  resumed: points already stored are not computed again (so a killed sweep, rerun, ends equal to
  an uninterrupted one);
* any other non-empty directory is refused (exit 2) unless ``--overwrite``, which removes only
  the files snapsim writes (see :data:`simulator.study.outputs.OWNED`).

Finished points are stored as they complete; a failing point records its error and the run exits
1 at the end, after writing everything else.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.config.machine import MachineConfig
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.study.experiment import Experiment, plan, run_planned, single_client_work_scale
from simulator.study.experiment_file import (
    EXPERIMENT_KEYS,
    apply_overrides,
    dump_yaml,
    experiment_from_document,
    load_document,
    parse_int_list,
    resolved_document,
)
from simulator.study.outputs import OWNED, POINTS_DIR, read_curve, write_plots, write_results
from simulator.study.store import PointStore, atomic_path
from simulator.study.sweep import PointRecord, connect_dask, default_jobs

DEFAULT_EXPERIMENT = "default"
DEFAULT_OUT = "snapsim-out"
EXIT_OK, EXIT_FAILED_POINTS = 0, 1

_FLAG_KEYS = {  # flag attribute -> experiment key
    "machine": "machine", "workload": "workload", "idle_kind": "idle_kind",
    "single_client_tps": "single_client_tps", "duration_ms": "duration_ms",
    "warmup_ms": "warmup_ms",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim run``."""
    parser.add_argument("experiment", nargs="?", metavar="EXPERIMENT",
                        help="experiment file or shipped experiment name (default: default)")
    parser.add_argument("--machine", metavar="NAME|PATH", help="shipped machine or machine file")
    parser.add_argument("--algorithms", metavar="A,B,...", help="comma-separated algorithms")
    parser.add_argument("--workload", metavar="NAME", help="workload name")
    parser.add_argument("--clients", metavar="LIST", help="active clients, e.g. 1,48")
    parser.add_argument("--idle-clients", metavar="LIST", help="idle connections, e.g. 0,1000")
    parser.add_argument("--idle-kind", metavar="KIND", help="idle or mostly-idle")
    parser.add_argument("--single-client-tps", type=float, metavar="TPS",
                        help="measured single-client TPS of the machine (rescales base work)")
    parser.add_argument("--duration-ms", type=float, metavar="MS", help="simulated time per point")
    parser.add_argument("--warmup-ms", type=float, metavar="MS", help="warm-up before measuring")
    parser.add_argument("--seed", type=int, metavar="N", help="root seed (one replication)")
    parser.add_argument("--jobs", type=int, metavar="N",
                        help=f"local worker processes (default: the CPUs, here {default_jobs()})")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the points on a Dask cluster, e.g. tcp://host:8786")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override an experiment key, e.g. options.costs.client='20000 cycles'")
    parser.add_argument("--out", metavar="DIR", help=f"output directory (default: ./{DEFAULT_OUT})")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the results of another experiment in --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def load_experiment(args: argparse.Namespace) -> tuple[Experiment, dict[str, object], str]:
    """The experiment of the command line: file, flags, ``--set``; checked, not yet run.

    Returns the experiment, its input document (``extends`` merged, overrides applied) and the
    experiment file's path.
    """
    document, source = load_document(args.experiment or DEFAULT_EXPERIMENT)
    document = apply_overrides(document, [])  # a private copy
    for attribute, key in _FLAG_KEYS.items():
        value = getattr(args, attribute, None)
        if value is not None:
            document[key] = value
    if args.algorithms is not None:
        document["algorithms"] = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    if args.clients is not None:
        document["clients"] = parse_int_list("--clients", args.clients)
    if args.idle_clients is not None:
        document["idle_clients"] = parse_int_list("--idle-clients", args.idle_clients)
    if args.seed is not None:
        document["seeds"] = [args.seed]
    document = apply_overrides(document, args.set)
    document.pop("computed", None)
    experiment = experiment_from_document(document, source, default_name=Path(source).stem)
    return experiment, document, source


def main(args: argparse.Namespace) -> int:
    """``snapsim run``."""
    started = time.perf_counter()
    experiment, document, source = load_experiment(args)
    model = experiment.validate()
    options = model.resolve_options(experiment.options, source)
    machine = experiment.machine_config()
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError("--jobs", f"must be at least 1, got {args.jobs}")
    jobs = args.jobs or default_jobs()
    out = Path(args.out or DEFAULT_OUT)
    resolved = resolved_document(experiment, options)
    client = connect_dask(args.scheduler, "--scheduler") if args.scheduler else None
    try:
        previous = _prepare_out_dir(out, resolved, overwrite=args.overwrite)
        return _run(args, experiment, machine, document, options, out, previous, jobs, client,
                    started)
    finally:
        if client is not None:
            client.close()


def _run(args: argparse.Namespace, experiment: Experiment, machine: MachineConfig,
         document: dict[str, object], options: dict[str, object], out: Path,
         previous: dict[str, object] | None, jobs: int, client: Any, started: float) -> int:
    log = _log
    work_scale = 1.0
    if experiment.single_client_tps is not None:
        computed = (previous or {}).get("computed")
        if isinstance(computed, Mapping) and "work_scale" in computed:
            work_scale = float(str(computed["work_scale"]))
        else:
            work_scale = single_client_work_scale(experiment, machine, options,
                                                  experiment.single_client_tps, log)
    resolved = resolved_document(experiment, options, work_scale)
    _write_text(out / "config.resolved.yaml", dump_yaml(resolved))
    _write_text(out / "experiment.yaml", dump_yaml(document))

    tasks = plan(experiment, machine, options, work_scale)
    store = PointStore(out / POINTS_DIR)
    done: dict[str, PointRecord] = {}
    for task in tasks:
        record = store.load(task.key)
        if record is not None:
            done[task.key] = record
    where = f"on {args.scheduler}" if args.scheduler else f"with {min(jobs, len(tasks))} job(s)"
    log(f"{experiment.name}: {len(tasks)} points on {machine.name} {where} -> {out}/")
    if done:
        log(f"resuming: {len(done)} of {len(tasks)} points already done")
    result = run_planned(experiment, tasks, jobs=jobs, client=client,
                         progress=not args.no_progress, on_record=store.save, done=done,
                         work_scale=work_scale)
    written = write_results(result, out)
    _print_summary(result.curve)
    failures = result.failures
    names = ", ".join(path.name for path in written)
    log(f"wrote {out}/: {names} ({len(tasks)} points, {time.perf_counter() - started:.1f} s)")
    if len(failures):
        for _, row in failures.iterrows():
            log(f"failed: {row['algorithm']} clients={row['clients']} "
                f"idle_clients={row['idle_clients']}: {row['error']}")
        return EXIT_FAILED_POINTS
    return EXIT_OK


def _prepare_out_dir(out: Path, resolved: dict[str, object],
                     overwrite: bool) -> dict[str, object] | None:
    """Check and prepare ``out``; return the previous resolved configuration when resuming."""
    if out.exists() and not out.is_dir():
        raise ConfigError("--out", f"{out} exists and is not a directory")
    previous: dict[str, object] | None = None
    if out.is_dir() and any(out.iterdir()):
        previous = _previous_config(out)
        same = previous is not None and _without_computed(previous) == resolved
        if not same:
            if not overwrite:
                what = ("the results of another experiment" if previous is not None
                        else "files that are not snapsim results")
                raise ConfigError("--out", f"{out} is not empty (it holds {what}); use "
                                  "--overwrite to replace them or choose another --out")
            _remove_owned(out)
            previous = None
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".snapsim-write-test-{id(out)}"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise ConfigError("--out", f"cannot write to {out}: {exc.strerror or exc}") from None
    return previous


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


def _write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _print_summary(curve: pd.DataFrame) -> None:
    """TPS per point: rows (clients, idle clients), one column per algorithm."""
    if curve.empty or "tps" not in curve.columns:
        return
    table = curve.pivot_table(index=["clients", "idle_clients"], columns="algorithm",
                              values="tps", aggfunc="mean", sort=False)
    table = table[[a for a in dict.fromkeys(curve["algorithm"]) if a in table.columns]]
    formatted = table.map(lambda v: f"{v:,.0f}" if pd.notna(v) else "failed")
    print("TPS")
    print(formatted.to_string())


def is_experiment(data: Mapping[str, object]) -> bool:
    """Whether a parsed file looks like an experiment (``check-config``)."""
    return bool(data) and all(key in EXPERIMENT_KEYS for key in data)


def check_experiment(data: Mapping[str, object], source: str) -> str:
    """Validate an experiment file completely without running it; a one-line summary."""
    del data  # reloaded with its extends chain
    document, path = load_document(source)
    experiment = experiment_from_document(document, path, default_name=Path(path).stem)
    model = experiment.validate()
    model.resolve_options(experiment.options, path)
    machine = experiment.machine_config()
    if experiment.measurements is not None:
        from simulator.study.measurements import measurements_for

        measurements_for(experiment.measurements)
    points = len(experiment.grid())
    return (f"experiment {experiment.name}: {points} points "
            f"({', '.join(experiment.algorithms)}) on {machine.name}")


def check_manifest(data: Mapping[str, object], source: str) -> str:
    """Validate a measurement manifest and every file it names; a one-line summary."""
    del data
    from simulator.study.measurements import load_manifest

    manifest = load_manifest(source)
    rows = sum(len(dataset.table()) for dataset in manifest.datasets.values())
    return f"measurement manifest: {len(manifest.datasets)} datasets, {rows} measured points"


# --------------------------------------------------------------------------------------------
# snapsim plot
# --------------------------------------------------------------------------------------------


def add_plot_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim plot``."""
    parser.add_argument("directory", metavar="DIR", help="output directory of a snapsim run")


def plot_main(args: argparse.Namespace) -> int:
    """``snapsim plot DIR``: draw the plots again from ``DIR/curve.csv``."""
    directory = Path(args.directory)
    curve = read_curve(directory)
    measured = None
    config = directory / "config.resolved.yaml"
    if config.exists():
        data = read_yaml(config)
        if isinstance(data, Mapping) and data.get("measurements"):
            from simulator.study.measurements import measurements_for

            measured = measurements_for(str(data["measurements"]))
    written = write_plots(curve, directory, measured)
    _log(f"wrote {', '.join(str(path) for path in written) or 'no plot (no successful point)'}")
    return EXIT_OK
