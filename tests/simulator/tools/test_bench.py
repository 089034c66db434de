"""The benchmark library: its points come from the ``bench`` experiment file; the fit."""

from __future__ import annotations

import pytest

from simulator.study.experiment_file import experiment_from_document, load_document
from simulator.tools.bench import Settings, bench_experiment, point, scaling_exponent


def test_scaling_exponent_is_the_log_log_slope() -> None:
    connections = [100, 1000, 10000]
    assert scaling_exponent(connections, [2.0 * n ** 0.75 for n in connections]) == \
        pytest.approx(0.75)
    with pytest.raises(ValueError, match="distinct"):
        scaling_exponent([100, 100], [1.0, 2.0])


def test_points_and_sweep_come_from_the_bench_experiment_file() -> None:
    document, source = load_document("bench")
    base = experiment_from_document(document, source)
    assert bench_experiment() == base
    assert base.warmup_ms == 0
    one = point(base, base.machine, base.algorithms[-1], 3, 7, 0.5)
    assert (one.algorithms, one.clients, one.idle_clients, one.duration_ms) == (
        base.algorithms[-1:], (3,), (7,), 0.5)
    assert (one.machine, one.workload, one.idle_kind, one.seeds) == (
        base.machine, base.workload, base.idle_kind, base.seeds)
    settings = Settings(scale=0.5)
    assert settings.duration(base) == float(base.duration_ms)
    assert Settings(duration_ms=2.0).duration(base) == 2.0
