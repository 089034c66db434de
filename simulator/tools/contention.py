"""Many threads on one line: the contention sweep of ``snapsim ccbench --contention``.

Loops of atomics (CAS loops, fetch-adds, load + CAS, perfbook's strict hand-offs, a read-mostly
line) by 1 to N threads placed on one core, one L3 domain or across sockets, each access issued at
the simulated clock against the machine's line service; the SOSP'13 loops of :mod:`.sosp13` run
through the same sweep. Columns: :data:`~simulator.tools.ccbench.CONTENTION_COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from simulator.config.machine import MachineConfig
from simulator.errors import ConfigError
from simulator.hardware.codes import AccessClass, Op
from simulator.hardware.machine import Machine
from simulator.hardware.topology import Topology
from simulator.runtime.atomic_word import WordVersion
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.tools.ccbench import CONTENTION_COLUMNS, PAGE, Tally, interleaved
from simulator.tools.sosp13 import (
    SOSP13_OPERATIONS,
    SOSP13_PLACEMENTS,
    filled_threads,
    sosp13_point,
)

OPERATIONS = ("cas-loop", "fetch-add", "load-cas", "handoff-cas", "handoff-load-cas",
              "read-mostly", "read-mostly-split")
"""Operations of :func:`contention_sweep`: ``cas-loop`` (load, then compare-and-swap until one
succeeds; a failed CAS returns the current value, so a retry issues no new load, as
``compare_exchange`` loops and PostgreSQL's ``LWLockAttemptLock`` do), ``fetch-add`` (one RMW),
``load-cas`` (one load, then one CAS whether or not it will succeed), and the strict hand-offs of
perfbook's ``cachetorture``: the threads take turns, each waiting until the previous one has
written, then ``handoff-cas`` issues a CAS (``blindcmpxchg``) and ``handoff-load-cas`` a load
then a CAS (``cmpxchg``, the read-then-CAS of ``LWLockAttemptLock``); one operation is one
hand-off. ``read-mostly`` is a line loaded by many threads and written by a few (the read-mostly
line of perf c2c reports): one thread in :data:`READ_MOSTLY_WRITER_EVERY` writes (a fetch-add
every :data:`READ_MOSTLY_WRITE_GAP_NS`), the others load it in a loop; its operations are the
loads that missed, its latency theirs. ``read-mostly-split`` is the same with the line split per
socket (per L3 domain on a one-socket machine), each copy homed on its own node, as a per-NUMA-node
copy of a read-mostly structure: a thread reads and writes its socket's copy only."""

READ_MOSTLY_WRITER_EVERY = 8
"""``read-mostly``: threads 0, 8, 16, ... of a placement write, the others read."""
READ_MOSTLY_WRITE_GAP_NS = 1_000.0
"""``read-mostly``: a writer's pause between two writes (ns)."""

PLACEMENTS = ("core", "socket", "cross")
"""Where :func:`contention_sweep` puts its threads: ``core`` (the SMT threads of one core),
``socket`` (one L3 domain: a socket on the Intel machines, a CCX on AMD; one thread per core
first, then the cores' SMT siblings) and ``cross`` (round-robin over the sockets, or over the L3
domains of a one-socket machine; inside each, in ``socket`` order)."""


def placement_units(config: MachineConfig, placement: str) -> list[list[int]]:
    """The hardware threads a placement may use, as lists filled in order.

    ``core`` and ``socket`` give one list (the threads of core 0 / of L3 domain 0, one thread per
    core before any SMT sibling); ``cross`` gives one list per socket (per L3 domain on a
    one-socket machine), which :func:`placed_threads` takes round-robin. A ``cross`` placement on a
    machine with a single L3 domain has nothing to cross and yields no list.

    Raises:
        ConfigError: unknown placement.
    """
    topo = config.topology
    per_core = topo.threads_per_core

    def in_order(cores: range) -> list[int]:
        return [core * per_core + k for k in range(per_core) for core in cores]

    cores_per_socket = topo.domains_per_socket * topo.cores_per_domain
    if placement == "core":
        return [list(range(per_core))]
    if placement == "socket":
        return [in_order(range(topo.cores_per_domain))]
    if placement == "cross":
        if topo.sockets > 1:
            return [in_order(range(s * cores_per_socket, (s + 1) * cores_per_socket))
                    for s in range(topo.sockets)]
        if topo.domains_per_socket > 1:
            per = topo.cores_per_domain
            return [in_order(range(d * per, (d + 1) * per)) for d in range(topo.domains_per_socket)]
        return []
    if placement == "fill":
        return [filled_threads(config, cores_per_socket * topo.sockets * per_core)]
    raise ConfigError("placement", f"unknown placement {placement!r} (choose from "
                      f"{', '.join((*PLACEMENTS, *SOSP13_PLACEMENTS))})")


def placement_capacity(config: MachineConfig, placement: str) -> int:
    """Most threads a placement can hold on a machine (0: the placement does not apply)."""
    return sum(len(unit) for unit in placement_units(config, placement))


def placed_threads(config: MachineConfig, placement: str, threads: int) -> list[int]:
    """The first ``threads`` hardware threads of a placement (round-robin over its lists).

    Raises:
        ConfigError: unknown placement, or more threads than it holds.
    """
    units = placement_units(config, placement)
    capacity = placement_capacity(config, placement)
    if not 1 <= threads <= capacity:
        raise ConfigError("threads", f"placement {placement!r} holds 1..{capacity} threads on "
                          f"{config.name}, asked for {threads}")
    return [units[i % len(units)][i // len(units)] for i in range(threads)]



def contention_point(
    config: MachineConfig,
    operation: str,
    thread_ids: list[int],
    duration_ns: float = 100_000.0,
    warmup_ns: float = 10_000.0,
) -> dict[str, float]:
    """Run ``operation`` in a tight loop on one line by every thread of ``thread_ids``.

    A SimPy process per thread issues each access at the current simulated time and sleeps for its
    cost (latency plus queueing on the line), as :func:`hot_line_rate` does. A CAS is an RMW
    access; it fails when another thread's value-changing RMW (a fetch-add or a successful CAS)
    was issued after this thread last read the value (its load, or its previous failed CAS,
    which returns the current value) and before this CAS, in simulation-time order, the order in
    which the machine serializes the line's transfers. A failed CAS still costs its RMW and takes
    the line, as ``lock cmpxchg`` does (Intel SDM, CMPXCHG: the destination receives a write cycle
    whatever the comparison's result); in ``cas-loop`` the loser keeps the line for its retry,
    which it issues at once, so the retry hits its own cache and succeeds. Counts cover accesses
    that end inside ``(warmup_ns, warmup_ns + duration_ns)``; no think time between operations.

    In the hand-off operations a thread waits for its turn (the previous thread's write) and
    issues its first access at that instant, as a spinning load that sees the new value would;
    its CAS then always succeeds.

    Left out: anything the machine itself leaves out (see its ``line_service`` rule), the
    instructions between accesses, and back-off.

    Returns:
        the counts of :data:`CONTENTION_COLUMNS` from ``ops`` to ``successes_per_s``.

    Raises:
        ConfigError: unknown operation, no threads, a repeated thread, or a non-positive window.
    """
    if operation in SOSP13_OPERATIONS:
        return sosp13_point(config, operation, thread_ids, duration_ns, warmup_ns)
    if operation not in OPERATIONS:
        raise ConfigError("operation", f"unknown operation {operation!r} (choose from "
                          f"{', '.join((*OPERATIONS, *SOSP13_OPERATIONS))})")
    if not thread_ids or len(set(thread_ids)) != len(thread_ids):
        raise ConfigError("threads", "needs one or more distinct hardware threads")
    if duration_ns <= 0 or warmup_ns < 0:
        raise ConfigError("duration", "the window must be positive and the warm-up non-negative")
    topology = Topology.from_config(config)
    split = operation == "read-mostly-split"
    if split:
        units = (config.topology.sockets if config.topology.sockets > 1
                 else config.topology.domains_per_socket)
        machine = Machine(interleaved(config), [k * PAGE for k in range(units)])
        line_of = {t: (topology.socket_of(t) if config.topology.sockets > 1
                       else topology.domain_of(t)) for t in thread_ids}
    else:
        machine = Machine(config, [0])
        line_of = dict.fromkeys(thread_ids, 0)
    env = SimEnvironment(seed=0)
    end_ns = warmup_ns + duration_ns
    tally = Tally()
    version = WordVersion()  # the line's value, in effect: the rule of every CAS

    def measured() -> bool:
        return warmup_ns < env.now <= end_ns

    def access(thread: int, op: Op, waits: list[float]) -> float:
        """Issue one access now; note its queueing; return its cost."""
        result = machine.access(thread, line_of[thread], op, now=env.now)
        waits.append(result.wait_ns)
        return result.cost_ns

    turns = [env.event() for _ in thread_ids]
    turns[0].succeed()
    order = {thread: index for index, thread in enumerate(thread_ids)}

    def worker(thread: int) -> ProcessGenerator:
        mine = order[thread]
        while True:
            if operation.startswith("handoff"):
                yield turns[mine]  # the previous thread's write is done: the spin sees it
                turns[mine] = env.event()
            start_ns = env.now
            waits: list[float] = []
            attempts = failures = 0
            if operation.startswith("read-mostly"):
                if mine % READ_MOSTLY_WRITER_EVERY == 0:
                    cost_ns = access(thread, Op.RMW, waits)
                    version.changed()
                    yield env.timeout(cost_ns + READ_MOSTLY_WRITE_GAP_NS)
                    continue
                result = machine.access(thread, line_of[thread], Op.LOAD, now=env.now)
                yield env.timeout(result.cost_ns)
                if result.access_class in (AccessClass.L1_HIT, AccessClass.L2_HIT):
                    continue  # only the loads that missed are counted
                waits.append(result.wait_ns)
            elif operation == "handoff-cas" or operation == "fetch-add":
                cost_ns = access(thread, Op.RMW, waits)
                version.changed()
                attempts = 1
                yield env.timeout(cost_ns)
            else:
                cost_ns = access(thread, Op.LOAD, waits)
                seen = version.count
                yield env.timeout(cost_ns)
                cost_ns = access(thread, Op.RMW, waits)
                failed = version.fails(seen)
                if not failed:
                    version.changed()
                attempts, failures = 1, int(failed)
                if failed and operation == "cas-loop":
                    # The failed CAS returned the current value and left the line in this
                    # core's cache; the retry is issued at once, so nobody takes the line in
                    # between and it succeeds.
                    retry = machine.access(thread, 0, Op.RMW, now=env.now + cost_ns)
                    cost_ns += retry.cost_ns
                    version.changed()
                    attempts += 1
                yield env.timeout(cost_ns)
            if operation.startswith("handoff"):
                turns[(mine + 1) % len(turns)].succeed()
            if measured():  # an operation counts, with its attempts, when it completes
                tally.ops += 1
                tally.attempts += attempts
                tally.failures += failures
                tally.latency_ns += env.now - start_ns
                tally.wait_ns += sum(waits)

    for thread in thread_ids:
        env.process(worker(thread))
    env.run(until=end_ns)
    ops = max(tally.ops, 1)
    duration_s = duration_ns * 1e-9
    successes = tally.attempts - tally.failures
    return {
        "ops": tally.ops,
        "ops_per_s": tally.ops / duration_s,
        "latency_ns": tally.latency_ns / ops if tally.ops else float("nan"),
        "wait_ns": tally.wait_ns / ops if tally.ops else float("nan"),
        "attempts": tally.attempts,
        "failures": tally.failures,
        "successes": successes,
        "failure_rate": tally.failures / tally.attempts if tally.attempts else float("nan"),
        "successes_per_s": successes / duration_s,
    }


def default_thread_counts(config: MachineConfig, placement: str | None = None) -> list[int]:
    """1, 2, 4, ... up to the threads a placement holds (default: the machine's), and that count."""
    total = (Topology.from_config(config).n_threads if placement is None
             else placement_capacity(config, placement))
    counts = [1 << k for k in range(total.bit_length()) if 1 << k <= total]
    return counts if not counts or counts[-1] == total else [*counts, total]


def contention_sweep(
    config: MachineConfig,
    operations: Sequence[str] = OPERATIONS,
    threads: Sequence[int] | None = None,
    placements: Sequence[str] = PLACEMENTS,
    duration_us: float = 100.0,
    warmup_us: float = 10.0,
) -> pd.DataFrame:
    """Throughput and latency of atomics on one line against threads, per placement.

    One :func:`contention_point` per operation, placement and thread count (default: each
    placement's :func:`default_thread_counts`); a count larger than a placement holds is skipped
    for that placement (``core`` holds the SMT threads of one core), so is ``cross`` on a machine
    with a single L3 domain. Returns a DataFrame with :data:`CONTENTION_COLUMNS`.

    Raises:
        ConfigError: an unknown operation or placement, a thread count outside 1..the machine's
            threads, a non-positive window, or nothing left to run.
    """
    for name, given, known in (("operations", operations, (*OPERATIONS, *SOSP13_OPERATIONS)),
                               ("placements", placements, (*PLACEMENTS, *SOSP13_PLACEMENTS))):
        unknown = [value for value in given if value not in known]
        if unknown or not given:
            raise ConfigError(name, f"expected some of {', '.join(known)}, got "
                              f"{', '.join(map(str, given)) or 'nothing'}")
    total = Topology.from_config(config).n_threads
    counts = [1] if threads is None else list(threads)
    bad = [n for n in counts if not 1 <= n <= total]
    if bad or not counts:
        raise ConfigError("threads", f"thread counts must be 1..{total} on {config.name}, got "
                          f"{', '.join(map(str, counts)) or 'nothing'}")
    if duration_us <= 0 or warmup_us < 0:
        raise ConfigError("duration_us", "the window must be positive and the warm-up "
                          "non-negative")
    topology = Topology.from_config(config)
    rows = []
    for placement in placements:
        capacity = placement_capacity(config, placement)
        wanted = default_thread_counts(config, placement) if threads is None else counts
        for n in sorted(set(wanted)):
            if n > capacity:
                continue
            ids = placed_threads(config, placement, n)
            spread = {
                "sockets_used": len({topology.socket_of(t) for t in ids}),
                "domains_used": len({topology.domain_of(t) for t in ids}),
                "cores_used": len({topology.core_of(t) for t in ids}),
            }
            for operation in operations:
                counted = contention_point(config, operation, ids, duration_us * 1e3,
                                           warmup_us * 1e3)
                rows.append({"machine": config.name, "operation": operation,
                             "placement": placement, "threads": n, **spread, **counted,
                             "duration_us": duration_us, "warmup_us": warmup_us})
    if not rows:
        raise ConfigError("threads", f"no thread count fits the placements "
                          f"{', '.join(placements)} on {config.name} (at most "
                          + ", ".join(f"{p}: {placement_capacity(config, p)}" for p in placements)
                          + ")")
    table = pd.DataFrame(rows, columns=list(CONTENTION_COLUMNS))
    return table.sort_values(["operation", "placement", "threads"],
                             key=_sweep_order, kind="stable").reset_index(drop=True)


def _sweep_order(column: pd.Series) -> pd.Series:
    order = {name: i for i, name in enumerate((*OPERATIONS, *SOSP13_OPERATIONS, *PLACEMENTS,
                                               *SOSP13_PLACEMENTS))}
    if column.name in ("operation", "placement"):
        return column.map(order)
    return column


