r"""The SimPy processes of one point: the backends' server loops and their clients.

* every active client is a pgbench thread (a scheduler task: it costs CPU on the same machine,
  as in every published run) driving one backend in a closed loop;
* a ``mostly-idle`` connection loops ``\sleep 100ms; SELECT 1;``, its first query at a random
  phase (a short run is then in steady state from the start) or, with ``background_start:
  together``, every connection's at the run's start as pgbench starts them. As in the
  published runs, the mostly-idle connections belong to a second pgbench process, whose
  ``background_threads`` threads (scheduler tasks; ASSUMPTION: the published runs do not give
  its ``-j``, default 4) each serve their share of
  the connections round robin from one ``poll``: a thread sleeps until its next connection's
  sleep ends or an answer arrives, spends the client's cycles per query sent or answer read and
  ``pgbench_loop`` cycles per connection for each of the two walks over its connections in a
  pass of its loop (pgbench's ``threadRun``), and wakes the backends it sends to and is woken
  by their answers as an active client's thread is (below). A thread whose passes take longer
  than its connections' queries are apart is always runnable and handles several at once, as
  pgbench does.
  ``background_threads = 0`` drops that process: each connection's pgbench side then costs no
  CPU and its backend is woken by a timer;
* connections that come and go (``options.churn``; :mod:`snapsim_models.churn`): a postmaster (a
  scheduler task) forks a backend per connection request, in arrival order; the backend takes the
  top PGPROC of the free list, joins the procArray, runs its start-up, then either one
  transaction of the workload (connections arriving at a rate) or its client's transaction
  (``pgbench -C``: every active client reconnects per transaction), and leaves.

A backend waits for its client's next message in ``epoll_wait`` (PostgreSQL's
``WaitEventSetWait`` uses epoll on Linux, src/backend/storage/ipc/latch.c), pgbench for its
answers in ``select`` or ``ppoll`` (``wait_on_socket_set`` in src/bin/pgbench/pgbench.c): the
answer wakes pgbench synchronously (the socket's ``WF_SYNC`` hint), the message wakes the
backend synchronously only where the kernel passes the hint through epoll (the machine's
``scheduler.epoll_sync_wakeup``); otherwise it is an ordinary wake-up, placed from the backend's
previous thread.

With ``options.working_sets``, backends and pgbench threads (active clients and background
threads) get the cost model's working sets (``working_set``: private data, and code shared by
the processes of a program): the scheduler refills what a process's core lost since it last ran
(:mod:`simulator.runtime.working_set`); the postmaster has none. pgbench threads and the
backends of active connections start warm (they ran for seconds before a measured window);
mostly idle and newly forked backends start cold.

Left out: the poll's cost per socket awaiting a result (a few per thread: the queries in
flight) and the network between client and server (``options.think_time`` stands for it).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable

import simpy

from simulator.config.machine import LINE_BYTES
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.task import Task
from simulator.study.workload_model import PointSpec

from .backend import Backend, Category
from .churn import ChurnClient, ChurnLog, exit_backend, start_backend
from .options import PgOptions
from .population import Completed, Connection, Population
from .workloads import MIX, Context, Mix, Workload, mix_of, workload

START_SPREAD_NS = 50_000.0
"""Active clients start uniformly within this window (about two select-only transactions)."""


class Clients:
    """The SimPy processes of one point: each running backend's server loop and its client.

    Every active client is a pgbench thread (a scheduler task) driving one backend in a closed
    loop; the mostly-idle clients loop ``SELECT 1`` and a sleep, driven by the background
    pgbench process's threads (or, with none, at no CPU cost).
    """

    def __init__(self, spec: PointSpec, options: PgOptions, env: SimEnvironment,
                 scheduler: CpuScheduler, population: Population) -> None:
        self.spec = spec
        self.options = options
        self._epoll_sync = spec.machine.scheduler.epoll_sync_wakeup
        self.env = env
        self.scheduler = scheduler
        self.context = Context(population.algorithm, options.costs.statements,
                               options.costs.footprint_private_bytes,
                               options.costs.footprint_l3_bytes)
        self.mix: Mix | None = (mix_of(options.mix, options.batch) if spec.workload == MIX
                                else None)
        self.workload: Workload | None = (None if self.mix is not None
                                          else workload(spec.workload, options.batch))
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
        options = self.options
        rng = self.env.rng
        background = [connection for connection in running if not connection.active]
        n_threads = min(options.background_threads, len(background))
        for j in range(n_threads):
            share = background[j::n_threads]
            self.spawn(self._background_thread(
                self._client_task(f"pgbench-bg{j}", busy=False), share,
                self._background_phases(len(share))))
        for connection in running:
            backend = connection.backend
            assert backend.task is not None
            self._give_backend_working_set(backend.task, busy=connection.active)
            self.inboxes[backend.connection] = self.env.event()
            self.spawn(self._serve(backend))
            if connection.active:
                thread = self._client_task(f"pgbench{backend.connection}", busy=True)
                # Clients start a random fraction of a transaction apart, as real clients do
                # (otherwise identical clients would run in lockstep).
                phase = float(rng.uniform(0.0, START_SPREAD_NS))
                self.spawn(self._active_client(thread, connection, phase))
            elif n_threads == 0:
                (phase,) = self._background_phases(1)
                self.spawn(self._mostly_idle_client(connection, phase))
        if options.churns:
            self._start_churn()

    def _background_phases(self, connections: int) -> list[float]:
        """When each of a background thread's connections sends its first query.

        ``random``: uniformly within one sleep period. ``together``: at the run's start, a walk
        step (half of ``pgbench_loop`` per connection) apart, as pgbench's first pass reads the
        clock afresh for each connection whose sleep it starts.
        """
        options = self.options
        if options.background_start == "together":
            step_ns = (0.5 * options.costs.pgbench_loop_per_connection_cycles
                       / self.spec.machine.clock_ghz)
            return [index * step_ns for index in range(connections)]
        return [float(self.env.rng.uniform(0.0, options.costs.mostly_idle_sleep_ns))
                for _ in range(connections)]

    def _start_churn(self) -> None:
        """The postmaster, the connections arriving at the rate and the reconnecting clients."""
        spec, options = self.spec, self.options
        rng = self.env.rng
        self._postmaster = self.scheduler.new_task("postmaster")
        self.spawn(self._postmaster_loop(self._postmaster))
        if options.churn_rate_per_s > 0:
            interval = 1e9 / options.churn_rate_per_s
            self.spawn(self._arrivals(interval, float(rng.uniform(0.0, interval))))
        if options.churn_per_transaction:
            for k in range(spec.clients):
                client = ChurnClient()
                self.churn_clients.append(client)
                thread = self._client_task(f"pgbench-C{k}", busy=True)
                phase = float(rng.uniform(0.0, START_SPREAD_NS))
                self.spawn(self._reconnecting_client(thread, client, phase))

    def _client_task(self, name: str, busy: bool) -> Task:
        """A new pgbench thread's task, with the client's working set (``working_sets``).

        A pgbench thread is busy from pgbench's start: it starts warm (the steady state of the
        seconds pgbench ran before the window). ``busy``: it runs most of the time (an active
        client's thread, not the background's), so Linux's balancer has spread it
        (:attr:`~simulator.runtime.task.Task.busy`).
        """
        task = self.scheduler.new_task(name, busy=busy)
        if self.options.working_sets:
            size = self.options.costs.working_set.client
            task.set_working_set(size.private // LINE_BYTES, program="pgbench",
                                 code_lines=size.code // LINE_BYTES, warm_start=True)
        return task

    def _give_backend_working_set(self, task: Task, busy: bool = False) -> None:
        """A backend process's task gets the backend's working set (``working_sets``).

        ``busy``: an active connection's backend, warm from the transactions before the window;
        a mostly idle one finds its lines evicted after each sleep, and a forked one has
        never run: both start cold.
        """
        if self.options.working_sets:
            size = self.options.costs.working_set.backend
            task.set_working_set(size.private // LINE_BYTES, program="postgres",
                                 code_lines=size.code // LINE_BYTES, warm_start=busy)

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
        costs = self.options.costs
        task = backend.task
        assert task is not None
        if begin:
            backend.begin_transaction()
        for statements in work.round_trips:
            if client_task is not None:
                yield from client_task.run(costs.client_cycles / backend.clock_ghz)
            response = env.event()
            # The message wakes the backend up (its server loop renews the inbox on waking,
            # before it answers, so the next round trip finds a fresh one) through its epoll
            # wait: synchronous where the kernel keeps the socket's hint there.
            if client_task is not None:
                client_task.wakes(task, sync=self._epoll_sync)
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
        think = self.options.think_time_ns
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
        fork_ns = self.options.costs.connection.postmaster / self.spec.machine.clock_ghz
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
        costs = self.options.costs.connection
        pgprocno = yield from free.pop()
        backend = population.pool[pgprocno]
        task = self.scheduler.new_task(f"backend{backend.connection}")
        self._give_backend_working_set(task)
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
        spec, options = self.spec, self.options
        connect_ns = options.costs.connection.client / spec.machine.clock_ghz
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
            if options.think_time_ns:
                yield from thread.block_until(env.timeout(options.think_time_ns))

    def _background_thread(self, task: Task, connections: list[Connection],
                           phases_ns: list[float]) -> ProcessGenerator:
        """One thread of the background pgbench: its connections' ``SELECT 1`` from one poll.

        Each connection sleeps ``mostly_idle_sleep`` after its answer; the thread wakes when
        a sleep ends (its poll's timeout, a timer on its thread) or an answer arrives. A pass of
        its loop walks every connection (advancing them: ``client_cycles`` per answer read and
        per query sent), sends the queries due, walks every connection again (the next poll's
        socket set and timeout) and polls. Each walk costs half of ``pgbench_loop`` per
        connection.
        """
        env = self.env
        costs = self.options.costs
        sleep = costs.mostly_idle_sleep_ns
        select1 = workload("select1")
        (statements,) = select1.round_trips
        clock_ghz = connections[0].backend.clock_ghz
        client_ns = costs.client_cycles / clock_ghz
        walk_ns = 0.5 * costs.pgbench_loop_per_connection_cycles * len(connections) / clock_ghz
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
            if done or sending or walk_ns > 0.0:
                yield from task.run(walk_ns + (len(done) + len(sending)) * client_ns)
            for index in sending:
                backend = connections[index].backend
                assert backend.task is not None
                backend.begin_transaction()
                started[index] = env.now
                response = env.event()
                response.callbacks.append(on_answer(index))
                task.wakes(backend.task, sync=self._epoll_sync)
                self.inboxes[backend.connection].succeed((statements, response, task))
            if walk_ns > 0.0:
                yield from task.run(walk_ns)
            if answered or (due and due[0][0] <= env.now):
                continue
            if ready[0].triggered:
                ready[0] = env.event()
            if due:
                yield from task.wait(ready[0], due[0][0] - env.now)
            else:
                yield from task.block_until(ready[0])

    def _mostly_idle_client(self, connection: Connection, phase_ns: float) -> ProcessGenerator:
        sleep = self.options.costs.mostly_idle_sleep_ns
        yield self.env.timeout(phase_ns)
        select1 = workload("select1")
        while True:
            yield from self._round_trips(select1, connection.backend, connection.completed,
                                         self.env.now, None)
            yield self.env.timeout(sleep)
