"""The CPU scheduler: wake-up and switch costs, slices, CFS order, SMT, traces, errors."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from simulator.config.machine_file import load_machine
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.scheduler_stats import TRACE_TABLE
from simulator.runtime.task import Task
from tests.simulator.runtime.scheduler_toys import MS, US, accounted, hold, make, spin

# -- single task, wake-up costs ------------------------------------------------------------------


def test_first_run_pays_a_wakeup_then_runs_exactly() -> None:
    env, sched = make(wakeup_ns=500.0)
    task = sched.new_task("a")
    ends: list[float] = []

    def proc() -> ProcessGenerator:
        yield from task.run(1000)
        ends.append(env.now)
        yield from task.run(1000)
        ends.append(env.now)

    env.process(proc())
    env.run()
    assert ends == [1500.0, 2500.0]
    assert (task.thread, task.core) == (0, 0)
    assert task.wakeups == 1
    assert task.wakeup_ns == 500.0
    assert task.cpu_ns == 2000.0
    assert task.context_switches == 0


@pytest.mark.parametrize(("virtualized", "expected_wake"), [(False, 2000.0), (True, 5000.0)])
def test_wakeup_on_idle_thread(virtualized: bool, expected_wake: float) -> None:
    env, sched = make(wakeup_ns=2000.0, ipi_exit_ns=3000.0, virtualized=virtualized)
    task = sched.new_task("a")
    marks: list[float] = []

    def proc() -> ProcessGenerator:
        yield from task.run(1000)
        marks.append(env.now)
        value = yield from task.block_until(env.timeout(10_000, value="msg"))
        marks.append(env.now)
        assert value == "msg"
        yield from task.run(1000)
        marks.append(env.now)

    env.process(proc())
    env.run()
    first = expected_wake + 1000
    woken = first + 10_000 + expected_wake
    assert marks == [first, woken, woken + 1000]
    assert task.wakeups == 2
    assert task.wakeup_ns == 2 * expected_wake
    assert accounted(task) + 10_000 == env.now


def test_thread_is_reserved_during_wakeup() -> None:
    env, sched = make(wakeup_ns=2000.0)
    task = sched.new_task("a")
    env.process(task.run(1000))
    env.run(until=1)
    assert sched.holder(0) is task
    assert task.thread == 0
    assert sched.n_idle_threads == 0


def test_slice_is_renewed_when_nobody_waits() -> None:
    env, sched = make(time_slice_ns=MS)
    task = sched.new_task("a")
    env.process(task.run(3.5 * MS))
    env.run()
    assert env.now == 3.5 * MS
    assert task.preemptions == 0


def test_queued_wakeup_pays_the_switch_not_the_wakeup() -> None:
    env, sched = make(wakeup_ns=2000.0, context_switch_ns=10 * US)
    first, second = sched.new_task("a"), sched.new_task("b")
    done: dict[str, float] = {}

    def work(task: Task) -> ProcessGenerator:
        yield from task.run(5000)
        done[task.name] = env.now
        yield from task.block_until(env.event())  # blocks forever

    env.process(work(first))
    env.process(work(second))
    env.run()
    assert done == {"a": 7000.0, "b": 7000.0 + 10 * US + 5000}
    assert second.wakeup_ns == 0.0
    assert second.runqueue_wait_ns == 7000.0
    assert second.context_switch_ns == 10 * US
    assert (second.wakeups, second.context_switches) == (1, 1)
    assert sched.n_idle_threads == 1
    assert first.scheduling_ns == 2000.0  # its wake-up on the idle thread
    assert second.scheduling_ns == 7000.0 + 10 * US  # queued, then the switch


# -- the scheduler toy: 3 always-runnable tasks on 2 threads -----------------------------------


def toy(trace: bool = True) -> tuple[SimEnvironment, CpuScheduler, list[Task]]:
    """Three spinning tasks on two threads sharing one global run queue."""
    env, sched = make((1, 1, 2, 1), time_slice_ns=MS, context_switch_ns=10 * US,
                      wakeup_ns=5 * US, trace=trace, run_queues="global")
    tasks = [sched.new_task(name) for name in "ABC"]
    for task in tasks:
        env.process(spin(task))
    return env, sched, tasks


def test_toy_exact_schedule() -> None:
    env, _, tasks = toy()
    env.run(until=3.5 * MS)
    trace = env.recorder.to_frame(TRACE_TABLE)
    rows = list(trace[["time_ns", "task", "thread", "event"]].itertuples(index=False, name=None))
    # A and B wake on the two idle threads (5 us); C queues. Every 1 ms slice end preempts both
    # runners (queue non-empty); the freed threads take the queue head after a 10 us switch.
    assert rows == [
        (5_000.0, "A", 0, "on_cpu"),
        (5_000.0, "B", 1, "on_cpu"),
        (1_005_000.0, "A", 0, "preempt"),
        (1_005_000.0, "B", 1, "preempt"),
        (1_015_000.0, "C", 0, "on_cpu"),
        (1_015_000.0, "A", 1, "on_cpu"),
        (2_015_000.0, "C", 0, "preempt"),
        (2_015_000.0, "A", 1, "preempt"),
        (2_025_000.0, "B", 0, "on_cpu"),
        (2_025_000.0, "C", 1, "on_cpu"),
        (3_025_000.0, "B", 0, "preempt"),
        (3_025_000.0, "C", 1, "preempt"),
        (3_035_000.0, "A", 0, "on_cpu"),
        (3_035_000.0, "B", 1, "on_cpu"),
    ]
    a, b, c = tasks
    assert c.runqueue_wait_ns == 1_005_000.0  # queued at 0, granted a thread at 1.005 ms
    assert (a.migrations, b.migrations, c.migrations) == (2, 2, 1)
    assert (a.preemptions, b.preemptions, c.preemptions) == (2, 2, 2)


def test_toy_long_run_is_fair_and_switches_add_up() -> None:
    env, sched, tasks = toy(trace=False)
    # Middle of a slice (slice k >= 1 starts at 1.015 ms + (k - 1) * 1.01 ms): no switch in flight.
    end = 1_015_000.0 + 989 * 1_010_000.0 + 500_000.0
    env.run(until=end)
    cpu = [t.cpu_ns for t in tasks]
    total = sum(cpu)
    expected_each = 2 * end / 3 * (1000 / 1010)  # 2 threads, 10 us switch per 1 ms slice
    for value in cpu:
        assert value / total == pytest.approx(1 / 3, rel=0.01)
        assert value == pytest.approx(expected_each, rel=0.01)
    switches = sum(t.context_switches for t in tasks)
    assert sum(t.context_switch_ns for t in tasks) == switches * 10 * US
    # Every preemption dispatches the queue head (C's first dispatch included); one task waits.
    assert switches == sum(t.preemptions for t in tasks)
    assert sched.run_queue_length == 1
    assert sched.utilisation() == 1.0


def test_preempted_work_resumes_where_it_stopped() -> None:
    env, sched = make(time_slice_ns=MS, context_switch_ns=10 * US)
    done: dict[str, float] = {}

    def job(task: Task) -> ProcessGenerator:
        yield from task.run(2.5 * MS)
        done[task.name] = env.now
        task.release()

    tasks = [sched.new_task("a"), sched.new_task("b")]
    for task in tasks:
        env.process(job(task))
    env.run()
    # a: 0-1, 2.02-3.02, 4.04-4.54 ms; b: 1.01-2.01, 3.03-4.03, 4.55-5.05 ms.
    assert done == {"a": 4_540_000.0, "b": 5_050_000.0}
    assert [t.preemptions for t in tasks] == [2, 2]
    assert [t.context_switches for t in tasks] == [2, 3]
    assert [t.cpu_ns for t in tasks] == [2.5 * MS, 2.5 * MS]


def test_accounting_adds_up_for_always_runnable_tasks() -> None:
    env, sched = make((1, 1, 2, 1), time_slice_ns=MS, context_switch_ns=10 * US,
                      wakeup_ns=5 * US)
    tasks = [sched.new_task(name) for name in "ABC"]
    checks: list[tuple[float, float]] = []

    def mixed(task: Task) -> ProcessGenerator:
        while env.now < 20 * MS:
            yield from task.run(300 * US)
            checks.append((accounted(task), env.now))
            yield from task.run(200 * US, smt_scaled=False)
            checks.append((accounted(task), env.now))

    for task in tasks:
        env.process(mixed(task))
    env.run()
    assert len(checks) > 100
    for total, now in checks:
        assert total == now
    assert all(t.stall_ns > 0 and t.cpu_ns > 0 for t in tasks)
    assert sum(sched.busy_ns(t) for t in range(2)) == pytest.approx(2 * env.now, rel=1e-3)


def test_busy_time_and_utilisation() -> None:
    env, sched = make((1, 1, 2, 1), wakeup_ns=1000.0)
    task = sched.new_task("a")

    def proc() -> ProcessGenerator:
        yield from task.run(3000)
        yield from task.block_until(env.timeout(6000))  # blocked 4000..10000
        yield from task.run(1000)  # wakes on its idle thread 0: 10000..11000..12000

    env.process(proc())
    env.run(until=20_000)
    assert sched.busy_ns(0) == 4000.0 + 10_000.0  # still held after the last run
    assert sched.busy_ns(1) == 0.0
    assert sched.utilisation() == 14_000.0 / 40_000.0
    snap = sched.snapshot()
    env.run(until=30_000)
    assert sched.utilisation(since=snap) == 0.5
    assert sched.busy_array().tolist() == [24_000.0, 0.0]


# -- SMT -------------------------------------------------------------------------------------------


def _pair_durations(
    env: SimEnvironment, sched: CpuScheduler, step: Callable[[Task], ProcessGenerator],
) -> tuple[list[Task], dict[str, float]]:
    """Two tasks, both placed at t=0 (running once the wake-up is paid), each timing ``step``."""
    durations: dict[str, float] = {}

    def proc(task: Task) -> ProcessGenerator:
        yield from task.run(0)
        start = env.now
        yield from step(task)
        durations[task.name] = env.now - start

    tasks = [sched.new_task("a"), sched.new_task("b")]
    for task in tasks:
        env.process(proc(task))
    env.run()
    return tasks, durations


@pytest.mark.parametrize(
    ("shape", "smt_scaled", "expected"),
    [
        ((1, 1, 1, 2), True, 1600.0),  # siblings of one core: rate 1.25 / 2
        ((1, 1, 2, 1), True, 1000.0),  # two cores
        ((1, 1, 1, 2), False, 1000.0),  # stalls are not slowed by the sibling
    ],
)
def test_smt_stretch(shape: tuple[int, int, int, int], smt_scaled: bool, expected: float) -> None:
    env, sched = make(shape, wakeup_ns=100.0, smt_throughput=1.25)
    tasks, durations = _pair_durations(env, sched,
                                       lambda task: task.run(1000, smt_scaled=smt_scaled))
    assert durations == {"a": expected, "b": expected}
    assert {t.thread for t in tasks} == {0, 1}
    field = "cpu_ns" if smt_scaled else "stall_ns"
    assert all(getattr(t, field) == expected for t in tasks)


def test_smt_alone_on_core_runs_at_full_rate() -> None:
    env, sched = make((1, 1, 1, 2), smt_throughput=1.25)
    task = sched.new_task("a")
    env.process(task.run(1000))
    env.run()
    assert env.now == 1000.0


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((1, 1, 1, 2), 1600.0 + 2000.0),  # siblings: ordinary work at 1.25 / 2, the loop at 1 / 2
        ((1, 1, 2, 1), 2000.0),  # two cores: both kinds at full rate
    ],
)
def test_high_ipc_work_has_its_own_smt_rate(shape: tuple[int, int, int, int],
                                             expected: float) -> None:
    """1,000 ns of ordinary work and 1,000 ns of a tight loop, on two siblings or two cores."""
    env, sched = make(shape, wakeup_ns=100.0, smt_throughput=1.25, smt_throughput_high_ipc=1.0)
    tasks, durations = _pair_durations(env, sched,
                                       lambda task: task.run_mixed(1000.0, 0.0, 1000.0))
    assert durations == {"a": expected, "b": expected}
    assert all(t.cpu_ns == expected for t in tasks)


def test_high_ipc_rate_follows_the_ordinary_one_when_unset() -> None:
    env, sched = make((1, 1, 1, 2), wakeup_ns=100.0, smt_throughput=1.25)
    assert sched.config.high_ipc_smt_throughput == 1.25
    _, durations = _pair_durations(env, sched, lambda task: task.run_mixed(0.0, 0.0, 1000.0))
    assert durations == {"a": 1600.0, "b": 1600.0}  # 1,000 ns at 1.25 / 2


def test_a_slice_end_consumes_both_kinds_of_work_in_proportion() -> None:
    """A segment cut by slice ends takes the same wall time as one that is not."""
    env, sched = make((1, 1, 1, 2), time_slice_ns=300.0, wakeup_ns=100.0, smt_throughput=1.25,
                      smt_throughput_high_ipc=1.0)
    _, ends = _pair_durations(env, sched, lambda task: task.run_mixed(1000.0, 50.0, 500.0))
    assert ends["a"] == pytest.approx(50.0 + 1600.0 + 1000.0)
    assert ends["b"] == pytest.approx(ends["a"])


def test_negative_high_ipc_work_is_refused() -> None:
    _, sched = make()
    with pytest.raises(ValueError, match="must be >= 0"):
        sched.new_task("a").run_mixed(1.0, 0.0, -1.0)


# -- determinism and errors ------------------------------------------------------------------------


def random_scenario() -> pd.DataFrame:
    env, sched = make((1, 1, 2, 2), time_slice_ns=50 * US, wakeup_ns=2 * US,
                      smt_throughput=1.3, trace=True)

    def client(task: Task) -> ProcessGenerator:
        while True:
            yield from task.run(float(env.rng.exponential(20 * US)))
            yield from task.run(float(env.rng.exponential(3 * US)), smt_scaled=False)
            yield from task.block_until(env.timeout(float(env.rng.exponential(10 * US))))

    for i in range(9):
        env.process(client(sched.new_task(f"t{i}")))
    env.run(until=2 * MS)
    return env.recorder.to_frame(TRACE_TABLE)


def test_same_scenario_gives_identical_traces() -> None:
    first, second = random_scenario(), random_scenario()
    assert len(first) > 100
    assert set(first["event"]) == {"on_cpu", "preempt", "block"}
    pd.testing.assert_frame_equal(first, second)


def test_negative_work_is_rejected() -> None:
    _, sched = make()
    task = sched.new_task("a")
    with pytest.raises(ValueError, match="work must be >= 0 ns"):
        task.run(-1.0)


def test_one_task_driven_by_two_processes_is_an_error() -> None:
    env, sched = make()
    task = sched.new_task("a")
    env.process(task.run(1000))
    env.process(task.run(10))
    with pytest.raises(RuntimeError, match="already in run\\(\\) or block_until\\(\\)"):
        env.run()


def test_release_inside_run_is_an_error() -> None:
    env, sched = make()
    task = sched.new_task("a")
    env.process(task.run(1000))
    env.run(until=1)
    with pytest.raises(RuntimeError, match="cannot release"):
        task.release()


def test_release_hands_thread_to_queue_head() -> None:
    env, sched = make(context_switch_ns=100.0)
    first, second = sched.new_task("a"), sched.new_task("b")

    def proc() -> ProcessGenerator:
        yield from first.run(500)
        first.release()

    env.process(proc())
    env.process(second.run(1000))
    env.run()
    assert first.thread is None
    assert second.location() == (0, 0)
    assert env.now == 500 + 100 + 1000
    with pytest.raises(RuntimeError, match="holds no hardware thread"):
        first.location()


def test_failed_event_leaves_task_blocked() -> None:
    env, sched = make()
    task = sched.new_task("a")
    failure = env.event()
    caught: list[str] = []

    def proc() -> ProcessGenerator:
        yield from task.run(10)
        try:
            yield from task.block_until(failure)
        except KeyError as exc:
            caught.append(str(exc))

    env.process(proc())
    env.run(until=20)  # blocked since 10
    failure.fail(KeyError("boom"))
    env.run()
    assert caught == ["'boom'"]
    assert task.thread is None
    assert sched.n_idle_threads == 1


def test_from_machine_uses_topology_costs_and_virtualization() -> None:
    machine = load_machine("gold5215-2s")
    env = SimEnvironment(seed=0)
    sched = CpuScheduler.from_machine(env, machine)
    assert sched.topology.n_threads == 2 * 1 * 10 * 2
    assert sched.n_idle_threads == sched.topology.n_threads
    assert sched.config is machine.scheduler
    assert sched.virtualized is machine.virtualized
    expected = machine.scheduler.wakeup_ns + (
        machine.scheduler.ipi_exit_ns if machine.virtualized else 0.0
    )
    assert sched.wakeup_cost_ns == expected


@pytest.mark.parametrize(("work", "stall"), [(300.0, 0.0), (0.0, 200.0), (300.0, 200.0)])
def test_start_segment_charges_what_run_mixed_charges(work: float, stall: float) -> None:
    """With a busy SMT sibling and room in the slice, both ways end at the same time, equally
    charged."""
    outcomes = []
    for fast in (False, True):
        env, sched = make((1, 1, 1, 2), smt_throughput=1.2)
        task, sibling = sched.new_task("t"), sched.new_task("sibling")
        env.process(hold(env, sibling, 0.0, 10 * US))

        def body(task: Task = task, fast: bool = fast, env: SimEnvironment = env
                 ) -> ProcessGenerator:
            yield from task.run(100.0)  # take a thread
            wall = task.start_segment(work, stall) if fast else None
            if wall is not None:
                yield env.timeout(wall)
            else:
                assert not fast
                yield from task.run_mixed(work, stall)
            outcomes.append((env.now, task.cpu_ns, task.stall_ns, task._slice_used))

        env.process(body())
        env.run()
    assert outcomes[0] == outcomes[1]
    # The sibling took its thread after the first run(100) started; the segment ran beside it.
    assert outcomes[0][1] == pytest.approx(100.0 + work / 0.6)


def test_start_segment_declines_what_needs_scheduling() -> None:
    env, sched = make(time_slice_ns=1 * US)
    task = sched.new_task("t")
    assert task.start_segment(10.0, 0.0) is None  # holds no thread: it must wake up first
    results = []

    def body() -> ProcessGenerator:
        yield from task.run(600.0)
        results.append(task.start_segment(500.0, 0.0))  # beyond the slice's end
        results.append(task.start_segment(300.0, 100.0))  # fits
        results.append(task.start_segment(200.0, 0.0))  # the slice is used up to its end

    env.process(body())
    env.run()
    assert results == [None, 400.0, None]
    assert task.cpu_ns == 900.0
    assert task.stall_ns == 100.0


# -- run-queue order: cfs (virtual runtime) and fifo ----------------------------------------------


@pytest.mark.parametrize(("policy", "order"), [("cfs", ["b", "a"]), ("fifo", ["a", "b"])])
def test_queue_order_by_virtual_runtime_or_arrival(policy: str, order: list[str]) -> None:
    """a (20 us of CPU used) queues before b (none): cfs serves b first, fifo a."""
    env, sched = make(context_switch_ns=0.0, policy=policy)
    a, b, h = sched.new_task("a"), sched.new_task("b"), sched.new_task("h")
    served: list[str] = []

    def task_a() -> ProcessGenerator:
        yield from a.run(20 * US)
        yield from a.block_until(env.timeout(60 * US))  # wakes at 80 us: thread held by h
        yield from a.run(5 * US)
        served.append("a")
        a.release()

    def task_b() -> ProcessGenerator:
        yield env.timeout(100 * US)
        yield from b.run(5 * US)
        served.append("b")
        b.release()

    def task_h() -> ProcessGenerator:
        yield env.timeout(50 * US)
        yield from h.run(200 * US)
        h.release()

    for body in (task_a, task_b, task_h):
        env.process(body())
    env.run()
    assert served == order
    assert a.vruntime_ns == 25 * US
    assert b.vruntime_ns == 5 * US


def test_cfs_places_a_long_sleeper_at_most_the_credit_before_the_minimum() -> None:
    """Two spinners share one thread (100 us slices); a task that slept 1 ms wakes with no CPU
    used, is placed 10 us before the minimum virtual runtime, and runs next."""
    env, sched = make(time_slice_ns=100 * US, context_switch_ns=0.0,
                      sleeper_credit_ns=10 * US)
    spinners = [sched.new_task(name) for name in ("x", "y")]
    sleeper = sched.new_task("s")
    seen: dict[str, float] = {}

    def sleepy() -> ProcessGenerator:
        yield env.timeout(1 * MS + 50 * US)  # mid-slice: the queue holds one spinner
        minimum = sched.min_vruntime_ns
        yield from sleeper.run(1 * US)
        seen["placed"] = sleeper.vruntime_ns - 1 * US
        seen["minimum"] = minimum
        seen["ran_at"] = env.now

    for task in spinners:
        env.process(spin(task))
    env.process(sleepy())
    env.run(until=2 * MS)
    assert seen["minimum"] > 400 * US  # the spinners have advanced it
    assert seen["placed"] == pytest.approx(seen["minimum"] - 10 * US)
    # Ahead of the queued spinner: it runs as soon as the running one's slice ends (1.1 ms).
    assert seen["ran_at"] == pytest.approx(1.1 * MS + 1 * US)
