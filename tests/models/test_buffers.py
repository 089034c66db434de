"""Hot-page buffer accesses and lock words as PostgreSQL 13/14 issue them: counts per access and
per transaction (failed CAS attempts included), a pin that waits on a locked header, and the
spin-delay loop of ``s_lock.c``."""

from __future__ import annotations

import itertools

import pytest

from simulator.runtime.engine import ProcessGenerator
from snapsim_models.backend import Backend, Category
from snapsim_models.spin import DEFAULT_SPINS_PER_DELAY, MIN_DELAY_NS, PAUSE_CYCLES, SpinDelay
from tests.models.harness import (
    PgHarness,
    build_harness,
    run_statements,
    transaction_statements,
)


def _machine_line(h: PgHarness, line_number: int) -> int:
    return int(list(h.machine.line_numbers).index(line_number))


def test_an_uncontended_page_access_is_three_loads_and_four_rmws_on_the_descriptor() -> None:
    """PinBuffer (load + CAS), LockBuffer shared (load + CAS), its release (one atomic sub),
    UnpinBuffer (load + CAS); the mapping partition lock: load + CAS, then the release."""
    h = build_harness("post14", 3)
    me = h.running[0]
    page = h.algorithm.root_page
    h.measure(lambda: page.access(me, Category.OTHER))  # warm: the lines come in once
    delta = h.measure(lambda: page.access(me, Category.OTHER))
    descriptor = int(h.machine.line_numbers[page.header.line])
    mapping = int(h.machine.line_numbers[page.mapping.line])
    assert (delta.count(descriptor, "loads"), delta.count(descriptor, "rmws")) == (3, 4)
    assert (delta.count(mapping, "loads"), delta.count(mapping, "rmws")) == (1, 2)
    assert page.header.cas_failures == 0


HOLD_NS = 20_000.0
"""How long the holder keeps the buffer header locked in the waiting-pin tests."""


def pin_while_held(h: PgHarness, pin_with: str) -> tuple[dict[str, float], Backend]:
    """One backend locks the root's header for :data:`HOLD_NS`; 10 us in, another pins with
    the page's method ``pin_with``. Returns when each happened, and the pinning backend."""
    holder, pinner = h.running
    page = h.algorithm.root_page
    times: dict[str, float] = {}

    def lock_then_unlock() -> ProcessGenerator:
        yield from page.lock_header(holder, Category.OTHER)
        yield from holder.compute(HOLD_NS * holder.clock_ghz, Category.OTHER)
        yield from page.unlock_header(holder, Category.OTHER)
        times["unlocked"] = h.env.now

    def pin() -> ProcessGenerator:
        yield h.env.timeout(10_000.0)  # the holder is running and has the header by now
        assert page.header_locked_by is holder
        yield from getattr(page, pin_with)(pinner, Category.OTHER)
        yield from pinner.flush()
        times["pinned"] = h.env.now

    h.run(lock_then_unlock(), pin())
    assert page.header_locked_by is None
    return times, pinner


def test_a_pin_on_a_locked_header_waits_for_the_unlock() -> None:
    times, _ = pin_while_held(build_harness("post14", 2, active=(0, 1)), "pin")
    assert times["pinned"] > times["unlocked"] >= HOLD_NS
    # It spun, then slept (100 PAUSEs take ~6 us here, less than the hold): the pin comes
    # after its first 1 ms sleep.
    assert times["pinned"] >= 10_000.0 + MIN_DELAY_NS


def test_a_pin_on_an_unlocked_header_does_not_wait() -> None:
    h = build_harness("post14", 1, active=(0,))
    me = h.running[0]
    page = h.algorithm.root_page
    done: list[float] = []

    def pin() -> ProcessGenerator:
        yield from page.pin(me, Category.OTHER)
        yield from me.flush()
        done.append(h.env.now)

    h.run(pin())
    assert done[0] < 20_000.0  # the task's first wake-up and two transfers, no sleep


def test_spin_delay_sleeps_after_spins_per_delay_and_grows_by_one_to_two_times() -> None:
    h = build_harness("post14", 1, active=(0,))
    me: Backend = h.running[0]
    delay = SpinDelay(spins_per_delay=10)
    sleeps: list[float] = []

    def spin() -> ProcessGenerator:
        for _ in range(30):
            before = h.env.now + me.pending_ns
            yield from delay.spin(me, Category.LOCK_WAIT)
            yield from me.flush()
            if h.env.now - before > 0.5 * MIN_DELAY_NS:
                sleeps.append(h.env.now - before)

    h.run(spin())
    assert len(sleeps) == 3
    assert sleeps[0] == pytest.approx(MIN_DELAY_NS, rel=0.01)
    for earlier, later in itertools.pairwise(sleeps):
        assert earlier <= later <= 2.0 * earlier + 10_000.0
    assert DEFAULT_SPINS_PER_DELAY == 100
    assert PAUSE_CYCLES > 0
    with pytest.raises(ValueError, match="spins_per_delay"):
        SpinDelay(spins_per_delay=0)


@pytest.mark.parametrize("algorithm", ["pre14", "post14"])
def test_proc_array_lock_operations_per_transaction_follow_the_code(algorithm: str) -> None:
    """Read-only transactions of 8 backends started together: per transaction ProcArrayLock
    gets 2 loads, 2 CAS loops (1 attempt each, plus the failed ones) and 2 atomic releases
    (``LWLockAttemptLock`` and ``LWLockRelease`` twice, one per GetSnapshotData)."""
    h = build_harness(algorithm, 8, active=range(8))
    statements = transaction_statements("select-only")
    lock = h.algorithm.proc_array_lock
    line = h.lock_line
    before = h.machine.line_table()
    h.run(*(run_statements(h, backend, statements) for backend in h.running))
    after = h.machine.line_table()
    index = _machine_line(h, line)
    loads = int(after["loads"][index] - before["loads"][index])
    rmws = int(after["rmws"][index] - before["rmws"][index])
    transactions = 8
    assert loads == 2 * transactions
    assert lock.word.cas_attempts == 2 * transactions + lock.word.cas_failures
    assert rmws == lock.word.cas_attempts + 2 * transactions
    assert lock.word.cas_failures > 0  # they started together: some CAS found the word changed


def test_a_descent_visits_the_root_and_one_random_inner_page_per_level() -> None:
    h = build_harness("post14", 1, active=(0,))
    me = h.running[0]
    algorithm = h.algorithm
    (level,) = algorithm.inner_levels  # scale 100: one inner level
    assert len(level) == 97
    descents = 970

    def descend() -> ProcessGenerator:
        for _ in range(descents):
            yield from algorithm.pin_hot_pages(me)

    delta = h.measure(descend)
    root = int(h.machine.line_numbers[algorithm.root_page.header.line])
    assert delta.count(root, "loads") == 3 * descents
    visits = [delta.count(int(h.machine.line_numbers[page.header.line]), "loads") // 3
              for page in level]
    assert sum(visits) == descents
    assert sum(1 for v in visits if v) > 80  # uniform: 97 pages, 10 visits each on average
    assert max(visits) < 30


def _spinlock_harness(connections: int, active: tuple[int, ...]) -> PgHarness:
    h = build_harness("post14", connections, active=active)
    for page in [h.algorithm.root_page, *itertools.chain(*h.algorithm.inner_levels)]:
        page.spinlock_pins = True
    return h


def test_a_spinlock_pin_is_a_tas_and_an_unlock_store_on_the_descriptor() -> None:
    """9.2-9.5's PinBuffer and UnpinBuffer: S_LOCK (one TAS when free), refcount, S_UNLOCK."""
    h = _spinlock_harness(3, active=(2,))
    me = h.running[0]
    page = h.algorithm.root_page
    h.measure(lambda: page.access(me, Category.OTHER))  # warm
    delta = h.measure(lambda: page.access(me, Category.OTHER))
    descriptor = int(h.machine.line_numbers[page.header.line])
    # pin: TAS + unlock; content lock: load + CAS, then its sub; unpin: TAS + unlock
    assert (delta.count(descriptor, "loads"), delta.count(descriptor, "rmws")) == (1, 6)
    assert page.header_locked_by is None


def test_a_spinlock_pin_spins_while_another_backend_holds_the_header() -> None:
    times, pinner = pin_while_held(_spinlock_harness(2, active=(0, 1)), "spinlock_pin")
    assert times["pinned"] > times["unlocked"] >= HOLD_NS
    assert pinner.times_ns[Category.LOCK_WAIT] > 0  # the spinning and the sleep
