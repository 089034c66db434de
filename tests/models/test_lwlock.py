"""LWLock semantics: sharing, exclusion, FIFO hand-off, no lost wake-ups, cost on the lock line."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config.machine_file import load_machine
from simulator.hardware.codes import AccessClass, Op
from simulator.hardware.machine import Machine
from simulator.hardware.tracked import Access, Ops
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from snapsim_models.backend import Backend, Category
from snapsim_models.lwlock import LockMode, LWLock

S, X = LockMode.SHARED, LockMode.EXCLUSIVE


def setup(
    n: int, protocol: str = "atomic", queue: str = "fifo"
) -> tuple[SimEnvironment, LWLock, list[Backend], Machine]:
    config = load_machine("gold5215-2s")
    env = SimEnvironment(seed=0)
    sched = CpuScheduler.from_machine(env, config)
    machine = Machine(config, [0, 64])
    backends = [Backend(env, machine, config.clock_ghz, k, k, sched.new_task(f"b{k}"))
                for k in range(n)]
    word = [Access(0, Op.RMW, 0xF0, "lock.state"), Access(0, Op.STORE, 0xF00, "lock.shared")]
    return env, LWLock("TestLock", Ops(word if protocol == "spinlock" else word[:1]), protocol,
                       queue=queue), backends, machine


def holder(env: SimEnvironment, lock: LWLock, b: Backend, mode: LockMode, start: float,
           hold_ns: float, log: list[tuple[str, float, int]]) -> ProcessGenerator:
    yield env.timeout(start)
    yield from b.compute(10, Category.OTHER)
    yield from lock.acquire(b, mode, Category.OTHER)
    log.append(("got", b.now, b.connection))
    yield from b.compute(hold_ns * b.clock_ghz, Category.OTHER)
    yield from lock.release(b, mode, Category.OTHER)
    log.append(("rel", b.now, b.connection))


def test_exclusive_excludes_and_waiters_get_the_lock_in_fifo_order() -> None:
    env, lock, bs, _ = setup(3)
    log: list[tuple[str, float, int]] = []
    env.process(holder(env, lock, bs[0], X, 0, 50_000, log))
    env.process(holder(env, lock, bs[1], X, 1_000, 1_000, log))
    env.process(holder(env, lock, bs[2], X, 2_000, 1_000, log))
    env.run()
    order = [who for event, _, who in log if event == "got"]
    assert order == [0, 1, 2]
    releases = {who: t for event, t, who in log if event == "rel"}
    grants = {who: t for event, t, who in log if event == "got"}
    assert grants[1] >= releases[0]
    assert grants[2] >= releases[1]


def test_shared_holders_share_and_an_exclusive_waiter_blocks_newcomers() -> None:
    env, lock, bs, _ = setup(4)
    log: list[tuple[str, float, int]] = []
    env.process(holder(env, lock, bs[0], S, 0, 30_000, log))
    env.process(holder(env, lock, bs[1], S, 500, 30_000, log))
    env.process(holder(env, lock, bs[2], X, 1_000, 1_000, log))
    env.process(holder(env, lock, bs[3], S, 2_000, 1_000, log))  # must wait behind the writer
    env.run()
    grants = {who: t for event, t, who in log if event == "got"}
    releases = {who: t for event, t, who in log if event == "rel"}
    assert grants[1] < releases[0]  # the two readers overlapped
    assert grants[2] >= max(releases[0], releases[1])
    assert grants[3] >= releases[2]


def test_conditional_acquire_fails_when_held() -> None:
    env, lock, bs, _ = setup(2)
    results: list[bool] = []

    def try_it() -> ProcessGenerator:
        yield from bs[0].compute(10, Category.OTHER)
        yield from lock.acquire(bs[0], X, Category.OTHER)
        yield from bs[1].compute(10, Category.OTHER)
        got = yield from lock.conditional_acquire(bs[1], X, Category.OTHER)
        results.append(got)
        yield from lock.release(bs[0], X, Category.OTHER)
        got = yield from lock.conditional_acquire(bs[1], S, Category.OTHER)
        results.append(got)

    env.process(try_it())
    env.run()
    assert results == [False, True]


def test_overtake_lets_a_reader_past_a_waiting_writer_who_gets_the_lock_once_readers_drain(
) -> None:
    """PostgreSQL's rule (``options.lwlock_queue: overtake``): the same scenario as the FIFO test
    above, but reader 3 takes the lock while writer 2 waits (no exclusive holder), and the writer
    gets it only when the last reader releases."""
    env, lock, bs, _ = setup(4, queue="overtake")
    log: list[tuple[str, float, int]] = []
    env.process(holder(env, lock, bs[0], S, 0, 30_000, log))
    env.process(holder(env, lock, bs[1], S, 500, 30_000, log))
    env.process(holder(env, lock, bs[2], X, 1_000, 1_000, log))
    env.process(holder(env, lock, bs[3], S, 2_000, 1_000, log))
    env.run()
    grants = {who: t for event, t, who in log if event == "got"}
    releases = {who: t for event, t, who in log if event == "rel"}
    assert grants[3] < releases[0]  # overtook the writer
    assert grants[2] >= max(releases[0], releases[1], releases[3])
    assert lock.grants == {S: 3, X: 1}


def test_overtake_release_wakes_every_shared_waiter_or_one_exclusive() -> None:
    """``LWLockWakeup``: after a writer, the head waiter; a shared head brings every shared
    waiter behind it along, exclusive ones skipped; an exclusive head comes alone."""
    env, lock, bs, _ = setup(5, queue="overtake")
    log: list[tuple[str, float, int]] = []
    env.process(holder(env, lock, bs[0], X, 0, 30_000, log))
    env.process(holder(env, lock, bs[1], S, 1_000, 10_000, log))
    env.process(holder(env, lock, bs[2], X, 2_000, 1_000, log))
    env.process(holder(env, lock, bs[3], S, 3_000, 10_000, log))
    env.process(holder(env, lock, bs[4], X, 4_000, 1_000, log))
    env.run()
    grants = {who: t for event, t, who in log if event == "got"}
    releases = {who: t for event, t, who in log if event == "rel"}
    assert grants[1] < releases[3]  # woken together
    assert grants[3] < releases[1]
    assert min(grants[2], grants[4]) >= max(releases[1], releases[3])
    assert abs(grants[2] - grants[4]) > 0  # one writer at a time
    fifo_env, fifo, fbs, _ = setup(5)
    flog: list[tuple[str, float, int]] = []
    for k, (mode, start, hold) in enumerate([(X, 0, 30_000), (S, 1_000, 10_000),
                                            (X, 2_000, 1_000), (S, 3_000, 10_000),
                                            (X, 4_000, 1_000)]):
        fifo_env.process(holder(fifo_env, fifo, fbs[k], mode, start, hold, flog))
    fifo_env.run()
    order = [who for event, _, who in flog if event == "got"]
    assert order == [0, 1, 2, 3, 4]  # FIFO: reader 3 waits for writer 2


@pytest.mark.parametrize(("protocol", "queue"), [("atomic", "fifo"), ("spinlock", "fifo"),
                                                 ("atomic", "overtake")])
def test_random_contention_never_loses_a_wakeup(protocol: str, queue: str) -> None:
    env, lock, bs, machine = setup(12, protocol, queue)
    rng = np.random.default_rng(3)
    done = [0]

    def worker(b: Backend) -> ProcessGenerator:
        for _ in range(30):
            mode = X if rng.random() < 0.4 else S
            yield from b.compute(float(rng.integers(10, 5000)), Category.OTHER)
            yield from lock.acquire(b, mode, Category.OTHER)
            yield from b.compute(float(rng.integers(10, 3000)), Category.OTHER)
            yield from lock.release(b, mode, Category.OTHER)
        done[0] += 1

    for b in bs:
        env.process(worker(b))
    env.run()
    assert done[0] == len(bs)
    assert not lock.held
    assert not lock.waiters
    table = machine.line_table()
    assert int(table["rmws"].iloc[0]) >= 2 * 12 * 30  # every acquire and release touched the word
    assert int(table["local_hitm"].iloc[0]) + int(table["remote_hitm"].iloc[0]) > 0


def test_atomic_protocol_costs_read_cas_and_sub() -> None:
    env, lock, bs, machine = setup(1)

    def once() -> ProcessGenerator:
        yield from bs[0].compute(10, Category.OTHER)
        yield from lock.acquire(bs[0], S, Category.OTHER)
        yield from lock.release(bs[0], S, Category.OTHER)

    env.process(once())
    env.run()
    row = machine.line_table().iloc[0]
    assert (row["loads"], row["rmws"], row["stores"]) == (1, 2, 0)
    assert row[AccessClass.DRAM_LOCAL.name.lower()] == 1


def test_a_release_is_one_atomic_and_a_queued_acquire_three_more() -> None:
    """``LWLockRelease`` without waiters: one ``sub_fetch``. A conflicting acquire: the load and
    CAS (which writes back what it found), then ``LWLockQueueSelf``'s three atomics; the
    release that finds it waiting takes the wait-list lock too."""
    env, lock, bs, machine = setup(2)
    marks: list[tuple[int, int]] = []

    def counts() -> tuple[int, int]:
        row = machine.line_table().iloc[0]
        return int(row["loads"]), int(row["rmws"])

    def first() -> ProcessGenerator:
        yield from bs[0].compute(10, Category.OTHER)
        yield from lock.acquire(bs[0], X, Category.OTHER)
        yield from bs[0].flush()
        marks.append(counts())
        yield from bs[0].compute(100_000, Category.OTHER)
        yield from lock.release(bs[0], X, Category.OTHER)
        yield from bs[0].flush()
        marks.append(counts())

    def second() -> ProcessGenerator:
        yield env.timeout(20_000.0)
        yield from lock.acquire(bs[1], X, Category.OTHER)
        marks.append(counts())
        yield from lock.release(bs[1], X, Category.OTHER)
        yield from bs[1].flush()
        marks.append(counts())

    env.process(first())
    env.process(second())
    env.run()
    acquired, released_with_waiter, woken, released = marks
    assert acquired == (1, 1)
    # second: load + CAS + 3 queueing atomics; first's release: sub + the wait-list lock
    assert released_with_waiter == (2, 1 + 1 + 3 + 2)
    assert woken == released_with_waiter
    assert released == (2, released_with_waiter[1] + 1)  # one atomic, nobody waiting
    assert lock.word.version == 1 + 3 + 2 + 1  # the failed-to-take CAS changed nothing
