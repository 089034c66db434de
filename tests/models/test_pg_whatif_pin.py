"""The what-if of PostgreSQL 9.6's atomic buffer pins (commit 48354581a4): the same 14 code with
9.2-9.5's pins under the buffer-header spinlock."""

from __future__ import annotations

from simulator.config.machine_file import load_machine
from tests.models.points import simulate

GOLD = load_machine("gold5215-2s")


def tps(clients: int, pin: str) -> tuple[float, float]:
    row = simulate(GOLD, "post14", clients=clients,
                                duration_ns=2e6, warmup_ns=2e6, pin_protocol=pin).row
    return float(row["tps"]), float(row["lock_wait_us"])  # type: ignore[arg-type]


def test_spinlock_pins_cost_nothing_alone_and_halve_48_clients() -> None:
    alone_atomic, _ = tps(1, "atomic")
    alone_spin, _ = tps(1, "spinlock")
    assert abs(alone_spin / alone_atomic - 1) < 0.02  # one backend: no contention either way
    busy_atomic, wait_atomic = tps(48, "atomic")
    busy_spin, wait_spin = tps(48, "spinlock")
    # the root's header lock serialises every pin and unpin: waits grow, throughput falls
    assert busy_spin < 0.75 * busy_atomic
    assert wait_spin > 5 * wait_atomic
