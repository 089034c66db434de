"""The background pgbench process that drives the mostly-idle connections."""

from __future__ import annotations

import pytest

from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.runtime.scheduler import CpuScheduler
from snapsim_models.options import parse_options, resolve_options
from tests.models.points import simulate

GOLD = load_machine("gold5215-2s")


def run_with_tasks(background_threads: int) -> tuple[dict[str, object], list[str]]:
    """One mostly-idle point; the names of the tasks its scheduler created."""
    names: list[str] = []
    original = CpuScheduler.new_task

    def spy(self: CpuScheduler, name: str):  # type: ignore[no-untyped-def]
        names.append(name)
        return original(self, name)

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
