"""The background pgbench process that drives the mostly-idle connections."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.task import Task
from snapsim_models.options import parse_options, resolve_options
from tests.models.points import default_options, simulate

GOLD = load_machine("gold5215-2s")


def run_with_tasks(background_threads: int) -> tuple[dict[str, object], list[str]]:
    """One mostly-idle point; the names of the tasks its scheduler created."""
    names: list[str] = []
    original = CpuScheduler.new_task

    def spy(self: CpuScheduler, name: str, busy: bool = False) -> Task:
        names.append(name)
        return original(self, name, busy)

    CpuScheduler.new_task = spy  # type: ignore[method-assign]
    try:
        row = simulate(GOLD, "post14", idle_clients=200,
                                    idle_kind="mostly-idle", duration_ns=100e6, warmup_ns=5e6,
                                    background_threads=background_threads).row
    finally:
        CpuScheduler.new_task = original  # type: ignore[method-assign]
    return row, names


@pytest.mark.parametrize("threads", [0, 3])
def test_the_background_threads_serve_every_connection_every_100_ms(threads: int) -> None:
    row, names = run_with_tasks(threads)
    assert sorted(n for n in names if n.startswith("pgbench-bg")) == [
        f"pgbench-bg{j}" for j in range(threads)]
    # 200 connections, one SELECT 1 per 100 ms (plus its ~50 us latency) each: every
    # connection completes one query in a 100 ms window, a few may complete two or none.
    assert float(row["mostly_idle_tps"]) == pytest.approx(2_000, rel=0.02)  # type: ignore[arg-type]


def test_background_threads_wake_the_backends_they_send_to() -> None:
    with_threads, _ = run_with_tasks(3)
    without, _ = run_with_tasks(0)
    # Each background query wakes its backend and, with a pgbench process, the thread that
    # reads the answer (or sends the next query) too: more idle exits per active transaction.
    assert float(with_threads["idle_exits_per_txn"]) > float(  # type: ignore[arg-type]
        without["idle_exits_per_txn"])  # type: ignore[arg-type]


def test_the_option_is_read_and_checked() -> None:
    assert parse_options(resolve_options({})).background_threads == 4
    assert parse_options(resolve_options({"background_threads": 0})).background_threads == 0
    with pytest.raises(ConfigError, match=r"options\.background_threads"):
        resolve_options({"background_threads": -1})


@pytest.mark.parametrize(("start", "expected"), [("together", 200 / 0.04),
                                                 ("random", 0.4 * 200 / 0.04)])
def test_pgbench_starts_every_connection_at_once_where_random_phases_spread_them(
        start: str, expected: float) -> None:
    # 200 connections on 2 threads, the first 40 ms of a run (no warm-up): started together,
    # every connection's first query is answered in them (pgbench's start); at random phases
    # 40 % of them (40 of 100 ms)
    row = simulate(GOLD, "post14", idle_clients=200, idle_kind="mostly-idle",
                   duration_ns=40e6, warmup_ns=0.0, background_threads=2,
                   background_start=start).row
    assert float(row["mostly_idle_tps"]) == pytest.approx(  # type: ignore[arg-type]
        expected, rel=0.03 if start == "together" else 0.25)


def test_the_start_option_is_read_and_checked() -> None:
    assert parse_options(resolve_options({})).background_start == "random"
    assert parse_options(resolve_options(
        {"background_start": "together"})).background_start == "together"
    with pytest.raises(ConfigError, match=r"options\.background_start: expected random or "
                                          r"together, got 'aligned'"):
        resolve_options({"background_start": "aligned"})


def loop_costs(per_connection_cycles: float, sleep_ns: float = 100e6) -> object:
    """The shipped cost model with pgbench's per-connection loop cost (and the mostly-idle
    connections' sleep) replaced."""
    return dataclasses.replace(default_options().costs, mostly_idle_sleep_ns=sleep_ns,
                               pgbench_loop_per_connection_cycles=per_connection_cycles)


SETTINGS: dict[str, object] = {"idle_clients": 200, "idle_kind": "mostly-idle",
                               "duration_ns": 100e6, "warmup_ns": 5e6, "background_threads": 2}
"""200 mostly-idle connections on 2 background threads, 100 each, over 105 ms."""


def background_cpu_ns(per_connection_cycles: float,
                      sleep_ns: float = 100e6) -> tuple[list[float], dict[str, object]]:
    """Each background pgbench thread's running time over the point, and the point's row."""
    tasks: list[Task] = []
    original = CpuScheduler.new_task

    def spy(self: CpuScheduler, name: str, busy: bool = False) -> Task:
        task = original(self, name, busy)
        if name.startswith("pgbench-bg"):
            tasks.append(task)
        return task

    CpuScheduler.new_task = spy  # type: ignore[method-assign]
    try:
        row = simulate(GOLD, "post14", costs=loop_costs(per_connection_cycles, sleep_ns),
                       **SETTINGS).row
    finally:
        CpuScheduler.new_task = original  # type: ignore[method-assign]
    return [task.cpu_ns for task in tasks], row


def test_a_thread_with_always_a_query_due_walks_its_connections_without_rest() -> None:
    """Connections that sleep 1 ms and 250,000 cycles per connection: a walk over a thread's 100
    connections takes 5 ms at 2.5 GHz (half the per-connection cost each), a pass 10 ms, and
    every pass finds queries due: both threads run all the time. A connection's query is sent in
    one pass and its answer read at the start of the next; it is due again 1 ms later and is
    sent in the pass after that, or, when its backend waited for a CPU, a pass later: a round
    every two or three passes (20-30 ms)."""
    cpu_ns, row = background_cpu_ns(250_000.0, sleep_ns=1e6)
    assert [ns / 105e6 for ns in cpu_ns] == pytest.approx([1.0, 1.0], abs=0.03)
    assert 200 / 0.030 <= float(row["mostly_idle_tps"]) <= 200 / 0.020  # type: ignore[arg-type]


def test_below_saturation_a_thread_pays_its_walks_once_or_twice_per_query() -> None:
    """3,000 cycles per connection: a pass over 100 connections is 120 us at 2.5 GHz. A query is
    sent in one pass and its answer (some 50 us later) read in the same or the next one: one
    to two passes per query. Each thread's connections send about 105 queries in 105 ms:
    12.6-25.2 ms of walks, on top of the 2,000 client cycles per query sent and answer read."""
    cpu_ns, _ = background_cpu_ns(3_000.0)
    free, _ = background_cpu_ns(0.0)
    for loaded, light in zip(cpu_ns, free, strict=True):
        assert 12.6e6 * 0.9 < loaded - light < 25.2e6 * 1.1


def _created_tasks(**settings: object) -> list[tuple[str, bool]]:
    """Each task a post14 point's scheduler created, in order, with its busy flag."""
    created: list[tuple[str, bool]] = []
    original = CpuScheduler.new_task

    def spy(self: CpuScheduler, name: str, busy: bool = False) -> Task:
        created.append((name, busy))
        return original(self, name, busy)

    CpuScheduler.new_task = spy  # type: ignore[method-assign]
    try:
        simulate(GOLD, "post14", duration_ns=2e6, warmup_ns=1e6, **settings)
    finally:
        CpuScheduler.new_task = original  # type: ignore[method-assign]
    return created


def test_the_model_declares_only_the_active_pairs_and_churn_threads_busy() -> None:
    """The scheduler spreads busy tasks (``docs/scheduler.md``): an active client's pgbench
    thread and backend are busy; the mostly idle connections' backends and the background
    pgbench's threads mostly sleep and are not; under ``pgbench -C`` the client threads are
    busy and the backends forked for each transaction are not."""
    created = _created_tasks(clients=2, idle_clients=20, idle_kind="mostly-idle",
                             background_threads=2)
    assert {name for name, busy in created if busy} == {
        "backend20", "backend21", "pgbench20", "pgbench21"}
    assert {f"backend{k}" for k in range(20)} | {"pgbench-bg0", "pgbench-bg1"} <= {
        name for name, _ in created}
    churn = _created_tasks(clients=2, idle_clients=5, churn_per_transaction=True)
    threads = [busy for name, busy in churn if name.startswith("pgbench-C")]
    forked = [busy for name, busy in churn[churn.index(("pgbench-C1", True)) + 1:]
              if name.startswith("backend")]
    assert threads == [True, True]
    assert forked
    assert not any(forked)
