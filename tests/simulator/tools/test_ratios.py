"""Published ratios in a manifest: parsing, name checks, scoring and a tiny end-to-end run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.measure.manifest import RatioSide, load_manifest
from simulator.study.experiment import Experiment, plan
from simulator.study.sweep import execute
from simulator.tools.scoring import RATIO_COLUMNS, gate_passes, score_ratios, summarise
from simulator.tools.validate import check_ratios, run_validation
from tests.simulator.tools.test_validate import write_manifest

RATIO = """\
ratios:
  tiny_ratio:
    machine: gold5215-2s
    stand_in: "the machine of the tiny dataset"
    workload: select-only
    clients: 4
    numerator: post14
    denominator: pre14
    published: 1.05
    tolerance: 0.9
    source: "a test"
"""


def ratio_manifest(tmp_path: Path, ratio: str = RATIO, **kwargs: str) -> Path:
    """The tiny manifest of the validate tests with ``ratio`` (a top-level section) appended."""
    return write_manifest(tmp_path, extra=ratio, **kwargs)


def edited(tmp_path: Path, old: str, new: str) -> Path:
    return ratio_manifest(tmp_path, RATIO.replace(old, new, 1))


def test_a_ratio_is_read_with_its_defaults(tmp_path: Path) -> None:
    ratio = load_manifest(ratio_manifest(tmp_path)).ratio("tiny_ratio")
    assert (ratio.machine, ratio.workload, ratio.clients, ratio.idle_clients,
            ratio.idle_kind) == ("gold5215-2s", "select-only", 4, 0, "idle")
    assert ratio.numerator == RatioSide("post14")
    assert ratio.denominator == RatioSide("pre14")
    assert (ratio.published, ratio.tolerance, ratio.batch, ratio.known_gap, dict(ratio.run)) == (
        1.05, 0.9, None, "", {})
    assert ratio.source == "a test"
    assert ratio.stand_in == "the machine of the tiny dataset"


def test_a_ratio_side_can_set_options_and_a_ratio_can_be_a_known_gap(tmp_path: Path) -> None:
    text = (RATIO.replace("numerator: post14", "numerator: {algorithm: pre14, set: "
                          "{options.layout: [{move: PGXACT.xmin, to: own_line}]}}")
            .replace("    source:", "    batch: 3\n    idle_clients: 10\n    idle_kind: "
                     "mostly-idle\n    run: {duration_ms: 2}\n    expected: fail\n"
                     "    reason: not modelled\n    source:"))
    ratio = load_manifest(ratio_manifest(tmp_path, text)).ratio("tiny_ratio")
    assert ratio.numerator.sets == (("options.layout", [{"move": "PGXACT.xmin",
                                                         "to": "own_line"}]),)
    assert ratio.numerator.label() == ('pre14 with options.layout=[{"move":"PGXACT.xmin",'
                                       '"to":"own_line"}]')
    assert (ratio.batch, ratio.idle_clients, ratio.idle_kind, dict(ratio.run),
            ratio.known_gap) == (3, 10, "mostly-idle", {"duration_ms": 2.0}, "not modelled")


@pytest.mark.parametrize(("old", "new", "key", "message"), [
    ("    source:", "    sauce: x\n    source:", "ratios.tiny_ratio.sauce", "unknown key"),
    ("    published: 1.05\n", "", "ratios.tiny_ratio.published", "missing required key"),
    ("published: 1.05", "published: 0", "ratios.tiny_ratio.published", "must be a positive"),
    ("published: 1.05", "published: -2", "ratios.tiny_ratio.published", "must be a positive"),
    ("published: 1.05", "published: fast", "ratios.tiny_ratio.published", "expected a number"),
    ("tolerance: 0.9", "tolerance: -0.1", "ratios.tiny_ratio.tolerance", "non-negative"),
    ("clients: 4", "clients: 0", "ratios.tiny_ratio.clients", "at least 1"),
    ("clients: 4", "clients: 4\n    idle_clients: -1", "ratios.tiny_ratio.idle_clients",
     "must not be negative"),
    ("clients: 4", "clients: 4\n    batch: 0", "ratios.tiny_ratio.batch", "at least 1"),
    ('source: "a test"', 'source: ""', "ratios.tiny_ratio.source", "must not be empty"),
    ("clients: 4", "clients: 4\n    expected: fail", "ratios.tiny_ratio.reason",
     "required with expected: fail"),
    ("clients: 4", "clients: 4\n    reason: why", "ratios.tiny_ratio.reason",
     "only a ratio with expected: fail"),
    ("clients: 4", "clients: 4\n    expected: maybe", "ratios.tiny_ratio.expected",
     "unknown value 'maybe'"),
    ("numerator: post14", "numerator: {algorithm: post14, set: {clients: 8}}",
     "ratios.tiny_ratio.numerator.set.clients", "expected a key of the experiment's options"),
    ("numerator: post14", "numerator: {algo: post14}", "ratios.tiny_ratio.numerator.algo",
     "unknown key"),
    ("clients: 4", "clients: 4\n    run: {duration_ms: 0}", "ratios.tiny_ratio.run.duration_ms",
     "must be positive"),
    ("clients: 4", "clients: 4\n    run: {duration_ms: 1, max_clients: 1}",
     "ratios.tiny_ratio.run.max_clients", "unknown key"),
])
def test_a_bad_ratio_names_its_key(tmp_path: Path, old: str, new: str, key: str,
                                   message: str) -> None:
    path = edited(tmp_path, old, new)
    with pytest.raises(ConfigError) as error:
        load_manifest(path)
    assert error.value.key == key
    assert message in error.value.message
    assert error.value.source == str(path)


@pytest.mark.parametrize(("old", "new", "key", "message"), [
    ("numerator: post14", "numerator: post15", "ratios.tiny_ratio.numerator",
     "unknown algorithm 'post15'"),
    ("denominator: pre14", "denominator: {algorithm: pre15, set: {options.pin: spinlock}}",
     "ratios.tiny_ratio.denominator.algorithm", "unknown algorithm 'pre15'"),
    ("machine: gold5215-2s", "machine: gold9999", "ratios.tiny_ratio.machine",
     "no such machine file or shipped machine 'gold9999'"),
    ("workload: select-only", "workload: select-all", "ratios.tiny_ratio.workload",
     "unknown workload 'select-all'"),
    ("clients: 4", "clients: 4\n    idle_kind: asleep", "ratios.tiny_ratio.idle_kind",
     "unknown idle kind 'asleep'"),
    ("numerator: post14", "numerator: {algorithm: post14, set: {options.pin: glue}}",
     "ratios.tiny_ratio.numerator.set.options.pin", "expected atomic or spinlock"),
])
def test_a_ratio_with_an_unknown_name_is_rejected_before_any_point(
        tmp_path: Path, old: str, new: str, key: str, message: str) -> None:
    path = edited(tmp_path, old, new)
    manifest = load_manifest(path)
    with pytest.raises(ConfigError) as error:
        check_ratios(manifest)
    assert error.value.key == key
    assert message in error.value.message
    assert error.value.source == str(path)


def test_an_unknown_ratio_lists_the_ratios(tmp_path: Path) -> None:
    manifest = load_manifest(ratio_manifest(tmp_path))
    with pytest.raises(ConfigError, match=r"no ratio 'other' .*\(ratios: tiny_ratio\)"):
        manifest.ratio("other")


def synthetic(published: float, numerator: float, denominator: float, tolerance: float = 0.1,
              reason: str = "") -> dict[str, object]:
    return {"ratio": "r", "published": published, "numerator_tps": numerator,
            "denominator_tps": denominator, "tolerance": tolerance, "reason": reason,
            "batch": None, "error": ""}


def test_ratios_pass_within_their_tolerance_and_gate_like_series() -> None:
    rows = pd.DataFrame([
        synthetic(2.0, 210.0, 100.0),                      # 2.1: +5 %, within 10 %
        synthetic(2.0, 250.0, 100.0),                      # 2.5: +25 %
        synthetic(2.0, 250.0, 100.0, reason="a gap"),      # expected to fail, fails
        synthetic(2.0, 190.0, 100.0, reason="a gap"),      # expected to fail, passes
        synthetic(2.0, 219.0, 100.0),                      # +9.5 %: passes
        synthetic(2.0, 221.0, 100.0),                      # +10.5 %: fails
        synthetic(2.0, float("nan"), 100.0),               # a failed point fails its ratio
    ])
    scored = score_ratios(rows)
    assert list(scored.columns) == list(RATIO_COLUMNS)
    np.testing.assert_allclose(scored["predicted"], [2.1, 2.5, 2.5, 1.9, 2.19, 2.21,
                                                    np.nan])
    np.testing.assert_allclose(scored["rel_error"], [0.05, 0.25, 0.25, -0.05, 0.095, 0.105,
                                                    np.nan])
    assert scored["passed"].tolist() == [True, False, False, True, True, False, False]
    assert scored["expected"].tolist() == ["pass", "pass", "fail", "fail", "pass", "pass",
                                           "pass"]
    assert scored["outcome"].tolist() == ["pass", "fail", "expected fail", "unexpected pass",
                                          "pass", "fail", "fail"]
    no_series = pd.DataFrame({"outcome": ["pass"]})
    for index, passes in ((0, True), (1, False), (2, True), (3, False), (5, False), (6, False)):
        assert gate_passes(no_series, scored.iloc[[index]]) is passes
    assert gate_passes(no_series, scored.iloc[[0, 2, 4]])
    assert not gate_passes(pd.DataFrame({"outcome": ["fail"]}), scored.iloc[[0]])


def test_a_ratio_is_the_quotient_of_its_two_simulated_points(tmp_path: Path) -> None:
    manifest = load_manifest(ratio_manifest(tmp_path))
    messages: list[str] = []
    result = run_validation(manifest, duration_ms=0.4, warmup_ms=0.2, datasets=[],
                            log=messages.append)
    assert result.points.empty
    assert "0 measured points, 0 simulations; 1 ratios, 2 more simulations" in messages[-1]
    assert result.ratio_simulations == 2
    assert result.ratio_wall_s > 0
    row = result.ratios.iloc[0]
    machine = load_machine("gold5215-2s")
    tps = {}
    for algorithm in ("post14", "pre14"):  # the same points, simulated here on their own
        experiment = Experiment(machine=machine, algorithms=(algorithm,), workload="select-only",
                                clients=(4,), idle_clients=(0,), idle_kind="idle",
                                duration_ms=0.4, warmup_ms=0.2, seeds=(0,))
        tps[algorithm] = float(str(execute(plan(experiment.prepare())[0]).row["tps"]))
    assert (row["numerator_tps"], row["denominator_tps"]) == (tps["post14"], tps["pre14"])
    assert row["predicted"] == pytest.approx(tps["post14"] / tps["pre14"], rel=1e-12)
    assert row["rel_error"] == pytest.approx(row["predicted"] / 1.05 - 1, rel=1e-12)
    assert (row["duration_ms"], row["warmup_ms"], row["clients"]) == (0.4, 0.2, 4)
    assert row["outcome"] == "pass"  # within the loose 90 %


def test_a_ratio_point_that_a_curve_measures_is_simulated_once(tmp_path: Path) -> None:
    shared = RATIO.replace("clients: 4", "clients: 1").replace(
        "numerator: post14", "numerator: {algorithm: pre14, set: {options.layout: "
        "[{move: PGXACT.xmin, to: own_line}]}}")
    manifest = load_manifest(ratio_manifest(tmp_path, shared))
    messages: list[str] = []
    result = run_validation(manifest, duration_ms=0.4, warmup_ms=0.2, log=messages.append)
    # the tiny dataset's 4 points; pre14 at 1 client and 0 idle is one of them, the layout
    # edit makes the numerator another point
    assert "4 measured points, 4 simulations; 1 ratios, 1 more simulations" in messages[-1]
    row = result.ratios.iloc[0]
    curve = result.points
    pre14 = curve[(curve["algorithm"] == "pre14") & (curve["idle_clients"] == 0)]
    assert row["denominator_tps"] == float(pre14["predicted_tps"].iloc[0])
    assert row["numerator"].startswith("pre14 with options.layout=")
    assert list(summarise(curve, manifest)["series"]) == ["tps_pre14", "tps_post14"]
    only_curves = run_validation(manifest, duration_ms=0.4, warmup_ms=0.2, ratios=[])
    assert only_curves.ratios.empty
    assert only_curves.ratio_simulations == 0


def test_shipped_ratios_name_their_source_and_stand_in() -> None:
    manifest = load_manifest()
    check_ratios(manifest)
    assert set(manifest.ratios) == {
        "xmin_out_of_pgxact_select_only", "xmin_out_of_pgxact_batch100",
        "snapshot_cache_smaller_2s", "snapshot_cache_larger_2s", "pgxact_9_2_read_only_peak"}
    for ratio in manifest.ratios.values():
        assert ratio.source.startswith("PostgreSQL commit ")
        assert ratio.stand_in
        assert ratio.tolerance in (0.05, 0.10)
