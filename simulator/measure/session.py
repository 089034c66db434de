"""A measurement: servers set up, connections held, pgbench run at every point, all stopped.

:func:`measure` sets up one cluster per installation, runs the plan's pinned runs if it has any
(one client whose pgbench and backend share one CPU, before any connection is held), walks the
plan's steps (holding the idle
or mostly idle connections on every server, then running each installation's active clients in
turn, the other servers' holders paused by SIGSTOP meanwhile: their connections stay open and
their mostly idle clients send nothing), records every run as it ends, and on every way out
(success, bad input found on the way, Ctrl-C, SIGTERM) stops every process it started by PID,
removes the clusters and writes what it has, marked ``complete`` or ``partial`` with the cause.

Per run, the window is pgbench's life (connection set-up included; the TPS excludes it):
the active backends' CPU is the growth of the postmaster's reaped children's CPU time once they
have ended; pgbench's own comes from ``wait4``; the holders' (their backends and processes) and
the kernel's DAMON threads' from ``/proc/PID/stat``; the machine's from ``/proc/stat``.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from simulator.errors import ConfigError
from simulator.host import procfs
from simulator.measure.cluster import Cluster, chown_to
from simulator.measure.holders import Holders, holder_lifetime_s
from simulator.measure.installations import Installation
from simulator.measure.leftovers import WORK_PREFIX
from simulator.measure.noise import DISTURBED, REST_SHARE_LIMIT, is_disturbed, rest_share
from simulator.measure.outputs import RepetitionTable
from simulator.measure.pgbench import (
    PINNED_SCRIPTS,
    active_command,
    init_command,
    parse_report,
    pinned_command,
    write_script,
    write_select1,
)
from simulator.measure.plan import Plan
from simulator.measure.processes import LEDGER, Registry, RunAs, log_tail, wait_with_usage

KDAMOND = "kdamond"
REAP_TIMEOUT_S = 30.0
SWITCH_FIRST_READ_S = 1.0
"""The active backends' switches are read first this long after their run starts."""
SWITCH_SAMPLE_MARGIN_S = 0.5
"""The active backends' switches are read last this long before their run ends."""
SWITCH_SAMPLE_MIN_S = 0.2
"""The shortest time between the two reads of the switches (else none is given)."""
WARMUP_CLIENTS = 1

Log = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Setup:
    """Everything a measurement needs besides its plan."""

    installations: tuple[Installation, ...]
    pgbench: Path
    shared_buffers: str
    first_port: int
    run_as: RunAs
    out: Path
    work_root: Path | None = None
    warmup_s: float = 5.0
    holder_chunk: int = 5000


@dataclass(slots=True)
class Outcome:
    """What happened: the runs recorded, the status and the servers' settings."""

    table: RepetitionTable
    pinned: RepetitionTable | None = None
    """``pinned.csv``, when the plan has pinned runs."""
    status: str = "partial"
    cause: str = ""
    settings: dict[str, Mapping[str, str]] = field(default_factory=dict)
    memory_per_connection_bytes: float | None = None
    stopped: list[str] = field(default_factory=list)
    started_at: str = ""
    finished_at: str = ""


def now() -> str:
    """The time in UTC, ISO 8601, to the second."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM while cleaning up (a second Ctrl-C must not cut it short)."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT,
                                                                   signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def measure(setup: Setup, plan: Plan, outcome: Outcome, log: Log) -> None:
    """Run the plan; every run is appended to ``outcome.table`` as it ends.

    ``outcome.status`` is ``complete`` if every point ran; whatever way this returns or raises,
    every process started is stopped and the clusters are removed first.

    Raises:
        ConfigError: a server that will not start, a holder refused, a pgbench failure.
        KeyboardInterrupt: Ctrl-C or SIGTERM (as the command installs it).
    """
    registry = Registry(setup.run_as)
    work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=setup.work_root))
    work.chmod(0o711)  # the servers' user walks through to its own directories
    registry.keep_ledger(work / LEDGER)  # for the next measurement, should this one be killed
    clusters: list[Cluster] = []
    outcome.started_at = now()
    try:
        _run(setup, plan, outcome, log, registry, work, clusters)
        outcome.status = "complete"
    except KeyboardInterrupt:
        outcome.cause = "interrupted (Ctrl-C or SIGTERM)"
        raise
    except ConfigError as exc:
        outcome.cause = str(exc)
        raise
    except BaseException as exc:
        outcome.cause = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        with signals_held():
            outcome.stopped = registry.stop_all()
            logs = setup.out / "logs"
            for cluster in clusters:
                if cluster.log_path.exists():
                    logs.mkdir(exist_ok=True)
                    shutil.copyfile(cluster.log_path,
                                    logs / f"server-{cluster.installation.label}.log")
                cluster.remove()
            shutil.rmtree(work, ignore_errors=True)
            outcome.finished_at = now()


def _run(setup: Setup, plan: Plan, outcome: Outcome, log: Log, registry: Registry, work: Path,
         clusters: list[Cluster]) -> None:
    for index, inst in enumerate(setup.installations):
        cluster = Cluster(inst, work / inst.label, setup.first_port + index, registry)
        clusters.append(cluster)
        log(f"{inst.label}: initdb and start ({inst.version}, port {cluster.port})")
        cluster.initialise(plan.max_connections, setup.shared_buffers)
        outcome.settings[inst.label] = dict(cluster.settings)
        cluster.start()
        started = time.monotonic()
        _client(registry, init_command(setup.pgbench, cluster.server, plan.scale),
                work / f"init-{inst.label}.log", f"pgbench -i of {inst.label}",
                timeout_s=3600.0)
        log(f"{inst.label}: pgbench tables at scale {plan.scale} loaded in "
            f"{time.monotonic() - started:.0f} s")
        if setup.warmup_s > 0:
            _client(registry, active_command(setup.pgbench, cluster.server, WARMUP_CLIENTS,
                                             setup.warmup_s),
                    work / f"warmup-{inst.label}.log", f"warm-up of {inst.label}",
                    timeout_s=setup.warmup_s + 120.0)
    if plan.pinned_repetitions > 0:
        _pinned_runs(setup, plan, outcome, log, registry, work, clusters)
    scripts = {kind: write_script(work, kind) for kind in plan.idle_kinds}
    for path in scripts.values():
        chown_to(path, RunAs())
    hold_s = holder_lifetime_s(plan.estimate_s())
    holders = [Holders(cluster, setup.pgbench, work, setup.holder_chunk, hold_s=hold_s)
               for cluster in clusters]
    kdamond = procfs.kernel_threads_named(KDAMOND)
    total, done, began = plan.points, 0, time.monotonic()
    memory: dict[int, int] = {}
    for step in plan.steps():
        for holder in holders:
            holder.hold(step.idle, step.idle_kind, scripts[step.idle_kind], log)
        if step.repetition == 0 and step.idle_kind == plan.idle_kinds[0]:
            memory[step.idle] = procfs.meminfo_bytes("MemAvailable")
            outcome.memory_per_connection_bytes = _per_connection(memory, len(clusters))
        if plan.settle_s > 0:
            time.sleep(plan.settle_s)
        for clients in plan.clients:
            for index in step.order:
                for other, holder in enumerate(holders):
                    holder.pause(other != index)
                row = _point(setup, clusters[index], holders[index], registry, work, kdamond,
                             step.idle_kind, step.repetition, step.idle, clients, plan.duration_s)
                outcome.table.append(row)
                done += 1
                elapsed = time.monotonic() - began
                log(f"[{done}/{total}] {row['series']} {step.idle_kind} {step.idle} idle, "
                    f"{clients} clients, rep {step.repetition + 1}: {row['tps']:.0f} TPS, "
                    f"backend {row['backend_cpu_us_per_txn']:.1f} us/txn, client "
                    f"{row['client_cpu_us_per_txn']:.1f} us/txn{_disturbance(row)}; about "
                    f"{elapsed / done * (total - done) / 60:.0f} min left")
    for holder in holders:
        holder.pause(False)
        holder.release()


def _pinned_runs(setup: Setup, plan: Plan, outcome: Outcome, log: Log, registry: Registry,
                 work: Path, clusters: list[Cluster]) -> None:
    """One client with its pgbench and its backend on one CPU, per script and installation.

    No connection is held yet. On one CPU no round trip waits for a wake-up or an idle state:
    the run's CPU per transaction is the software's own work and two context switches. The
    postmaster is pinned while its runs last, so that every backend it forks starts pinned
    (pgbench's scale check opens a connection of its own before the client's); its own
    affinity is given back after.
    """
    if outcome.pinned is None:
        raise ValueError("a plan with pinned runs needs outcome.pinned")
    select1 = write_select1(work)
    chown_to(select1, RunAs())
    cpu = min(os.sched_getaffinity(0))
    total = plan.pinned_points
    for repetition in range(plan.pinned_repetitions):
        for cluster in clusters:
            for script in PINNED_SCRIPTS:
                argv = pinned_command(setup.pgbench, cluster.server, script, select1,
                                      plan.duration_s)
                with _pinned(cluster.pid, cpu, f"the postmaster of {cluster.installation.label}"):
                    row = _point(setup, cluster, None, registry, work, [], "pinned",
                                 repetition, 0, 1, plan.duration_s, argv=argv, pin_cpu=cpu)
                pinned = {"algorithm": row["algorithm"], "version": row["version"],
                          "script": script, "repetition": repetition + 1, "cpu": cpu,
                          **{key: row[key] for key in ("tps", "transactions", "window_s",
                                                       "backend_cpu_us_per_txn",
                                                       "client_cpu_us_per_txn",
                                                       "finished_at", DISTURBED)}}
                outcome.pinned.append(pinned)
                done = len(outcome.pinned.rows)
                log(f"[pinned {done}/{total}] {cluster.installation.label} {script} on CPU "
                    f"{cpu}, rep {repetition + 1}: {row['tps']:.0f} TPS, backend "
                    f"{row['backend_cpu_us_per_txn']:.2f} us/txn, client "
                    f"{row['client_cpu_us_per_txn']:.2f} us/txn{_disturbance(row)}")


@contextlib.contextmanager
def _pinned(pid: int, cpu: int, what: str) -> Iterator[None]:
    """``pid`` pinned to ``cpu`` inside the block, its former affinity restored after."""
    former = os.sched_getaffinity(pid)
    _pin([pid], cpu, what)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(pid, former)


def _pin(pids: list[int], cpu: int, what: str) -> None:
    """Pin each of ``pids`` to ``cpu``.

    Raises:
        ConfigError: a process cannot be pinned (not permitted; one that already ended is
            skipped).
    """
    for pid in pids:
        try:
            os.sched_setaffinity(pid, {cpu})
        except ProcessLookupError:
            continue
        except PermissionError:
            raise ConfigError("pinned runs", f"cannot pin {what} (PID {pid}) to CPU {cpu}: "
                              "not permitted (run as root or as the servers' user)") from None


def _disturbance(row: Mapping[str, object]) -> str:
    """``; DISTURBED: ...`` for a run that other work disturbed (:mod:`.noise`), else ``""``."""
    if not row.get(DISTURBED):
        return ""
    share = rest_share(float(str(row["rest_cpu_s"])), float(str(row["window_s"])),
                       os.cpu_count() or 1)
    return (f"; DISTURBED: other work took {share:.0%} of the CPUs (more than "
            f"{REST_SHARE_LIMIT:.0%})")


def _per_connection(memory: Mapping[int, int], servers: int) -> float | None:
    """Memory per held connection: the fall of ``MemAvailable`` from the fewest to the most.

    ``None`` when it did not fall: the rest of the machine's memory moved more than the
    connections took (a few connections beside other work), and no figure is better than a
    negative one.
    """
    low, high = min(memory), max(memory)
    if high == low or memory[low] <= memory[high]:
        return None
    return (memory[low] - memory[high]) / ((high - low) * servers)


def _client(registry: Registry, argv: list[str], log_path: Path, what: str,
            timeout_s: float) -> str:
    """Run a pgbench to its end; return its output.

    Raises:
        ConfigError: it failed or outlived ``timeout_s`` (then it is stopped).
    """
    tracked = registry.start(argv, what, log_path=log_path)
    code, _ = wait_with_usage(tracked, timeout_s)
    if code is None:
        registry.stop(tracked)
        raise ConfigError("pgbench", f"{what} did not finish in {timeout_s:.0f} s")
    registry.forget(tracked)
    if code != 0:
        raise ConfigError("pgbench", f"{what} failed (exit {code}): {log_tail(log_path)}")
    return log_path.read_text(encoding="utf-8", errors="replace")


def _active_backends(cluster: Cluster, before: set[int], clients: int,
                     wait_s: float) -> list[int]:
    """The backends of the run's clients: the postmaster's new children, once connected."""
    deadline = time.monotonic() + wait_s
    while True:
        new = [pid for pid in procfs.children_of(cluster.pid) if pid not in before]
        if len(new) >= clients or time.monotonic() > deadline:
            return new
        time.sleep(0.005)


def _wait_reaped(cluster: Cluster, active: list[int], before: set[int]) -> None:
    """Wait until the run's backends have ended and the postmaster has reaped them.

    A backend's CPU time reaches the postmaster's ``cutime``/``cstime`` when it is reaped, not
    when it exits (a zombie is still listed): wait for its PID to vanish, and for every child
    the postmaster did not have before the run (one missed while connecting).
    """
    deadline = time.monotonic() + REAP_TIMEOUT_S
    while time.monotonic() < deadline:
        if not any(procfs.exists(pid) for pid in active) and \
                set(procfs.children_of(cluster.pid)) <= before:
            return
        time.sleep(0.005)


@dataclass(frozen=True, slots=True)
class _SwitchSample:
    """The active backends' context switches over the middle of a run.

    A backend's switches are read from ``/proc`` while it lives (its exit takes them along):
    ``SWITCH_FIRST_READ_S`` after the run starts (a quarter of it if shorter), when the run's
    backends have connected and pgbench's own check of the tables' scale (one connection of
    its own) has ended, and again ``SWITCH_SAMPLE_MARGIN_S`` before the run's end; the
    backends alive at both reads count, per transaction divided by the run's TPS times the
    time between.
    """

    first: dict[int, procfs.Switches]
    last: dict[int, procfs.Switches]
    span_s: float

    @classmethod
    def take(cls, backends: Callable[[], list[int]], started_at: float, duration_s: float,
             running: Callable[[], bool]) -> _SwitchSample:
        """Read the switches of ``backends()`` twice in a run started at ``started_at``.

        ``started_at`` is a ``time.monotonic``; if the run ends first (``running`` turns
        false) a read is missing.
        """
        first_at = started_at + min(SWITCH_FIRST_READ_S, duration_s / 4)
        last_at = started_at + duration_s - SWITCH_SAMPLE_MARGIN_S
        if last_at - first_at < SWITCH_SAMPLE_MIN_S or not _sleep_until(first_at, running):
            return cls({}, {}, 0.0)
        pids = backends()
        first, read_at = procfs.switches_of(pids), time.monotonic()
        if not _sleep_until(last_at, running):
            return cls(first, {}, 0.0)
        return cls(first, procfs.switches_of(pids), time.monotonic() - read_at)

    def per_transaction(self, tps: float) -> dict[str, float | None]:
        """The backends' switches per transaction of a run at ``tps``, voluntary and not.

        ``None`` when the run was too short or its backends vanished.
        """
        both = [pid for pid in self.first if pid in self.last]
        if not both or tps <= 0.0 or self.span_s <= 0.0:
            return {"backend_voluntary_switches_per_txn": None,
                    "backend_involuntary_switches_per_txn": None}
        transactions = tps * self.span_s
        voluntary = sum(self.last[pid].voluntary - self.first[pid].voluntary for pid in both)
        involuntary = sum(self.last[pid].involuntary - self.first[pid].involuntary
                          for pid in both)
        return {"backend_voluntary_switches_per_txn": voluntary / transactions,
                "backend_involuntary_switches_per_txn": involuntary / transactions}


def _sleep_until(at: float, running: Callable[[], bool]) -> bool:
    """Sleep until ``at`` (``time.monotonic``); ``False`` as soon as ``running()`` is not."""
    while time.monotonic() < at:
        if not running():
            return False
        time.sleep(min(0.05, max(at - time.monotonic(), 0.0)))
    return True


def _point(setup: Setup, cluster: Cluster, holder: Holders | None, registry: Registry,
           work: Path, kdamond: list[int], idle_kind: str, repetition: int, idle: int,
           clients: int, duration_s: float, *, argv: list[str] | None = None,
           pin_cpu: int | None = None) -> dict[str, object]:
    """One pgbench run of ``clients`` active clients, with where the CPU went.

    ``argv``: another pgbench command than the active clients' (a pinned run's); ``pin_cpu``:
    pin pgbench to this CPU as soon as it exists (its backends are pinned by the caller).
    """
    inst = cluster.installation
    before = set(procfs.children_of(cluster.pid))
    held = [*cluster.backends(), *(holder.processes() if holder is not None else [])]
    reaped0, held0 = cluster.reaped_ticks(), procfs.ticks_of(held)
    kdamond0, machine0 = procfs.ticks_of(kdamond), procfs.machine_ticks()
    wall0, unix0 = time.monotonic(), time.time()
    log_path = work / f"run-{inst.label}.log"
    log_path.unlink(missing_ok=True)
    command = argv or active_command(setup.pgbench, cluster.server, clients, duration_s)
    tracked = registry.start(command, f"pgbench of {inst.label}", log_path=log_path)
    if pin_cpu is not None:
        _pin([tracked.process.pid], pin_cpu, f"pgbench of {inst.label}")
    active = _active_backends(cluster, before, clients, wait_s=min(5.0, duration_s / 2))
    switches = _SwitchSample.take(
        lambda: [pid for pid in procfs.children_of(cluster.pid) if pid not in before],
        wall0, duration_s, lambda: tracked.process.poll() is None)
    code, client = wait_with_usage(tracked, duration_s + 120.0)
    wall1, unix1 = time.monotonic(), time.time()
    machine1, kdamond1 = procfs.machine_ticks(), procfs.ticks_of(kdamond)
    held1 = procfs.ticks_of(held)
    if code is None:
        registry.stop(tracked)
        raise ConfigError("pgbench", f"the run of {inst.label} did not end "
                          f"{duration_s + 120:.0f} s after it started")
    registry.forget(tracked)
    if code != 0:
        raise ConfigError("pgbench", f"the run of {inst.label} failed (exit {code}): "
                          f"{log_tail(log_path)}")
    report = parse_report(log_path.read_text(encoding="utf-8", errors="replace"))
    _wait_reaped(cluster, active, before)
    reaped1 = cluster.reaped_ticks()
    tick = 1 / procfs.TICKS_PER_S
    backend_s = (reaped1 - reaped0) * tick
    holders_s, kdamond_s = (held1 - held0) * tick, (kdamond1 - kdamond0) * tick
    busy_s = (machine1.busy - machine0.busy) * tick
    rest_s = busy_s - backend_s - client.cpu_s - holders_s - kdamond_s
    transactions = max(report.transactions, 1)
    per_txn = 1e6 / transactions
    background: float | None = 0.0
    if holder is not None and holder.count > 0:
        background = (holder.transactions_between(unix0, unix1)
                      if idle_kind == "mostly-idle" else None)
    return {
        "series": f"tps_{inst.label}", "algorithm": inst.label, "version": inst.version,
        "idle_kind": idle_kind, "repetition": repetition + 1, "idle_connections": idle,
        "active_connections": clients, "tps": report.tps, "latency_ms": report.latency_ms,
        "connection_ms": report.connection_ms, "transactions": report.transactions,
        "window_s": wall1 - wall0, "backend_cpu_us_per_txn": backend_s * per_txn,
        "client_cpu_us_per_txn": client.cpu_s * per_txn,
        **switches.per_transaction(report.tps),
        "client_voluntary_switches_per_txn": client.voluntary_switches / transactions,
        "client_involuntary_switches_per_txn": client.involuntary_switches / transactions,
        "holders_tps": None if background is None else background / (unix1 - unix0),
        "holders_cpu_s": holders_s,
        "kdamond_cpu_s": kdamond_s, "machine_busy_cpu_s": busy_s,
        "rest_cpu_s": rest_s,
        "load_1min": procfs.load_average()[0],
        "mem_available_gib": procfs.meminfo_bytes("MemAvailable") / 2**30,
        "finished_at": now(),
        DISTURBED: is_disturbed(rest_s, wall1 - wall0, os.cpu_count() or 1),
    }
