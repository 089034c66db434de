"""Estimates of memory and wall time before a sweep: the formula, the report and the refusal."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import simulator
import simulator.study.work_scale
from simulator.cli import common, main
from simulator.config.machine import CacheConfig
from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.hardware.coherence.compiled import CompiledCoherence
from simulator.study import estimate
from simulator.study.experiment import Experiment, plan
from tests.toy_machines import toy_machine
from tests.toy_models import MinimalModel

MEASURED = [  # machine, algorithm, clients, idle, idle kind, window ms, warm-up ms, MB, wall s
    ('gold5215-2s', 'pg91', 1, 20000, 'idle', 0.2, 0.0, 338.8, 0.58),
    ('gold5215-2s', 'pre14', 1, 20000, 'idle', 0.2, 0.0, 309.0, 0.45),
    ('gold5215-2s', 'pre14', 2000, 0, 'idle', 0.2, 0.0, 300.9, 0.49),
    ('gold5215-2s', 'pre14', 6000, 0, 'idle', 0.2, 0.0, 372.2, 0.79),
    ('westmere-ex-8s', 'pre14', 6000, 0, 'idle', 0.2, 0.0, 451.1, 0.96),
    ('gold5215-2s', 'post14', 48, 10000, 'idle', 10.0, 0.0, 304.0, 2.24),
    ('gold5215-2s', 'post14', 1, 0, 'idle', 20.0, 0.0, 264.2, 0.29),
    ('gold5215-2s', 'pre14', 1, 5000, 'mostly-idle', 10.0, 0.0, 362.7, 0.74),
    ('threadripper-3990x', 'post14', 64, 0, 'idle', 5.0, 0.0, 339.1, 2.39),
    ('gold5215-2s', 'post14', 500, 0, 'idle', 20.0, 2.0, 314.2, 5.2),
    ('westmere-ex-8s', 'pre14', 15000, 0, 'idle', 0.2, 0.0, 679.9, 2.09),
    ('gold5215-2s', 'pre14', 48, 20000, 'idle', 5.0, 1.0, 324.0, 0.94),
    ('epyc-9654-2s', 'post14', 1, 0, 'idle', 0.2, 0.0, 442.2, 0.51),
    ('gold5215-2s', 'post14', 1000, 0, 'idle', 20.0, 10.0, 343.0, 7.51),
    ('westmere-ex-8s', 'pre14', 15000, 0, 'idle', 14.0, 26.0, 812.8, 16.12),
    ('threadripper-3990x', 'pre14', 16, 0, 'idle', 1.0, 0.5, 309.7, 0.38),
    ('gold5215-2s', 'pre14', 1, 20000, 'mostly-idle', 5.0, 0.0, 632.0, 1.94),
    ('epyc-9654-2s', 'post14', 96, 0, 'idle', 5.0, 1.0, 486.2, 3.28),
    ('gold5215-2s', 'pg91', 48, 5000, 'idle', 5.0, 1.0, 317.5, 0.93),
    ('gold5215-2s', 'pre14', 5000, 0, 'idle', 10.0, 20.0, 417.5, 5.69),
    ('sapphire-rapids-2s', 'pre14', 48, 2000, 'idle', 5.0, 1.0, 357.4, 1.18),
]
"""The fit's inputs: peak RSS and wall time of each point in a fresh process (see the module)."""


def one_task(machine: str, algorithm: str, clients: int, idle: int, kind: str = "idle",
             duration_ms: float = 1.0, warmup_ms: float = 0.5) -> simulator.study.sweep.PointTask:
    experiment = Experiment(machine=machine, algorithms=(algorithm,), clients=(clients,),
                            idle_clients=(idle,), idle_kind=kind, duration_ms=duration_ms,
                            warmup_ms=warmup_ms)
    return plan(experiment.prepare())[0]


@pytest.mark.parametrize("row", MEASURED, ids=lambda row: f"{row[0]}-{row[1]}-{row[2]}-{row[3]}")
def test_the_estimate_stays_within_its_documented_error_of_the_measured_points(
        row: tuple[str, str, int, int, str, float, float, float, float]) -> None:
    machine, algorithm, clients, idle, kind, duration, warmup, peak_mb, wall_s = row
    point = estimate.estimate_point(one_task(machine, algorithm, clients, idle, kind, duration,
                                             warmup))
    assert -0.08 <= point.memory_bytes / (peak_mb * 1e6) - 1 <= 0.15
    assert 0.45 <= point.wall_s / wall_s <= 2.3


@pytest.mark.parametrize("machine", [toy_machine(), load_machine("gold5215-2s"),
                                     load_machine("threadripper-3990x"),
                                     load_machine("gold5215-2s", ["line_service.rule=home"])],
                         ids=["toy", "gold5215-2s", "threadripper-3990x", "gold-home"])
@pytest.mark.parametrize("lines", [1, 100, 4321])
def test_coherence_state_bytes_are_the_compiled_state_allocation(machine: object,
                                                                 lines: int) -> None:
    assert isinstance(machine, simulator.config.machine.MachineConfig)
    homes = np.zeros(lines, dtype=np.int64)
    state = CompiledCoherence(machine, np.arange(lines), homes)
    allocated = state.i32.nbytes + state.i64.nbytes + state.f64.nbytes + state.p.nbytes
    tables = state.p.nbytes + 8 * (state.tables.transfer_ns.size + state.tables.dram_ns.size
                                   + state.tables.service_ns.size)
    assert estimate.coherence_state_bytes(machine, lines) == pytest.approx(
        allocated - tables, abs=256)


def test_the_estimate_grows_with_the_machine_connections_and_window() -> None:
    small = estimate.estimate_point(one_task("gold5215-2s", "pre14", 48, 0))
    assert estimate.estimate_point(one_task("westmere-ex-8s", "pre14", 48, 0)).memory_bytes \
        > small.memory_bytes
    assert estimate.estimate_point(one_task("gold5215-2s", "pre14", 4800, 0)).memory_bytes \
        > small.memory_bytes
    assert estimate.estimate_point(one_task("gold5215-2s", "pre14", 48, 10000)).memory_bytes \
        > small.memory_bytes
    longer = estimate.estimate_point(one_task("gold5215-2s", "pre14", 48, 0, duration_ms=50))
    assert longer.wall_s > small.wall_s
    assert longer.memory_bytes > small.memory_bytes


def test_the_sweep_line_gives_points_memory_and_time_per_point_and_on_the_workers() -> None:
    points = tuple(estimate.PointEstimate(label=f"p{i}", memory_bytes=0.6e9, wall_s=180.0)
                   for i in range(24))
    sweep = estimate.SweepEstimate(points=points, workers=2)
    assert sweep.total_wall_s == pytest.approx(12 * 180.0)
    assert sweep.line() == ("estimate: 24 points, up to 0.6 GB and about 3 min per point, "
                            "about 36 min on 2 workers")
    assert sweep.worth_reporting()
    small = estimate.SweepEstimate(points=points[:2], workers=2)
    assert not dataclasses.replace(small, points=tuple(
        dataclasses.replace(p, wall_s=1.0) for p in small.points)).worth_reporting()


def test_available_memory_reads_memavailable_and_falls_back(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  2048 kB\nMemAvailable:    1024 kB\n", encoding="ascii")
    assert estimate.available_memory(meminfo) == (1024 * 1024, "MemAvailable")
    fallback = estimate.available_memory(tmp_path / "missing")
    assert fallback is None or (fallback[0] > 0 and fallback[1] == "free physical memory")


def test_run_refuses_a_point_above_the_available_memory_before_any_simulation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Even the work scale's search must not run (it would be the first simulation)."""
    def no_simulation(task: object) -> object:
        raise AssertionError("a point was simulated before the memory check")

    monkeypatch.setattr(simulator.study.work_scale, "execute", no_simulation)
    monkeypatch.setattr(simulator.study.sweep, "execute", no_simulation)
    monkeypatch.setattr(estimate, "available_memory", lambda: (100e6, "MemAvailable"))
    experiment = Experiment(clients=(1, 4), idle_clients=(0,), duration_ms=0.2, warmup_ms=0.1,
                            single_client_tps=30000.0)
    with pytest.raises(ConfigError) as error:
        simulator.run(experiment, jobs=2)
    message = str(error.value)
    for part in ("clients=4 idle_clients=0", "0.1 GB available", "x 2 workers", "MemAvailable",
                 "--force"):
        assert part in message


def test_force_runs_a_point_above_the_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(estimate, "available_memory", lambda: (100e6, "MemAvailable"))
    experiment = Experiment(clients=(1,), idle_clients=(0,), duration_ms=1.0, warmup_ms=0.5)
    with pytest.raises(ConfigError):
        simulator.run(experiment)
    result = simulator.run(experiment, force=True)
    assert result.curve["tps"].iloc[0] > 0


def test_snapsim_run_refuses_a_machine_too_large_for_memory_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A machine whose coherence state alone needs 24 GiB on 16 GB: exit 2, nothing written."""
    gold = load_machine("gold5215-2s")
    l3 = CacheConfig(size_bytes=3 * 2**34, ways=16, latency_ns=gold.l3.latency_ns,
                     key="caches.l3")
    huge = dataclasses.replace(gold, l3=l3)  # 2 domains x 48 GiB / 64 B x 16 B
    assert estimate.coherence_state_bytes(huge, 1) > 24 * 2**30
    assert estimate.estimate_point(one_task("gold5215-2s", "pre14", 1, 0)).memory_bytes < 1e9
    out = tmp_path / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Experiment, "machine_config", lambda self: huge)
        patch.setattr(estimate, "available_memory", lambda: (16e9, "MemAvailable"))
        patch.setattr(common, "kernel_compiled", lambda: True)  # its lines are not the point
        code = main(["run", "tiny", "--no-progress", "--jobs", "1", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    assert err[0].startswith("snapsim: error: point pre14 clients=4 idle_clients=500 needs ")
    assert "GB (an estimate), more than the " in err[0]
    assert "more than the 16.0 GB available (MemAvailable)" in err[0]
    assert not out.exists()


def test_snapsim_run_says_the_estimate_of_a_large_sweep_and_force_overrides_the_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(estimate, "REPORT_SWEEP_S", 0.0)
    monkeypatch.setattr(estimate, "available_memory", lambda: (50e6, "MemAvailable"))
    argv = ["run", "tiny", "--no-progress", "--jobs", "1", "--clients", "1",
            "--idle-clients", "0", "--algorithms", "post14", "--duration-ms", "0.2"]
    assert main([*argv, "--out", str(tmp_path / "refused")]) == 2
    assert "estimate:" not in capsys.readouterr().err  # the refusal alone, one line
    assert main([*argv, "--force", "--out", str(tmp_path / "forced")]) == 0
    err = capsys.readouterr().err
    assert "estimate: 1 point, up to 0.3 GB and about 1 s per point, about 1 s on 1 worker" in err
    assert (tmp_path / "forced" / "curve.csv").exists()


def test_the_coefficients_are_the_models_and_a_model_without_them_gets_the_fallback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """simulator/ keeps the formula; the PostgreSQL model hands in its fitted coefficients."""
    from snapsim_models.estimate import ESTIMATE_COEFFICIENTS

    assert estimate.coefficients_of("postgres") is ESTIMATE_COEFFICIENTS
    task = one_task("gold5215-2s", "post14", 48, 1000)
    fitted = estimate.estimate_point(task)

    # a user's model that gives no coefficients
    monkeypatch.setattr(estimate, "workload_model", lambda name: MinimalModel())
    assert estimate.coefficients_of("postgres") is estimate.FALLBACK
    guessed = estimate.estimate_point(task)
    assert guessed.memory_bytes > fitted.memory_bytes  # the guess is the generous side
    assert guessed.wall_s > fitted.wall_s
