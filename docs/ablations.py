"""Produce the scheduling and power ablation table of docs/validation.md.

Usage (from the project root, after ``pip install -e .``)::

    python docs/ablations.py                          # every variant, every dataset
    python docs/ablations.py --variants shipped,no-idle-states --jobs 2
    python docs/ablations.py --scratch snapsim-ablations

Each variant is one ``snapsim validate`` run of the shipped manifest with one mechanism switched
off through ``--machine-set`` (a machine-file key of every machine) or ``--set`` (an experiment
key), written to ``SCRATCH/<variant>/`` (a variant whose ``summary.csv`` exists there is not run
again; delete the folder to rerun it). The script then writes
``docs/validation/ablations.csv`` (variant, dataset, series, median and max absolute relative
error) and prints the Markdown table docs/validation.md shows: each series' median / max error
under each variant. Exit code: 2 if a run failed on bad input, else 0 (a series failing its
thresholds is what an ablation is expected to show).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
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
}


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


def main() -> int:
    """Run the chosen variants, write the CSV, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated, from: {', '.join(VARIANTS)}")
    parser.add_argument("--scratch", default="snapsim-ablations", help="run folders")
    parser.add_argument("--jobs", type=int, help="worker processes per validate run")
    args = parser.parse_args()
    names = [name.strip() for name in args.variants.split(",") if name.strip()]
    unknown = [name for name in names if name not in VARIANTS]
    if unknown:
        print(f"ablations: unknown variant {unknown[0]!r} (choose from: {', '.join(VARIANTS)})",
              file=sys.stderr)
        return 2
    scratch = Path(args.scratch)
    for name in names:
        code = run_variant(name, scratch, args.jobs)
        if code not in (0, 1):
            return code
    errors = table(scratch, names)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".csv.tmp")
    errors.to_csv(tmp, index=False)
    tmp.replace(OUT)
    for name in names:
        print(f"- `{name}`: {VARIANTS[name][0]}")
    print()
    print(markdown(errors, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
