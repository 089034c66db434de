"""``snapsim measure``: real PostgreSQL and pgbench on this host, written for ``snapsim validate``.

Checks every input first (installations and their labels against their versions, pgbench, the
grid, memory, processes, open files, ports), prints the plan with its time and memory estimate,
then measures (:mod:`simulator.measure.session`) and writes the measurement files, the manifest,
the host's machine file and the metadata into ``--out``
(:mod:`simulator.measure.results`), also when it stops early (marked partial). Ctrl-C and
SIGTERM stop every server and client it started, by PID, before it exits.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import re
import shutil
import signal
import stat
import tempfile
from pathlib import Path
from types import FrameType

from simulator.cli.common import EXIT_OK, log, warn, writable_directory
from simulator.cli.run import Interrupted
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.host import clock
from simulator.host.facts import host_facts
from simulator.host.probe_idle import MeasuredWakeup
from simulator.host.wakeup import DEFAULT_ROUND_TRIPS, measure_for_machine_file
from simulator.measure import leftovers
from simulator.measure.cluster import check_port_free
from simulator.measure.installations import LABELS, Installation, find_pgbench, installations
from simulator.measure.manifest import load_manifest
from simulator.measure.noise import DISTURBED, REST_SHARE_LIMIT
from simulator.measure.outputs import PINNED_COLUMNS, RepetitionTable
from simulator.measure.pgbench import IDLE_KINDS
from simulator.measure.plan import (
    Plan,
    check_memory,
    check_processes,
    default_shared_buffers,
    holder_chunk,
    raise_open_files,
    size_bytes,
)
from simulator.measure.processes import RunAs
from simulator.measure.results import manifest_path, write_results
from simulator.measure.session import Outcome, Setup, measure
from simulator.study.store import DirectoryLock
from simulator.tools.validate import check_datasets

DEFAULT_OUT = "snapsim-measurement"
MEASUREMENT_FILES = ("repetitions.csv", "pinned.csv", "manifest.yaml", "metadata.yaml",
                     "host.yaml")
"""What a measurement writes into ``--out`` besides its datasets (the manifest names those) and
``logs/``: what ``--overwrite`` removes."""
MAX_SECONDS = 86_400.0
"""The longest run, warm-up or settling pause (a day): longer is a typo, and infinity would reach
pgbench's ``-T`` and ``time.sleep`` after a server started."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim measure``."""
    parser.add_argument("--install", action="append", default=[], metavar="LABEL=BINDIR",
                        help=f"a PostgreSQL bin directory and the algorithm it stands for "
                        f"({' or '.join(LABELS)}: pre14 for 9.2-13, post14 for 14 and later; "
                        "checked against its version); repeatable, one per label")
    parser.add_argument("--pgbench", metavar="PATH",
                        help="pgbench 13 or later (default: on PATH, else beside a server)")
    parser.add_argument("--clients", default="1", metavar="LIST",
                        help="active clients, comma-separated (default 1)")
    parser.add_argument("--idle", default="0,100,1000", metavar="LIST",
                        help="idle connections per server, comma-separated (default 0,100,1000)")
    parser.add_argument("--idle-kind", action="append", choices=IDLE_KINDS, metavar="KIND",
                        help="idle (silent) or mostly-idle (\\sleep 100ms; SELECT 1;); "
                        "repeatable (default idle)")
    parser.add_argument("--repetitions", type=int, default=3, metavar="N",
                        help="passes over the idle counts, up then down (default 3)")
    parser.add_argument("--duration-s", type=float, default=10.0, metavar="S",
                        help="seconds per pgbench run (default 10)")
    parser.add_argument("--scale", type=int, default=100,
                        help="pgbench scale (default 100, as the publications)")
    parser.add_argument("--shared-buffers", metavar="SIZE",
                        help="shared_buffers (default 16MB per unit of scale, at least 128MB)")
    parser.add_argument("--warmup-s", type=float, default=5.0, metavar="S",
                        help="a 1-client run per server after loading (default 5; 0: none)")
    parser.add_argument("--settle-s", type=float, default=5.0, metavar="S",
                        help="pause after changing the idle count (default 5)")
    parser.add_argument("--port", type=int, default=54320,
                        help="port of the first server; the next ones count up (default 54320)")
    parser.add_argument("--user", metavar="NAME",
                        help="run the servers as this user when run as root (default postgres)")
    parser.add_argument("--name", default="host",
                        help="the machine's and the datasets' name (default host)")
    parser.add_argument("--out", metavar="DIR", help=f"output directory (default ./{DEFAULT_OUT})")
    parser.add_argument("--work-dir", metavar="DIR",
                        help="where the clusters live while measuring (default: a fresh "
                        "directory in the system's temporary directory)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an earlier measurement in --out")
    parser.add_argument("--wakeup-round-trips", type=int, default=DEFAULT_ROUND_TRIPS,
                        metavar="N",
                        help="on a virtual machine, before the servers start: round trips per "
                             "run of the wake-up ping-pong whose result is host.yaml's "
                             f"scheduler.ipi_exit (snapsim machine probe --measure-wakeup; "
                             f"default {DEFAULT_ROUND_TRIPS}; 0: not measured, ipi_exit assumed)")
    parser.add_argument("--pinned-repetitions", type=int, default=3, metavar="N",
                        help="before any connection is held, N runs per installation of one "
                             "client running -S and one running SELECT 1, each with its pgbench "
                             "and backend pinned to one CPU: the software's own CPU per "
                             "transaction, without wake-ups or idle states (pinned.csv; "
                             "default 3; 0: none)")
    parser.add_argument("--clock-repeats", type=int, default=clock.DEFAULT_REPEATS, metavar="N",
                        help="on a virtual machine, before the servers start: runs of the clock "
                             "measurement whose fastest is host.yaml's clock (snapsim machine "
                             f"probe --measure-clock; default {clock.DEFAULT_REPEATS}; 0: not "
                             "measured, Linux's nominal figure kept)")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the inputs, print the plan and its estimate, start nothing")


def _counts(text: str, flag: str, minimum: int) -> tuple[int, ...]:
    try:
        values = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ConfigError(flag, f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise ConfigError(flag, "must list at least one count")
    if values[0] < minimum:
        raise ConfigError(flag, f"every count must be at least {minimum}, got {values[0]}")
    return tuple(values)


def _run_as(user: str | None) -> RunAs:
    if os.geteuid() != 0:
        if user is not None and user != pwd.getpwuid(os.geteuid()).pw_name:
            raise ConfigError("--user", "only root can run the servers as another user")
        return RunAs()
    name = user or "postgres"
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ConfigError("--user", f"no user {name!r}: initdb and postgres refuse root; create "
                          "an unprivileged user or name one with --user") from None
    if entry.pw_uid == 0:
        raise ConfigError("--user", f"{name} is root; initdb and postgres refuse root")
    return RunAs(entry.pw_uid, entry.pw_gid, name)


def _plan(args: argparse.Namespace, servers: int) -> Plan:
    for flag, value, low in (("--repetitions", args.repetitions, 1), ("--scale", args.scale, 1),
                             ("--pinned-repetitions", args.pinned_repetitions, 0)):
        if value < low:
            raise ConfigError(flag, f"must be at least {low}, got {value}")
    for flag, seconds, least in (("--duration-s", args.duration_s, 1.0),
                                 ("--warmup-s", args.warmup_s, 0.0),
                                 ("--settle-s", args.settle_s, 0.0)):
        if not seconds >= least:  # nan too
            raise ConfigError(flag, f"must be at least {least:g}, got {seconds:g}")
        if not seconds <= MAX_SECONDS:  # inf too: pgbench's -T and time.sleep take no infinity
            raise ConfigError(flag, f"must be at most {MAX_SECONDS:g} (a day), got {seconds:g}")
    return Plan(installations=servers, clients=_counts(args.clients, "--clients", 1),
                idle=_counts(args.idle, "--idle", 0),
                idle_kinds=tuple(dict.fromkeys(args.idle_kind or ["idle"])),
                repetitions=args.repetitions, duration_s=args.duration_s, scale=args.scale,
                settle_s=args.settle_s, pinned_repetitions=args.pinned_repetitions)


def main(args: argparse.Namespace) -> int:
    """Check, estimate, measure, write; exit 2 with one line on bad input or a failed server."""
    if not _NAME.match(args.name):
        raise ConfigError("--name", f"expected letters, digits, '.', '_' or '-', got "
                          f"{args.name!r}")
    if args.clock_repeats < 0:
        raise ConfigError("--clock-repeats", f"must not be negative, got {args.clock_repeats}")
    if args.wakeup_round_trips < 0:
        raise ConfigError("--wakeup-round-trips",
                          f"must not be negative, got {args.wakeup_round_trips}")
    found = installations(args.install)
    pgbench, pgbench_version = find_pgbench(args.pgbench, found)
    plan = _plan(args, len(found))
    shared_buffers = args.shared_buffers or default_shared_buffers(plan.scale)
    buffers_bytes = size_bytes(shared_buffers, "--shared-buffers")
    need, available_bytes = check_memory(
        plan, buffers_bytes, "--shared-buffers" if args.shared_buffers else "--scale")
    pid_max = check_processes(plan)
    open_files, files_note = raise_open_files(max(plan.idle))
    run_as = _run_as(args.user)
    for inst in found:
        log(f"{inst.label}: {inst.version} in {inst.bindir}")
    log(f"pgbench: {pgbench_version} ({pgbench})")
    log(f"plan: {plan.points} runs of {plan.duration_s:g} s ({len(found)} servers x clients "
        f"{','.join(map(str, plan.clients))} x idle {','.join(map(str, plan.idle))} x "
        f"{'/'.join(plan.idle_kinds)} x {plan.repetitions} repetitions), scale {plan.scale}, "
        f"shared_buffers {shared_buffers}, max_connections {plan.max_connections}"
        + (f"; first {plan.pinned_points} pinned runs ({plan.pinned_repetitions} x -S and "
           "SELECT 1 per server, pgbench and backend on one CPU)" if plan.pinned_points else ""))
    log(f"estimate: about {plan.estimate_s() / 60:.0f} min; about {need / 2**30:.1f} GiB of "
        f"{available_bytes / 2**30:.1f} GiB available at the largest count; {plan.processes()} "
        f"processes (pid_max {pid_max}); open files {open_files}"
        + (f"; {files_note}" if files_note else ""))
    work_root = Path(args.work_dir) if args.work_dir else None
    _check_reachable(work_root or Path(tempfile.gettempdir()), run_as)
    _leftovers(work_root, dry_run=args.dry_run)
    if args.dry_run:
        return EXIT_OK
    out = Path(args.out or DEFAULT_OUT)
    for index in range(len(found)):
        check_port_free(args.port + index)
    if work_root is not None:
        writable_directory(work_root, "--work-dir")
    created = not out.exists()
    writable_directory(out, "--out")
    lock = DirectoryLock(out, "--out", owner="another snapsim measure",
                         advice="let it finish, or choose another --out")
    try:
        lock.acquire()
    except ConfigError:
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    try:
        return _measure_into(args, out, found, pgbench, pgbench_version, plan, shared_buffers,
                             need, open_files, run_as, work_root)
    finally:
        lock.release()


def _measure_into(args: argparse.Namespace, out: Path, found: list[Installation],
                  pgbench: Path, pgbench_version: str, plan: Plan, shared_buffers: str,
                  need: float, open_files: int, run_as: RunAs, work_root: Path | None) -> int:
    """Measure into the locked ``out``: replace what it holds, run the plan, write, check."""
    runs = _recorded_runs(out)
    if runs and not args.overwrite:
        raise ConfigError("--out", f"{out} holds a measurement (pass --overwrite to replace it)")
    if runs == 0:
        log(f"replacing the measurement in {out}/: it recorded no run")
    if runs is not None:
        _remove_measurement(out)
    setup = Setup(installations=tuple(found), pgbench=pgbench, shared_buffers=shared_buffers,
                  first_port=args.port, run_as=run_as, out=out, work_root=work_root,
                  warmup_s=args.warmup_s, holder_chunk=holder_chunk(open_files, max(plan.idle)))
    outcome = Outcome(RepetitionTable(out / "repetitions.csv"),
                      pinned=RepetitionTable(out / "pinned.csv", PINNED_COLUMNS)
                      if plan.pinned_points else None)
    extra: dict[str, object] = {
        "pgbench_version": pgbench_version, "open_files": open_files,
        "estimate_min": round(plan.estimate_s() / 60, 1),
        "estimate_memory_gib": round(need / 2**30, 2)}
    wakeup = _wakeup(args.wakeup_round_trips)
    clock_ghz = _clock(args.clock_repeats)
    if clock_ghz is not None:
        extra["clock_ghz"] = round(clock_ghz, 2)
    if wakeup is not None:
        extra["wakeup_us"] = {"same_cpu": round(wakeup.same_cpu_us, 2),
                              "cross_cpu": round(wakeup.cross_cpu_us, 2),
                              "ipi_exit": round(wakeup.wakeup_us, 2)}
    interrupted: int | None = None
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        measure(setup, plan, outcome, log)
    except KeyboardInterrupt as exc:
        interrupted = exc.signum if isinstance(exc, Interrupted) else int(signal.SIGINT)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if outcome.stopped:
            (log if outcome.status == "complete" else warn)(
                f"stopped: {', '.join(outcome.stopped)}")
        written = write_results(setup, plan, outcome, args.name, getattr(args, "argv", None),
                                extra, wakeup, clock_ghz)
        if outcome.status != "complete":
            warn(f"partial measurement kept in {out}/ ({len(outcome.table.rows)} of "
                 f"{plan.points} runs; metadata.yaml says why)")
    _report_disturbed(outcome)
    if interrupted is not None:
        warn(f"snapsim: interrupted by {signal.Signals(interrupted).name}: every server and "
             "client it started is stopped")
        return 128 + interrupted
    manifest = load_manifest(manifest_path(out))
    check_datasets(manifest)  # what was written reads back as snapsim validate reads it
    log(f"wrote {out}/: {', '.join(path.name for path in written)}, repetitions.csv"
        + (", pinned.csv" if outcome.pinned is not None else ""))
    log(f"next: snapsim validate --manifest {out} --out {out}/validation")
    print(out)
    return EXIT_OK


def _report_disturbed(outcome: Outcome, shown: int = 5) -> None:
    """Say which runs other work disturbed (their ``disturbed`` column), if any."""
    runs = [row for row in outcome.table.rows if row.get(DISTURBED)]
    pinned = [row for row in (outcome.pinned.rows if outcome.pinned is not None else [])
              if row.get(DISTURBED)]
    if not runs and not pinned:
        return
    names = [f"{row['series']} {row['idle_kind']} {row['idle_connections']} idle "
             f"{row['active_connections']} clients rep {row['repetition']}" for row in runs]
    names += [f"pinned {row['algorithm']} {row['script']} rep {row['repetition']}"
              for row in pinned]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    counted = f"{len(runs)} of {len(outcome.table.rows)} runs" + (
        f" and {len(pinned)} pinned runs" if pinned else "")
    warn(f"disturbed: {counted} (other work took more than {REST_SHARE_LIMIT:.0%} of the "
         f"machine's CPUs in their windows; disturbed in repetitions.csv): "
         f"{'; '.join(names[:shown])}{more}. Their TPS is the machine's as much as "
         "PostgreSQL's: measure again on a quieter machine; validate names the points "
         "measured on them")


def _recorded_runs(out: Path) -> int | None:
    """The runs a measurement in ``out`` recorded (pinned ones too); ``None``: it holds none."""
    tables = [out / "repetitions.csv", out / "pinned.csv"]
    if not any(path.exists() for path in tables):
        return None
    runs = 0
    for path in tables:
        with contextlib.suppress(OSError):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            runs += sum(1 for line in lines[1:] if line.strip())
    return runs


def _remove_measurement(out: Path) -> None:
    """Remove the files a measurement wrote into ``out`` (and nothing else).

    Its tables, manifest, machine file, metadata and server logs, and the measurement files its
    manifest names in ``out`` (a measurement of another ``--name`` wrote others).
    """
    names = list(MEASUREMENT_FILES)
    with contextlib.suppress(ConfigError, OSError):
        document = read_yaml(out / "manifest.yaml")
        datasets = document.get("datasets") if isinstance(document, dict) else None
        for entry in (datasets or {}).values():
            name = entry.get("file") if isinstance(entry, dict) else None
            if isinstance(name, str) and name == Path(name).name and name.endswith(".csv"):
                names.append(name)
    for name in names:
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / "logs", ignore_errors=True)


def _check_reachable(root: Path, run_as: RunAs) -> None:
    """Check that the servers' user can walk into ``root`` (where the clusters will live).

    As root the servers run as another user, who needs the search (x) permission on every
    directory above its cluster; a home directory of mode 0700 denies it, and ``initdb`` would
    then fail with a message about the installation. Directories not made yet are made
    reachable (mode 0755).

    Raises:
        ConfigError: naming ``--work-dir``: the first directory the user cannot pass.
    """
    if run_as.uid is None:
        return
    gid = run_as.gid if run_as.gid is not None else pwd.getpwuid(run_as.uid).pw_gid
    try:
        groups = {*os.getgrouplist(run_as.name, gid)}
    except OSError:
        groups = {gid}
    path = root.absolute()
    for part in [*reversed(path.parents), path]:
        try:
            info = part.stat()
        except OSError:
            return  # made later, reachable
        if info.st_uid == run_as.uid:
            bit = stat.S_IXUSR
        elif info.st_gid in groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            try:
                owner = pwd.getpwuid(info.st_uid).pw_name
            except KeyError:
                owner = str(info.st_uid)
            which = "it" if part == path else str(part)
            where = f" ({which} is mode {info.st_mode & 0o777:04o}, owned by {owner})"
            raise ConfigError("--work-dir", f"the servers' user {run_as.name} cannot reach "
                              f"{root}{where}: the clusters live there; choose a --work-dir it "
                              "can reach, such as one under /var/tmp")


def _leftovers(work_root: Path | None, *, dry_run: bool) -> None:
    """Stop what a killed measurement left running over this work root, and say so.

    Another measurement running now is named (its load disturbs this one's figures). With
    ``dry_run`` nothing is stopped, only said.

    Raises:
        ConfigError: naming ``--work-dir``: a killed measurement's processes that this user may
            not stop, with their PIDs.
    """
    found = leftovers.find(work_root or Path(tempfile.gettempdir()))
    for pid in found.running:
        warn(f"another snapsim measure (PID {pid}) is running on this host: its servers' load "
             "will disturb this measurement's figures")
    for leftover in found.leftovers:
        running = ", ".join(process.label() for process in leftover.processes)
        what = (f"a measurement killed earlier (PID {leftover.owner}) left {running} running "
                f"(work directory {leftover.directory})" if running else
                f"a measurement killed earlier (PID {leftover.owner}) left its work directory "
                f"{leftover.directory}")
        if dry_run:
            log(f"{what}; a measurement stops and removes them first")
            continue
        refused = leftovers.stop(leftover)
        if refused:
            pids = " ".join(str(process.pid) for process in refused)
            raise ConfigError("--work-dir", f"{what}, and this user may not stop "
                              f"{', '.join(process.label() for process in refused)}: stop them "
                              f"(kill {pids}) and remove {leftover.directory}")
        log(f"{what}: stopped and removed" if running else f"{what}: removed")


def _wakeup(round_trips: int) -> MeasuredWakeup | None:
    """On a virtual machine, the wake-up of a halted vCPU, measured before any server starts.

    ``None`` on bare metal or with 0 round trips.
    """
    if round_trips == 0 or host_facts().layout().guest_idle is None:
        return None
    return measure_for_machine_file(round_trips, log)


def _clock(repeats: int) -> float | None:
    """On a virtual machine, the clock measured before any server starts.

    A guest has no cpufreq, and the "cpu MHz" Linux gives it is the nominal clock, not the one
    its vCPUs run at. ``None`` on bare metal (cpufreq gives the maximum), with 0 repeats, or
    where the measurement does not apply (then said).
    """
    if repeats == 0 or host_facts().layout().guest_idle is None:
        return None
    try:
        return clock.measure_for_machine_file(log, repeats)
    except ConfigError as exc:
        warn(f"{exc}; host.yaml keeps Linux's clock")
        return None


def _terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends a measurement as Ctrl-C does: everything started is stopped first.

    The command then exits 143, as ``snapsim run`` does.
    """
    raise Interrupted(signum)
