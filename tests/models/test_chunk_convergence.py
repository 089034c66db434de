"""The scan chunk size is converged: a chunk four times smaller moves no result by 1 %.

A scan costs one SimPy event per chunk (``entries_per_chunk``, an experiment option), so the
default chunk sets much of the simulation's speed; it is only a simulation parameter if results
do not depend on it. Chunking does not touch the random stream (the seed only draws the clients'
start phases), so both runs see the same draws and differ only through the interleaving of other
backends' accesses with the scans, whose effect must stay below the tolerance. The point has a
few thousand idle connections, so every pre14 snapshot scans several default chunks.
"""

from __future__ import annotations

import pytest

import simulator
from snapsim_models.options import DEFAULT_ENTRIES_PER_CHUNK

TOLERANCE = 0.01
IDLE = 5000
"""Idle connections of the point: 5048 entries, two and a half default chunks per scan."""


def _point(entries_per_chunk: int) -> dict[str, float]:
    experiment = simulator.Experiment(
        machine="gold5215-2s", algorithms=("pre14",), workload="select-only", clients=(48,),
        idle_clients=(IDLE,), duration_ms=9.0, warmup_ms=1.0, single_client_tps=None,
        options={"entries_per_chunk": entries_per_chunk})
    row = simulator.run(experiment).curve.iloc[0]
    return {name: float(row[name]) for name in
            ("tps", "share_get_snapshot", "get_snapshot_us", "latency_mean_us", "transactions")}


@pytest.mark.slow
def test_default_chunk_agrees_with_a_chunk_four_times_smaller() -> None:
    coarse = _point(DEFAULT_ENTRIES_PER_CHUNK)
    fine = _point(DEFAULT_ENTRIES_PER_CHUNK // 4)
    assert IDLE // DEFAULT_ENTRIES_PER_CHUNK >= 2  # the scans really are chunked
    assert coarse["transactions"] > 5000  # enough transactions for a 1 % comparison
    for name in ("tps", "share_get_snapshot", "get_snapshot_us", "latency_mean_us"):
        assert coarse[name] == pytest.approx(fine[name], rel=TOLERANCE), name
