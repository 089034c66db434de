"""Per-CPU run queues: wake-up preemption, new-idle pulls, periodic balancing (toy machines)."""

from __future__ import annotations

import pytest

from simulator.config.machine import IdleConfig, IdleStateConfig, SchedulerConfig, TopologyConfig
from simulator.errors import ConfigError
from simulator.hardware.topology import Topology
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.scheduler_stats import IDLE_TRACE_TABLE, TRACE_TABLE
from simulator.runtime.task import Task

US = 1_000.0
MS = 1_000_000.0


def scheduler(threads: int, *, time_slice_ns: float = 100 * MS, context_switch_ns: float = 0.0,
              idle: IdleConfig | None = None, trace: bool = False,
              run_queues: str = "per_cpu") -> tuple[SimEnvironment, CpuScheduler]:
    """One LLC of ``threads`` single-thread cores; wake-ups cost nothing but idle exits."""
    topology = Topology.from_config(TopologyConfig(sockets=1, domains_per_socket=1,
                                                   cores_per_domain=threads, threads_per_core=1))
    config = SchedulerConfig(time_slice_ns=time_slice_ns, context_switch_ns=context_switch_ns,
                             wakeup_ns=0.0, run_queues=run_queues)
    env = SimEnvironment(seed=0)
    return env, CpuScheduler(env, topology, config, False, idle=idle, trace=trace)


def chunks(task: Task, chunk_ns: float = 100 * US) -> ProcessGenerator:
    """Run for ever in chunks (a preemption takes effect between two chunks)."""
    while True:
        yield from task.run(chunk_ns)


def sleeper(env: SimEnvironment, task: Task, sleep_ns: float, ran: list[float]) -> ProcessGenerator:
    yield from task.run(10 * US)
    yield from task.block_until(env.timeout(sleep_ns))
    yield from task.run(0)
    ran.append(env.now)


# -- wake-up preemption ----------------------------------------------------------------------


@pytest.mark.parametrize(("sleep_ns", "runs_at_ns", "preempted"), [
    # Wakes at 6.06 ms: the spinner has used 6.05 ms, the sleeper 10 us: 6.04 ms more than the
    # 4 ms granularity. The spinner yields at the end of its chunk (6.11 ms).
    (6.05 * MS, 6.11 * MS, True),
    # Wakes at 3.06 ms: 3.04 ms < 4 ms, so it waits for the spinner's 100 ms slice to end.
    (3.05 * MS, 100.01 * MS, False),
])
def test_a_waking_task_preempts_past_the_wakeup_granularity(
        sleep_ns: float, runs_at_ns: float, preempted: bool) -> None:
    env, sched = scheduler(1)
    ran: list[float] = []
    env.process(sleeper(env, sched.new_task("sleeper"), sleep_ns, ran))
    spinner = sched.new_task("spinner")
    env.process(chunks(spinner))
    env.run(until=110 * MS)
    assert ran == [pytest.approx(runs_at_ns)]
    assert sched.stats.wakeup_preemptions == int(preempted)
    assert spinner.preemptions == 1  # by the sleeper, or at its slice end
    assert sched.stats.ipis == 0  # a timer fires on the thread it was armed on: no IPI


def test_no_wakeup_preemption_with_one_global_queue() -> None:
    env, sched = scheduler(1, run_queues="global")
    ran: list[float] = []
    env.process(sleeper(env, sched.new_task("sleeper"), 6.05 * MS, ran))
    env.process(chunks(sched.new_task("spinner")))
    env.run(until=110 * MS)
    assert ran == [pytest.approx(100.01 * MS)]
    assert sched.stats.wakeup_preemptions == 0


@pytest.mark.parametrize(("threads", "waker", "ipis"), [
    # One thread: the waker runs where the wakee queues. A synchronous wake-up, or a declared
    # asynchronous one, reschedules locally; an undeclared waker is taken to be elsewhere.
    (1, "sync", 0),
    (1, "declared", 0),
    (1, "undeclared", 1),
    # Two threads: the waker on thread 0 wakes a task that queues on thread 1 (its previous
    # thread, now held by another spinner): a reschedule IPI.
    (2, "declared", 1),
])
def test_a_wakeup_preemption_sends_an_ipi_only_from_another_thread(
        threads: int, waker: str, ipis: int) -> None:
    env, sched = scheduler(threads)
    sleeper_task = sched.new_task("sleeper")
    waker_task = sched.new_task("waker")
    event = env.event()

    def sleeper() -> ProcessGenerator:
        yield from sleeper_task.run(10 * US)  # thread 0 with one thread, else thread 1
        yield from sleeper_task.block_until(event)
        yield from sleeper_task.run(0)

    def waking() -> ProcessGenerator:
        yield from waker_task.run(6.05 * MS)  # 6 ms more virtual runtime than the sleeper
        if waker != "undeclared":
            waker_task.wakes(sleeper_task, sync=waker == "sync")
        event.succeed()
        yield from chunks(waker_task)

    if threads == 2:
        env.process(waking())  # thread 0
        env.process(sleeper())  # thread 1
        other = sched.new_task("other")

        def late_spinner() -> ProcessGenerator:  # takes thread 1 once the sleeper left it
            yield env.timeout(20 * US)
            yield from chunks(other)
        env.process(late_spinner())
    else:
        env.process(sleeper())
        env.process(waking())
    env.run(until=10 * MS)
    assert sched.stats.wakeup_preemptions == 1
    assert sched.stats.ipis == ipis


# -- new-idle and periodic balancing ---------------------------------------------------------


def queued_behind_a_spinner(env: SimEnvironment, sched: CpuScheduler, short_idles: int,
                            ran: list[float]) -> Task:
    """Thread 0 runs a spinner; task ``x`` holds thread 1 until 500 us, after ``short_idles``
    idle periods of 1 us there; task ``b`` arrives at 300 us with no idle thread, so it joins
    the shortest queue (thread 0's). Returns ``b``."""
    env.process(chunks(sched.new_task("spinner")))
    x = sched.new_task("x")
    b = sched.new_task("b")

    def holder() -> ProcessGenerator:
        for _ in range(short_idles):
            yield from x.run(10 * US)
            yield from x.block_until(env.timeout(1 * US))
        yield from x.run(500 * US - env.now)
        x.release()

    def late() -> ProcessGenerator:
        yield env.timeout(300 * US)
        yield from b.run(1 * US)
        ran.append(env.now)

    env.process(holder())
    env.process(late())
    return b


def test_a_thread_going_idle_pulls_a_queued_task() -> None:
    env, sched = scheduler(2, context_switch_ns=2 * US)
    ran: list[float] = []
    b = queued_behind_a_spinner(env, sched, 0, ran)
    env.run(until=1 * MS)
    # x leaves thread 1 at 500 us; its average idle period is the initial 1 ms (>= the 0.5 ms
    # migration cost): it pulls b, which runs 1 us after the 2 us switch.
    assert ran == [pytest.approx(503 * US)]
    assert b.thread == 1
    assert b.runqueue_wait_ns == pytest.approx(200 * US)
    assert (sched.stats.newidle_pulls, sched.stats.balance_pulls) == (1, 0)


def test_a_thread_with_short_idle_periods_waits_for_the_periodic_balance() -> None:
    c1 = IdleStateConfig("C1", 2 * US, 2 * US, 2 * US)
    env, sched = scheduler(2, context_switch_ns=2 * US, trace=True,
                           idle=IdleConfig(wake="mwait", governor="shallowest", states=(c1,)))
    ran: list[float] = []
    b = queued_behind_a_spinner(env, sched, 20, ran)
    env.run(until=5 * MS)
    # 20 idle periods of 1 us bring thread 1's average idle (1 ms x (7/8)^20 + ...) below
    # 0.5 ms: it does not pull b as x leaves. The tick's balancing at 4 ms pulls it, and b
    # pays thread 1's C1 exit (2 us) on top of the switch.
    assert ran == [pytest.approx(4 * MS + 2 * US + 2 * US + 1 * US)]
    assert b.thread == 1
    assert b.wakeup_ns == pytest.approx(2 * US)
    assert (sched.stats.newidle_pulls, sched.stats.balance_pulls) == (0, 1)
    idle = env.recorder.to_frame(IDLE_TRACE_TABLE)
    last = idle.iloc[-1]
    assert (last["thread"], last["state"]) == (1, "C1")
    assert last["idle_ns"] == pytest.approx(4 * MS - 500 * US)
    on_cpu = env.recorder.to_frame(TRACE_TABLE)
    assert on_cpu[on_cpu["task"] == "b"]["thread"].tolist() == [1]


def test_run_queue_kind_is_checked() -> None:
    with pytest.raises(ConfigError, match=r"scheduler\.run_queues"):
        SchedulerConfig(time_slice_ns=1.0, context_switch_ns=0.0, wakeup_ns=0.0,
                        run_queues="per_node")
