r"""One simulated point: a machine, an algorithm, a workload and a population of connections.

:func:`run_point` builds the population (:mod:`snapsim_models.population`: the version's
shared memory, the connections, idle ones first, the algorithm and the machine over the lines
it touches), runs the backends' server loops and the clients in SimPy, and summarises the
measured window:

* every active client is a pgbench thread (a scheduler task: it costs CPU on the same machine, as
  in every published run) driving one backend in a closed loop;
* an ``idle`` connection is only a procArray entry;
* a ``mostly-idle`` connection loops ``\sleep 100ms; SELECT 1;`` with a random phase, so a
  short run is in steady state from the start. As in the published runs, the mostly-idle
  connections belong to a second pgbench process, whose ``background_threads`` threads
  (scheduler tasks; ASSUMPTION: the published runs do not give its ``-j``, default 4) each serve
  their share of the connections round robin from one ``poll``: a thread sleeps until its next
  connection's sleep ends or an answer arrives, spends the client's cycles per query sent or
  answer read, and wakes the backends it sends to (and is woken by their answers)
  synchronously. ``background_threads = 0`` drops that process: each connection's pgbench
  side then costs no CPU and its backend is woken by a timer.
* connections that come and go (``churn_rate_per_s``, ``churn_per_transaction``;
  :mod:`snapsim_models.churn`): a postmaster (a scheduler task) forks a backend per connection
  request, in arrival order; the backend takes the top PGPROC of the free list, joins the
  procArray, runs its start-up, then either one transaction of the workload (connections
  arriving at a rate) or its client's transaction (``pgbench -C``: every active client
  reconnects per transaction), and leaves. ``connects_per_s`` and ``disconnects_per_s`` count
  the window's ``ProcArrayAdd`` and ``ProcArrayRemove``; ``procarray_exclusive_per_txn`` the
  window's exclusive ProcArrayLock acquisitions (commits, group clears, adds and removes) per
  active-client transaction.

Transactions are measured in ``[warmup, warmup + duration)`` by their completion time; ``tps``
counts the active clients' transactions, ``mostly_idle_tps`` the others'. The per-line table
counts the accesses of the same window (of every client, mostly-idle ones included). A window
in which no active client completes a transaction (with thousands of clients a transaction can
take longer than a short window) is an error, :class:`NoTransactionError`, never a TPS of 0.

``transactions_per_client`` is the window's transactions per active client and
``window_converged`` whether the point is long enough to be trusted (:func:`window_converged`):
with N clients in a closed loop a transaction period is N / TPS, every client's first
transaction ends about one period after the start, and the order in which clients reach the
contended lines can persist for dozens of periods.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import simpy

from simulator.config.machine import MachineConfig
from simulator.hardware.codes import CLASS_NAMES, Out
from simulator.hardware.fields import describe_masks
from simulator.hardware.layout_edits import LayoutEdit
from simulator.hardware.machine import Implementation
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.process import DEFAULT_RUN_AHEAD_NS
from simulator.runtime.scheduler import (
    IDLE_TRACE_COLUMNS,
    IDLE_TRACE_TABLE,
    TRACE_COLUMNS,
    TRACE_TABLE,
    CpuScheduler,
    SchedulerStats,
    Task,
)

from .backend import CATEGORIES, Backend, Category
from .btree import DEFAULT_PGBENCH_SCALE, inner_level_pages
from .buffers import PIN_PROTOCOLS
from .churn import ChurnClient, ChurnLog, churn_slots, exit_backend, start_backend
from .costs import PgCosts, load_costs
from .lwlock import DEFAULT_QUEUE as DEFAULT_LWLOCK_QUEUE
from .lwlock import QUEUES, LockMode
from .options import DEFAULT_BACKGROUND_THREADS, DEFAULT_ENTRIES_PER_CHUNK
from .population import Completed, Connection, Population, build_population
from .snapshots import ALGORITHMS
from .workloads import MIX, WORKLOADS, Context, Mix, Workload, mix_of, workload

IDLE_KINDS = ("idle", "mostly-idle")
START_SPREAD_NS = 50_000.0
"""Active clients start uniformly within this window (about two select-only transactions)."""
WARMUP_PERIODS = 3.0
"""A converged point's warm-up covers at least this many transaction periods (clients / TPS)."""
MIN_TRANSACTIONS_PER_CLIENT = 40.0
"""A converged point's window holds at least this many transactions per active client.

A client's count is of whole transactions (the one in flight when the window ends is not
counted), so ``n`` per client bounds the counting error by about ``1 / n``: 2.5 % at 40."""
MAX_HALVES_DIFFERENCE = 0.025
"""The two halves of a converged window complete transactions at rates this close (or within
two standard errors of a count, ``2 / sqrt(transactions)``, whichever is larger)."""


class NoTransactionError(RuntimeError):
    """The measured window holds no completed transaction of an active client: no TPS to report."""


@dataclass(frozen=True, slots=True)
class PointConfig:
    """Everything that defines one simulated point (units in the names)."""

    machine: MachineConfig
    algorithm: str
    workload: str = "select-only"
    clients: int = 1
    idle_clients: int = 0
    idle_kind: str = "idle"
    duration_ns: float = 20e6
    warmup_ns: float = 2e6
    seed: int = 0
    batch: int = 1
    think_time_ns: float = 0.0
    entries_per_chunk: int = DEFAULT_ENTRIES_PER_CHUNK
    run_ahead_ns: float = DEFAULT_RUN_AHEAD_NS
    costs: PgCosts = field(default_factory=load_costs)
    implementation: Implementation = "compiled"
    fused_atomics: frozenset[str] = frozenset()
    """Users of atomics whose load + CAS loops are fused (the ablation; empty: none)."""
    pgbench_scale: int = DEFAULT_PGBENCH_SCALE
    """pgbench's scale factor: the shape of ``pgbench_accounts_pkey`` (:mod:`.btree`)."""
    pin_protocol: str = "atomic"
    """How pins update a buffer header: ``atomic`` (9.6+) or ``spinlock`` (the what-if)."""
    mix: tuple[tuple[str, float], ...] = ()
    """The ``mix`` workload's scripts and weights."""
    background_threads: int = DEFAULT_BACKGROUND_THREADS
    """Threads (``-j``) of the pgbench process driving the mostly-idle connections (0: none)."""
    layout_edits: tuple[LayoutEdit, ...] = ()
    """Layout what-ifs applied to the version's shared memory (``options.layout``)."""
    churn_rate_per_s: float = 0.0
    """Connections arriving per second, each for one transaction (``options.churn``; 0: none)."""
    churn_per_transaction: bool = False
    """Every active client reconnects for every transaction (``pgbench -C``)."""
    lwlock_queue: str = DEFAULT_LWLOCK_QUEUE
    """The LWLocks' queue discipline: ``fifo`` or ``overtake`` (PostgreSQL's; :mod:`.lwlock`)."""
    trace: bool = False
    """Record the scheduler's and the idle states' traces of the whole run (warm-up included)."""

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algorithm!r} "
                             f"(choose one of {', '.join(ALGORITHMS)})")
        if self.workload not in WORKLOADS:
            raise ValueError(f"unknown workload {self.workload!r} "
                             f"(choose one of {', '.join(WORKLOADS)})")
        if self.idle_kind not in IDLE_KINDS:
            raise ValueError(f"unknown idle kind {self.idle_kind!r} (choose idle or mostly-idle)")
        if self.clients < 1:
            raise ValueError(f"clients must be at least 1, got {self.clients}")
        if self.idle_clients < 0:
            raise ValueError(f"idle_clients must not be negative, got {self.idle_clients}")
        if not self.duration_ns > 0 or self.warmup_ns < 0 or self.think_time_ns < 0:
            raise ValueError("duration must be positive; warm-up and think time not negative")
        if self.entries_per_chunk < 1:
            raise ValueError("entries_per_chunk must be at least 1")
        if not self.run_ahead_ns >= 0:
            raise ValueError(f"run_ahead_ns must not be negative, got {self.run_ahead_ns}")
        if self.pgbench_scale < 1:
            raise ValueError(f"pgbench_scale must be at least 1, got {self.pgbench_scale}")
        if self.background_threads < 0:
            raise ValueError(f"background_threads must not be negative, "
                             f"got {self.background_threads}")
        if self.workload == MIX:
            mix_of(self.mix, self.batch)  # raises on an empty mix or a bad script or weight
        if self.pin_protocol not in PIN_PROTOCOLS:
            raise ValueError(f"unknown pin protocol {self.pin_protocol!r} "
                             f"(choose {' or '.join(PIN_PROTOCOLS)})")
        if not (self.churn_rate_per_s >= 0 and math.isfinite(self.churn_rate_per_s)):
            raise ValueError(f"churn_rate_per_s must be a non-negative number, "
                             f"got {self.churn_rate_per_s}")
        if self.lwlock_queue not in QUEUES:
            raise ValueError(f"unknown LWLock queue {self.lwlock_queue!r} "
                             f"(choose {' or '.join(QUEUES)})")
        if self.churns and not ALGORITHMS[self.algorithm].supports_churn:
            raise ValueError(f"{self.algorithm} models no connect or disconnect: no churn")

    @property
    def churns(self) -> bool:
        """Whether connections come and go."""
        return self.churn_rate_per_s > 0 or self.churn_per_transaction


@dataclass(slots=True)
class PointResult:
    """The outcome of one point: one curve row, the per-line table, the transactions.

    ``traces``: with ``PointConfig.trace``, the scheduler's tables by name (``scheduler``,
    ``idle``: :mod:`simulator.runtime.scheduler`), else empty.
    """

    row: dict[str, object]
    lines: pd.DataFrame
    transactions: pd.DataFrame
    traces: dict[str, pd.DataFrame] = field(default_factory=dict)


class _Processes:
    """The SimPy processes of one point: each running backend's server loop and its client.

    Every active client is a pgbench thread (a scheduler task) driving one backend in a closed
    loop; the mostly-idle clients loop ``SELECT 1`` and a sleep, driven by the background
    pgbench process's threads (or, with none, at no CPU cost).
    """

    def __init__(self, config: PointConfig, env: SimEnvironment, scheduler: CpuScheduler,
                 population: Population) -> None:
        self.config = config
        self.env = env
        self.scheduler = scheduler
        self.context = Context(population.algorithm, config.costs.statements,
                               config.costs.footprint_private_bytes,
                               config.costs.footprint_l3_bytes)
        self.mix: Mix | None = (mix_of(config.mix, config.batch) if config.workload == MIX
                                else None)
        self.workload: Workload | None = (None if self.mix is not None
                                          else workload(config.workload, config.batch))
        self.inboxes: dict[int, simpy.Event] = {}
        """Per running backend, the event its server loop sleeps on (a message sets it)."""
        self.processes: list[tuple[simpy.Process, ProcessGenerator]] = []
        """Every process started, with its generator (to tear the run down)."""
        self.population = population
        self.churn_log = ChurnLog()
        """When connections joined and left the procArray."""
        self.churn_clients: list[ChurnClient] = []
        """The clients that reconnect for every transaction (``pgbench -C``)."""
        self._connect_requests: deque[tuple[Task | None, simpy.Event | None]] = deque()
        self._postmaster_idle: simpy.Event | None = None
        self._postmaster: Task | None = None

    def start(self, running: list[Connection]) -> None:
        """Start the server loop and the client of every connection whose backend runs."""
        config = self.config
        rng = self.env.rng
        background = [connection for connection in running if not connection.active]
        n_threads = min(config.background_threads, len(background))
        for j in range(n_threads):
            share = background[j::n_threads]
            phases = [float(rng.uniform(0.0, config.costs.mostly_idle_sleep_ns)) for _ in share]
            self.spawn(self._background_thread(self.scheduler.new_task(f"pgbench-bg{j}"),
                                               share, phases))
        for connection in running:
            backend = connection.backend
            self.inboxes[backend.connection] = self.env.event()
            self.spawn(self._serve(backend))
            if connection.active:
                thread = self.scheduler.new_task(f"pgbench{backend.connection}")
                # Clients start a random fraction of a transaction apart, as real clients do
                # (otherwise identical clients would run in lockstep).
                phase = float(rng.uniform(0.0, START_SPREAD_NS))
                self.spawn(self._active_client(thread, connection, phase))
            elif n_threads == 0:
                phase = float(rng.uniform(0.0, config.costs.mostly_idle_sleep_ns))
                self.spawn(self._mostly_idle_client(connection, phase))
        if config.churns:
            self._start_churn()

    def _start_churn(self) -> None:
        """The postmaster, the connections arriving at the rate and the reconnecting clients."""
        config = self.config
        rng = self.env.rng
        self._postmaster = self.scheduler.new_task("postmaster")
        self.spawn(self._postmaster_loop(self._postmaster))
        if config.churn_rate_per_s > 0:
            interval = 1e9 / config.churn_rate_per_s
            self.spawn(self._arrivals(interval, float(rng.uniform(0.0, interval))))
        if config.churn_per_transaction:
            for k in range(config.clients):
                client = ChurnClient()
                self.churn_clients.append(client)
                thread = self.scheduler.new_task(f"pgbench-C{k}")
                phase = float(rng.uniform(0.0, START_SPREAD_NS))
                self.spawn(self._reconnecting_client(thread, client, phase))

    def spawn(self, generator: ProcessGenerator) -> None:
        """Start a process (and keep it, to tear the run down)."""
        self.processes.append((self.env.process(generator), generator))

    def close(self) -> None:
        """Close every process and drop the inboxes."""
        self.env.close(self.processes)
        self.processes.clear()
        self.inboxes.clear()

    def _round_trips(self, work: Workload, backend: Backend, completed: list[Completed],
                     start_ns: float, client_task: Task | None,
                     begin: bool = True) -> ProcessGenerator:
        """Send every round trip of one pass to the backend; record the transaction(s).

        ``begin``: start the backend's record now (a reconnecting client's record began with
        its connection).
        """
        env = self.env
        costs = self.config.costs
        task = backend.task
        assert task is not None
        if begin:
            backend.begin_transaction()
        for statements in work.round_trips:
            if client_task is not None:
                yield from client_task.run(costs.client_cycles / backend.clock_ghz)
            response = env.event()
            # The message wakes the backend up (its server loop renews the inbox on waking,
            # before it answers, so the next round trip finds a fresh one); a socket message
            # is a synchronous wake-up: the client waits for the answer.
            if client_task is not None:
                client_task.wakes(task)
            self.inboxes[backend.connection].succeed((statements, response, client_task))
            if client_task is not None:
                yield from client_task.block_until(response)
            else:
                yield response
        record = backend.end_transaction()
        record.script = work.name
        for _ in range(work.transactions_per_pass):
            completed.append((start_ns, env.now, record))

    def _serve(self, backend: Backend) -> ProcessGenerator:
        """The backend's server loop: sleep until a message, run its statements, answer.

        A message of ``None`` (a client's Terminate) ends the loop, the thread still held.
        """
        task = backend.task
        assert task is not None
        env = self.env
        connection = backend.connection
        while True:
            before = task.scheduling_ns
            message = yield from task.block_until(self.inboxes[connection])
            self.inboxes[connection] = env.event()
            backend.record.times_ns[Category.SCHEDULING] += task.scheduling_ns - before
            if message is None:
                return
            statements, response, client_task = message
            for statement in statements:
                yield from statement(self.context, backend)
            yield from backend.flush()  # the answer leaves at the backend's logical time
            if client_task is not None:
                task.wakes(client_task)
            response.succeed()
            task.release()

    def _active_client(self, thread: Task, connection: Connection,
                       phase_ns: float) -> ProcessGenerator:
        think = self.config.think_time_ns
        yield self.env.timeout(phase_ns)
        while True:
            work = self._pick()
            yield from self._round_trips(work, connection.backend, connection.completed,
                                         self.env.now, thread)
            if think:
                yield from thread.block_until(self.env.timeout(think))

    def _pick(self) -> Workload:
        """The next transaction's script (the workload, or a draw from the mix)."""
        if self.mix is not None:
            return self.mix.pick(float(self.env.rng.random()))
        assert self.workload is not None
        return self.workload

    # ------------------------------------------------------------ connections that come and go

    def _request_connection(self, client_task: Task | None) -> simpy.Event | None:
        """Ask the postmaster for a backend; the event (a client's) fires with it when ready."""
        ready = self.env.event() if client_task is not None else None
        self._connect_requests.append((client_task, ready))
        idle = self._postmaster_idle
        if idle is not None and not idle.triggered:
            if client_task is not None and self._postmaster is not None:
                client_task.wakes(self._postmaster)
            idle.succeed()
        return ready

    def _postmaster_loop(self, task: Task) -> ProcessGenerator:
        """The postmaster: accept, fork (and later reap) a backend per request, in order."""
        fork_ns = self.config.costs.connection.postmaster / self.config.machine.clock_ghz
        requests = self._connect_requests
        while True:
            while requests:
                client_task, ready = requests.popleft()
                yield from task.run(fork_ns)
                self.spawn(self._connection(client_task, ready))
            self._postmaster_idle = self.env.event()
            yield from task.block_until(self._postmaster_idle)

    def _arrivals(self, interval_ns: float, phase_ns: float) -> ProcessGenerator:
        """Connections arriving evenly spaced (their clients are off the machine)."""
        yield self.env.timeout(phase_ns)
        while True:
            self._request_connection(None)
            yield self.env.timeout(interval_ns)

    def _connection(self, client_task: Task | None,
                    ready: simpy.Event | None) -> ProcessGenerator:
        """One forked backend: the top free PGPROC, start, its transaction(s), exit.

        Without a client (a connection arriving at the rate) it runs one transaction of the
        workload itself, not counted in ``tps``; with one (``pgbench -C``) it answers the
        client's round trips until the client's Terminate.
        """
        population = self.population
        free = population.free
        assert free is not None
        algorithm = population.algorithm
        costs = self.config.costs.connection
        pgprocno = yield from free.pop()
        backend = population.pool[pgprocno]
        task = self.scheduler.new_task(f"backend{backend.connection}")
        backend.start_process(task)
        backend.begin_transaction()
        yield from start_backend(algorithm, backend, costs, self.churn_log)
        if ready is None:
            for statements in self._pick().round_trips:
                for statement in statements:
                    yield from statement(self.context, backend)
            backend.end_transaction()
        else:
            assert client_task is not None
            self.inboxes[backend.connection] = self.env.event()
            yield from backend.flush()  # ReadyForQuery leaves at the backend's logical time
            task.wakes(client_task)
            ready.succeed(backend)
            task.release()
            yield from self._serve(backend)
        yield from exit_backend(algorithm, backend, costs, self.churn_log)
        task.release()
        free.push(pgprocno)

    def _reconnecting_client(self, thread: Task, client: ChurnClient,
                             phase_ns: float) -> ProcessGenerator:
        """``pgbench -C``: connect, one transaction, Terminate (not awaited), again.

        The transaction's time runs from the start of the connect to its last answer; the
        backend's start-up is in its record, its exit after the Terminate too.
        """
        env = self.env
        config = self.config
        connect_ns = config.costs.connection.client / config.machine.clock_ghz
        yield env.timeout(phase_ns)
        while True:
            work = self._pick()
            start = env.now
            yield from thread.run(connect_ns)
            ready = self._request_connection(thread)
            assert ready is not None
            backend = yield from thread.block_until(ready)
            yield from self._round_trips(work, backend, client.completed, start, thread,
                                         begin=False)
            assert backend.task is not None
            thread.wakes(backend.task, sync=False)
            self.inboxes[backend.connection].succeed(None)
            if config.think_time_ns:
                yield from thread.block_until(env.timeout(config.think_time_ns))

    def _background_thread(self, task: Task, connections: list[Connection],
                           phases_ns: list[float]) -> ProcessGenerator:
        """One thread of the background pgbench: its connections' ``SELECT 1`` from one poll.

        Each connection sleeps ``mostly_idle_sleep`` after its answer; the thread wakes when
        a sleep ends (its poll's timeout, a timer on its thread) or an answer arrives, spends
        ``client_cycles`` per answer read and per query sent, then sends the queries due.
        """
        env = self.env
        sleep = self.config.costs.mostly_idle_sleep_ns
        select1 = workload("select1")
        (statements,) = select1.round_trips
        client_ns = self.config.costs.client_cycles / connections[0].backend.clock_ghz
        due = [(phase, index) for index, phase in enumerate(phases_ns)]
        heapq.heapify(due)
        started = [0.0] * len(connections)
        answered: list[int] = []
        ready = [env.event()]

        def on_answer(index: int) -> Callable[[simpy.Event], None]:
            def answer(_: simpy.Event) -> None:
                answered.append(index)
                if not ready[0].triggered:
                    ready[0].succeed()
            return answer

        while True:
            now = env.now
            done = answered[:]
            answered.clear()
            for index in done:
                connection = connections[index]
                record = connection.backend.end_transaction()
                record.script = select1.name
                connection.completed.append((started[index], now, record))
                heapq.heappush(due, (now + sleep, index))
            sending = []
            while due and due[0][0] <= now:
                sending.append(heapq.heappop(due)[1])
            if done or sending:
                yield from task.run((len(done) + len(sending)) * client_ns)
            for index in sending:
                backend = connections[index].backend
                assert backend.task is not None
                backend.begin_transaction()
                started[index] = env.now
                response = env.event()
                response.callbacks.append(on_answer(index))
                task.wakes(backend.task)
                self.inboxes[backend.connection].succeed((statements, response, task))
            if answered or (due and due[0][0] <= env.now):
                continue
            if ready[0].triggered:
                ready[0] = env.event()
            if due:
                yield from task.wait(ready[0], due[0][0] - env.now)
            else:
                yield from task.block_until(ready[0])

    def _mostly_idle_client(self, connection: Connection, phase_ns: float) -> ProcessGenerator:
        sleep = self.config.costs.mostly_idle_sleep_ns
        yield self.env.timeout(phase_ns)
        select1 = workload("select1")
        while True:
            yield from self._round_trips(select1, connection.backend, connection.completed,
                                         self.env.now, None)
            yield self.env.timeout(sleep)


def _run(config: PointConfig) -> PointResult:
    env = SimEnvironment(seed=config.seed)
    scheduler = CpuScheduler.from_machine(env, config.machine, trace=config.trace)
    if config.trace:
        env.recorder.declare(TRACE_TABLE, TRACE_COLUMNS)
        env.recorder.declare(IDLE_TRACE_TABLE, IDLE_TRACE_COLUMNS)
    population = build_population(
        env, scheduler, config.machine, algorithm=config.algorithm, clients=config.clients,
        idle_clients=config.idle_clients, mostly_idle=config.idle_kind == "mostly-idle",
        scan_costs=config.costs.scan, entries_per_chunk=config.entries_per_chunk,
        run_ahead_ns=config.run_ahead_ns, implementation=config.implementation,
        fused_atomics=config.fused_atomics,
        btree_inner_pages=inner_level_pages(config.pgbench_scale),
        pin_protocol=config.pin_protocol, layout_edits=config.layout_edits,
        churn_slots=churn_slots(config.churn_rate_per_s, config.churn_per_transaction,
                                config.clients),
        reconnecting_clients=config.churn_per_transaction, lwlock_queue=config.lwlock_queue)
    scheduler.on_private_flush = population.machine.flush_private
    processes = _Processes(config, env, scheduler, population)
    wall = time.perf_counter()
    processes.start(population.running)
    busy_before = None
    stats_before = scheduler.stats.copy()
    exclusive = population.algorithm.proc_array_lock.grants
    exclusive_before = exclusive[LockMode.EXCLUSIVE]

    def mark() -> ProcessGenerator:
        nonlocal busy_before, stats_before, exclusive_before
        yield env.timeout(config.warmup_ns)
        busy_before = scheduler.snapshot()
        stats_before = scheduler.stats.copy()
        exclusive_before = exclusive[LockMode.EXCLUSIVE]
        population.machine.reset_line_counters()  # the per-line table covers the measurement

    processes.spawn(mark())
    try:
        env.run(until=config.warmup_ns + config.duration_ns)
        utilisation = scheduler.utilisation(busy_before)
        churn = _Churned(processes.churn_clients, processes.churn_log,
                         exclusive[LockMode.EXCLUSIVE] - exclusive_before)
        result = _summarise(config, population, utilisation, scheduler.stats.since(stats_before),
                            time.perf_counter() - wall, churn)
        if config.trace:
            result.traces.update({name: env.recorder.to_frame(name)
                                  for name in (TRACE_TABLE, IDLE_TRACE_TABLE)})
        return result
    finally:
        # Break the model's reference cycles: a point's objects are freed at once (no GC).
        processes.close()
        scheduler.close()
        population.release()


# ------------------------------------------------------------------ summary


@dataclass(frozen=True, slots=True)
class _Churned:
    """What a run of connections that come and go adds to the summary."""

    clients: list[ChurnClient]
    """The reconnecting clients (their transactions are active clients' transactions)."""
    log: ChurnLog
    procarray_exclusive: int
    """Exclusive ProcArrayLock acquisitions granted in the window (churn or not)."""


def _summarise(config: PointConfig, population: Population, utilisation: float,
               stats: SchedulerStats, wall_s: float, churn: _Churned) -> PointResult:
    """The curve row, the per-line table and the active clients' transactions of the window."""
    start, end = config.warmup_ns, config.warmup_ns + config.duration_ns
    active: list[Completed] = []
    idle_count = 0
    for connection in population.connections:
        for t0, t1, record in connection.completed:
            if start <= t1 < end:
                if connection.active:
                    active.append((t0, t1, record))
                else:
                    idle_count += 1
    for client in churn.clients:
        active.extend(done for done in client.completed if start <= done[1] < end)
    if not active:
        raise NoTransactionError(
            f"no active client completed a transaction in the measured window "
            f"({config.duration_ns / 1e6:g} ms after {config.warmup_ns / 1e6:g} ms of "
            f"warm-up): with {config.clients} clients a transaction takes longer; increase "
            f"duration_ms and warmup_ms")
    window_s = config.duration_ns * 1e-9
    row: dict[str, object] = {
        "machine": config.machine.name,
        "algorithm": config.algorithm,
        "workload": config.workload,
        "clients": config.clients,
        "idle_clients": config.idle_clients,
        "idle_kind": config.idle_kind,
        "seed": config.seed,
        "tps": len(active) / window_s,
        "mostly_idle_tps": idle_count / window_s,
        "transactions": len(active),
    }
    row.update(_latencies(active))
    if config.workload == MIX:
        row.update(_per_script(active, [name for name, _ in config.mix], window_s))
    row["cpu_utilisation"] = utilisation
    n = len(active)
    row["idle_exits_per_txn"] = stats.idle_exits / n
    row["idle_exit_us_per_txn"] = stats.idle_exit_ns / 1e3 / n
    row["ipis_per_txn"] = stats.ipis / n
    row["migrations_per_txn"] = stats.migrations / n
    row["private_flushes_per_txn"] = stats.private_flushes / n
    row.update(_per_transaction(active))
    connects, disconnects = churn.log.rates_per_s(start, end)
    row["connects_per_s"] = connects
    row["disconnects_per_s"] = disconnects
    row["procarray_exclusive_per_txn"] = churn.procarray_exclusive / n
    row["duration_ms"] = config.duration_ns / 1e6
    row["warmup_ms"] = config.warmup_ns / 1e6
    per_client = len(active) / config.clients
    row["transactions_per_client"] = per_client
    middle_ns = config.warmup_ns + config.duration_ns / 2
    first_half = sum(1 for _, t1, _ in active if t1 < middle_ns)
    row["window_converged"] = window_converged(config.clients, len(active) / window_s,
                                               config.warmup_ns, per_client,
                                               (first_half, len(active) - first_half))
    row["wall_s"] = wall_s
    machine = population.machine
    lines = machine.line_table()
    read, written = describe_masks(population.shmem.memory, machine, lines)
    lines["fields_read"] = read
    lines["fields_written"] = written
    transactions = pd.DataFrame(
        {"start_us": [t0 / 1e3 for t0, _, _ in active],
         "end_us": [t1 / 1e3 for _, t1, _ in active]})
    return PointResult(row=row, lines=lines, transactions=transactions)


def window_converged(clients: int, tps: float, warmup_ns: float,
                     transactions_per_client: float,
                     halves: tuple[int, int] | None = None) -> bool:
    """Whether a point's warm-up and window are long enough for its TPS to be trusted.

    Three conditions, each against a way a short point goes wrong:

    * the warm-up covers :data:`WARMUP_PERIODS` transaction periods (``clients / tps``): the
      first transactions of all clients end together about one period after the start;
    * the window holds :data:`MIN_TRANSACTIONS_PER_CLIENT` transactions per client (the error of
      counting whole transactions);
    * the window is stationary: its two halves (``halves``: transactions completed in each)
      agree within :data:`MAX_HALVES_DIFFERENCE`. The order in which the clients reach a
      contended line, set by their start phases, can persist for dozens of periods and change
      the rate; a window that straddles the end of such a phase shows it as unequal halves.

    Left out: a phase that lasts through the whole window (equal halves, a wrong rate), which
    only longer windows or other seeds reveal, and the variance between seeds.
    """
    if tps <= 0:
        return False
    period_ns = clients / tps * 1e9
    if warmup_ns < WARMUP_PERIODS * period_ns:
        return False
    if transactions_per_client < MIN_TRANSACTIONS_PER_CLIENT:
        return False
    if halves is None:
        return True
    total = halves[0] + halves[1]
    if total <= 0:
        return False
    tolerance = max(MAX_HALVES_DIFFERENCE, 2.0 / math.sqrt(total))
    return abs(halves[0] - halves[1]) / (total / 2) <= tolerance


def _latencies(active: list[Completed]) -> dict[str, float]:
    """Mean, median and 99th percentile of the transactions' latency (``active`` not empty)."""
    latencies = np.array([(t1 - t0) / 1e3 for t0, t1, _ in active])
    return {"latency_mean_us": float(latencies.mean()),
            "latency_p50_us": float(np.percentile(latencies, 50)),
            "latency_p99_us": float(np.percentile(latencies, 99))}


def _per_script(active: list[Completed], scripts: list[str],
                window_s: float) -> dict[str, float]:
    """TPS and mean latency of each script of a mix.

    Columns ``tps_<script>`` and ``latency_mean_us_<script>`` (``-`` in a name becomes ``_``).
    """
    result: dict[str, float] = {}
    for script in scripts:
        mine = [(t1 - t0) / 1e3 for t0, t1, record in active if record.script == script]
        key = script.replace("-", "_")
        result[f"tps_{key}"] = len(mine) / window_s
        result[f"latency_mean_us_{key}"] = float(np.mean(mine)) if mine else float("nan")
    return result


def _per_transaction(active: list[Completed]) -> dict[str, float]:
    """Transfers per transaction by class and the time breakdown (``active`` not empty).

    A batched pass records one accounting for its several transactions: each record counts once
    in the sums, which are divided by the number of transactions.
    """
    result: dict[str, float] = {}
    unique = list({id(r): r for _, _, r in active}.values())
    n = len(active)
    counters = sum((r.counters for r in unique), start=np.zeros_like(unique[0].counters))
    for index, name in enumerate(CLASS_NAMES):
        result[name] = float(counters[index]) / n
    for slot, name in ((Out.INVALIDATIONS, "invalidations"),
                       (Out.FALSE_SHARING_HITM, "false_sharing_hitm"),
                       (Out.WAIT_NS, "hot_line_wait_ns"),
                       (Out.CAS_ATTEMPTS, "cas_attempts"),
                       (Out.CAS_FAILURES, "cas_failures")):
        result[name] = float(counters[slot]) / n
    totals = dict.fromkeys(CATEGORIES, 0.0)
    for record in unique:
        for category, value in record.times_ns.items():
            totals[category] += value
    backend_ns = sum(totals.values())
    for category in CATEGORIES:
        result[f"share_{category.value}"] = totals[category] / backend_ns if backend_ns else 0.0
        result[f"{category.value}_us"] = totals[category] / 1e3 / n
    result["full_snapshots"] = sum(r.full_snapshots for r in unique) / n
    result["reused_snapshots"] = sum(r.reused_snapshots for r in unique) / n
    result["copied_snapshots"] = sum(r.copied_snapshots for r in unique) / n
    return result


def run_point(config: PointConfig) -> PointResult:
    """Simulate one point."""
    return _run(config)
