"""A kernel thread's bursts: the compressed schedule tiles a window exactly, and runs as a task."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.config.machine import KernelThreadConfig
from simulator.runtime.kernel_thread import BurstSchedule, burst_schedule, kernel_thread
from tests.simulator.runtime.scheduler_toys import MS, make, spin

KDAMOND = KernelThreadConfig(name="kdamond", period_ns=500 * MS, cpu_share=0.01,
                             cpu_share_per_process=1e-4)


def _inside(schedule: BurstSchedule, start_ns: float, end_ns: float) -> float:
    """Burst time of the schedule inside [start_ns, end_ns), bursts clipped at time 0."""
    total = 0.0
    begin = schedule.first_start_ns
    while begin < end_ns:
        low = max(begin, start_ns, 0.0)
        high = min(begin + schedule.burst_ns, end_ns)
        total += max(0.0, high - low)
        begin += schedule.period_ns
    return total


@given(share=st.floats(0.0, 1.0), phase=st.floats(0.0, 0.999999),
       period_ms=st.floats(0.5, 1000.0), window_ms=st.floats(1.0, 300.0),
       warmup_ms=st.floats(0.0, 50.0))
def test_the_window_and_each_half_hold_the_share(share: float, phase: float, period_ms: float,
                                                 window_ms: float, warmup_ms: float) -> None:
    window, start = window_ms * MS, warmup_ms * MS
    schedule = burst_schedule(share, period_ms * MS, start, window, phase)
    assert schedule.period_ns <= period_ms * MS * (1 + 1e-12)  # compressed, never stretched
    assert round(window / schedule.period_ns) % 2 == 0
    assert schedule.first_start_ns + schedule.burst_ns > 0.0 or share == 0.0
    assert schedule.first_start_ns + schedule.burst_ns <= schedule.period_ns + 1e-6
    half = window / 2
    for low, high in ((start, start + half), (start + half, start + window)):
        assert _inside(schedule, low, high) == pytest.approx(share * half, abs=1e-3)


def test_a_long_period_becomes_two_per_window() -> None:
    schedule = burst_schedule(0.25, 500 * MS, 5 * MS, 100 * MS, 0.0)
    assert (schedule.first_start_ns, schedule.period_ns, schedule.burst_ns) == (
        5 * MS, 50 * MS, 12.5 * MS)
    wrapped = burst_schedule(0.25, 500 * MS, 5 * MS, 100 * MS, 0.99)  # from 54.5 ms, back
    assert wrapped.first_start_ns == pytest.approx(4.5 * MS)
    short = burst_schedule(0.1, 3 * MS, 0.0, 20 * MS, 0.5)  # 8 periods (an even number)
    assert short.period_ns == pytest.approx(2.5 * MS)


@pytest.mark.parametrize(("share", "phase", "message"), [
    (-0.1, 0.0, "share"), (1.1, 0.0, "share"), (0.1, 1.0, "phase"), (0.1, -0.5, "phase")])
def test_bad_schedules(share: float, phase: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        burst_schedule(share, 500 * MS, 0.0, 100 * MS, phase)
    with pytest.raises(ValueError, match="positive"):
        burst_schedule(0.1, 0.0, 0.0, 100 * MS, 0.0)


def test_its_share_of_the_window_on_an_idle_thread() -> None:
    """Beside a spinner on the other thread it runs alone: its CPU in the window is exact."""
    env, scheduler = make((1, 1, 2, 1), wakeup_ns=0.0)
    spinner = scheduler.new_task("spinner")
    env.process(spin(spinner))
    warmup, window = 5 * MS, 100 * MS
    env.process(kernel_thread(env, scheduler, KDAMOND, 2400, warmup, window))
    env.run(until=warmup)
    thread = next(task for task in scheduler.tasks if task.name == "kdamond")
    before = thread.cpu_ns
    busy_before = sum(scheduler.busy_ns(t) for t in range(2))
    env.run(until=warmup + window)
    share = KDAMOND.share(2400)  # 0.25
    if thread.thread is not None and thread._segment_start >= 0.0:  # mid-burst at the end
        running = env.now - thread._segment_start
    else:
        running = 0.0
    assert thread.cpu_ns + running - before == pytest.approx(share * window, rel=1e-9)
    busy = sum(scheduler.busy_ns(t) for t in range(2)) - busy_before
    assert busy == pytest.approx((1 + share) * window, rel=1e-9)
    assert spinner.migrations == 0


def test_no_share_no_thread_and_no_draw() -> None:
    env, scheduler = make((1, 1, 1, 1))
    state = env.rng.bit_generator.state
    quiet = KernelThreadConfig(name="kdamond", period_ns=5 * MS, cpu_share=0.0,
                               cpu_share_per_process=0.0)
    env.process(kernel_thread(env, scheduler, quiet, 10_000, 0.0, 10 * MS))
    env.run(until=10 * MS)
    assert scheduler.tasks == ()
    assert env.rng.bit_generator.state == state  # the simulation is the one without it


def test_a_shared_cpu_stretches_its_bursts_not_its_work() -> None:
    """On one thread beside a spinner each burst takes longer; its work is all done."""
    env, scheduler = make((1, 1, 1, 1), wakeup_ns=0.0, context_switch_ns=0.0)
    spinner = scheduler.new_task("spinner")
    env.process(spin(spinner))
    config = KernelThreadConfig(name="kdamond", period_ns=10 * MS, cpu_share=0.2,
                                cpu_share_per_process=0.0)
    env.process(kernel_thread(env, scheduler, config, 0, 0.0, 100 * MS))
    env.run(until=100 * MS)
    thread = next(task for task in scheduler.tasks if task.name == "kdamond")
    total = thread.cpu_ns + spinner.cpu_ns
    assert total == pytest.approx(100 * MS, rel=0.02)  # one thread, always busy (the
    # spinner's last slice is charged when it ends)
    assert 0.15 * 100 * MS < thread.cpu_ns <= 0.2 * 100 * MS + 1e-6  # the last may not end
