"""The CPU scheduler's placement of a task: first placements, previous thread, LLC scans, sync
wake-ups.

Shape (1, 2, 2, 2): domain 0 = cores 0, 1 (threads 0-3), domain 1 = cores 2, 3 (threads 4-7).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.config.machine import TopologyConfig
from simulator.hardware.topology import Topology
from simulator.runtime.engine import ProcessGenerator
from simulator.runtime.placement import ThreadLayout, first_thread
from tests.simulator.runtime.scheduler_toys import hold, make


def _first_threads(shape: tuple[int, int, int, int], n: int, busy: bool = True,
                   first_placement: str = "spread") -> list[int | None]:
    """The threads ``n`` tasks take, placed one after another at time 0 and kept."""
    env, sched = make(shape, first_placement=first_placement)
    threads: list[int | None] = []

    def place(task_index: int) -> ProcessGenerator:
        task = sched.new_task(f"t{task_index}", busy=busy)
        yield env.timeout(0)
        yield from task.run(0)
        threads.append(task.thread)

    for index in range(n):
        env.process(place(index))
    env.run()
    return threads


def test_busy_tasks_first_placements_spread_over_the_domains_idle_cores_first() -> None:
    # Each goes to the domain with more idle threads (domain 0 on a tie), to its lowest fully
    # idle core, then, with no idle core left, to its lowest idle thread.
    assert _first_threads((1, 2, 2, 2), 8) == [0, 4, 2, 6, 1, 5, 3, 7]
    # One domain: the lowest fully idle core, then the lowest idle thread.
    assert _first_threads((1, 1, 2, 2), 4) == [0, 2, 1, 3]


def test_two_busy_tasks_stay_where_they_are_forked_a_third_spreads_them() -> None:
    # Linux leaves a pair of tasks on one node (adjust_numa_imbalance); with three busy tasks
    # the balancer spreads them.
    assert _first_threads((1, 2, 2, 2), 2) == [0, 2]
    assert _first_threads((1, 2, 2, 2), 3) == [0, 4, 2]


def test_other_first_placements_take_the_machines_lowest_idle_core_then_thread() -> None:
    lowest = [0, 2, 4, 6, 1, 3, 5, 7]
    assert _first_threads((1, 2, 2, 2), 8, busy=False) == lowest  # a task that mostly sleeps
    assert _first_threads((1, 2, 2, 2), 8, first_placement="lowest") == lowest  # the ablation


def test_spread_all_spreads_tasks_that_mostly_sleep_too() -> None:
    spread = [0, 4, 2, 6, 1, 5, 3, 7]
    assert _first_threads((1, 2, 2, 2), 8, busy=False, first_placement="spread_all") == spread
    assert _first_threads((1, 2, 2, 2), 8, first_placement="spread_all") == spread


@settings(max_examples=200, deadline=None)
@given(shape=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 3),
                       st.integers(1, 2)),
       data=st.data())
def test_first_thread_takes_an_idle_thread_of_a_domain_with_the_most_idle_threads(
    shape: tuple[int, int, int, int], data: st.DataObject
) -> None:
    sockets, domains, cores, threads = shape
    topology = Topology.from_config(TopologyConfig(
        sockets=sockets, domains_per_socket=domains, cores_per_domain=cores,
        threads_per_core=threads))
    layout = ThreadLayout.of(topology)
    n = topology.n_threads
    idle = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1)))
    idle_cores: list[list[int]] = [[] for _ in range(topology.n_domains)]
    for core in range(topology.n_cores):
        if all(t in idle for t in topology.threads_of_core(core)):
            idle_cores[layout.core_domain[core]].append(core)
    thread = first_thread(layout, idle, idle_cores)
    per_domain = [sum(layout.thread_domain[t] == d for t in idle)
                  for d in range(topology.n_domains)]
    domain = layout.thread_domain[thread]
    assert thread in idle
    assert per_domain[domain] == max(per_domain)
    assert all(count < max(per_domain) for count in per_domain[:domain])  # the lowest
    if idle_cores[domain]:
        assert thread == topology.threads_of_core(idle_cores[domain][0]).start
    else:
        assert thread == min(t for t in idle if layout.thread_domain[t] == domain)


def test_wakeup_prefers_previous_thread() -> None:
    env, sched = make((1, 2, 2, 2))
    task = sched.new_task("t")
    threads: list[int | None] = []

    def proc() -> ProcessGenerator:
        for _ in range(3):
            yield from task.run(10)
            threads.append(task.thread)
            yield from task.block_until(env.timeout(100))

    env.process(proc())
    env.run()
    assert threads == [0, 0, 0]
    assert task.migrations == 0


def test_wakeup_scans_its_llc_for_an_idle_core_from_its_previous_thread() -> None:
    env, sched = make((1, 2, 2, 2))
    calls: list[tuple[str, int, int, float]] = []
    sched.on_migrate = lambda task, old, new: calls.append((task.name, old, new, env.now))
    task = sched.new_task("t")
    helpers = {name: sched.new_task(name) for name in ("a", "b", "c", "d")}
    env.process(hold(env, helpers["a"], 0, 50))  # thread 0 (core 0)
    env.process(hold(env, helpers["b"], 0, 1000))  # thread 2 (core 1)
    env.process(hold(env, helpers["c"], 0, 50))  # thread 4 (core 2)
    threads: list[int | None] = []

    def proc() -> ProcessGenerator:
        yield env.timeout(0)
        for _ in range(3):
            yield from task.run(10)
            threads.append(task.thread)
            yield from task.block_until(env.timeout(100))

    env.process(proc())  # first placement: core 3, thread 6
    env.process(hold(env, helpers["d"], 20, 1000))  # takes thread 6, the only idle core at 20
    env.run()
    # At 110 thread 6 is busy. Its LLC (threads 4-7) in Linux numbering is 4, 6, 5, 7; the
    # idle-core scan from 6 meets 5 (core 2, idle since 50) first; core 0 (other LLC) is not
    # considered. At 220 the previous thread 5 is idle again.
    assert threads == [6, 5, 5]
    assert task.migrations == 1
    assert calls == [("t", 3, 2, 110.0)]


def test_wakeup_takes_an_idle_thread_of_its_llc_before_an_idle_core_elsewhere() -> None:
    env, sched = make((1, 2, 2, 2))
    task = sched.new_task("t")
    env.process(hold(env, sched.new_task("a"), 0, 1000))  # thread 0
    env.process(hold(env, sched.new_task("b"), 0, 50))  # thread 2
    placed: list[int | None] = []

    def proc() -> ProcessGenerator:
        yield env.timeout(0)
        yield from task.run(10)  # thread 4 (core 2)
        placed.append(task.thread)
        yield from task.block_until(env.timeout(90))  # wakes at 100
        placed.append(task.thread)

    env.process(proc())
    env.process(hold(env, sched.new_task("c"), 20, 1000))  # thread 4 (lowest fully idle core 2)
    env.process(hold(env, sched.new_task("d"), 30, 1000))  # thread 6 (core 3)
    env.run()
    # At 100 core 1 (other LLC) is fully idle, but the LLC of thread 4 has idle threads: the
    # scan after 4 (order 4, 6, 5, 7) finds 5.
    assert placed == [4, 5]


@pytest.mark.parametrize(("run_queues", "b_stops", "expected"), [
    ("global", 50.0, (1, 0.0)), ("global", 1000.0, (1, 900.0)),
    ("per_cpu", 50.0, (0, 1900.0)), ("per_cpu", 1000.0, (1, 900.0))])
def test_wakeup_with_its_llc_full_takes_an_idle_core_elsewhere_or_queues(
    run_queues: str, b_stops: float, expected: tuple[int, float]
) -> None:
    env, sched = make((1, 2, 2, 1), context_switch_ns=0.0, run_queues=run_queues)
    task = sched.new_task("t")
    env.process(hold(env, sched.new_task("a"), 0, 2000))  # thread 0
    env.process(hold(env, sched.new_task("b"), 0, b_stops))  # thread 1
    placed: list[int | None] = []

    def proc() -> ProcessGenerator:
        yield env.timeout(0)
        yield from task.run(10)  # thread 2
        yield from task.block_until(env.timeout(90))  # wakes at 100
        yield from task.run(0)
        placed.append(task.thread)

    env.process(proc())
    env.process(hold(env, sched.new_task("c"), 20, 2000))  # thread 2
    env.process(hold(env, sched.new_task("d"), 30, 2000))  # thread 3
    env.run()
    # LLC 1 (threads 2, 3) is full at 100. One global queue: thread 1 (the other LLC) if b has
    # left, otherwise the queue until b leaves at 1000. Per-CPU queues: the task waits on its
    # previous thread's queue (2) until a thread of the other LLC goes idle and pulls it
    # (new-idle balance: b at 1000, else a at 2000), well before the 4 ms periodic balance.
    assert (placed[0], task.runqueue_wait_ns) == expected


def test_sync_wakeup_keeps_the_waker_on_its_thread_and_takes_the_wakees_previous() -> None:
    env, sched = make((1, 1, 2, 2))
    client, server = sched.new_task("client"), sched.new_task("server")
    inbox, answer = env.event(), env.event()
    seen: dict[str, int | None] = {}

    def serve() -> ProcessGenerator:
        yield from server.run(10)  # thread 0 (first placement)
        yield from server.block_until(inbox)
        seen["server"] = server.thread
        yield from server.run(10)
        server.wakes(client)
        answer.succeed()
        server.release()

    def ask() -> ProcessGenerator:
        yield env.timeout(20)
        yield from client.run(10)  # thread 0: the server's old thread, idle since 10
        seen["client"] = client.thread
        client.wakes(server)
        inbox.succeed()
        yield from client.block_until(answer)
        seen["client again"] = client.thread

    env.process(serve())
    env.process(ask())
    env.run()
    # The waker holds thread 0 while it wakes the server, whose previous thread is 0: the scan
    # from 0 finds the idle core 1 (thread 2). The answer wakes the client on 0, its previous.
    assert seen == {"client": 0, "server": 2, "client again": 0}


def test_sync_wakeup_with_no_idle_thread_in_the_llc_switches_to_the_wakee_on_the_wakers_thread(
) -> None:
    env, sched = make((1, 1, 1, 1), context_switch_ns=3.0, wakeup_ns=50.0)
    client, server = sched.new_task("client"), sched.new_task("server")
    inbox, answer = env.event(), env.event()
    seen: list[tuple[str, int | None, float]] = []

    def serve() -> ProcessGenerator:
        yield from server.block_until(inbox)
        seen.append(("server", server.thread, env.now))
        yield from server.run(10)
        server.wakes(client)
        answer.succeed()
        server.release()

    def ask() -> ProcessGenerator:
        yield from client.run(10)  # thread 0 after its first wake-up (50)
        client.wakes(server)
        inbox.succeed()
        yield from client.block_until(answer)
        seen.append(("client", client.thread, env.now))

    env.process(serve())
    env.process(ask())
    env.run()
    # One thread: each wakee waits for its waker to give the thread up, then pays a context
    # switch (3 ns), not a wake-up from idle (50 ns).
    assert seen == [("server", 0, 63.0), ("client", 0, 76.0)]
    assert (server.context_switches, server.wakeup_ns, server.context_switch_ns) == (1, 0.0, 3.0)
    assert client.context_switches == 1
    assert sched.stats.idle_exits == 1  # the client's first placement only
