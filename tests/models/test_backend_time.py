"""A backend's time and memory-operation counters go to its current transaction's record.

The lazy time itself (steps, flushes, sleeps, categories) is the generic process's, tested in
``tests/simulator/runtime/test_process.py``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.config.machine_file import load_machine
from simulator.hardware.codes import N_CLASSES, Op, Out
from simulator.hardware.machine import Machine
from simulator.hardware.tracked import Access, Ops
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from snapsim_models.backend import CATEGORIES, Backend, Category

GOLD = replace(load_machine("gold5215-2s"), idle=None)
"""The Gold 5215 without idle states: these tests time their steps to the nanosecond."""

LOCK = Ops([Access(0, Op.RMW, 0xF, "lock.state")])


def _backend() -> tuple[SimEnvironment, Backend]:
    env = SimEnvironment(seed=0)
    scheduler = CpuScheduler.from_machine(env, GOLD)
    backend = Backend(env, Machine(GOLD, [0, 64]), GOLD.clock_ghz, 0, 0,
                      scheduler.new_task("b"))
    return env, backend


def test_each_transaction_is_charged_to_its_own_record() -> None:
    env, backend = _backend()
    records = []

    def transaction(cycles: float) -> ProcessGenerator:
        backend.begin_transaction()
        yield from backend.compute(cycles, Category.GET_SNAPSHOT)
        yield from backend.ops(LOCK, Category.COMMIT, lock_line=True)
        yield from backend.flush()
        records.append(backend.end_transaction())

    def body() -> ProcessGenerator:
        yield from transaction(2500)  # 1000 ns at 2.5 GHz
        yield from transaction(5000)

    env.process(body())
    env.run()
    first, second = records
    assert first is not second
    assert list(first.times_ns) == list(CATEGORIES)
    assert first.times_ns[Category.GET_SNAPSHOT] == pytest.approx(1000.0)
    assert second.times_ns[Category.GET_SNAPSHOT] == pytest.approx(2000.0)
    for record in records:
        assert record.times_ns[Category.COMMIT] > 0.0  # the atomic
        assert record.counters[:N_CLASSES].sum() == 1  # the atomic, in one access class
        assert record.counters[Out.LATENCY_NS] > 0.0
        assert record.end_ns > record.start_ns
    assert first.times_ns[Category.SCHEDULING] == pytest.approx(GOLD.scheduler.wakeup_ns)
    assert second.times_ns[Category.SCHEDULING] == 0.0  # it kept its thread
    assert second.start_ns == first.end_ns
    assert (first.full_snapshots, first.reused_snapshots) == (0, 0)


def test_a_connection_that_never_runs_names_itself() -> None:
    backend = Backend(SimEnvironment(seed=0), None, GOLD.clock_ghz, 7, 9, None)
    with pytest.raises(RuntimeError, match="connection 7 has no task"):
        next(backend.ops(LOCK, Category.OTHER))
