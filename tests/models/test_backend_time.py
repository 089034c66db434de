"""Lazy time in a backend: steps accumulate, memory operations on shared lines happen at the
clock (in time order with everybody else's), private ones need no synchronisation."""

from __future__ import annotations

from typing import Any

import pytest

from models.backend import Backend, Category
from simulator.config.machine_file import load_machine
from simulator.hardware.codes import Op
from simulator.hardware.machine import Machine
from simulator.hardware.tracked import Access, Ops
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler

GOLD = load_machine("gold5215-2s")


class _Spy:
    """A machine wrapper recording the time of every memory-operation sequence."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.times: list[float] = []

    def sequence(self, *args: Any, **kwargs: Any) -> tuple[float, float]:
        self.times.append(args[4])
        return self.machine.sequence(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.machine, name)


def _backend(run_ahead_ns: float = 0.0) -> tuple[SimEnvironment, Backend, _Spy]:
    env = SimEnvironment(seed=0)
    scheduler = CpuScheduler.from_machine(env, GOLD)
    spy = _Spy(Machine(GOLD, [0, 64]))
    backend = Backend(env, spy, GOLD.clock_ghz, 0, 0, scheduler.new_task("b"),  # type: ignore[arg-type]
                      run_ahead_ns=run_ahead_ns)
    return env, backend, spy


SHARED = Ops([Access(0, Op.RMW, 0xF, "lock.state")])
"""An operation on a line of no tracked memory: not private (shared by default)."""


def test_shared_operations_happen_at_the_clock_after_the_pending_work() -> None:
    env, backend, spy = _backend()
    log: list[float] = []

    def process() -> ProcessGenerator:
        yield from backend.compute(2500, Category.OTHER)  # 1000 ns at 2.5 GHz
        assert env.now == 0.0
        assert backend.now == pytest.approx(1000.0)
        yield from backend.ops(SHARED, Category.OTHER)
        log.append(env.now)
        yield from backend.flush()

    env.process(process())
    env.run()
    assert len(spy.times) == 1
    wakeup = GOLD.scheduler.wakeup_ns  # the first run places the backend like a wake-up
    assert spy.times[0] == pytest.approx(wakeup + 1000.0)  # at the clock, after the work
    assert log[0] == pytest.approx(spy.times[0])
    assert backend.record.times_ns[Category.OTHER] > 1000.0  # work plus the atomic


def test_run_ahead_allows_operations_ahead_of_the_clock() -> None:
    env, backend, spy = _backend(run_ahead_ns=5000.0)

    def process() -> ProcessGenerator:
        yield from backend.task.run(0.0)  # type: ignore[union-attr]  # take a thread first
        start = env.now
        yield from backend.compute(2500, Category.OTHER)
        yield from backend.ops(SHARED, Category.OTHER)
        assert env.now == start  # the operation did not wait for the clock
        yield from backend.flush()

    env.process(process())
    env.run()
    assert spy.times[0] == pytest.approx(GOLD.scheduler.wakeup_ns + 1000.0)


def test_flush_spends_the_pending_time_in_one_run_and_charges_categories() -> None:
    env, backend, _ = _backend()

    def process() -> ProcessGenerator:
        yield from backend.flush()  # nothing pending: no time passes
        assert env.now == 0.0
        yield from backend.compute(2500, Category.OTHER)
        yield from backend.compute(5000, Category.GET_SNAPSHOT)
        yield from backend.flush()

    env.process(process())
    env.run()
    times = backend.record.times_ns
    assert times[Category.OTHER] == pytest.approx(1000.0)
    assert times[Category.GET_SNAPSHOT] == pytest.approx(2000.0)
    assert times[Category.SCHEDULING] == pytest.approx(GOLD.scheduler.wakeup_ns)
    assert env.now == pytest.approx(3000.0 + GOLD.scheduler.wakeup_ns)
    assert backend.pending_ns == 0.0
