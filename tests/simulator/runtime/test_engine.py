"""The SimPy environment (ns clock, seeded generator, event counts) and the tracing recorder."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.recorder import Recorder


class Row(NamedTuple):
    backend: int
    latency_ns: float


class Other(NamedTuple):
    backend: int


def test_time_unit_is_nanoseconds() -> None:
    env = SimEnvironment(seed=1)
    seen: list[float] = []

    def proc() -> ProcessGenerator:
        yield env.timeout(1_000)
        seen.append(env.now)
        yield env.timeout(0.5)
        seen.append(env.now)

    env.process(proc())
    env.run()
    assert seen == [1_000, 1_000.5]


def test_same_seed_gives_same_draws() -> None:
    a = SimEnvironment(seed=42).rng.random(5)
    b = SimEnvironment(seed=42).rng.random(5)
    c = SimEnvironment(seed=43).rng.random(5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_seed_sequence_is_accepted() -> None:
    seq = np.random.SeedSequence(7)
    child_a, child_b = seq.spawn(2)
    draws_a = SimEnvironment(seed=child_a).rng.integers(0, 1_000_000, 4)
    again = SimEnvironment(seed=np.random.SeedSequence(7).spawn(2)[0]).rng.integers(
        0, 1_000_000, 4
    )
    other = SimEnvironment(seed=child_b).rng.integers(0, 1_000_000, 4)
    np.testing.assert_array_equal(draws_a, again)
    assert not np.array_equal(draws_a, other)


def test_environment_has_a_fresh_recorder() -> None:
    env = SimEnvironment(seed=0)
    assert isinstance(env.recorder, Recorder)
    assert env.recorder.tables() == []


def test_recorder_columns_follow_first_row() -> None:
    rec = Recorder()
    rec.record("txn", backend=1, latency_ns=25.0, algorithm="pre14")
    rec.record("txn", latency_ns=30.0, algorithm="post14", backend=2)  # other order
    frame = rec.to_frame("txn")
    assert frame.columns.tolist() == ["backend", "latency_ns", "algorithm"]
    assert frame.to_dict("records") == [
        {"backend": 1, "latency_ns": 25.0, "algorithm": "pre14"},
        {"backend": 2, "latency_ns": 30.0, "algorithm": "post14"},
    ]


def test_recorder_rejects_other_fields() -> None:
    rec = Recorder()
    rec.record("txn", backend=1, latency_ns=25.0)
    with pytest.raises(ValueError, match="'txn' has columns"):
        rec.record("txn", backend=1)
    with pytest.raises(ValueError, match="'txn' has columns"):
        rec.record("txn", backend=1, latency_ns=2.0, extra=3)
    rec.append("txn", Row(backend=2, latency_ns=2.0))  # same fields as a NamedTuple: accepted
    with pytest.raises(ValueError, match="got a row with"):
        rec.append("txn", Other(backend=1))
    assert rec.n_rows("txn") == 2


def test_recorder_named_tuples() -> None:
    rec = Recorder()
    rec.append("rows", Row(3, 1.5))
    rec.append("rows", Row(4, 2.5))
    frame = rec.to_frame("rows")
    assert frame.columns.tolist() == ["backend", "latency_ns"]
    assert frame["backend"].tolist() == [3, 4]
    assert rec.n_rows("rows") == 2


def test_recorder_empty_tables() -> None:
    rec = Recorder()
    unknown = rec.to_frame("never")
    assert len(unknown) == 0
    rec.declare("migrations", ["time_ns", "task"])
    declared = rec.to_frame("migrations")
    assert len(declared) == 0
    assert declared.columns.tolist() == ["time_ns", "task"]
    with pytest.raises(ValueError, match="already has columns"):
        rec.declare("migrations", ["task"])


def test_recorder_tables_in_creation_order() -> None:
    rec = Recorder()
    rec.record("b", x=1)
    rec.declare("a", ["y"])
    rec.record("b", x=2)
    assert rec.tables() == ["b", "a"]
    assert rec.n_rows("b") == 2
    assert rec.n_rows("a") == 0


# ------------------------------------------------------------------ fast_forward, succeed_after


def _log_of_processes(delays: list[list[float]], fast: bool) -> tuple[list[tuple[float, int]], int]:
    """Each process waits its delays in turn, logging (time, process) after each wait."""
    env = SimEnvironment(seed=0)
    log: list[tuple[float, int]] = []

    def proc(index: int, waits: list[float]) -> ProcessGenerator:
        for delay in waits:
            if not (fast and env.fast_forward(delay)):
                yield env.timeout(delay)
            log.append((env.now, index))

    for index, waits in enumerate(delays):
        env.process(proc(index, waits))
    env.run()
    return log, env.events_processed


def test_fast_forward_moves_the_clock_only_when_nothing_else_is_queued() -> None:
    env = SimEnvironment(seed=0)
    assert env.fast_forward(5.0)  # empty queue: nothing can happen meanwhile
    assert env.now == 5.0
    env.timeout(10.0)  # an event at 15
    assert not env.fast_forward(10.0)  # a tie: the queued event must go first
    assert not env.fast_forward(12.0)
    assert env.now == 5.0
    assert env.fast_forward(9.5)
    assert env.now == 14.5
    assert env.fast_forwards == 2


@pytest.mark.parametrize("delays", [
    [[3.0, 3.0, 3.0]],  # alone: every wait is skipped
    [[1.0, 5.0, 1.0], [2.0, 2.0, 2.0]],
    [[1.0, 1.0], [1.0, 1.0], [2.0]],  # ties at equal times
    [[0.5, 7.25, 0.25, 4.0], [3.0, 0.0, 3.0], [10.0, 0.125]],
])
def test_fast_forward_gives_the_same_history_as_timeouts(delays: list[list[float]]) -> None:
    slow_log, slow_events = _log_of_processes(delays, fast=False)
    fast_log, fast_events = _log_of_processes(delays, fast=True)
    assert fast_log == slow_log
    assert fast_events <= slow_events
    if len(delays) == 1:
        assert fast_events < slow_events


def _log_of_waits(delays: list[list[float]], wait: bool) -> list[tuple[float, int, Any]]:
    """Each process waits its delays in turn (timeout or wait), logging what it received."""
    env = SimEnvironment(seed=0)
    log: list[tuple[float, int, Any]] = []

    def proc(index: int, waits: list[float]) -> ProcessGenerator:
        for delay in waits:
            received = yield (env.wait(delay) if wait else env.timeout(delay))
            log.append((env.now, index, received))

    for index, waits in enumerate(delays):
        env.process(proc(index, waits))
    env.run()
    return log


def test_wait_is_a_timeout_with_the_same_queue_entry() -> None:
    slow, fast = SimEnvironment(seed=0), SimEnvironment(seed=0)
    slow.timeout(3.5)
    fast.wait(3.5)
    (at_slow, priority_slow, id_slow, event_slow), = slow._queue
    (at_fast, priority_fast, id_fast, event_fast), = fast._queue
    assert (at_fast, priority_fast, id_fast) == (at_slow, priority_slow, id_slow)
    assert type(event_fast) is type(event_slow)
    assert vars(event_fast) == {**vars(event_slow), "env": fast}


@pytest.mark.parametrize("delays", [
    [[1.0, 5.0, 1.0], [2.0, 2.0, 2.0]],
    [[1.0, 1.0], [1.0, 1.0], [2.0]],  # ties at equal times: the ids decide
    [[0.5, 7.25, 0.25, 4.0], [3.0, 0.0, 3.0], [10.0, 0.125]],
])
def test_wait_gives_the_same_history_as_timeouts(delays: list[list[float]]) -> None:
    assert _log_of_waits(delays, wait=True) == _log_of_waits(delays, wait=False)


def test_succeed_after_resumes_the_waiter_later_with_the_value() -> None:
    env = SimEnvironment(seed=0)
    event = env.event()
    seen: list[tuple[float, object]] = []

    def waiter() -> ProcessGenerator:
        value = yield event
        seen.append((env.now, value))

    env.process(waiter())
    env.run(until=2.0)
    env.succeed_after(event, 3.5, value="granted")
    env.run()
    assert seen == [(5.5, "granted")]
    with pytest.raises(RuntimeError, match="already been triggered"):
        env.succeed_after(event, 1.0)
    with pytest.raises(ValueError, match="must not be negative"):
        env.succeed_after(env.event(), -1.0)


def test_close_lets_reference_counting_free_a_finished_simulation() -> None:
    """Waiting processes, their generators and queued events form cycles; close breaks them."""
    import gc
    import weakref

    class Model:
        pass

    enabled = gc.isenabled()
    gc.disable()
    try:
        env = SimEnvironment(seed=0)
        model = Model()
        alive = weakref.ref(model)
        never = env.event()

        def sleeper(e: SimEnvironment, event: object, m: Model) -> ProcessGenerator:
            yield event  # type: ignore[misc]  # waits for ever: nobody triggers it

        def ticker(e: SimEnvironment, event: object, m: Model) -> ProcessGenerator:
            while True:
                yield e.timeout(1.0)

        processes = []
        for body in (sleeper, ticker):
            generator = body(env, never, model)
            processes.append((env.process(generator), generator))
        env.run(until=10.5)
        del model, generator, body
        assert alive() is not None
        env.close(processes)
        del processes, env, never
        assert alive() is None  # freed by reference counting, no collection
    finally:
        if enabled:
            gc.enable()


def test_environment_counts_processed_events() -> None:
    env = SimEnvironment(seed=0)

    def ticks() -> ProcessGenerator:
        for _ in range(10):
            yield env.timeout(1.0)

    env.process(ticks())
    before = SimEnvironment.events_total
    env.run(until=5.5)
    # The process start, five timeouts and the stop event; the run's order is unchanged.
    assert env.events_processed == 7
    env.run()
    # Five more timeouts, the process's end and the first run's stop event (left queued).
    assert env.events_processed == 7 + 5 + 1 + 1
    assert SimEnvironment.events_total - before == env.events_processed
    assert env.now == 10.0
