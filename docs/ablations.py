"""Produce the ablation and sensitivity tables of docs/investigations/ablations.md.

Usage (from the project root, after ``pip install -e .``)::

    python docs/ablations.py                          # every variant, every dataset
    python docs/ablations.py --groups hot-lines --jobs 2
    python docs/ablations.py --variants shipped,no-idle-states --scratch snapsim-ablations

Each variant is one ``snapsim validate`` run of the shipped manifest with one mechanism switched
off through ``--machine-set`` (a machine-file key of every machine) or ``--set`` (an experiment
key), written to ``SCRATCH/<variant>/`` (a variant whose ``summary.csv`` exists there is not run
again; delete the folder to rerun it). The script then writes
``docs/validation/ablations.csv`` (variant, dataset, series, median and max absolute relative
error) and prints the Markdown tables docs/investigations/ablations.md shows: each series'
median / max error under each variant, one table per group (scheduling and power; hot lines;
invalidation fan-out; contended-line service; the background's work; the client's cost and the
wake path), each with the ``shipped`` column. Exit code: 2 if a run failed on bad input, else 0
(a series failing its thresholds is what an ablation is expected to show).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

DOCS = Path(__file__).resolve().parent
OUT = DOCS / "validation" / "ablations.csv"
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "shipped": ("every mechanism on", []),
    "no-idle-states": ("no idle state deeper than polling: no exit latency, no C6 flush",
                       ["--machine-set", "idle.states=[]"]),
    "shallowest": ("idle states kept, the governor always takes the shallowest",
                   ["--machine-set", "idle.governor=shallowest"]),
    "no-wakeup-cost": ("the wake path apart from idle exits costs nothing",
                       ["--machine-set", "scheduler.wakeup=0 us"]),
    "no-ipi-exit": ("no hypervisor exit per IPI (the Platinum's 5 us)",
                    ["--machine-set", "scheduler.ipi_exit=0 us"]),
    "global-queue": ("one machine-wide run queue instead of one per hardware thread",
                     ["--machine-set", "scheduler.run_queues=global"]),
    "no-background-pgbench": ("mostly-idle connections wake on timers; no background pgbench",
                              ["--set", "options.background_threads=0"]),
    "background-together": ("the mostly-idle connections start together, as pgbench starts "
                            "them, instead of at random phases",
                            ["--set", "options.background_start=together"]),
    "no-working-sets": ("backends and pgbench threads never refill their working sets (the "
                        "shipped model refills them after a migration, a C6 flush or other "
                        "processes on the core)",
                        ["--set", "options.working_sets=false"]),
    "both-fused": ("LWLocks and buffer pins: a load and its CAS as one call that never fails",
                   ["--set", "options.atomics.lwlock=fused", "--set",
                    "options.atomics.buffer=fused"]),
    "lwlock-read-cas-only": ("buffer pins fused; LWLocks as lwlock.c (load, then a CAS loop)",
                             ["--set", "options.atomics.buffer=fused"]),
    "buffer-read-cas-only": ("LWLocks fused; buffer pins as bufmgr.c (load, then a CAS loop)",
                             ["--set", "options.atomics.lwlock=fused"]),
    "fan-out-0ns": ("a store waits for its farthest sharer only",
                    ["--machine-set", "latency.invalidation_per_extra_sharer=0 ns"]),
    "fan-out-10ns": ("10 ns per sharer after the first (the top of the assumed range)",
                     ["--machine-set", "latency.invalidation_per_extra_sharer=10 ns"]),
    "fifo": ("contended lines served first in, first out at their transfer latency",
             ["--machine-set", "line_service.rule=fifo"]),
    "no-owner-window": ("home rule without the owner window (one access per tenure)",
                        ["--machine-set", "line_service.owner_window=0"]),
    "no-read-modified-service": ("home rule; a read of a line modified on the other socket "
                                 "occupies its home for its latency only",
                                 ["--machine-set",
                                  "line_service.service.read_modified.remote=0 ns"]),
    "read-shared-300ns": ("a read of a clean line another cache supplies occupies its home "
                          "300 ns (ASSUMPTION, sensitivity)",
                          ["--machine-set", "line_service.service.read_shared.remote=300 ns",
                           "--machine-set",
                           "line_service.service.read_shared.cross_domain=300 ns"]),
    "read-shared-600ns": ("the same, 600 ns",
                          ["--machine-set", "line_service.service.read_shared.remote=600 ns",
                           "--machine-set",
                           "line_service.service.read_shared.cross_domain=600 ns"]),
    "no-pgbench-loop": ("the background pgbench's passes over its connections cost nothing",
                        ["--set", "options.costs.pgbench_loop.per_connection=0 cycles"]),
    "pgbench-loop-300": ("300 cycles per connection per pass (the top of the assumed range)",
                         ["--set", "options.costs.pgbench_loop.per_connection=300 cycles"]),
    "client-fitted": ("pgbench's client at 1,625 cycles per transaction, the former fit, "
                      "instead of the 14,300 measured",
                      ["--set", "options.costs.client=1625 cycles"]),
    "wakeup-1us": ("the wake path apart from idle exits 1 us (the bottom of its assumed range)",
                   ["--machine-set", "scheduler.wakeup=1 us"]),
    "wakeup-3us": ("the wake path 3 us (the top of its assumed range)",
                   ["--machine-set", "scheduler.wakeup=3 us"]),
}
GROUPS: dict[str, list[str]] = {
    "scheduling": ["shipped", "no-idle-states", "shallowest", "no-wakeup-cost", "no-ipi-exit",
                   "global-queue", "no-background-pgbench"],
    "hot-lines": ["both-fused", "lwlock-read-cas-only", "buffer-read-cas-only", "shipped"],
    "fan-out": ["fan-out-0ns", "shipped", "fan-out-10ns"],
    "line-service": ["fifo", "no-owner-window", "no-read-modified-service", "shipped",
                     "read-shared-300ns", "read-shared-600ns"],
    "background-work": ["no-pgbench-loop", "no-working-sets", "shipped", "pgbench-loop-300",
                        "background-together"],
    "client-and-wake": ["client-fitted", "shipped", "wakeup-1us", "wakeup-3us"],
}
"""The tables docs/investigations/ablations.md shows, each a list of variants in column order."""


def run_variant(name: str, scratch: Path, jobs: int | None) -> int:
    """``snapsim validate`` with the variant's flags into ``scratch/name``; its exit code."""
    out = scratch / name
    if (out / "summary.csv").exists():
        return 0
    command = [sys.executable, "-m", "simulator", "-q", "validate", "--out", str(out),
               "--no-progress", *VARIANTS[name][1]]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    print("$", " ".join(command[1:]), flush=True)
    return subprocess.run(command, check=False).returncode


def table(scratch: Path, names: list[str]) -> pd.DataFrame:
    """Per variant and series: median and max absolute relative error."""
    frames = []
    for name in names:
        summary = pd.read_csv(scratch / name / "summary.csv")
        summary.insert(0, "variant", name)
        frames.append(summary[["variant", "dataset", "series", "median_abs_rel_error",
                               "max_abs_rel_error"]])
    return pd.concat(frames, ignore_index=True)


def markdown(errors: pd.DataFrame, names: list[str]) -> str:
    """Series as rows, variants as columns, ``median / max`` in percent."""
    header = "| series | " + " | ".join(names) + " |"
    lines = [header, "|---|" + "---|" * len(names)]
    for (dataset, series), group in errors.groupby(["dataset", "series"], sort=False):
        cells = []
        for name in names:
            row = group[group["variant"] == name]
            if row.empty:
                cells.append("-")
                continue
            median, worst = row.iloc[0][["median_abs_rel_error", "max_abs_rel_error"]]
            cells.append(f"{100 * median:.1f} / {100 * worst:.1f}")
        lines.append(f"| {dataset} {series} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the chosen variants, write the CSV, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default=",".join(GROUPS),
                        help=f"comma-separated tables to produce, from: {', '.join(GROUPS)}")
    parser.add_argument("--variants",
                        help="comma-separated variants, one table of them (instead of --groups), "
                             f"from: {', '.join(VARIANTS)}")
    parser.add_argument("--scratch", default="snapsim-ablations", help="run folders")
    parser.add_argument("--jobs", type=int, help="worker processes per validate run")
    parser.add_argument("--csv", type=Path, default=OUT, help=f"the errors (default: {OUT})")
    args = parser.parse_args(argv)
    if args.variants is not None:
        tables = [_names(args.variants, VARIANTS, "variant")]
    else:
        tables = [GROUPS[group] for group in _names(args.groups, GROUPS, "group")]
    if not tables or not all(tables):
        print("ablations: no variant chosen", file=sys.stderr)
        return 2
    names = list(dict.fromkeys(name for columns in tables for name in columns))
    scratch = Path(args.scratch)
    for name in names:
        code = run_variant(name, scratch, args.jobs)
        if code not in (0, 1):
            return code
    errors = table(scratch, names)
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.csv.with_suffix(".csv.tmp")
    errors.to_csv(tmp, index=False)
    tmp.replace(args.csv)
    for columns in tables:
        for name in columns:
            print(f"- `{name}`: {VARIANTS[name][0]}")
        print()
        print(markdown(errors, columns))
        print()
    return 0


def _names(text: str, known: Mapping[str, object], kind: str) -> list[str]:
    """The comma-separated names of ``text``; exits with 2 on an unknown one."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in known:
            print(f"ablations: unknown {kind} {name!r} (choose from: {', '.join(known)})",
                  file=sys.stderr)
            raise SystemExit(2)
    return names


if __name__ == "__main__":
    sys.exit(main())
