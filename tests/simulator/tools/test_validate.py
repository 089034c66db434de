"""``snapsim validate`` and ``snapsim calibrate`` on a tiny manifest; the shipped manifest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulator.errors import ConfigError
from simulator.measure.manifest import load_manifest, shipped_manifest_path
from simulator.tools.calibrate import (
    Evaluator,
    nelder_mead,
    objective,
    parse_parameter,
    sensitivity,
    worst_series,
)
from simulator.tools.scoring import summarise
from simulator.tools.validate import check_datasets, run_validation, validate

CSV = """idle_connections,active_connections,tps_pre14,tps_post14
0,1,33599,33406
200,1,31088,33279
"""


def write_manifest(tmp_path: Path, *, thresholds: str = "{median_abs_rel_error: 0.9, "
                   "max_abs_rel_error: 0.9}", machines: str = "{}", extra: str = "") -> Path:
    (tmp_path / "m.csv").write_text(CSV, encoding="utf-8")
    path = tmp_path / "manifest.yaml"
    path.write_text(f"""\
version: 1
thresholds: {thresholds}
machines: {machines}
run: {{duration_ms: 0.4, warmup_ms: 0.2, seed: 0}}
datasets:
  tiny:
    file: m.csv
    machine: gold5215-2s
    workload: select-only
    idle_kind: idle
    clients: active_connections
    idle_clients: idle_connections
    series: {{tps_pre14: pre14, tps_post14: post14}}
{extra}""", encoding="utf-8")
    return path


def test_validate_table_has_every_measured_point(tmp_path: Path) -> None:
    manifest = load_manifest(write_manifest(tmp_path))
    table = validate(manifest, duration_ms=0.4, warmup_ms=0.2)
    assert list(table.columns[:10]) == [
        "dataset", "series", "algorithm", "machine", "workload", "idle_kind", "clients",
        "idle_clients", "measured_tps", "predicted_tps"]
    assert len(table) == 4
    assert (table["predicted_tps"] > 0).all()
    np.testing.assert_allclose(table["rel_error"],
                               table["predicted_tps"] / table["measured_tps"] - 1)
    assert not table["work_scale_point"].any()


def test_validate_reports_each_points_window_verdict(tmp_path: Path) -> None:
    manifest = load_manifest(write_manifest(tmp_path))
    short = validate(manifest, duration_ms=0.4, warmup_ms=0.2)
    # 0.4 ms hold a handful of transactions per client: no window converges
    assert not short["window_converged"].any()
    assert summarise(short, manifest)["unconverged"].tolist() == [2, 2]
    longer = validate(manifest, duration_ms=8.0, warmup_ms=2.0)
    assert longer["window_converged"].any()  # post14 at 0 idle: 260 transactions, even halves
    assert (summarise(longer, manifest)["unconverged"].sum()
            == (~longer["window_converged"]).sum())


def test_points_measured_twice_are_simulated_once(tmp_path: Path) -> None:
    twin = """  twin:
    file: m.csv
    machine: gold5215-2s
    workload: select-only
    idle_kind: idle
    clients: active_connections
    idle_clients: idle_connections
    series: {tps_pre14: pre14}
"""
    manifest = load_manifest(write_manifest(tmp_path, extra=twin))
    messages: list[str] = []
    table = validate(manifest, duration_ms=0.4, warmup_ms=0.2, log=messages.append)
    assert "6 measured points, 4 simulations" in messages[-1]
    tiny = table[(table["dataset"] == "tiny") & (table["series"] == "tps_pre14")]
    twin_rows = table[table["dataset"] == "twin"]
    assert list(tiny["predicted_tps"]) == list(twin_rows["predicted_tps"])


def test_a_dataset_window_applies_to_its_points_unless_the_caller_fixes_it(
        tmp_path: Path) -> None:
    longer = """  longer:
    file: m.csv
    machine: gold5215-2s
    workload: select-only
    idle_kind: idle
    run: {duration_ms: 0.8}
    clients: active_connections
    idle_clients: idle_connections
    series: {tps_pre14: pre14}
"""
    manifest = load_manifest(write_manifest(tmp_path, extra=longer))
    assert manifest.dataset("longer").run == {"duration_ms": 0.8}
    messages: list[str] = []
    table = validate(manifest, duration_ms=0.4, warmup_ms=0.2, log=messages.append)
    assert "6 measured points, 6 simulations" in messages[-1]  # same points, other window
    tiny = table[(table["dataset"] == "tiny") & (table["series"] == "tps_pre14")]
    own = table[table["dataset"] == "longer"]
    assert set(tiny["duration_ms"]) == {0.4}
    assert set(own["duration_ms"]) == {0.8}
    assert set(table["warmup_ms"]) == {0.2}
    messages.clear()
    fixed = validate(manifest, duration_ms=0.4, warmup_ms=0.2, log=messages.append,
                     fixed=("duration_ms",))
    assert "6 measured points, 4 simulations" in messages[-1]
    assert set(fixed["duration_ms"]) == {0.4}
    assert list(fixed[fixed["dataset"] == "longer"]["predicted_tps"]) == list(
        tiny["predicted_tps"])


def test_a_dataset_window_with_max_clients_applies_to_its_smaller_points(
        tmp_path: Path) -> None:
    (tmp_path / "two.csv").write_text("idle_connections,active_connections,tps_pre14\n"
                                      "0,1,33599\n0,2,60000\n", encoding="utf-8")
    longer = """  longer:
    file: two.csv
    machine: gold5215-2s
    workload: select-only
    idle_kind: idle
    run: {duration_ms: 0.8, max_clients: 1}
    clients: active_connections
    idle_clients: idle_connections
    series: {tps_pre14: pre14}
"""
    manifest = load_manifest(write_manifest(tmp_path, extra=longer))
    dataset = manifest.dataset("longer")
    assert dataset.window_applies(1)
    assert not dataset.window_applies(2)
    table = validate(manifest, duration_ms=0.4, warmup_ms=0.2, datasets=["longer"])
    assert dict(zip(table["clients"], table["duration_ms"], strict=True)) == {1: 0.8, 2: 0.4}


def test_a_dataset_window_with_min_clients_applies_to_its_larger_points(tmp_path: Path) -> None:
    (tmp_path / "three.csv").write_text("idle_connections,active_connections,tps_pre14\n"
                                        "0,1,33599\n0,2,60000\n0,3,80000\n", encoding="utf-8")
    longer = """  longer:
    file: three.csv
    machine: gold5215-2s
    workload: select-only
    idle_kind: idle
    run: {duration_ms: 0.8, min_clients: 2, max_clients: 2}
    clients: active_connections
    idle_clients: idle_connections
    series: {tps_pre14: pre14}
"""
    manifest = load_manifest(write_manifest(tmp_path, extra=longer))
    dataset = manifest.dataset("longer")
    assert [dataset.window_applies(n) for n in (1, 2, 3)] == [False, True, False]
    table = validate(manifest, duration_ms=0.4, warmup_ms=0.2, datasets=["longer"])
    assert dict(zip(table["clients"], table["duration_ms"], strict=True)) == {
        1: 0.4, 2: 0.8, 3: 0.4}


SLOWER = """  slower:
    file: m.csv
    machine: gold5215-2s
    workload: select-only
    idle_kind: idle
    set: {options.think_time: 50 us}
    clients: active_connections
    idle_clients: idle_connections
    series: {tps_pre14: pre14}
"""
"""The tiny dataset's pre14 points, measured (say) with 50 us between a client's transactions."""


def test_a_dataset_set_is_how_its_points_are_simulated_and_set_goes_over_it(
        tmp_path: Path) -> None:
    manifest = load_manifest(write_manifest(tmp_path, extra=SLOWER))
    assert manifest.dataset("slower").sets == (("options.think_time", "50 us"),)
    messages: list[str] = []
    table = validate(manifest, duration_ms=2.0, warmup_ms=0.2, log=messages.append)
    assert "6 measured points, 6 simulations" in messages[-1]  # same points, other options
    tiny = table[(table["dataset"] == "tiny") & (table["series"] == "tps_pre14")]
    slower = table[table["dataset"] == "slower"]
    # a transaction of about 30 us waits 50 us more: well under 60 % of the throughput
    assert (slower["predicted_tps"].to_numpy() < 0.6 * tiny["predicted_tps"].to_numpy()).all()
    # --set goes over a dataset's set: (an ablation changes every dataset alike)
    same = validate(manifest, duration_ms=2.0, warmup_ms=0.2,
                    overrides=["options.think_time=0 us"])
    assert list(same[same["dataset"] == "slower"]["predicted_tps"]) == list(
        same[(same["dataset"] == "tiny") & (same["series"] == "tps_pre14")]["predicted_tps"])


@pytest.mark.parametrize(("entry", "key"), [
    ("{costs.client: 1}", "datasets.slower.set.costs.client"),
    ("{options: 1}", "datasets.slower.set.options"),
    ("[1]", "datasets.slower.set"),
])
def test_a_dataset_set_outside_the_options_names_its_key(tmp_path: Path, entry: str,
                                                          key: str) -> None:
    extra = SLOWER.replace("{options.think_time: 50 us}", entry)
    with pytest.raises(ConfigError) as error:
        load_manifest(write_manifest(tmp_path, extra=extra))
    assert error.value.key == key


def test_a_dataset_set_the_model_rejects_is_named_before_any_point_runs(tmp_path: Path) -> None:
    extra = SLOWER.replace("{options.think_time: 50 us}", "{options.background_threads: -1}")
    manifest = load_manifest(write_manifest(tmp_path, extra=extra))
    with pytest.raises(ConfigError, match="must not be negative") as error:
        check_datasets(manifest)
    assert error.value.key == "datasets.slower.set.options.background_threads"
    assert error.value.source == str(manifest.path)


@pytest.mark.parametrize(("run", "key"), [
    ("{duration_ms: 0}", "datasets.tiny.run.duration_ms"),
    ("{warmup_ms: -1}", "datasets.tiny.run.warmup_ms"),
    ("{seed: 3}", "datasets.tiny.run"),
    ("{duration_ms: 1, max_clients: 0}", "datasets.tiny.run.max_clients"),
    ("{duration_ms: 1, max_clients: 1.5}", "datasets.tiny.run.max_clients"),
    ("{max_clients: 4}", "datasets.tiny.run.max_clients"),
    ("{duration_ms: 1, min_clients: 0}", "datasets.tiny.run.min_clients"),
    ("{min_clients: 4}", "datasets.tiny.run.min_clients"),
    ("{duration_ms: 1, min_clients: 5, max_clients: 4}", "datasets.tiny.run.min_clients"),
])
def test_a_bad_dataset_window_names_its_key(tmp_path: Path, run: str, key: str) -> None:
    path = write_manifest(tmp_path)
    text = path.read_text(encoding="utf-8").replace(
        "    idle_kind: idle\n", f"    idle_kind: idle\n    run: {run}\n", 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_manifest(path)
    assert error.value.key.startswith(key)


def test_single_client_work_scale_point_is_excluded(tmp_path: Path) -> None:
    machines = ("{gold5215-2s: {single_client_tps: {dataset: tiny, series: tps_pre14, "
                "clients: 1, idle_clients: 0}}}")
    manifest = load_manifest(write_manifest(tmp_path, machines=machines))
    assert manifest.single_client_tps("gold5215-2s") == 33599
    table = validate(manifest, duration_ms=20.0, warmup_ms=5.0)
    flagged = table[table["work_scale_point"]]
    assert list(flagged["series"]) == ["tps_pre14"]
    assert list(flagged["idle_clients"]) == [0]
    assert abs(float(flagged["rel_error"].iloc[0])) < 0.02  # the work scale reproduces it
    summary = summarise(table, manifest)
    assert list(summary["points"]) == [1, 2]


def test_shipped_manifest_lists_every_reference_file_with_its_provenance() -> None:
    manifest = load_manifest()
    assert set(manifest.datasets) == {
        "gold5215_idle", "gold5215_mostly_idle", "gold5215_pg12_idle",
        "gold5215_pg12_mostly_idle", "platinum8168_master_vs_split", "azure_f72s_v2"}
    for dataset in manifest.datasets.values():
        assert dataset.path.parent == shipped_manifest_path().parent
        assert dataset.description  # which publication, machine and script it comes from
        measured = dataset.table()
        assert len(measured) >= 5
        assert (measured["measured_tps"] > 0).all()
    platinum = manifest.dataset("platinum8168_master_vs_split").table()
    assert set(platinum["algorithm"]) == {"pre14", "pgxact_split"}
    assert (platinum["idle_clients"] == 0).all()
    assert manifest.single_client_tps("gold5215-2s") == 33599
    assert manifest.single_client_tps("platinum8168-2s-vm") == pytest.approx(26842.492845)
    azure = manifest.dataset("azure_f72s_v2").table()
    assert set(azure["algorithm"]) == {"pre14", "post14"}
    assert (azure["idle_clients"] == 0).all()
    assert azure["clients"].max() == 12500
    assert manifest.single_client_tps("azure-f72s-v2") == 28842


def test_parse_parameter() -> None:
    p = parse_parameter("options.costs.client=2000:30000:cycles:10000")
    assert (p.key, p.low, p.high, p.unit, p.start) == ("options.costs.client", 2000, 30000,
                                                      "cycles", 10000)
    assert p.override(12345.6) == "options.costs.client=12345.6 cycles"
    assert parse_parameter("a.b=1:2").override(1.5) == "a.b=1.5"
    for bad in ("a=1", "a=2:1", "a=1:x", "=1:2", "a=1:2:u:3"):
        with pytest.raises(ConfigError):
            parse_parameter(bad)


def test_nelder_mead_finds_the_minimum_of_a_bowl() -> None:
    target = np.array([0.3, 0.7])
    best, value = nelder_mead(lambda x: float(((x - target) ** 2).sum()),
                              np.array([0.5, 0.5]), max_evaluations=200)
    np.testing.assert_allclose(best, target, atol=1e-2)
    assert value < 1e-4


def test_nelder_mead_starts_from_the_start_and_keeps_to_its_budget() -> None:
    calls: list[np.ndarray] = []

    def bowl(x: np.ndarray) -> float:
        calls.append(x.copy())
        return float(((x - 0.9) ** 2).sum())

    best, value = nelder_mead(bowl, np.array([0.5, 0.9]), max_evaluations=10)
    np.testing.assert_allclose(calls[0], [0.5, 0.9])
    # the first simplex: start, then each parameter moved by the step (inwards at the bound)
    assert any(np.allclose(c, [0.75, 0.9]) for c in calls[:4])
    assert any(np.allclose(c, [0.5, 0.65]) for c in calls[:4])
    assert 10 <= len(calls) <= 10 + 3  # at most one more iteration's evaluations
    assert all(((c >= 0) & (c <= 1)).all() for c in calls)
    assert value == min(float(((c - 0.9) ** 2).sum()) for c in calls)
    assert ((best >= 0) & (best <= 1)).all()


def test_objective_weights_median_and_max() -> None:
    summary = pd.DataFrame({"median_abs_rel_error": [0.1, 0.3], "max_abs_rel_error": [0.2, 0.4]})
    assert objective(summary) == pytest.approx(0.2 + 0.5 * 0.3)


def test_worst_series_is_the_largest_maximum_error() -> None:
    row = {"objective": 0.3, "median:a:x": 0.9, "max:a:x": 0.2, "max:b:y": 0.5}
    assert worst_series(row) == ("b:y", 0.5)
    assert worst_series({"objective": 0.0})[0] == ""


def test_sensitivity_moves_each_value_both_ways_from_the_best(tmp_path: Path) -> None:
    manifest = load_manifest(write_manifest(tmp_path))
    parameters = [parse_parameter("options.costs.client=5000:20000:cycles"),
                  parse_parameter("options.costs.scan_cycles_per_entry.pre14=1:8")]
    evaluator = Evaluator(manifest, parameters, datasets=None, duration_ms=1.0, warmup_ms=2.0,
                          overrides=[], jobs=1, log=lambda _: None)
    moves = sensitivity(evaluator, [10000.0, 4.0], fraction=0.1)
    assert list(moves["parameter"]) == ["(best)", *[p.key for p in parameters for _ in (0, 1)]]
    assert list(moves["factor"]) == pytest.approx([1.0, 0.9, 1.1, 0.9, 1.1])
    assert list(moves["value"][1:]) == pytest.approx([9000.0, 11000.0, 3.6, 4.4])
    # five validation runs, the others' values left at the best point
    assert [row["options.costs.client"] for row in evaluator.rows] == pytest.approx(
        [10000.0, 9000.0, 11000.0, 10000.0, 10000.0])
    assert [row["options.costs.scan_cycles_per_entry.pre14"] for row in evaluator.rows] == \
        pytest.approx([4.0, 4.0, 4.0, 3.6, 4.4])
    assert moves["objective_change"].iloc[0] == 0.0
    assert (moves["objective"] - moves["objective"].iloc[0]).tolist() == \
        pytest.approx(moves["objective_change"].tolist())
    assert list(zip(moves["worst_series"], moves["worst_max_abs_rel_error"], strict=True)) == \
        [worst_series(row) for row in evaluator.rows]
    # more client work per transaction lowers the predicted TPS: the error moves
    assert moves["objective"].iloc[1] != moves["objective"].iloc[2]
    with pytest.raises(ValueError, match="fraction"):
        sensitivity(evaluator, [10000.0, 4.0], fraction=1.5)


def test_seeds_give_the_mean_and_its_interval(tmp_path: Path) -> None:
    from tests.simulator.tools.test_ratios import ratio_manifest  # it imports this module

    path = ratio_manifest(tmp_path)
    # four clients: their start phases come from the seed (one client's run does not vary)
    (tmp_path / "m.csv").write_text(CSV.replace(",1,", ",4,"), encoding="utf-8")
    manifest = load_manifest(path)
    single = [run_validation(manifest, duration_ms=2.0, warmup_ms=0.2, seed=root)
              for root in (0, 1, 2)]
    assert single[0].points["seeds"].tolist() == [1] * 4
    assert single[0].points[["predicted_sd", "predicted_low", "predicted_high"]].isna().all().all()
    assert single[0].points["measured_inside"].isna().all()
    assert summarise(single[0].points, manifest)["inside_interval"].isna().all()
    seeded = run_validation(manifest, duration_ms=2.0, warmup_ms=0.2, seed=0, seeds=3)
    points = seeded.points
    per_seed = np.array([run.points["predicted_tps"].to_numpy() for run in single])
    assert (per_seed.std(axis=0) > 0).all()  # the seeds differ
    np.testing.assert_allclose(points["predicted_tps"], per_seed.mean(axis=0))
    np.testing.assert_allclose(points["predicted_sd"], per_seed.std(axis=0, ddof=1))
    half = 4.302652729911275 * per_seed.std(axis=0, ddof=1) / np.sqrt(3)
    np.testing.assert_allclose(points["predicted_high"] - points["predicted_tps"], half)
    np.testing.assert_allclose(points["rel_error"],
                               points["predicted_tps"] / points["measured_tps"] - 1)
    inside = ((points["predicted_low"] <= points["measured_tps"])
              & (points["measured_tps"] <= points["predicted_high"]))
    assert points["measured_inside"].astype(bool).tolist() == inside.tolist()
    assert points["seeds"].tolist() == [3] * 4
    summary = summarise(points, manifest)
    assert summary["inside_interval"].tolist() == [
        int(inside[points["series"] == name].sum()) for name in summary["series"]]
    ratio = seeded.ratios.iloc[0]
    tops = [run.ratios.iloc[0]["numerator_tps"] for run in single]
    bottoms = [run.ratios.iloc[0]["denominator_tps"] for run in single]
    assert ratio["predicted"] == pytest.approx(np.mean(tops) / np.mean(bottoms))
    assert ratio["predicted_low"] < ratio["predicted"] < ratio["predicted_high"]
    assert ratio["seeds"] == 3
    with pytest.raises(ConfigError, match="at least 1"):
        run_validation(manifest, seeds=0)
