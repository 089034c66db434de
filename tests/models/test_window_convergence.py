"""Points report their transactions per client and whether their window converged."""

from __future__ import annotations

import pytest

from simulator.config.machine_file import load_machine
from snapsim_models.summary import (
    MIN_TRANSACTIONS_PER_CLIENT,
    WARMUP_PERIODS,
    window_converged,
)
from tests.models.points import simulate


def test_the_rule_needs_warmup_periods_and_transactions_per_client() -> None:
    # 64 clients at 2 M TPS: a period of 32 us.
    period_ns = 64 / 2e6 * 1e9
    enough = MIN_TRANSACTIONS_PER_CLIENT
    assert window_converged(64, 2e6, WARMUP_PERIODS * period_ns, enough)
    assert not window_converged(64, 2e6, 0.9 * WARMUP_PERIODS * period_ns, enough)
    assert not window_converged(64, 2e6, 100 * period_ns, 0.9 * enough)
    assert not window_converged(64, 0.0, 1e9, enough)
    # 15000 clients at 580 k TPS: a period of 26 ms, so a warm-up of 26 ms is not enough.
    assert not window_converged(15000, 580e3, 26e6, enough)


def test_unequal_halves_mean_the_window_is_not_stationary() -> None:
    period_ns = 64 / 2e6 * 1e9
    enough = MIN_TRANSACTIONS_PER_CLIENT
    warm = WARMUP_PERIODS * period_ns
    assert window_converged(64, 2e6, warm, enough, (5000, 5050))
    assert not window_converged(64, 2e6, warm, enough, (5000, 5300))
    # Few transactions: the tolerance widens to two standard errors of the count.
    assert window_converged(64, 2e6, warm, enough, (400, 425))
    assert not window_converged(64, 2e6, warm, enough, (400, 480))
    assert not window_converged(64, 2e6, warm, enough, (0, 0))


@pytest.mark.parametrize(("duration_ms", "warmup_ms", "seed", "converged"), [
    (1.0, 0.5, 0, False),  # about 24 transactions per client
    (2.0, 1.0, 5, True),  # about 49 per client, halves 1584 and 1559
    (5.0, 2.0, 0, True),
])
def test_a_point_reports_transactions_per_client_and_whether_its_window_converged(
        duration_ms: float, warmup_ms: float, seed: int, converged: bool) -> None:
    """The README's threadripper example (post14, 64 clients, 500 idle connections)."""
    row = simulate(load_machine("threadripper-3990x"), "post14", clients=64, idle_clients=500,
                   duration_ns=duration_ms * 1e6, warmup_ns=warmup_ms * 1e6, seed=seed).row
    per_client = row["transactions_per_client"]
    transactions = row["transactions"]
    assert isinstance(per_client, float)
    assert isinstance(transactions, int)
    assert per_client == pytest.approx(transactions / 64)
    assert 20 * duration_ms <= per_client <= 40 * duration_ms
    assert row["window_converged"] is converged
