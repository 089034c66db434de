"""How a client's message wakes its backend: through epoll, synchronously only where the kernel
passes the socket's hint on (``scheduler.epoll_sync_wakeup``); an answer wakes pgbench, which
waits in ``select``/``ppoll``, synchronously on every kernel."""

from __future__ import annotations

import pytest

from simulator.config.machine_file import load_machine
from simulator.runtime.task import Task
from tests.models.points import simulate


@pytest.mark.parametrize("epoll_sync", [False, True])
def test_the_message_wakes_the_backend_as_the_kernel_s_epoll_does(
        epoll_sync: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: set[tuple[str, str, bool]] = set()
    wakes = Task.wakes

    def record(self: Task, wakee: Task, *, sync: bool = True) -> None:
        kind = "backend" if wakee.name.startswith("backend") else "client"
        seen.add((kind, "from " + ("backend" if self.name.startswith("backend") else "client"),
                  sync))
        wakes(self, wakee, sync=sync)

    monkeypatch.setattr(Task, "wakes", record)
    machine = load_machine("gold5215-2s",
                           [f"scheduler.epoll_sync_wakeup={str(epoll_sync).lower()}"])
    result = simulate(machine, "post14", clients=2, duration_ns=1e6, warmup_ns=0.5e6)
    assert float(result.row["transactions"]) > 0  # type: ignore[arg-type]
    # the message, through the backend's epoll wait; the answer, through pgbench's poll
    assert seen == {("backend", "from client", epoll_sync), ("client", "from backend", True)}


def test_without_the_hint_a_woken_backend_goes_back_to_its_own_thread() -> None:
    """An ordinary wake-up is placed from the backend's previous thread, not behind the waker:
    with 40 pairs on the Gold 5215's 40 threads the synchronous hint keeps each pair on one
    thread (the backend takes its client's as the client blocks: no idle thread to wake), while
    an ordinary wake-up sends the backend back to its own thread, idle since its last answer,
    about once a transaction."""
    exits = {sync: simulate(load_machine("gold5215-2s", [f"scheduler.epoll_sync_wakeup={sync}"]),
                            "post14", clients=40, duration_ns=2e6,
                            warmup_ns=1e6).row["idle_exits_per_txn"]
             for sync in ("false", "true")}
    rates = {sync: float(value) for sync, value in exits.items()}  # type: ignore[arg-type]
    assert rates["true"] < 0.05
    assert rates["false"] > 0.5
