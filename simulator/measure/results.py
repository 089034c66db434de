"""Everything a measurement leaves behind, written from what it recorded (complete or not).

The measurement files and the manifest come from the runs recorded (a point measured by only
some installations, as after an interruption, is left out of the wide files but kept in
``repetitions.csv``); the machine file is the host's probe (``snapsim machine probe``), with
the kernel's DAMON thread fitted to its CPU in the runs
(:mod:`simulator.measure.kernel_thread_fit`); the metadata says whether the measurement is
complete and, if not, why it stopped.
"""

from __future__ import annotations

import dataclasses
import shlex
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from simulator.errors import ConfigError
from simulator.host.facts import HostFacts, host_facts
from simulator.host.probe import probe_host
from simulator.host.probe_idle import MeasuredWakeup
from simulator.measure.kernel_thread_fit import damon_sample_us, fit_kernel_thread
from simulator.measure.manifest import MACHINE_FILE, MANIFEST_FILE, manifest_document
from simulator.measure.outputs import dataset_name, wide_table, write_dataset, write_yaml
from simulator.measure.plan import Plan, holder_threads
from simulator.measure.session import Outcome, Setup

METADATA = "metadata.yaml"
_DESCRIPTIONS = {"idle": "N fully idle connections (\\sleep 1s)",
                 "mostly-idle": "N mostly idle connections (\\sleep 100ms; SELECT 1;)"}


def write_results(setup: Setup, plan: Plan, outcome: Outcome, name: str,
                  argv: Sequence[str] | None, extra: dict[str, object],
                  wakeup: MeasuredWakeup | None = None,
                  clock_ghz: float | None = None) -> list[Path]:
    """Write the datasets, manifest, machine file and metadata; return the files written.

    ``wakeup``: the guest's wake-up of a halted vCPU measured before the runs, the machine file's
    ``scheduler.ipi_exit``; ``clock_ghz``: the guest's clock measured before the runs.
    """
    out = setup.out
    facts = host_facts()
    written: list[Path] = []
    series = [f"tps_{inst.label}" for inst in setup.installations]
    versions = ", ".join(f"{inst.label} = {inst.version}" for inst in setup.installations)
    datasets: dict[str, tuple[str, Sequence[str]]] = {}
    descriptions: dict[str, str] = {}
    single: str | None = None
    for kind in plan.idle_kinds:
        table = wide_table(outcome.table.rows, kind, series)
        if table.empty:
            continue
        dataset = dataset_name(name, kind)
        written.append(write_dataset(out, dataset, table))
        datasets[dataset] = (kind, series)
        if single is None and ((table["active_connections"] == 1)
                               & (table["idle_connections"] == 0)).any():
            single = dataset
        driven = ""
        if kind == "mostly-idle":
            driven = (f", driven by pgbench processes of one thread and at most "
                      f"{setup.holder_chunk} connections each")
        descriptions[dataset] = (f"pgbench -M prepared -S -c N -j N on this host with "
                                 f"{_DESCRIPTIONS[kind]}{driven}; medians of {plan.repetitions} "
                                 f"repetitions of {plan.duration_s:g} s; {versions}"
                                 + ("" if outcome.status == "complete" else " (PARTIAL)"))
    machine_note = ""
    kernel_thread = fit_kernel_thread(outcome.table.rows, damon_sample_us())
    try:
        like = probe_host(out / MACHINE_FILE, name=name, wakeup=wakeup, clock_ghz=clock_ghz,
                          extra_lines=() if kernel_thread is None
                          else kernel_thread.machine_file_lines())
        machine_note = (f"snapsim machine probe; latencies from {like}"
                        + ("; ipi_exit measured" if wakeup is not None else "")
                        + ("; clock measured" if clock_ghz is not None else "")
                        + ("" if kernel_thread is None else
                           f"; kernel_thread fitted to {kernel_thread.name}'s CPU in the runs"))
        written.append(out / MACHINE_FILE)
    except ConfigError as exc:
        machine_note = f"the probe failed: {exc}"
    if datasets:
        # the oldest code's single-client point gives the work scale, as in the shipped manifest
        label = "tps_pre14" if "tps_pre14" in series else series[0]
        document = manifest_document(name, datasets, None if single is None
                                     else (single, label), descriptions,
                                     holder_threads(max(plan.idle), setup.holder_chunk))
        header = (f"Measured by snapsim measure on {outcome.started_at} "
                  f"({outcome.status}{': ' + outcome.cause if outcome.cause else ''}).\n"
                  f"Validate the model against it: snapsim validate --manifest {out}\n"
                  "Every repetition, with where the CPU went: repetitions.csv; host and "
                  "settings: metadata.yaml.")
        write_yaml(out / MANIFEST_FILE, document, header)
        written.append(out / MANIFEST_FILE)
    metadata = {
        "status": outcome.status, "cause": outcome.cause or None,
        "command": None if argv is None else shlex.join(["snapsim", *argv]),
        "started_at": outcome.started_at, "finished_at": outcome.finished_at,
        "runs_recorded": len(outcome.table.rows), "runs_planned": plan.points,
        "installations": [{"label": inst.label, "bindir": str(inst.bindir),
                           "version": inst.version} for inst in setup.installations],
        "pgbench": str(setup.pgbench), "run_as": setup.run_as.name or None,
        "plan": dataclasses.asdict(plan), "server_settings": outcome.settings,
        "memory_per_connection_mb": None if outcome.memory_per_connection_bytes is None
        else round(outcome.memory_per_connection_bytes / 2**20, 3),
        "machine_file": machine_note, "host": facts.as_metadata(), **extra,
        "pinned": None if outcome.pinned is None else pinned_summary(
            outcome.pinned.rows, clock_ghz or _linux_clock_ghz(facts)),
        "stopped_on_exit": outcome.stopped,
    }
    write_yaml(out / METADATA, metadata, "snapsim measure: how this measurement was made")
    written.append(out / METADATA)
    return written


def _linux_clock_ghz(facts: HostFacts) -> float | None:
    """The clock Linux gives (cpufreq maximum, else "cpu MHz"); ``None`` if unreadable."""
    try:
        return facts.layout().clock_mhz / 1000
    except ConfigError:
        return None


def pinned_summary(rows: Sequence[Mapping[str, object]],
                   clock_ghz: float | None) -> list[dict[str, object]]:
    """Per installation and script, the medians of the pinned runs and their cycles.

    The cycles are the CPU time per transaction at ``clock_ghz`` (left out when it is not
    known), each side's context switch included (the cost file's figures are net of it:
    docs/investigations/work-scales.md).
    """
    summary: list[dict[str, object]] = []
    keys = dict.fromkeys((str(row["algorithm"]), str(row["script"])) for row in rows)
    for algorithm, script in keys:
        runs = [row for row in rows if (row["algorithm"], row["script"]) == (algorithm, script)]
        backend = statistics.median(float(str(row["backend_cpu_us_per_txn"])) for row in runs)
        client = statistics.median(float(str(row["client_cpu_us_per_txn"])) for row in runs)
        tps = statistics.median(float(str(row["tps"])) for row in runs)
        entry: dict[str, object] = {
            "algorithm": algorithm, "script": script, "runs": len(runs), "tps": round(tps),
            "backend_cpu_us_per_txn": round(backend, 3),
            "client_cpu_us_per_txn": round(client, 3)}
        if clock_ghz is not None:
            entry.update(clock_ghz=round(clock_ghz, 2),
                         backend_cycles_per_txn=round(backend * clock_ghz * 1000),
                         client_cycles_per_txn=round(client * clock_ghz * 1000))
        summary.append(entry)
    return summary


def manifest_path(out: Path) -> Path:
    """The manifest a measurement writes into ``out``."""
    return out / MANIFEST_FILE
