"""Idle states in the scheduler: exit latencies, core-level states, IPIs, timers (toy machines)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from simulator.config.machine import IdleConfig, IdleStateConfig, SchedulerConfig, TopologyConfig
from simulator.hardware.topology import Topology
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.scheduler_stats import SchedulerStats
from simulator.runtime.task import Task

US = 1_000.0
WAKEUP_NS = 5 * US
C1 = IdleStateConfig("C1", 2 * US, 2 * US, 2 * US)
C6 = IdleStateConfig("C6", 133 * US, 600 * US, 92 * US, core_scope=True)


def scheduler(threads_per_core: int = 1, cores: int = 1, *, wake: str = "mwait",
              states: tuple[IdleStateConfig, ...] = (C1, C6), virtualized: bool = False,
              ipi_exit_ns: float = 0.0,
              governor: str = "menu") -> tuple[SimEnvironment, CpuScheduler]:
    topology = Topology.from_config(TopologyConfig(sockets=1, domains_per_socket=1,
                                                   cores_per_domain=cores,
                                                   threads_per_core=threads_per_core))
    config = SchedulerConfig(time_slice_ns=1e9, context_switch_ns=2 * US, wakeup_ns=WAKEUP_NS,
                             ipi_exit_ns=ipi_exit_ns)
    env = SimEnvironment(seed=0)
    idle = IdleConfig(wake=wake, governor=governor, states=states)
    return env, CpuScheduler(env, topology, config, virtualized, idle=idle)


def wake_costs(env: SimEnvironment, task: Task, gaps_ns: list[float],
               block: Callable[[Task, float], ProcessGenerator] | None = None) -> list[float]:
    """Run 1 us, then for each gap sleep that long and run again: the wake-up cost of each."""
    costs: list[float] = []

    def body() -> ProcessGenerator:
        yield from task.run(1 * US)
        for gap in gaps_ns:
            before = task.wakeup_ns
            if block is None:
                yield from task.block_until(env.timeout(gap))
            else:
                yield from block(task, gap)
            costs.append(task.wakeup_ns - before)
            yield from task.run(1 * US)

    env.process(body())
    env.run()
    return costs


def test_a_thread_idle_since_the_start_is_in_its_deepest_state() -> None:
    env, sched = scheduler()
    task = sched.new_task("t")
    env.process(task.run(1 * US))
    env.run()
    assert task.wakeup_ns == pytest.approx(WAKEUP_NS + 92 * US)  # core C6: its wake latency
    assert sched.stats.exits_by_state == {"C6": 1}
    assert sched.stats.idle_exit_ns == pytest.approx(92 * US)


def test_short_regular_gaps_move_the_thread_to_c1_and_long_ones_back_to_c6() -> None:
    env, sched = scheduler()
    task = sched.new_task("t")
    costs = wake_costs(env, task, [10 * US] * 12 + [5_000 * US] * 12)
    extra = [round(cost - WAKEUP_NS) for cost in costs]
    # The first gaps still see the long idle history: C6. Once six of the eight remembered
    # intervals are short (the first placement's zero-length idle and five 10 us gaps), they
    # are the typical interval: C1 (2 us).
    assert extra[:5] == [92_000] * 5
    assert set(extra[5:12]) == {2_000}
    # Long gaps: the typical interval becomes long again and C6 comes back.
    assert extra[-1] == 92_000
    assert sched.stats.idle_exits == 1 + 24


def test_shallowest_governor_always_takes_the_first_state() -> None:
    env, sched = scheduler(governor="shallowest")
    task = sched.new_task("t")
    costs = wake_costs(env, task, [10 * US, 10_000 * US])
    assert costs == [pytest.approx(WAKEUP_NS + 2 * US)] * 2


def test_a_sleep_arms_a_timer_that_the_governor_sees() -> None:
    # A 1.5 us timer on the thread is below C1's residency: the thread polls (no exit latency),
    # where the same gap through block_until (no timer known) leaves it in C6.
    env, sched = scheduler()
    task = sched.new_task("t")
    costs = wake_costs(env, task, [1.5 * US], block=lambda t, gap: t.sleep(gap))
    assert costs == [pytest.approx(WAKEUP_NS)]
    env, sched = scheduler()
    task = sched.new_task("t")
    assert wake_costs(env, task, [1.5 * US]) == [pytest.approx(WAKEUP_NS + 92 * US)]


def test_a_sleep_rejects_a_negative_duration() -> None:
    _, sched = scheduler()
    with pytest.raises(ValueError, match="sleep must be >= 0"):
        sched.new_task("t").sleep(-1.0)


def test_core_c6_needs_both_threads_and_flushes_the_core_once() -> None:
    env, sched = scheduler(threads_per_core=2)
    flushed: list[tuple[float, int]] = []
    sched.on_private_flush = lambda core: flushed.append((env.now, core))
    busy, sleeper = sched.new_task("busy"), sched.new_task("sleeper")
    woken_at: list[float] = []

    def hold_sibling() -> ProcessGenerator:
        yield from busy.run(500 * US)  # the sibling is busy until 500 us + its own wake-up
        busy.release()

    def sleep_while_sibling_busy() -> ProcessGenerator:
        yield env.timeout(200 * US)
        yield from sleeper.run(1 * US)
        before = sleeper.wakeup_ns
        yield from sleeper.block_until(env.timeout(100 * US))
        woken_at.append(sleeper.wakeup_ns - before)
        sleeper.release()

    env.process(hold_sibling())
    env.process(sleep_while_sibling_busy())
    env.run()
    # The sleeper chose C6 but its sibling was running: it paid the thread-level C1 exit.
    assert woken_at == [pytest.approx(WAKEUP_NS + 2 * US)]
    # When both threads finally went idle in C6 the core entered it and was flushed once.
    assert len(flushed) == 1
    assert flushed[0][1] == 0
    assert sched.stats.private_flushes == 1


def test_mwait_idle_wakes_without_an_ipi_and_hlt_idle_needs_one() -> None:
    for wake, ipis in (("mwait", 0), ("hlt", 2)):
        env, sched = scheduler(wake=wake)
        wake_costs(env, sched.new_task("t"), [10 * US])
        assert sched.stats.ipis == ipis  # the first placement and the wake-up


def test_a_vm_pays_the_hypervisor_exit_per_ipi() -> None:
    halt = IdleStateConfig("HLT", 0.0, 0.0, 0.0)
    env, sched = scheduler(wake="hlt", states=(halt,), virtualized=True, ipi_exit_ns=5 * US,
                           governor="shallowest")
    costs = wake_costs(env, sched.new_task("t"), [10 * US, 20 * US])
    assert costs == [pytest.approx(WAKEUP_NS + 5 * US)] * 2
    assert sched.stats.ipis == 3
    assert sched.stats.exits_by_state == {"HLT": 3}


def test_without_idle_states_a_vm_still_pays_the_exit_and_bare_metal_nothing() -> None:
    topology = Topology.from_config(TopologyConfig(sockets=1, domains_per_socket=1,
                                                   cores_per_domain=1, threads_per_core=1))
    config = SchedulerConfig(time_slice_ns=1e9, context_switch_ns=0.0, wakeup_ns=WAKEUP_NS,
                             ipi_exit_ns=5 * US)
    for virtualized, expected in ((True, WAKEUP_NS + 5 * US), (False, WAKEUP_NS)):
        env = SimEnvironment(seed=0)
        sched = CpuScheduler(env, topology, config, virtualized)
        assert wake_costs(env, sched.new_task("t"), [10 * US]) == [pytest.approx(expected)]


def test_stats_since_is_the_difference_of_two_copies() -> None:
    env, sched = scheduler()
    task = sched.new_task("t")
    wake_costs(env, task, [10 * US] * 3)
    before = sched.stats.copy()
    wake_costs(env, task, [10 * US] * 2)
    window = sched.stats.since(before)
    assert window.idle_exits == 2
    assert sum(window.exits_by_state.values()) == 2
    assert before == SchedulerStats(before.idle_exits, before.idle_exit_ns,
                                    before.exits_by_state, before.ipis, before.private_flushes,
                                    before.migrations)


@pytest.mark.parametrize(("event_at_us", "happened"), [(3.0, True), (50.0, False)])
def test_wait_returns_at_the_event_or_the_timeout_with_the_timer_seen_by_the_governor(
        event_at_us: float, happened: bool) -> None:
    env, sched = scheduler()
    task = sched.new_task("t")
    event = env.event()
    got: list[tuple[bool, float]] = []

    def body() -> ProcessGenerator:
        yield from task.run(1 * US)  # woken from C6 at 0: runs from 97 us to 98 us
        start = env.now
        happened = yield from task.wait(event, 20 * US)
        got.append((happened, (env.now - start) / US))

    def fire() -> ProcessGenerator:
        yield env.timeout(98 * US + event_at_us * US)
        event.succeed()

    env.process(body())
    env.process(fire())
    env.run()
    # The 20 us timer is below C6's residency, so the governor takes C1: the task is back 5 us
    # (wake-up) + 2 us (C1 exit) after the event (3 us) or the timeout (20 us).
    assert [flag for flag, _ in got] == [happened]
    assert got[0][1] == pytest.approx(min(event_at_us, 20.0) + 7.0)


def test_wait_rejects_a_negative_timeout() -> None:
    env, sched = scheduler()
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        sched.new_task("t").wait(env.event(), -1.0)


def test_a_polling_vcpu_is_woken_without_an_ipi() -> None:
    """KVM's guest halt polling: a vCPU that polls (short idles) is woken by a store; one that
    halted (the first, long idle) pays the IPI and the hypervisor exit."""
    halt = IdleStateConfig("HLT", 1 * US, 200 * US, 0.0)
    env, sched = scheduler(wake="hlt", states=(halt,), virtualized=True, ipi_exit_ns=5 * US)
    costs = wake_costs(env, sched.new_task("t"), [10 * US, 10 * US],
                       block=lambda task, gap: task.sleep(gap))  # a timer within the window
    assert costs == [pytest.approx(WAKEUP_NS)] * 2  # polled: no IPI, no exit
    assert sched.stats.exits_by_state["POLL"] >= 1
    assert sched.stats.ipis == sched.stats.exits_by_state["HLT"]
