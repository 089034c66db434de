"""Lazy time in a process: steps accumulate, memory operations on shared lines happen at the
clock (in time order with everybody else's), private ones need no synchronisation, and the time
is charged to the model's categories."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from enum import StrEnum
from typing import Any

import pandas as pd
import pytest

from simulator.config.machine_file import load_machine
from simulator.hardware.codes import Op
from simulator.hardware.layout import SharedMemory
from simulator.hardware.machine import Machine
from simulator.hardware.tracked import Access, Ops, TrackedMemory
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.process import CpuProcess
from simulator.runtime.scheduler import CpuScheduler

GOLD = replace(load_machine("gold5215-2s"), idle=None)
"""The Gold 5215 without idle states: these tests time their steps to the nanosecond."""


class Step(StrEnum):
    """A toy model's categories."""

    WORK = "work"
    LOCK_WAIT = "lock_wait"
    LOOKUP = "lookup"
    SCHEDULING = "scheduling"


class _Spy:
    """A machine wrapper recording the time of every memory-operation sequence.

    ``result``, when set, replaces the machine's ``(cost, queueing)`` of a sequence.
    """

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.times: list[float] = []
        self.result: tuple[float, float] | None = None

    def sequence_unchecked(self) -> Callable[..., tuple[float, float]]:
        """The function a process issues its operations through: the machine's, recorded."""
        sequence = self.machine.sequence_unchecked()

        def recorded(*args: Any) -> tuple[float, float]:
            self.times.append(args[4])
            total, waited = sequence(*args)
            return (total, waited) if self.result is None else self.result

        return recorded

    def __getattr__(self, name: str) -> Any:
        return getattr(self.machine, name)


def _process(run_ahead_ns: float = 0.0) -> tuple[SimEnvironment, CpuProcess[Step], _Spy]:
    env = SimEnvironment(seed=0)
    scheduler = CpuScheduler.from_machine(env, GOLD)
    spy = _Spy(Machine(GOLD, [0, 64]))
    process = CpuProcess(env, spy, GOLD.clock_ghz, scheduler.new_task("p"),  # type: ignore[arg-type]
                         tuple(Step), scheduling=Step.SCHEDULING, lock_wait=Step.LOCK_WAIT,
                         run_ahead_ns=run_ahead_ns)
    return env, process, spy


SHARED = Ops([Access(0, Op.RMW, 0xF, "lock.state")])
"""An operation on a line of no tracked memory: not private (shared by default)."""


def test_shared_operations_happen_at_the_clock_after_the_pending_work() -> None:
    env, process, spy = _process()
    log: list[float] = []

    def body() -> ProcessGenerator:
        yield from process.compute(2500, Step.WORK)  # 1000 ns at 2.5 GHz
        assert env.now == 0.0
        assert process.now == pytest.approx(1000.0)
        yield from process.ops(SHARED, Step.WORK)
        log.append(env.now)
        yield from process.flush()

    env.process(body())
    env.run()
    assert len(spy.times) == 1
    wakeup = GOLD.scheduler.wakeup_ns  # the first run places the process like a wake-up
    assert spy.times[0] == pytest.approx(wakeup + 1000.0)  # at the clock, after the work
    assert log[0] == pytest.approx(spy.times[0])
    assert process.times_ns[Step.WORK] > 1000.0  # work plus the atomic


def test_run_ahead_allows_operations_ahead_of_the_clock() -> None:
    env, process, spy = _process(run_ahead_ns=5000.0)

    def body() -> ProcessGenerator:
        yield from process.task.run(0.0)  # type: ignore[union-attr]  # take a thread first
        start = env.now
        yield from process.compute(2500, Step.WORK)
        yield from process.ops(SHARED, Step.WORK)
        assert env.now == start  # the operation did not wait for the clock
        yield from process.flush()

    env.process(body())
    env.run()
    assert spy.times[0] == pytest.approx(GOLD.scheduler.wakeup_ns + 1000.0)


def test_flush_spends_the_pending_time_in_one_run_and_charges_categories() -> None:
    env, process, _ = _process()

    def body() -> ProcessGenerator:
        yield from process.flush()  # nothing pending: no time passes
        assert env.now == 0.0
        yield from process.compute(2500, Step.WORK)
        yield from process.compute(5000, Step.LOOKUP)
        yield from process.flush()

    env.process(body())
    env.run()
    times = process.times_ns
    assert times[Step.WORK] == pytest.approx(1000.0)
    assert times[Step.LOOKUP] == pytest.approx(2000.0)
    assert times[Step.SCHEDULING] == pytest.approx(GOLD.scheduler.wakeup_ns)
    assert times[Step.LOCK_WAIT] == 0.0
    assert env.now == pytest.approx(3000.0 + GOLD.scheduler.wakeup_ns)
    assert process.pending_ns == 0.0


@pytest.mark.parametrize(("lock_line", "lock_wait", "lookup"), [(True, 40.0, 60.0),
                                                                 (False, 0.0, 100.0)])
def test_queueing_on_a_lock_line_goes_to_the_lock_wait_category(
        lock_line: bool, lock_wait: float, lookup: float) -> None:
    env, process, spy = _process()
    spy.result = (100.0, 40.0)  # 100 ns in all, 40 of them queued behind other transfers

    def body() -> ProcessGenerator:
        yield from process.task.run(0.0)  # type: ignore[union-attr]
        yield from process.ops(SHARED, Step.LOOKUP, lock_line=lock_line)
        assert process.pending_ns == 100.0
        yield from process.flush()

    env.process(body())
    env.run()
    assert process.times_ns[Step.LOCK_WAIT] == lock_wait
    assert process.times_ns[Step.LOOKUP] == lookup


def test_sleep_charges_the_time_asleep_and_the_wakeup_apart() -> None:
    env, process, _ = _process()

    def body() -> ProcessGenerator:
        yield from process.compute(2500, Step.WORK)
        # The event fires at 10 us; the process first spends its pending work, then sleeps.
        yield from process.sleep(env.timeout(10_000.0), Step.LOCK_WAIT)

    env.process(body())
    env.run()
    wakeup = GOLD.scheduler.wakeup_ns
    times = process.times_ns
    assert times[Step.WORK] == pytest.approx(1000.0)
    assert times[Step.LOCK_WAIT] == pytest.approx(10_000.0 - (wakeup + 1000.0))
    assert times[Step.SCHEDULING] == pytest.approx(2 * wakeup)  # the first run and the wake-up
    assert env.now == pytest.approx(10_000.0 + wakeup)


def test_replaced_accounts_receive_the_later_charges() -> None:
    env, process, _ = _process()
    first = process.times_ns

    def body() -> ProcessGenerator:
        yield from process.compute(2500, Step.WORK)
        yield from process.flush()
        process.times_ns = dict.fromkeys(Step, 0.0)
        yield from process.compute(5000, Step.WORK)
        yield from process.flush()

    env.process(body())
    env.run()
    assert first[Step.WORK] == pytest.approx(1000.0)
    assert process.times_ns[Step.WORK] == pytest.approx(2000.0)


def test_a_process_without_a_task_cannot_step() -> None:
    env = SimEnvironment(seed=0)
    process = CpuProcess(env, None, 2.0, None, tuple(Step), scheduling=Step.SCHEDULING,
                         lock_wait=Step.LOCK_WAIT, name="idle connection")
    with pytest.raises(RuntimeError, match="idle connection has no task"):
        next(process.ops(SHARED, Step.WORK))


@pytest.mark.parametrize(("categories", "scheduling", "run_ahead_ns", "message"), [
    ((Step.WORK, Step.WORK, Step.LOCK_WAIT, Step.SCHEDULING), Step.SCHEDULING, 0.0, "repeats"),
    ((Step.WORK, Step.LOCK_WAIT), Step.SCHEDULING, 0.0, "scheduling category"),
    (tuple(Step), Step.SCHEDULING, -1.0, "run_ahead_ns"),
])
def test_bad_categories_or_run_ahead_are_refused(categories: tuple[Step, ...], scheduling: Step,
                                                 run_ahead_ns: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CpuProcess(SimEnvironment(seed=0), None, 2.0, None, categories, scheduling=scheduling,
                   lock_wait=Step.LOCK_WAIT, run_ahead_ns=run_ahead_ns)


def test_a_store_scan_writes_every_line_and_invalidates_the_readers_copies() -> None:
    """A plan of stores (the destination of a ``memmove``) stores to each of its lines once, in
    chunks, and the copies another core read before are invalidated: that core's next load scan
    of the same lines finds none of them in its own caches. A plan of loads stores nothing."""
    shm = SharedMemory()
    array = shm.alloc("ints", 4, 64, align=64)  # 64 ints: 4 lines
    tracked = TrackedMemory(shm)
    loads = tracked.scan([(array, range(64), None)], 64, 16, "stream")
    stores = tracked.scan([(array, range(64), None)], 64, 16, "stream", op=Op.STORE)
    assert (loads.op, stores.op) == (Op.LOAD, Op.STORE)
    assert list(stores.lines) == list(loads.lines)
    assert len(stores.chunks()) == 4
    with pytest.raises(ValueError, match="loads or stores"):
        tracked.scan([(array, range(64), None)], 64, 16, "stream", op=Op.RMW)
    env = SimEnvironment(seed=0)
    scheduler = CpuScheduler.from_machine(env, GOLD)
    machine = tracked.build_machine(GOLD)

    def process(name: str) -> CpuProcess[Step]:
        return CpuProcess(env, machine, GOLD.clock_ghz, scheduler.new_task(name), tuple(Step),
                          scheduling=Step.SCHEDULING, lock_wait=Step.LOCK_WAIT)

    reader, writer = process("reader"), process("writer")
    tables: list[pd.DataFrame] = []

    def body() -> ProcessGenerator:
        yield from reader.scan(loads, 1.0, Step.WORK)
        yield from reader.flush()
        tables.append(machine.line_table())
        yield from writer.scan(stores, 0.0, Step.WORK)
        yield from writer.flush()
        tables.append(machine.line_table())
        yield from reader.scan(loads, 1.0, Step.WORK)
        yield from reader.flush()
        tables.append(machine.line_table())

    env.process(body())
    env.run()
    first, written, again = tables
    assert list(first["stores"]) == [0] * 4
    assert list(written["stores"]) == [1] * 4
    assert list(written["invalidations"] - first["invalidations"]) == [1] * 4
    hits = ["l1_hit", "l2_hit"]
    assert (again[hits].sum(axis=1) == written[hits].sum(axis=1)).all()  # no own-cache hit
    assert list(again["loads"]) == [2] * 4



def _beside_a_busy_sibling(high_ipc: float) -> tuple[dict[Step, float], float]:
    """1,000 ns of work and a scan with 640 ns of loop, both alone-times, beside a busy sibling:
    the categories' times and the elapsed time."""
    from tests.simulator.runtime.scheduler_toys import make, spin

    shm = SharedMemory()
    array = shm.alloc("ints", 4, 640, align=64)  # 640 ints: 40 lines
    tracked = TrackedMemory(shm)
    plan = tracked.scan([(array, range(640), None)], 640, 64, "stream")
    machine = tracked.build_machine(GOLD)
    env, sched = make((1, 1, 1, 2), wakeup_ns=100.0, smt_throughput=1.25,
                      smt_throughput_high_ipc=high_ipc)
    env.process(spin(sched.new_task("sibling")))
    process = CpuProcess(env, machine, GOLD.clock_ghz, sched.new_task("p"), tuple(Step),
                         scheduling=Step.SCHEDULING, lock_wait=Step.LOCK_WAIT)
    spans: list[float] = []

    def body() -> ProcessGenerator:
        yield from process.task.run(0.0)  # type: ignore[union-attr]
        start = env.now
        yield from process.compute(2500, Step.WORK)  # 1,000 ns at 2.5 GHz
        yield from process.scan(plan, 2.5, Step.LOOKUP)  # 640 entries at 1 ns
        yield from process.flush()
        spans.append(env.now - start)

    env.process(body())
    env.run(until=1e6)
    return process.times_ns, spans[0]


def test_a_scans_loop_is_stretched_at_its_own_smt_rate() -> None:
    """Beside a busy sibling a scan's instructions run at ``smt_throughput_high_ipc`` / 2, other
    work at ``smt_throughput`` / 2, stalls at full rate; each category gets its own stretch."""
    tight, ordinary = _beside_a_busy_sibling(1.0), _beside_a_busy_sibling(1.25)
    for times, span in (tight, ordinary):
        assert times[Step.WORK] == pytest.approx(1000.0 * 2 / 1.25)
        assert times[Step.WORK] + times[Step.LOOKUP] == pytest.approx(span)
        assert times[Step.SCHEDULING] == 0.0
    assert tight[0][Step.LOOKUP] - ordinary[0][Step.LOOKUP] == pytest.approx(640.0 * (2 - 1.6))
    assert ordinary[0][Step.LOOKUP] > 640.0 * 1.6  # plus the lines' misses
