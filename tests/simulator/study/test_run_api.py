"""``simulator.run``: the Python API over a workload model found through its entry point."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

import simulator
import simulator.study.sweep
from simulator.analysis.plotting import ratio_curve
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.study.experiment import Experiment, experiments_dir, point_seed
from simulator.study.outputs import write_results
from simulator.study.runner import Plan
from simulator.study.store import PointStore
from simulator.study.sweep import PointTask
from simulator.study.workload_model import available_models, workload_model

TINY = {"clients": (1,), "idle_clients": (0, 200), "duration_ms": 1.0, "warmup_ms": 2.0,
        "single_client_tps": None, "measurements": None}  # the global cost model, no overlay
CURVE_COLUMNS = ["machine", "algorithm", "workload", "clients", "idle_clients", "seed", "tps",
                 "latency_p50_us", "latency_p99_us", "l1_hit", "l2_hit", "l3_hit", "local_hit",
                 "local_hitm", "remote_hit", "remote_hitm", "dram_local", "dram_remote",
                 "invalidations", "share_get_snapshot", "share_lock_wait", "share_other",
                 "share_scheduling", "cpu_utilisation", "mostly_idle_tps"]
LINE_COLUMNS = ["label", "loads", "stores", "rmws", "local_hitm", "remote_hitm",
                "false_sharing_hitm", "fields_read", "fields_written"]


@pytest.fixture(scope="module")
def result() -> simulator.Result:
    return simulator.run(Experiment(**TINY))  # type: ignore[arg-type]


def test_postgres_model_is_installed() -> None:
    assert "postgres" in available_models()


def test_curve_has_one_row_per_point_with_the_contract_columns(result: simulator.Result) -> None:
    curve = result.curve
    assert len(curve) == 4
    for column in CURVE_COLUMNS:
        assert column in curve.columns, column
    assert list(curve["algorithm"]) == ["pre14", "pre14", "post14", "post14"]
    assert (curve["tps"] > 0).all()


def test_lines_table_carries_point_keys_and_fields(result: simulator.Result) -> None:
    lines = result.lines
    for column in [*LINE_COLUMNS, "algorithm", "idle_clients"]:
        assert column in lines.columns, column
    pre14 = lines[(lines["algorithm"] == "pre14") & (lines["idle_clients"] == 200)]
    assert pre14["label"].str.startswith("PGXACT[").any()
    assert "ProcArrayLock" in set(pre14["label"])


def test_same_seed_same_curve() -> None:
    first = simulator.run(Experiment(**TINY)).curve  # type: ignore[arg-type]
    second = simulator.run(Experiment(**TINY)).curve  # type: ignore[arg-type]
    assert "wall_s" not in first.columns  # wall-clock time lives in Result.timings
    pd.testing.assert_frame_equal(first, second, check_exact=True)  # identical, not close


def test_point_seed_depends_on_identity_not_order() -> None:
    a = point_seed(0, "m", "pre14", "select-only", 1, 0, "idle")
    assert a == point_seed(0, "m", "pre14", "select-only", 1, 0, "idle")
    assert a != point_seed(1, "m", "pre14", "select-only", 1, 0, "idle")
    assert a != point_seed(0, "m", "post14", "select-only", 1, 0, "idle")


@pytest.mark.parametrize(("change", "key"), [
    ({"algorithms": ("pre15",)}, "algorithms"),
    ({"workload": "ycsb"}, "workload"),
    ({"idle_kind": "sleepy"}, "idle_kind"),
    ({"clients": ()}, "clients"),
    ({"idle_clients": (-1,)}, "idle_clients"),
    ({"duration_ms": -1.0}, "duration_ms"),
])
def test_bad_experiments_name_the_key(change: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        simulator.run(Experiment(**{**TINY, **change}))  # type: ignore[arg-type]
    assert info.value.key == key


def test_plot_and_ratio(result: simulator.Result) -> None:
    ax = result.plot()
    assert ax.get_xlabel() == "idle clients"
    assert len([line for line in ax.get_lines()
                if not str(line.get_label()).startswith("_")]) == 2  # not the axis break
    ratio = ratio_curve(result.curve, "post14", "pre14")
    assert list(ratio.columns) == ["clients", "idle_clients", "post14/pre14"]
    assert (ratio["post14/pre14"] > 0.9).all()


def test_unnamed_keys_are_those_of_the_shipped_default_experiment() -> None:
    default = read_yaml(experiments_dir() / "default.yaml")
    assert isinstance(default, dict)
    experiment = Experiment()
    assert experiment.machine == default["machine"]
    assert list(experiment.algorithms) == default["algorithms"]
    assert experiment.workload == default["workload"]
    assert experiment.idle_kind == default["idle_kind"]
    assert (experiment.duration_ms, experiment.warmup_ms) == (default["duration_ms"],
                                                               default["warmup_ms"])
    assert (experiment.clients, experiment.idle_clients, experiment.seeds) == ((1,), (0,), (0,))
    model = workload_model(experiment.model)
    assert model.work_scale_idle_kind in model.idle_kinds


def test_the_default_experiments_warm_up_outlasts_the_idle_governors_start() -> None:
    """post14's single client is flat with idle connections once the governors have learnt.

    Each thread's idle governor starts as a long-idle thread (C6, a 92 us exit per wake-up) and
    learns the pair's short idle periods over its first idle periods; after a 2 ms warm-up that
    start reached this window (31.6k TPS at 2,500 idle connections against 33.6k at none).
    """
    result = simulator.run(Experiment(algorithms=("post14",), clients=(1,), idle_clients=(0, 2500)),
                           jobs=1)  # the default windows
    none, many = result.curve.sort_values("idle_clients")["tps"]
    assert many == pytest.approx(none, rel=0.01)


def test_a_store_resumes_a_run_without_recomputing(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    experiment = Experiment(**{**TINY, "algorithms": ("pre14",)})  # type: ignore[arg-type]
    store = PointStore(tmp_path / "points")
    plans: list[Plan] = []
    first = simulator.run(experiment, store=store, on_start=plans.append)
    assert [len(plan.done) for plan in plans] == [0]
    assert len(list((tmp_path / "points").glob("*.json"))) == 2
    calls: list[PointTask] = []
    monkeypatch.setattr(simulator.study.sweep, "execute", calls.append)  # must not be called
    again = simulator.run(experiment, store=store, on_start=plans.append)
    assert calls == []
    assert [len(plan.done) for plan in plans] == [0, 2]
    assert [task.key for task in plans[1].tasks] == [task.key for task in plans[0].tasks]
    pd.testing.assert_frame_equal(first.curve, again.curve, check_exact=True)


def test_a_grid_with_more_seeds_reuses_the_stored_points(tmp_path: Path,
                                                        computed_points: list[str]) -> None:
    one = Experiment(**{**TINY, "algorithms": ("pre14",), "seeds": (0,)})  # type: ignore[arg-type]
    two = Experiment(**{**TINY, "algorithms": ("pre14",), "seeds": (0, 1)})  # type: ignore[arg-type]
    fresh = simulator.run(two)  # no store: every point computed
    store = PointStore(tmp_path / "points")
    simulator.run(one, store=store)
    computed = computed_points
    computed.clear()  # the runs above
    plans: list[Plan] = []
    extended = simulator.run(two, store=store, on_start=plans.append)
    assert sorted(computed) == ["pre14-c1-i0-r1", "pre14-c1-i200-r1"]
    assert sorted(plans[0].done) == ["pre14-c1-i0-r0", "pre14-c1-i200-r0"]
    assert [plans[0].done[key].index for key in sorted(plans[0].done)] == [0, 2]
    pd.testing.assert_frame_equal(extended.curve, fresh.curve, check_exact=True)
    longer = Experiment(**{**TINY, "algorithms": ("pre14",), "seeds": (0,),  # type: ignore[arg-type]
                           "duration_ms": 1.5})
    computed.clear()
    simulator.run(longer, store=store)
    assert len(computed) == 2  # other settings: nothing reused


def test_seed_replications_are_summarised_per_point(tmp_path: Path) -> None:
    experiment = Experiment(**{**TINY, "algorithms": ("pre14", "post14"),  # type: ignore[arg-type]
                               "seeds": (0, 1, 2)})
    result = simulator.run(experiment)
    assert len(result.curve) == 12  # 2 algorithms x 2 idle counts x 3 seeds
    written = write_results(result, tmp_path)
    assert tmp_path / "curve_summary.csv" in written
    summary = pd.read_csv(tmp_path / "curve_summary.csv")
    pd.testing.assert_frame_equal(summary, result.curve_summary, check_dtype=False)
    assert len(summary) == 4  # one row per point
    assert list(zip(summary["algorithm"], summary["idle_clients"], strict=True)) == [
        ("pre14", 0), ("pre14", 200), ("post14", 0), ("post14", 200)]
    assert (summary["n_seeds"] == 3).all()
    assert (summary["n_failed"] == 0).all()
    for _, point in summary.iterrows():
        seeds = result.curve[(result.curve["algorithm"] == point["algorithm"])
                             & (result.curve["idle_clients"] == point["idle_clients"])]
        assert sorted(seeds["root_seed"]) == [0, 1, 2]
        for column in ("tps", "latency_mean_us", "latency_p99_us", "remote_hitm"):
            assert point[f"{column}_mean"] == pytest.approx(seeds[column].mean(), rel=1e-12)
            assert point[f"{column}_low"] <= point[f"{column}_mean"] <= point[f"{column}_high"]
    assert (summary["tps_high"] > summary["tps_low"]).any()  # the seeds do differ
