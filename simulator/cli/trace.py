"""``snapsim trace``: one point with the scheduler's and the idle states' traces.

``snapsim trace [EXPERIMENT] [flags]`` takes the experiment and flags of ``snapsim run`` but
simulates exactly one point (one algorithm, one client count, one idle count, one seed), with
tracing on, and writes into ``--out`` (default ``./snapsim-trace``):

* ``scheduler.csv``: one row per scheduling transition: ``time_ns, task, thread, core, event``
  (``on_cpu``: the task starts running on the hardware thread; ``preempt``, ``block``,
  ``release``: it leaves it);
* ``idle.csv``: one row per idle period of a hardware thread, written when it is woken:
  ``time_ns, thread, core, state`` (the idle state left), ``idle_ns``, ``exit_latency_ns``
  (what the woken task paid for the exit, a hypervisor's IPI cost included);
* ``point.csv``: the point's curve row (the columns of ``curve.csv``).

Times are simulated nanoseconds from the start, warm-up included (the measured window starts
at ``warmup_ms``). The files are written atomically; existing ones are replaced. A summary of
the idle periods by state is printed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd

from simulator.cli.common import EXIT_OK, log, prepare_kernel
from simulator.cli.experiment_args import add_experiment_arguments, load_experiment
from simulator.config.files import atomic_write
from simulator.errors import ConfigError
from simulator.study.experiment import plan
from simulator.study.work_scale import single_client_work_scale

DEFAULT_OUT = "snapsim-trace"

TRACE_FILES = {"scheduler": "scheduler.csv", "idle": "idle.csv"}
"""Trace table name -> file written."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim trace``: those of ``snapsim run`` that make the experiment."""
    add_experiment_arguments(parser)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override an experiment key")
    parser.add_argument("--out", metavar="DIR", help=f"output directory (default: ./{DEFAULT_OUT})")


def main(args: argparse.Namespace) -> int:
    """Simulate one traced point and write its traces."""
    experiment, _, source = load_experiment(args)
    prepared = experiment.prepare(source)
    grid = experiment.grid()
    if len(grid) != 1:
        raise ConfigError("--clients", f"trace simulates one point, the experiment has "
                          f"{len(grid)}: give one algorithm (--algorithms), one --clients, "
                          f"one --idle-clients and one --seed")
    prepare_kernel(prepared.machine)
    scale = 1.0
    if prepared.single_client is not None:
        scale = single_client_work_scale(prepared, prepared.single_client, log=log)
    task = plan(prepared, scale)[0]
    spec = task.spec
    output = prepared.model.run_point(replace(spec, trace=True))
    if not output.traces:
        raise ConfigError("model", f"the model {experiment.model!r} records no traces")
    out = Path(args.out or DEFAULT_OUT)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, file_name in TRACE_FILES.items():
        written.append(atomic_write(out / file_name, _csv_writer(output.traces[name])))
    row = pd.DataFrame([{**spec.identity(), **output.row}])
    written.append(atomic_write(out / "point.csv", lambda path: row.to_csv(path, index=False)))
    for line in idle_summary(output.traces["idle"]):
        print(line)
    log(f"wrote {out}/: {', '.join(path.name for path in written)} "
        f"({spec.algorithm}, {spec.clients} clients, {spec.idle_clients} idle, "
        f"{len(output.traces['scheduler']):,} scheduling rows, "
        f"{len(output.traces['idle']):,} idle periods)")
    return EXIT_OK


def _csv_writer(frame: pd.DataFrame) -> Callable[[Path], object]:
    """A writer of ``frame`` as CSV into a path (for :func:`atomic_write`)."""
    return lambda path: frame.to_csv(path, index=False)


def idle_summary(idle: pd.DataFrame) -> list[str]:
    """Lines of a table of the idle periods by state: count, mean idle time, mean exit cost."""
    if idle.empty:
        return ["no idle period ended"]
    table = idle.groupby("state", sort=False).agg(
        periods=("idle_ns", "size"), mean_idle_us=("idle_ns", "mean"),
        mean_exit_us=("exit_latency_ns", "mean"))
    lines = [f"{'state':<8} {'periods':>9} {'mean idle us':>13} {'mean exit us':>13}"]
    for state, entry in table.iterrows():
        lines.append(f"{state!s:<8} {int(entry['periods']):>9,} "
                     f"{entry['mean_idle_us'] / 1e3:>13.1f} {entry['mean_exit_us'] / 1e3:>13.2f}")
    return lines
