"""Where a waking or pulled task goes: the scheduler's searches over its hardware threads.

Functions over plain per-thread state (who holds each thread, the fully idle cores, the run
queues), after Linux's ``kernel/sched/fair.c``: ``select_idle_sibling`` of Linux 5.8 for a
wake-up, the LLC domain with the most idle threads for a busy task's first placement (the
spread the load balancer keeps between domains), the lowest idle core for any other, and
``find_busiest_queue`` for new-idle and periodic balancing. :class:`ThreadLayout` holds the
machine's fixed tables they scan. Left out: ``SIS_PROP``'s bound on the idle scan,
``wake_wide``, cache-hotness, CPU affinity and the scheduling domains' imbalance rules. The
caller (:class:`simulator.runtime.scheduler.CpuScheduler`) decides when each search runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simulator.hardware.topology import Topology

__all__ = ["ThreadLayout", "busiest_queue", "first_thread", "idle_core",
           "select_idle_sibling", "shortest_queue"]


@dataclass(frozen=True, slots=True)
class ThreadLayout:
    """The machine's fixed per-thread tables, indexed by hardware thread, core or LLC domain.

    Attributes:
        thread_core: core of each thread.
        core_domain: LLC domain of each core.
        siblings: SMT siblings of each thread (itself excluded).
        thread_domain: LLC domain of each thread.
        llc_order: per LLC domain, its threads in Linux's CPU numbering (first threads of every
            core, then the second ones: ``(SMT index, core)`` order), the order of its scans.
        llc_position: position of each thread in its domain's ``llc_order``.
        core_first_thread: first hardware thread of each core.
    """

    thread_core: list[int]
    core_domain: list[int]
    siblings: list[tuple[int, ...]]
    thread_domain: list[int]
    llc_order: list[list[int]]
    llc_position: list[int]
    core_first_thread: list[int]

    @classmethod
    def of(cls, topology: Topology) -> ThreadLayout:
        """The tables of ``topology``."""
        n = topology.n_threads
        thread_core = [topology.core_of(t) for t in range(n)]
        core_domain = [topology.domain_of_core(c) for c in range(topology.n_cores)]
        siblings = [topology.siblings(t) for t in range(n)]
        thread_domain = [core_domain[core] for core in thread_core]
        llc_order: list[list[int]] = [[] for _ in range(topology.n_domains)]
        for thread in sorted(range(n), key=lambda t: (t - topology.threads_of_core(
                thread_core[t]).start, thread_core[t])):
            llc_order[thread_domain[thread]].append(thread)
        llc_position = [0] * n
        for order in llc_order:
            for position, thread in enumerate(order):
                llc_position[thread] = position
        core_first_thread = [topology.threads_of_core(core).start
                             for core in range(topology.n_cores)]
        return cls(thread_core, core_domain, siblings, thread_domain, llc_order, llc_position,
                   core_first_thread)


def select_idle_sibling(layout: ThreadLayout, holder: Sequence[object | None],
                        idle_cores: Sequence[Sequence[int]], core_busy: Sequence[int],
                        target: int, previous: int | None,
                        recent: int | None) -> tuple[int | None, bool]:
    """Linux 5.8's ``select_idle_sibling``: an idle thread in ``target``'s LLC, or ``None``.

    In order: the target; the previous thread; the task's ``recent`` (recently used) thread;
    the first thread of a fully idle core, scanning the LLC in Linux's CPU numbering from the
    target (``select_idle_core``); the first idle thread after the target (``select_idle_cpu``,
    not bounded here by ``SIS_PROP``).

    Returns:
        The thread (``None``: no idle thread in the LLC), and whether it is ``recent`` taken as
        such (the task's previous thread then becomes its recent one).
    """
    if holder[target] is None:
        return target, False
    thread_domain = layout.thread_domain
    domain = thread_domain[target]
    if (previous is not None and previous != target and thread_domain[previous] == domain
            and holder[previous] is None):
        return previous, False
    if (recent is not None and recent != previous and recent != target
            and thread_domain[recent] == domain and holder[recent] is None):
        return recent, True
    order = layout.llc_order[domain]
    start = layout.llc_position[target]
    n = len(order)
    if idle_cores[domain]:
        thread_core = layout.thread_core
        for i in range(n):
            thread = order[(start + i) % n]
            if core_busy[thread_core[thread]] == 0:
                return thread, False
    for i in range(1, n):
        thread = order[(start + i) % n]
        if holder[thread] is None:
            return thread, False
    return None, False


def first_thread(layout: ThreadLayout, idle_threads: Sequence[int],
                 idle_cores: Sequence[Sequence[int]]) -> int:
    """A task's first thread: its lowest fully idle core or idle thread of the idlest domain.

    The LLC domain with the most idle threads (the lowest on a tie) takes the task: its lowest
    fully idle core's first thread, else its lowest idle thread. Linux places a new task
    (``find_idlest_cpu``) on the idlest group of each domain level below the NUMA one, but keeps
    it on its parent's node while that node has an idle CPU; the load balancer then evens the
    running tasks between the nodes (``calculate_imbalance``: with ``SD_PREFER_SIBLING``, half
    the difference once it exceeds one task; ``adjust_numa_imbalance`` leaves two or fewer
    alone), moving running tasks by active balancing after ``cache_nice_tries`` + 2 failed
    attempts, every ``balance_interval`` (as many ms as the domain has CPUs). That takes about
    a second, longer than a simulated window, so a first placement takes the balanced state at
    once: a pair of tasks that wake each other follows the one placed first, and pairs spread
    evenly over the domains.

    Args:
        layout: the machine's thread tables.
        idle_threads: the idle threads, in ascending order (not empty).
        idle_cores: per LLC domain, its fully idle cores in ascending order.
    """
    thread_domain = layout.thread_domain
    idle_per_domain = [0] * len(idle_cores)
    for thread in idle_threads:
        idle_per_domain[thread_domain[thread]] += 1
    domain = idle_per_domain.index(max(idle_per_domain))
    cores = idle_cores[domain]
    if cores:
        return layout.core_first_thread[cores[0]]
    return next(thread for thread in idle_threads if thread_domain[thread] == domain)


def idle_core(layout: ThreadLayout, idle_cores: Sequence[Sequence[int]],
              previous: int | None) -> int | None:
    """Lowest fully idle core, of the ``previous`` thread's domain first, or ``None``."""
    if previous is not None:
        local = idle_cores[layout.core_domain[layout.thread_core[previous]]]
        if local:
            return local[0]
    for cores in idle_cores:
        if cores:
            return cores[0]
    return None


def shortest_queue(queues: Sequence[Sequence[object]], per_cpu: bool) -> int:
    """The thread with the fewest waiting tasks (the lowest on a tie; 0 with one global queue)."""
    if not per_cpu:
        return 0
    lengths = [len(queue) for queue in queues]
    return lengths.index(min(lengths))


def busiest_queue(layout: ThreadLayout, queues: Sequence[Sequence[object]],
                  thread: int) -> int | None:
    """``find_busiest_queue``: the longest non-empty run queue's thread, or ``None``.

    In ``thread``'s LLC first, then in the machine; the lowest thread on a tie.
    """
    best = None
    best_length = 0
    for candidate in layout.llc_order[layout.thread_domain[thread]]:
        length = len(queues[candidate])
        if length > best_length:
            best, best_length = candidate, length
    if best is not None:
        return best
    for candidate, queue in enumerate(queues):
        if len(queue) > best_length:
            best, best_length = candidate, len(queue)
    return best
