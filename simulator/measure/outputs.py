"""The files a measurement writes into its output directory.

- ``repetitions.csv``: every pgbench run (one row per installation, idle kind, repetition, idle
  count and active clients: :data:`REPETITION_COLUMNS`), appended as each run ends, so a
  measurement that stops early keeps what it measured;
- ``pinned.csv``: every pinned run (:data:`PINNED_COLUMNS`), when the plan has them: one client
  whose pgbench and backend share one CPU, so that its CPU per transaction is the software's own
  work and two context switches, without wake-ups or idle states;
- ``NAME_idle.csv`` / ``NAME_mostly_idle.csv``: the measurement files ``snapsim validate``
  reads, one row per active-client and idle count, with per installation the median over the
  repetitions of the TPS (``tps_pre14``, ``tps_post14``) and of the CPU per transaction;
- ``manifest.yaml``: those datasets, the machine file ``host.yaml`` and the single-client point
  that gives its work scale (pre14's 1 client at 0 idle, else post14's), written by
  :func:`simulator.measure.manifest.manifest_document`;
- ``metadata.yaml``: the command, status (``complete`` or ``partial`` with its cause), host
  facts, installations, server settings, the plan and its estimates.

Every file but the appended tables is written to a temporary name and renamed into place
(:func:`simulator.config.files.atomic_path`).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import yaml

from simulator.config.files import write_text_atomic

REPETITION_COLUMNS = (
    "series", "algorithm", "version", "idle_kind", "repetition", "idle_connections",
    "active_connections", "tps", "latency_ms", "connection_ms", "transactions", "window_s",
    "backend_cpu_us_per_txn", "client_cpu_us_per_txn", "backend_voluntary_switches_per_txn",
    "backend_involuntary_switches_per_txn", "client_voluntary_switches_per_txn",
    "client_involuntary_switches_per_txn", "holders_tps", "holders_cpu_s", "kdamond_cpu_s",
    "machine_busy_cpu_s", "rest_cpu_s", "load_1min", "mem_available_gib", "finished_at",
    "disturbed")
"""``series``: the TPS column of the installation (``tps_pre14``); ``window_s``: from pgbench's
start to its end; context switches per transaction (``voluntary``: the process blocked or slept;
``involuntary``: it was preempted while runnable), of the active backends over the run's middle
(``/proc/PID/status``, read 1 s after the run starts and 0.5 s before it ends; empty
if the run was too short) and of the pgbench client over the whole run (its ``rusage``);
``holders_tps``: the mostly idle holders' transactions (each one ``SELECT 1``) per second in
the window, from their progress lines (0 without holders; empty for idle holders, whose
transactions send nothing, or if their lines did not cover the window); CPU of the window in CPU
seconds: ``holders_cpu_s`` (the holders' backends and pgbench processes), ``kdamond_cpu_s`` (the
kernel's DAMON threads), ``machine_busy_cpu_s`` (``/proc/stat``: everything but idle and
iowait) and ``rest_cpu_s`` (busy minus the active backends, the pgbench client, the holders and
kdamond: everything else on the machine); ``disturbed``: that rest took more than a quarter of
the machine's CPUs (:mod:`simulator.measure.noise`)."""
PINNED_COLUMNS = (
    "algorithm", "version", "script", "repetition", "cpu", "tps", "transactions", "window_s",
    "backend_cpu_us_per_txn", "client_cpu_us_per_txn", "finished_at", "disturbed")
"""``script``: ``select-only`` (``-M prepared -S``) or ``select1`` (``SELECT 1;``); ``cpu``: the
CPU pgbench and the backend were pinned to; ``disturbed`` as in :data:`REPETITION_COLUMNS`."""
MEDIAN_COLUMNS = ("tps", "backend_cpu_us_per_txn", "client_cpu_us_per_txn")


class RepetitionTable:
    """``repetitions.csv`` (or ``pinned.csv``), one row appended (and flushed) per run."""

    def __init__(self, path: Path, columns: Sequence[str] = REPETITION_COLUMNS) -> None:
        """Create the file with its header."""
        self.path = path
        self.columns = tuple(columns)
        self.rows: list[dict[str, object]] = []
        with open(path, "w", encoding="utf-8", newline="") as handle:
            csv.writer(handle).writerow(self.columns)

    def append(self, row: Mapping[str, object]) -> None:
        """Add one run."""
        self.rows.append(dict(row))
        with open(self.path, "a", encoding="utf-8", newline="") as handle:
            csv.writer(handle).writerow([_cell(row.get(column)) for column in self.columns])
            handle.flush()


def _cell(value: object) -> object:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else value


def dataset_name(name: str, idle_kind: str) -> str:
    """``NAME_idle`` or ``NAME_mostly_idle``."""
    return f"{name}_{idle_kind.replace('-', '_')}"


def wide_table(rows: Sequence[Mapping[str, object]], idle_kind: str,
               series: Sequence[str]) -> pd.DataFrame:
    """Medians over the repetitions, one row per (idle, clients) measured by every series."""
    long = pd.DataFrame(list(rows), columns=list(REPETITION_COLUMNS))
    long = long[long["idle_kind"] == idle_kind]
    keys = ["idle_connections", "active_connections"]
    if long.empty:
        return pd.DataFrame(columns=keys)
    medians = long.groupby([*keys, "series"])[list(MEDIAN_COLUMNS)].median()
    counts = long.groupby([*keys, "series"]).size().rename("repetitions")
    table = pd.DataFrame(pd.concat([medians, counts], axis=1).unstack("series"))
    table.columns = [_wide_column(str(pair[0]), str(pair[1])) for pair in table.columns]
    wanted = [*series, *(_wide_column(column, label)
                         for column in (*MEDIAN_COLUMNS[1:], "repetitions") for label in series)]
    table = table.reindex(columns=wanted).dropna(subset=list(series)).reset_index()
    for column in table.columns:
        if column.startswith("repetitions_"):
            table[column] = table[column].astype(int)
    return table.sort_values(keys[::-1]).reset_index(drop=True)


def _wide_column(column: str, series: str) -> str:
    """``tps_pre14`` for the TPS, ``backend_cpu_us_per_txn_pre14`` for the others."""
    return series if column == "tps" else f"{column}_{series.removeprefix('tps_')}"


def write_dataset(directory: Path, name: str, table: pd.DataFrame) -> Path:
    """One measurement file of ``snapsim validate``."""
    path = directory / f"{name}.csv"
    write_text_atomic(path, table.to_csv(index=False, float_format="%.6g"))
    return path


def write_yaml(path: Path, document: Mapping[str, object], header: str = "") -> None:
    """A YAML file with a comment header."""
    comments = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    write_text_atomic(path, comments + yaml.safe_dump(dict(document), sort_keys=False, width=100,
                                               allow_unicode=True))
