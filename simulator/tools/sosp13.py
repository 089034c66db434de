"""SOSP'13's tests of a shared line, run on the model, and their published figures.

T. David, R. Guerraoui, V. Trigonakis, "Everything You Always Wanted to Know About
Synchronization but Were Afraid to Ask", SOSP 2013: a naive ticket lock with N spinners,
fetch-and-increment with a pause, a store on a line k cores share and the MCS queue lock, each as
the authors' code runs them (``tudordavid/libslock``, ``trigonak/ccbench``), and
:func:`sosp13_comparison`, the model's rows beside the paper's (``snapsim ccbench --sosp13``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import NamedTuple

import pandas as pd

from simulator.config.machine import LINE_BYTES, MachineConfig
from simulator.errors import ConfigError
from simulator.hardware.codes import AccessClass, Op
from simulator.hardware.machine import AccessResult, Machine
from simulator.hardware.topology import Topology
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.tools.ccbench import PAGE, Tally, interleaved

SOSP13_OPERATIONS = ("ticket-spin", "fai-pause", "store-shared", "mcs-lock")
"""Operations after SOSP'13 (T. David, R. Guerraoui, V. Trigonakis, "Everything You Always Wanted
to Know About Synchronization but Were Afraid to Ask", SOSP 2013), each as the authors' code runs
it (``tudordavid/libslock``, ``trigonak/ccbench``), every load, store and atomic issued at the
clock: ``ticket-spin``, a naive ticket lock (``ticket.c`` without back-off: a fetch-and-increment
of ``tail``, then loads of ``head`` until it equals the ticket; the release loads ``head`` and
stores ``head + 1``; ``head`` and ``tail`` on one line, ``TICKET_ON_TW0_CLS 0``) acquired and at
once released by every thread (the paper's Figure 3); ``fai-pause``, a fetch-and-increment then
a pause (``atomic_bench.c`` with the pause of ``scripts/test.sh``; Figure 4); ``store-shared``,
a store on a line every other placed thread loaded since the storer's last store (ccbench's
``STORE_ON_SHARED``; Table 2 and section 5.2); ``mcs-lock``, the MCS queue lock of ``mcs.c`` around
a critical section that stores to one data line, with a pause after the release
(``stress_test.c`` with one lock; Figure 5). Not in the default sweep: name them in ``--ops``."""

SOSP13_PLACEMENTS = ("fill",)
"""Placements of the SOSP'13 tests: ``fill``, one thread per core in order, so that the first
socket (L3 domain) fills before the next ("we allocate threads on the same socket and continue
on the next socket once all cores of the previous one have been used", section 5.4), then the
SMT siblings in the same order."""

SPIN_PAUSE_CYCLES = 10.0
"""The ``PAUSE`` of a spin loop, in core cycles. ASSUMPTION (range 5-40): about 10 cycles on the
Westmere and family 10h cores of SOSP'13 (Skylake's is about 140). With the L1 hit it is one
poll: a spinner sees an invalidation of its copy at a uniformly random point of its poll."""

MCS_PAUSE_CYCLES = 100.0
"""``mcs-lock``: the pause after a release, in core cycles: libslock's ``scripts/test.sh`` runs
the one-lock stress test with ``-p 100`` (``inter_acq_dur_one``). ASSUMPTION (range 50-150)
that a cycle of ``cpause`` is a core cycle (it is ``pause`` / ``nop`` instructions scaled by the
platform's ``NOP_DURATION``)."""


def fai_pause_cycles(threads: int) -> float:
    """``fai-pause``: the pause after each fetch-and-increment, in core cycles, by thread count.

    libslock's ``scripts/test.sh`` (``pause_atomic``): 0 for one thread, 10 for two, 30 up to 6,
    80 up to 12, 150 beyond. ASSUMPTION (as :data:`MCS_PAUSE_CYCLES`) that they are core cycles.
    """
    for limit, cycles in ((1, 0.0), (2, 10.0), (6, 30.0), (12, 80.0)):
        if threads <= limit:
            return cycles
    return 150.0


def filled_threads(config: MachineConfig, threads: int) -> list[int]:
    """The first ``threads`` hardware threads of the ``fill`` placement.

    Raises:
        ConfigError: more threads than the machine has, or fewer than one.
    """
    topo = config.topology
    total = topo.sockets * topo.domains_per_socket * topo.cores_per_domain * topo.threads_per_core
    if not 1 <= threads <= total:
        raise ConfigError("threads", f"placement 'fill' holds 1..{total} threads on "
                          f"{config.name}, asked for {threads}")
    cores = total // topo.threads_per_core
    order = [core * topo.threads_per_core + k for k in range(topo.threads_per_core)
             for core in range(cores)]
    return order[:threads]


START_SPREAD_NS = 1_000.0
"""The SOSP'13 loops start each thread after a random delay below this (ns). ASSUMPTION (range
0.1-10 us): threads leave a start barrier over about a microsecond. It sets the order in which
they first reach the line; the line serves its queue in request order, so with a fixed pause
that order then repeats (see docs/investigations/contended-lines.md, "SOSP'13 rows")."""


class _Watch:
    """Per line, an event that fires when a write to it completes (what a spinner waits for)."""

    def __init__(self, env: SimEnvironment, n_lines: int) -> None:
        self.env = env
        self.events = [env.event() for _ in range(n_lines)]

    def written(self, line: int) -> None:
        """A write to ``line`` completed: wake its spinners."""
        event, self.events[line] = self.events[line], self.env.event()
        event.succeed()


@dataclasses.dataclass(slots=True)
class _Loop:
    """A SOSP'13 loop on one machine: clock, accesses, spinning, and what its window saw."""

    config: MachineConfig
    machine: Machine
    env: SimEnvironment
    warmup_ns: float
    end_ns: float
    watch: _Watch
    tally: Tally = dataclasses.field(default_factory=Tally)
    reads: int = 0
    read_wait_ns: float = 0.0
    read_latency_ns: float = 0.0
    holder: int | None = None
    """The thread inside the lock's critical section, if any (a lock loop checks exclusion)."""

    @classmethod
    def on(cls, config: MachineConfig, addresses: list[int], duration_ns: float,
           warmup_ns: float, seed: int) -> _Loop:
        if duration_ns <= 0 or warmup_ns < 0:
            raise ConfigError("duration", "the window must be positive and the warm-up "
                              "non-negative")
        env = SimEnvironment(seed=seed)
        return cls(config, Machine(config, addresses), env, warmup_ns, warmup_ns + duration_ns,
                   _Watch(env, len(addresses)))

    def start(self, worker: Callable[[int], ProcessGenerator], thread_ids: list[int]) -> None:
        """Start a worker per thread and run the window.

        Each thread starts after a random delay in [0, :data:`START_SPREAD_NS`): the threads
        leave the start barrier one by one.
        """

        def started(thread: int) -> ProcessGenerator:
            yield self.env.timeout(float(self.env.rng.uniform(0.0, START_SPREAD_NS)))
            yield from worker(thread)

        for thread in thread_ids:
            self.env.process(started(thread))
        self.env.run(until=self.end_ns)

    def measured(self) -> bool:
        return self.warmup_ns < self.env.now <= self.end_ns

    def access(self, thread: int, line: int, op: Op, waits: list[float]) -> AccessResult:
        """Issue one access now and note its queueing (the caller waits its cost)."""
        result = self.machine.access(thread, line, op, now=self.env.now)
        waits.append(result.wait_ns)
        return result

    def write(self, thread: int, line: int, op: Op, waits: list[float],
              visible: Callable[[], None] | None = None) -> ProcessGenerator:
        """A store or atomic: issue it, wait its cost, then wake the line's spinners.

        ``visible`` changes the stored value when the write completes (the new value is what a
        load served after it sees; a load that hits the old copy before then sees the old one).
        An atomic's own result is taken by the caller at the issue: atomics on a line are
        served in the order of their issue.
        """
        result = self.access(thread, line, op, waits)
        yield self.env.timeout(result.cost_ns)
        if visible is not None:
            visible()
        self.watch.written(line)

    def spin(self, thread: int, line: int, done: Callable[[], bool],
             waits: list[float]) -> ProcessGenerator:
        """Load ``line`` until ``done()`` holds for the value a load returns (at its end).

        While the thread's copy stays valid its polls hit the L1 and change nothing, so it
        sleeps until a write to the line completes, then issues its load at a random point of
        its poll (L1 hit plus :data:`SPIN_PAUSE_CYCLES`). A load that missed counts as a read.
        """
        poll_ns = self.config.l1d.latency_ns + SPIN_PAUSE_CYCLES / self.config.clock_ghz
        while True:
            result = self.access(thread, line, Op.LOAD, waits)
            missed = result.access_class not in (AccessClass.L1_HIT, AccessClass.L2_HIT)
            yield self.env.timeout(result.cost_ns)
            seen = done()
            if missed and self.measured():
                self.reads += 1
                self.read_wait_ns += result.wait_ns
                self.read_latency_ns += result.latency_ns
            if seen:
                return
            if self.machine.holds(thread, line):
                yield self.watch.events[line]
                yield self.env.timeout(float(self.env.rng.uniform(0.0, poll_ns)))

    def enter(self, thread: int) -> None:
        """``thread`` enters the critical section; nobody else may be in it."""
        if self.holder is not None:
            raise RuntimeError(f"threads {self.holder} and {thread} both hold the lock at "
                               f"{self.env.now} ns")
        self.holder = thread

    def leave(self, thread: int) -> None:
        """``thread`` leaves the critical section (before its release becomes visible)."""
        self.holder = None

    def count(self, start_ns: float, waits: list[float], attempts: int = 1) -> None:
        """One operation completed now, begun at ``start_ns``."""
        if self.measured():
            self.tally.ops += 1
            self.tally.attempts += attempts
            self.tally.latency_ns += self.env.now - start_ns
            self.tally.wait_ns += sum(waits)

    def result(self) -> dict[str, float]:
        """What the window saw.

        The counts of :data:`~simulator.tools.ccbench.CONTENTION_COLUMNS` from ``ops`` to
        ``successes_per_s``, plus
        ``reads_per_op`` (spinners' loads that missed, per operation), ``read_wait_ns`` and
        ``read_latency_ns`` (their mean queueing and latency).
        """
        tally = self.tally
        ops = max(tally.ops, 1)
        duration_s = (self.end_ns - self.warmup_ns) * 1e-9
        nan = float("nan")
        return {
            "ops": tally.ops,
            "ops_per_s": tally.ops / duration_s,
            "latency_ns": tally.latency_ns / ops if tally.ops else nan,
            "wait_ns": tally.wait_ns / ops if tally.ops else nan,
            "attempts": tally.attempts,
            "failures": tally.failures,
            "successes": tally.attempts - tally.failures,
            "failure_rate": tally.failures / tally.attempts if tally.attempts else nan,
            "successes_per_s": (tally.attempts - tally.failures) / duration_s,
            "reads_per_op": self.reads / ops if tally.ops else nan,
            "read_wait_ns": self.read_wait_ns / self.reads if self.reads else nan,
            "read_latency_ns": self.read_latency_ns / self.reads if self.reads else nan,
        }


def _distinct(thread_ids: list[int]) -> None:
    if not thread_ids or len(set(thread_ids)) != len(thread_ids):
        raise ConfigError("threads", "needs one or more distinct hardware threads")


def ticket_point(config: MachineConfig, thread_ids: list[int], duration_ns: float = 100_000.0,
                 warmup_ns: float = 10_000.0, *, pause_ns: float = 0.0,
                 critical_lines: int = 0, seed: int = 0) -> dict[str, float]:
    """``ticket-spin``: every thread acquires a naive ticket lock and at once releases it.

    libslock's ``ticket_acquire`` without back-off: ``my = FAI(&tail)``, then load ``head``
    until it equals ``my``; ``ticket_release``: ``head++``, a load and a store. ``head`` and
    ``tail`` share the line (``TICKET_ON_TW0_CLS 0``), so a newcomer's FAI also invalidates the
    spinners, who re-read. ``critical_lines`` stores to as many data lines in the critical
    section (0: SOSP'13 Figure 3's "acquiring and immediately releasing"); ``pause_ns`` after
    the release. Every line is homed by the machine's placement (node 0 in the SOSP'13 files).

    One operation is one acquire + release; ``ops_per_s`` is the hand-off rate and
    ``latency_ns`` the time from the FAI to the end of the release (Figure 3's latency).
    """
    _distinct(thread_ids)
    loop = _Loop.on(config, [k * LINE_BYTES for k in range(1 + critical_lines)], duration_ns,
                    warmup_ns, seed)
    lock = 0
    word = {"head": 0, "tail": 0}

    def released() -> None:
        word["head"] += 1

    def my_turn(ticket: int) -> bool:
        return word["head"] == ticket

    def worker(thread: int) -> ProcessGenerator:
        while True:
            start_ns = loop.env.now
            waits: list[float] = []
            mine = word["tail"]
            word["tail"] += 1
            yield from loop.write(thread, lock, Op.RMW, waits)
            yield from loop.spin(thread, lock, functools.partial(my_turn, mine), waits)
            loop.enter(thread)
            for line in range(1, 1 + critical_lines):
                yield from loop.write(thread, line, Op.STORE, waits)
            result = loop.access(thread, lock, Op.LOAD, waits)
            yield loop.env.timeout(result.cost_ns)
            loop.leave(thread)
            yield from loop.write(thread, lock, Op.STORE, waits, released)
            loop.count(start_ns, waits)
            if pause_ns > 0:
                yield loop.env.timeout(pause_ns)

    loop.start(worker, thread_ids)
    return loop.result()


def fai_pause_point(config: MachineConfig, thread_ids: list[int],
                    duration_ns: float = 100_000.0, warmup_ns: float = 10_000.0, *,
                    pause_ns: float | None = None, seed: int = 0) -> dict[str, float]:
    """``fai-pause``: fetch-and-increment on one line, then a pause (SOSP'13 Figure 4).

    ``atomic_bench.c`` (``TEST_FAI``, one entry): ``FAI_U8``, then ``cpause(op_pause)``. The
    pause defaults to :func:`fai_pause_cycles` of the thread count at the machine's clock.
    ``latency_ns`` is the FAI's own time (its queueing included), not the pause.
    """
    _distinct(thread_ids)
    if pause_ns is None:
        pause_ns = fai_pause_cycles(len(thread_ids)) / config.clock_ghz
    loop = _Loop.on(config, [0], duration_ns, warmup_ns, seed)

    def worker(thread: int) -> ProcessGenerator:
        while True:
            start_ns = loop.env.now
            waits: list[float] = []
            yield from loop.write(thread, 0, Op.RMW, waits)
            loop.count(start_ns, waits)
            if pause_ns:
                yield loop.env.timeout(pause_ns)

    loop.start(worker, thread_ids)
    return loop.result()


def store_shared_point(config: MachineConfig, thread_ids: list[int],
                       repetitions: int = 4) -> dict[str, float]:
    """``store-shared``: the first thread stores on a line every other thread loaded.

    ccbench's ``STORE_ON_SHARED`` with ``len(thread_ids) - 1`` sharers: the storer stores, the
    sharers load one after the other, then the storer stores again, which is timed (its copy is
    then Shared, or Owned on MOESI: an upgrade that invalidates every sharer). Run
    ``repetitions`` times after one warm-up round, one access at a time, so nothing queues.
    ``latency_ns`` is the timed store's (the other columns count the timed stores).
    """
    _distinct(thread_ids)
    machine = Machine(config, [0])
    storer, sharers = thread_ids[0], thread_ids[1:]
    now = 0.0
    latencies = []
    for repetition in range(repetitions + 1):
        result = machine.access(storer, 0, Op.STORE, now=now)
        now += result.cost_ns
        if repetition:
            latencies.append(result.latency_ns)
        for sharer in sharers:
            now += machine.access(sharer, 0, Op.LOAD, now=now).cost_ns
    latency_ns = sum(latencies) / len(latencies)
    return {"ops": len(latencies), "ops_per_s": float("nan"), "latency_ns": latency_ns,
            "wait_ns": 0.0, "attempts": len(latencies), "failures": 0,
            "successes": len(latencies), "failure_rate": 0.0, "successes_per_s": float("nan")}


def mcs_point(config: MachineConfig, thread_ids: list[int], duration_ns: float = 100_000.0,
              warmup_ns: float = 10_000.0, *, pause_ns: float | None = None,
              critical_lines: int = 1, seed: int = 0) -> dict[str, float]:
    """``mcs-lock``: every thread acquires one MCS lock, stores to a data line, releases, pauses.

    libslock's ``mcs_acquire``: ``I->next = NULL``; ``pred = SWAP(L, I)``; if there was one,
    ``I->waiting = 1``, ``pred->next = I`` and load ``I->waiting`` until it is 0;
    ``mcs_release``: load ``I->next``; if none, ``CAS(L, I, NULL)``, and if that fails load
    ``I->next`` until it is set; then ``succ->waiting = 0``. A thread's queue node (``waiting``
    and ``next``, one line) is homed on its own node (SOSP'13: "each thread allocates its local
    data from the local memory node"); the lock and the data lines on node 0. The critical
    section stores to ``critical_lines`` data lines (``stress_test -c 1 -w 0``); the pause
    defaults to :data:`MCS_PAUSE_CYCLES`. One operation is one acquire + release;
    ``ops_per_s`` is the lock's throughput (Figure 5).
    """
    _distinct(thread_ids)
    if pause_ns is None:
        pause_ns = MCS_PAUSE_CYCLES / config.clock_ghz
    topology = Topology.from_config(config)
    nodes = len(config.memory.home_nodes)
    node_of_domain = {domain: node for node, home in enumerate(config.memory.home_nodes)
                      for domain in home.near_domains}
    # Interleaved placement: page p is homed on node p % nodes. Lock and data lines in page 0.
    addresses = [k * LINE_BYTES for k in range(1 + critical_lines)]
    qnode = {}
    for index, thread in enumerate(thread_ids):
        node = node_of_domain.get(topology.domain_of(thread), 0)
        qnode[thread] = len(addresses)
        addresses.append((node + nodes * (1 + index)) * PAGE)
    loop = _Loop.on(interleaved(config), addresses, duration_ns, warmup_ns, seed)
    lock = 0
    state: dict[str, int | None] = {"tail": None}
    next_of: dict[int, int | None] = dict.fromkeys(thread_ids)
    waiting = dict.fromkeys(thread_ids, False)

    def set_next(owner: int, value: int | None) -> None:
        next_of[owner] = value

    def set_waiting(owner: int, value: bool) -> None:
        waiting[owner] = value

    def worker(thread: int) -> ProcessGenerator:
        mine = qnode[thread]
        while True:
            start_ns = loop.env.now
            waits: list[float] = []
            yield from loop.write(thread, mine, Op.STORE, waits, lambda: set_next(thread, None))
            pred = state["tail"]
            state["tail"] = thread
            yield from loop.write(thread, lock, Op.RMW, waits)
            attempts = 1
            if pred is not None:
                yield from loop.write(thread, mine, Op.STORE, waits,
                                      lambda: set_waiting(thread, True))
                yield from loop.write(thread, qnode[pred], Op.STORE, waits,
                                      functools.partial(set_next, pred, thread))
                yield from loop.spin(thread, mine, lambda: not waiting[thread], waits)
            loop.enter(thread)
            for line in range(1, 1 + critical_lines):
                yield from loop.write(thread, line, Op.STORE, waits)
            loop.leave(thread)
            result = loop.access(thread, mine, Op.LOAD, waits)
            yield loop.env.timeout(result.cost_ns)
            succ = next_of[thread]
            if succ is None:
                released = state["tail"] == thread
                if released:
                    state["tail"] = None
                attempts += 1
                yield from loop.write(thread, lock, Op.RMW, waits)
                if not released:
                    yield from loop.spin(thread, mine, lambda: next_of[thread] is not None,
                                         waits)
                    succ = next_of[thread]
            if succ is not None:
                yield from loop.write(thread, qnode[succ], Op.STORE, waits,
                                      functools.partial(set_waiting, succ, False))
            loop.count(start_ns, waits, attempts)
            if pause_ns:
                yield loop.env.timeout(pause_ns)

    loop.start(worker, thread_ids)
    return loop.result()


def sosp13_point(config: MachineConfig, operation: str, thread_ids: list[int],
                 duration_ns: float = 100_000.0, warmup_ns: float = 10_000.0) -> dict[str, float]:
    """One point of a :data:`SOSP13_OPERATIONS` operation, with each test's defaults.

    Raises:
        ConfigError: unknown operation, no threads or a repeated one, a non-positive window.
    """
    if operation == "ticket-spin":
        return ticket_point(config, thread_ids, duration_ns, warmup_ns)
    if operation == "fai-pause":
        return fai_pause_point(config, thread_ids, duration_ns, warmup_ns)
    if operation == "store-shared":
        return store_shared_point(config, thread_ids)
    if operation == "mcs-lock":
        return mcs_point(config, thread_ids, duration_ns, warmup_ns)
    raise ConfigError("operation", f"unknown operation {operation!r} (choose from "
                      f"{', '.join(SOSP13_OPERATIONS)})")


# ---------------------------------------------------------------------- SOSP'13 comparison

class Sosp13Row(NamedTuple):
    """One published SOSP'13 figure and where the model's counterpart runs."""

    operation: str
    where: str
    """``fill`` for the loops (``threads`` threads of the ``fill`` placement); for
    ``store-shared`` where the two sharers are (``same-die``, ``same-package``, ``one-hop``,
    ``two-hops``: the model has one class for both) or ``all`` (every other core shares)."""
    threads: int
    published: float
    unit: str
    source: str


_FIG3 = "Fig. 3, naive ticket lock, acquire+release latency / threads (digitized)"
_FIG4 = "Fig. 4, FAI throughput (digitized)"
_FIG5 = "Fig. 5, MCS, 1 / throughput (digitized)"
_TABLE2 = "Table 2, store on Shared, 2 sharers"

SOSP13_PUBLISHED: dict[str, tuple[Sosp13Row, ...]] = {
    "opteron-6172-4s": (
        *(Sosp13Row("ticket-spin", "fill", n, cycles, "cycles per hand-off", _FIG3)
          for n, cycles in ((2, 515), (4, 699), (6, 981), (8, 1588), (10, 2123), (12, 2615),
                            (14, 3345), (16, 3996), (18, 4601), (20, 5411), (22, 6121))),
        Sosp13Row("ticket-spin", "fill", 48, 15_000, "cycles per hand-off",
                  "section 5.3 text: 720K cycles per acquire+release at 48 threads"),
        *(Sosp13Row("fai-pause", "fill", n, mops, "Mops/s", _FIG4)
          for n, mops in ((1, 96), (2, 36), (10, 11.5), (11, 11.3), (20, 9.3), (24, 9.7),
                          (30, 9.1), (40, 8.5), (48, 8.8))),
        Sosp13Row("store-shared", "same-die", 3, 246, "cycles", _TABLE2),
        Sosp13Row("store-shared", "same-package", 3, 255, "cycles", _TABLE2),
        Sosp13Row("store-shared", "one-hop", 3, 286, "cycles", _TABLE2),
        Sosp13Row("store-shared", "two-hops", 3, 296, "cycles", _TABLE2),
        Sosp13Row("store-shared", "all", 48, 296, "cycles", "section 5.2, all 48 cores share"),
        *(Sosp13Row("mcs-lock", "fill", n, ns, "ns per acquisition", _FIG5)
          for n, ns in ((2, 483), (6, 413), (12, 500), (24, 617), (36, 637), (48, 662))),
    ),
    "westmere-ex-80c": (
        *(Sosp13Row("fai-pause", "fill", n, mops, "Mops/s", _FIG4)
          for n, mops in ((1, 133), (2, 39.8), (10, 21.9), (11, 10.1), (20, 9.7), (30, 8.0),
                          (40, 8.3), (50, 8.7), (80, 9.1))),
        Sosp13Row("store-shared", "same-die", 3, 116, "cycles", _TABLE2),
        Sosp13Row("store-shared", "one-hop", 3, 318, "cycles", _TABLE2),
        Sosp13Row("store-shared", "two-hops", 3, 428, "cycles", _TABLE2),
        Sosp13Row("store-shared", "all", 80, 445, "cycles", "section 5.2, all 80 cores share"),
        *(Sosp13Row("mcs-lock", "fill", n, ns, "ns per acquisition", _FIG5)
          for n, ns in ((2, 222), (10, 188), (11, 283), (20, 397), (30, 526), (40, 578),
                        (50, 599), (60, 625), (70, 654), (80, 654))),
    ),
}
"""SOSP'13's published figures per machine file (T. David, R. Guerraoui, V. Trigonakis, SOSP
2013). Table 2 and the text are exact; the figures' values were digitized from the PDF's vector
paths (about +-0.5 % of each axis). Figure 3 plots the latency of one acquire + release, which
in a saturated FIFO lock is ``threads`` hand-offs: the row divides it by the thread count."""

SOSP13_COLUMNS = ("machine", "rule", "operation", "where", "threads", "model", "model_spread",
                  "published", "unit", "ratio", "reads_per_op", "read_wait_ns", "source")
"""Columns of :func:`sosp13_comparison`: ``model`` is the mean over the seeds and
``model_spread`` (max - min) / mean; ``ratio`` is model / published in ``unit``;
``reads_per_op`` and ``read_wait_ns`` (locks only) count the spinners' loads that missed per
acquisition and their mean queueing at the line's home."""


def store_shared_threads(config: MachineConfig, where: str) -> list[int]:
    """Storer first, then the sharers, for a ``store-shared`` row's ``where``.

    Raises:
        ConfigError: a ``where`` the machine does not have.
    """
    topo = config.topology
    tpc = topo.threads_per_core
    per_socket = topo.domains_per_socket * topo.cores_per_domain
    cores = {"same-die": (0, 1, 2), "same-package": (0, topo.cores_per_domain,
                                                     topo.cores_per_domain + 1),
             "one-hop": (0, per_socket, per_socket + 1), "two-hops": (0, per_socket,
                                                                      per_socket + 1)}
    if where == "all":
        return [core * tpc for core in range(topo.sockets * per_socket)]
    if where not in cores or (where == "same-package" and topo.domains_per_socket < 2) or (
            where in ("one-hop", "two-hops") and topo.sockets < 2) or (
            where == "same-die" and topo.cores_per_domain < 3):
        raise ConfigError("where", f"{where!r} does not exist on {config.name}")
    return [core * tpc for core in cores[where]]


def sosp13_comparison(config: MachineConfig, seeds: int = 3,
                      rows: Sequence[Sosp13Row] | None = None) -> pd.DataFrame:
    """Run the SOSP'13 rows of a machine on the model and set them beside the published ones.

    ``rows`` defaults to :data:`SOSP13_PUBLISHED` for the machine's name. Loops run ``seeds``
    seeds (the threads' start order, :data:`START_SPREAD_NS`): the ticket lock 1 ms after
    0.2 ms of warm-up, the others 0.2 ms after 20 us. Returns :data:`SOSP13_COLUMNS`.

    Raises:
        ConfigError: no published rows for the machine and none given, or ``seeds`` < 1.
    """
    if rows is None:
        rows = SOSP13_PUBLISHED.get(config.name, ())
    if not rows:
        raise ConfigError("machine", f"no SOSP'13 rows for {config.name} (published rows: "
                          f"{', '.join(SOSP13_PUBLISHED)})")
    if seeds < 1:
        raise ConfigError("seeds", f"must be at least 1, got {seeds}")
    clock_ghz = config.clock_ghz
    table = []
    for row in rows:
        values: list[float] = []
        extra: dict[str, list[float]] = {"reads_per_op": [], "read_wait_ns": []}
        for seed in range(seeds if row.operation != "store-shared" else 1):
            if row.operation == "store-shared":
                point = store_shared_point(config, store_shared_threads(config, row.where))
                values.append(point["latency_ns"] * clock_ghz)
                continue
            ids = filled_threads(config, row.threads)
            if row.operation == "ticket-spin":
                point = ticket_point(config, ids, 1_000_000.0, 200_000.0, seed=seed)
                values.append(1e9 / point["ops_per_s"] * clock_ghz)
            elif row.operation == "fai-pause":
                point = fai_pause_point(config, ids, 200_000.0, 20_000.0, seed=seed)
                values.append(point["ops_per_s"] / 1e6)
            elif row.operation == "mcs-lock":
                point = mcs_point(config, ids, 200_000.0, 20_000.0, seed=seed)
                values.append(1e9 / point["ops_per_s"])
            else:
                raise ConfigError("operation", f"no SOSP'13 row runs {row.operation!r}")
            for key, kept in extra.items():
                kept.append(point.get(key, float("nan")))
        model = sum(values) / len(values)
        table.append({
            "machine": config.name, "rule": config.line_service.rule,
            "operation": row.operation, "where": row.where, "threads": row.threads,
            "model": model, "model_spread": (max(values) - min(values)) / model if model else 0.0,
            "published": row.published, "unit": row.unit, "ratio": model / row.published,
            **{key: sum(kept) / len(kept) if kept else float("nan")
               for key, kept in extra.items()},
            "source": f"SOSP'13 {row.source}",
        })
    return pd.DataFrame(table, columns=list(SOSP13_COLUMNS))
