"""Slow curve checks: TPS against idle connections on gold5215-2s (run with ``-m slow``).

The shapes follow from PostgreSQL's code: the pre-14 snapshot scans every procArray entry
(``GetSnapshotData``, procarray.c:1504-1782@13: about 3 + N/4 lines per snapshot), so its cost
grows with idle connections, while 14 reuses its cached snapshot in pgbench -S
(``GetSnapshotDataReuse``, procarray.c:2122-2169@14: 2 lines, independent of N). Idle
connections are otherwise passive; mostly-idle ones also write their PGXACT xmin, invalidating
lines the active backends scan.

Each point is 3 ms of simulated time after 1 ms of warm-up; points are computed once per module
and shared by the tests.
"""

from __future__ import annotations

from functools import cache
from itertools import pairwise

import pytest

from simulator.config.machine_file import load_machine
from tests.models.points import simulate

pytestmark = pytest.mark.slow

GOLD = load_machine("gold5215-2s")
IDLE = (0, 100, 1000, 2500, 5000, 10000)


@cache
def row(algorithm: str, clients: int, idle: int, kind: str = "idle") -> dict[str, object]:
    return simulate(GOLD, algorithm, clients=clients, idle_clients=idle, idle_kind=kind,
                    duration_ns=3e6, warmup_ns=3e6).row


def tps(algorithm: str, clients: int, idle: int, kind: str = "idle") -> float:
    value = row(algorithm, clients, idle, kind)["tps"]
    assert isinstance(value, float)
    return value


def curve(algorithm: str, clients: int) -> list[float]:
    return [tps(algorithm, clients, idle) for idle in IDLE]


def test_pre14_one_client_falls_monotonically_with_idle_connections() -> None:
    """Each pre-14 snapshot scans all N entries (~3 + N/4 lines), so with 1 active
    client TPS strictly falls over 0, 100, 1000, 2500, 5000 and 10000 idle connections."""
    values = curve("pre14", 1)
    assert all(a > b for a, b in pairwise(values)), values


def test_post14_one_client_is_flat() -> None:
    """14 reuses its snapshot (``GetSnapshotDataReuse``: 2 lines, independent of N), so
    with 1 active client TPS stays within 5 % of its 0-idle value up to 10000 idle."""
    values = curve("post14", 1)
    assert all(abs(v / values[0] - 1) <= 0.05 for v in values), values


def test_pre14_snapshot_time_dominates_at_10000_idle() -> None:
    """N = 10002 entries (~2.5k lines per snapshot, 2 snapshots per transaction): at 10000 idle
    connections GetSnapshotData is the largest share of the pre-14 backend's time."""
    shares = {k: v for k, v in row("pre14", 1, 10000).items() if k.startswith("share_")}
    assert max(shares, key=shares.__getitem__) == "share_get_snapshot", shares  # type: ignore[arg-type]


def test_48_clients_pre14_falls_and_post14_stays_flat() -> None:
    """With 48 active clients (more than the 40 hardware threads) pre-14 falls with every step
    of idle connections, and 14 stays within 10 % (it reuses its snapshot)."""
    pre14 = curve("pre14", 48)
    assert all(a > b for a, b in pairwise(pre14)), pre14
    post14 = curve("post14", 48)
    assert all(abs(v / post14[0] - 1) <= 0.10 for v in post14), post14


def test_48_clients_pre14_falls_further_than_one_client() -> None:
    """ProcArrayLock is held for the whole scan and the scans compete for the machine (two
    siblings' scan loops share one core's issue slots: ``smt_throughput_high_ipc``), so 48
    clients lose more of their 0-idle TPS at 10000 idle than 1 client does. Measured: 35 % and
    48 % kept; the model (the global costs, no work scale, 3 ms windows) keeps 40.5 % and
    42.6 % (45 % and 43 % when the loop shared the core like ordinary code)."""
    pre14 = curve("pre14", 48)
    assert pre14[-1] / pre14[0] < tps("pre14", 1, 10000) / tps("pre14", 1, 0)


def test_pre14_mostly_idle_snapshots_miss_on_lines_the_sleepers_write() -> None:
    """An idle entry costs pre-14 snapshots a resident line
    read, but a mostly-idle one (``\\sleep 100ms; SELECT 1``) also writes xmin on a PGXACT line
    every active snapshot scans, so the active client's snapshots take longer."""
    idle = row("pre14", 1, 1000, "idle")
    mostly = row("pre14", 1, 1000, "mostly-idle")
    assert mostly["mostly_idle_tps"] > 0  # type: ignore[operator]
    assert mostly["get_snapshot_us"] > idle["get_snapshot_us"]  # type: ignore[operator]
    assert mostly["local_hitm"] + mostly["remote_hitm"] > idle["local_hitm"] + idle["remote_hitm"]  # type: ignore[operator]


@pytest.mark.xfail(strict=True, reason="known gap (manifest: gold5215_mostly_idle): with the "
                   "wake-ups of kernels before 6.13 (scheduler.epoll_sync_wakeup false) the "
                   "model loses 1.0 % against idle (mean of three seeds), not 13 %; the 10.8 % "
                   "it lost with sync wake-ups came from placing each mostly idle backend on the "
                   "CPU of the background pgbench thread that woke it (more sharing: seed 0 "
                   "refills 6.3 against 4.7 us per active transaction), which those kernels do "
                   "not do (docs/investigations/mostly-idle.md)")
def test_pre14_mostly_idle_hurts_like_the_measurements() -> None:
    """Published (gold5215_idle.csv vs gold5215_mostly_idle.csv, 1 client, 1000 connections):
    idle 29377 TPS, mostly idle 25523 TPS, a 13 % larger loss. The model must show at least
    half of that difference, on the mean of three seeds in windows of 30 ms after 15 ms (the
    module's 3 ms windows have not converged). It loses 10.8 % (seeds 7.1-14.1 %); without the
    processes' working sets (``options.working_sets: false``) it loses 5.3 % (2.5-7.2 %)."""
    idle = mostly = 0.0
    for seed in range(3):
        idle += float(simulate(GOLD, "pre14", idle_clients=1000, duration_ns=30e6,  # type: ignore[arg-type]
                               warmup_ns=15e6, seed=seed).row["tps"])
        mostly += float(simulate(GOLD, "pre14", idle_clients=1000, idle_kind="mostly-idle",  # type: ignore[arg-type]
                                 duration_ns=30e6, warmup_ns=15e6, seed=seed).row["tps"])
    assert mostly < idle * (1 - 0.065)
