"""Baselines: tolerances on top of the defaults, checked curves, missing compared columns."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simulator.errors import ConfigError
from simulator.tools.regress import (
    DEFAULT_TOLERANCES,
    Tolerance,
    compare,
    load_baseline,
    load_tolerances,
    read_baseline,
)
from tests.paths import BASELINES_DIR

CURVE = BASELINES_DIR / "tiny" / "curve.csv"


def baseline_dir(tmp_path: Path, curve: str | None = None, tolerances: str | None = None) -> Path:
    (tmp_path / "curve.csv").write_text(
        CURVE.read_text(encoding="utf-8") if curve is None else curve, encoding="utf-8")
    if tolerances is not None:
        (tmp_path / "tolerances.yaml").write_text(tolerances, encoding="utf-8")
    return tmp_path


def test_a_tolerance_file_adds_to_and_overrides_the_defaults(tmp_path: Path) -> None:
    directory = baseline_dir(tmp_path, tolerances="tps: {rel: 0.1}\nhot_line_wait_ns: {abs: 50}\n")
    curve, tolerances = load_baseline(directory)
    assert tolerances["tps"] == Tolerance(rel=0.1)
    assert tolerances["hot_line_wait_ns"] == Tolerance(abs=50)
    for column in set(DEFAULT_TOLERANCES) - {"tps"}:  # the defaults it does not name still apply
        assert tolerances[column] == Tolerance(rel=DEFAULT_TOLERANCES[column]["rel"])
    assert len(curve) == 8


@pytest.mark.parametrize(("text", "message"), [
    ("tsp: {rel: 0.1}\n", "tsp: unknown column: not in the baseline's curve.csv"),
    ("algorithm: {rel: 0.1}\n", "algorithm: identifies a point"),
    ("tps: {rel: -0.1}\n", "tps.rel: must be a finite number >= 0"),
    ("tps: {}\n", "tps: give rel, abs or both"),
    ("tps: {rel: 0.1, relative: 1}\n", "tps.relative: unknown key"),
])
def test_a_bad_tolerance_file_is_bad_input(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=r"tolerances\.yaml") as info:
        load_baseline(baseline_dir(tmp_path, tolerances=text))
    assert message in str(info.value)


def test_tolerances_without_a_curve_check_only_the_file(tmp_path: Path) -> None:
    (tmp_path / "tolerances.yaml").write_text("any_column: {abs: 1}\n", encoding="utf-8")
    assert load_tolerances(tmp_path)["any_column"] == Tolerance(abs=1)


@pytest.mark.parametrize(("curve", "message"), [
    ("", "is empty"),
    ('a,b\n"unterminated\n', "cannot read it as CSV"),
    ("this is not a curve\n", "has no points"),
    ("hello,world\n1,2\n", "not a curve: no column machine, algorithm"),
    ("machine,algorithm,workload,clients,idle_clients,idle_kind,root_seed,tps\n"
     "m,a,w,x,0,idle,0,1\n", "row 2, column clients: expected an integer, got 'x'"),
    ("machine,algorithm,workload,clients,idle_clients,idle_kind,root_seed,tps\n"
     "m,a,w,1,0,idle,0,1\nm,a,w,1,0,idle,0,2\n", "row 3: the point of row 2 is given twice"),
    ("machine,algorithm,workload,clients,idle_clients,idle_kind,root_seed,tps\n"
     "m,a,w,1,0,idle,0,fast\n", "row 2, column tps: expected a number, got 'fast'"),
])
def test_an_unusable_baseline_is_bad_input_naming_the_file(tmp_path: Path, curve: str,
                                                           message: str) -> None:
    with pytest.raises(ConfigError, match=r"curve\.csv") as info:
        load_baseline(baseline_dir(tmp_path, curve=curve))
    assert message in str(info.value)


def test_an_undecodable_baseline_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "curve.csv").write_bytes(b"\x00\xff\xfe\xff")
    with pytest.raises(ConfigError, match="cannot read it as CSV"):
        read_baseline(tmp_path / "curve.csv")


def test_a_compared_column_missing_on_either_side_is_a_failure() -> None:
    baseline = pd.read_csv(CURVE)
    tolerances = {"tps": Tolerance(rel=0.02), "latency_p50_us": Tolerance(rel=0.05)}
    assert compare(baseline, baseline, tolerances).empty
    moved = compare(baseline.drop(columns=["tps"]), baseline, tolerances)
    assert moved[["column", "change"]].values.tolist() == [["tps", "missing in the baseline"]]
    moved = compare(baseline, baseline.drop(columns=["latency_p50_us"]), tolerances)
    assert moved[["column", "change"]].values.tolist() == [
        ["latency_p50_us", "missing in the new run"]]


def test_a_moved_value_is_listed_with_its_change() -> None:
    baseline = read_baseline(CURVE)
    new = baseline.copy()
    new["tps"] = baseline["tps"].where(baseline.index != 0, baseline["tps"] * 1.5)
    moved = compare(baseline, new, {"tps": Tolerance(rel=0.02)})
    assert moved[["column", "change"]].values.tolist() == [["tps", "+50.00%"]]
