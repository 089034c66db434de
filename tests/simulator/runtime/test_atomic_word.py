"""Atomic words: a load and a CAS are separate operations at the clock, so a CAS fails when
another process changed the word in between, and only then; the loser retries locally; fused
words never fail; a fetch-add is one RMW."""

from __future__ import annotations

from enum import StrEnum

from simulator.config.machine_file import load_machine
from simulator.hardware.codes import AccessClass, Op, Out
from simulator.hardware.machine import Machine
from simulator.hardware.tracked import Access, Ops
from simulator.runtime.atomic_word import AtomicWord, WordVersion
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.process import CpuProcess
from simulator.runtime.scheduler import CpuScheduler

GOLD = load_machine("gold5215-2s")
WORD = Ops([Access(0, Op.RMW, 0xF, "lock.state")])


class Step(StrEnum):
    """A toy model's categories."""

    WORK = "work"
    LOCK_WAIT = "lock_wait"
    SCHEDULING = "scheduling"


def _setup(n: int) -> tuple[SimEnvironment, Machine, list[CpuProcess[Step]]]:
    env = SimEnvironment(seed=0)
    scheduler = CpuScheduler.from_machine(env, GOLD)
    machine = Machine(GOLD, [0, 64])
    processes = [CpuProcess(env, machine, GOLD.clock_ghz, scheduler.new_task(f"p{k}"),
                            tuple(Step), scheduling=Step.SCHEDULING, lock_wait=Step.LOCK_WAIT)
                 for k in range(n)]
    return env, machine, processes


def _updater(process: CpuProcess[Step], word: AtomicWord, start_ns: float,
             failures: list[int]) -> ProcessGenerator:
    yield process.env.timeout(start_ns)
    failed = yield from word.update(process, Step.WORK)
    failures.append(failed)
    yield from process.flush()


def test_interleaved_load_and_cas_fail_and_separate_ones_do_not() -> None:
    # Both load at about the same instant; the second CAS finds the word changed by the first.
    env, machine, (a, b) = _setup(2)
    word = AtomicWord(WORD)
    failures: list[int] = []
    env.process(_updater(a, word, 1_000.0, failures))
    env.process(_updater(b, word, 1_000.0, failures))
    env.run()
    assert sorted(failures) == [0, 1]
    assert word.version == 2
    assert (word.cas_attempts, word.cas_failures) == (3, 1)
    assert a.counters[Out.CAS_ATTEMPTS] + b.counters[Out.CAS_ATTEMPTS] == 3
    assert a.counters[Out.CAS_FAILURES] + b.counters[Out.CAS_FAILURES] == 1
    # 2 loads, 2 CAS, 1 local retry by the loser (which owned the line after its failed CAS)
    table = machine.line_table()
    assert (table["loads"][0], table["rmws"][0]) == (2, 3)

    # Far apart in time: neither CAS can fail.
    env, machine, (a, b) = _setup(2)
    word = AtomicWord(WORD)
    failures = []
    env.process(_updater(a, word, 1_000.0, failures))
    env.process(_updater(b, word, 50_000.0, failures))
    env.run()
    assert failures == [0, 0]
    assert (word.cas_attempts, word.cas_failures) == (2, 0)


def test_fused_words_never_fail() -> None:
    env, _, (a, b) = _setup(2)
    word = AtomicWord(WORD, fused=True)
    failures: list[int] = []
    env.process(_updater(a, word, 1_000.0, failures))
    env.process(_updater(b, word, 1_000.0, failures))
    env.run()
    assert failures == [0, 0]
    assert word.cas_failures == 0


def test_a_cas_that_does_not_change_the_value_makes_nobody_fail() -> None:
    env, _, (a, b) = _setup(2)
    word = AtomicWord(WORD)
    failures: list[int] = []

    def unchanged(process: CpuProcess[Step]) -> ProcessGenerator:
        yield env.timeout(1_000.0)
        failures.append((yield from word.update(process, Step.WORK, changes=lambda: False)))
        yield from process.flush()

    env.process(unchanged(a))
    env.process(unchanged(b))
    env.run()
    assert failures == [0, 0]
    assert word.version == 0


def test_a_fetch_add_is_one_rmw_and_changes_the_word() -> None:
    env, machine, (a,) = _setup(1)
    word = AtomicWord(WORD)

    def add() -> ProcessGenerator:
        yield from word.fetch_add(a, Step.WORK)
        yield from a.flush()

    env.process(add())
    env.run()
    assert word.version == 1
    table = machine.line_table()
    assert (table["loads"][0], table["rmws"][0]) == (0, 1)


def test_a_core_that_holds_the_line_loads_and_swaps_in_one_call() -> None:
    env, machine, (a,) = _setup(1)
    word = AtomicWord(WORD)
    calls: list[float] = []
    sequence = machine.sequence_unchecked()

    def spy(*args: object) -> tuple[float, float]:
        calls.append(float(args[4]))  # type: ignore[arg-type]
        return sequence(*args)  # type: ignore[arg-type]

    def twice() -> ProcessGenerator:
        yield from word.update(a, Step.WORK)  # cold: the load, then the CAS after it
        yield from word.update(a, Step.WORK)  # the line is in the core's L1: one call
        yield from a.flush()

    machine.sequence_unchecked = lambda: spy  # type: ignore[method-assign]
    a.machine = machine  # the process takes the machine's sequence function again
    env.process(twice())
    env.run()
    assert len(calls) == 3
    assert calls[1] > calls[0]  # the cold CAS waited for its load's latency
    counts = machine.class_counts(a.counters)
    assert counts[AccessClass.L1_HIT.name.lower()] >= 2


def test_a_cas_fails_exactly_when_a_value_changing_atomic_came_after_its_load() -> None:
    version = WordVersion()
    seen = version.count
    assert not version.fails(seen)
    version.changed()  # another core's fetch-add or successful CAS
    assert version.fails(seen)
    assert not version.fails(version.count)  # the failed CAS returned the new value
    version.changed(3)
    assert version.count == 4
