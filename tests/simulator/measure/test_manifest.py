"""Measurement files and manifests: every value checked, known gaps marked with their reason, a
written manifest read back."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simulator.errors import ConfigError
from simulator.measure.installations import LABELS
from simulator.measure.manifest import (
    BACKGROUND_THREADS,
    MACHINE_FILE,
    MANIFEST_FILE,
    MEASURED_WORKLOAD,
    MOSTLY_IDLE_RUN,
    PRECISION_RUN,
    SET_PREFIX,
    WorkScalePoint,
    load_manifest,
    manifest_document,
)
from simulator.measure.outputs import write_yaml
from simulator.measure.pgbench import IDLE_KINDS
from simulator.study.workload_model import workload_model
from simulator.tools.scoring import SUMMARY_COLUMNS, gate_passes, summarise
from tests.simulator.tools.test_validate import CSV, write_manifest


def with_csv(tmp_path: Path, text: str) -> Path:
    path = write_manifest(tmp_path)
    (tmp_path / "m.csv").write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("csv", "message"), [
    (CSV.replace("31088", "n/a"),
     "line 3, column tps_pre14: expected a positive number of transactions per second, "
     "got 'n/a'"),
    (CSV.replace("31088", "-31088"), "line 3, column tps_pre14: expected a positive number"),
    (CSV.replace("31088", "0"), "line 3, column tps_pre14: expected a positive number"),
    (CSV.replace(",31088,", ",,"), "line 3, column tps_pre14: expected a positive number of "
     "transactions per second, got a blank cell"),
    (CSV.replace("33279", "inf"), "line 3, column tps_post14: expected a positive number"),
    (CSV.replace("200,1", "200,many"), "line 3, column active_connections: expected an "
     "integer >= 1, got 'many'"),
    (CSV.replace("200,1", "200,0"), "line 3, column active_connections: expected an integer >= 1"),
    (CSV.replace("200,1", "-5,1"), "line 3, column idle_connections: expected an integer >= 0"),
    (CSV.replace("200,1", "2.5,1"), "line 3, column idle_connections: expected an integer >= 0"),
    (CSV + "200,1,29000,33279\n", "column tps_pre14: the point of 1 clients and 200 idle "
     "clients is measured more than once: 31088 (line 3), 29000 (line 4)"),
    (CSV.splitlines()[0] + "\n", "has no measurements"),
    ("", "is empty"),
])
def test_a_bad_measurement_names_the_file_line_and_column(tmp_path: Path, csv: str,
                                                           message: str) -> None:
    manifest = load_manifest(with_csv(tmp_path, csv))
    with pytest.raises(ConfigError) as info:
        manifest.dataset("tiny").table()
    assert str(info.value).startswith(f"{tmp_path / 'm.csv'}: ")
    assert message in str(info.value)


def test_measured_values_are_read_as_numbers(tmp_path: Path) -> None:
    table = load_manifest(with_csv(tmp_path, CSV + " 400 , 1 , 30000.5 ,33000\n")
                          ).dataset("tiny").table()
    assert table["measured_tps"].tolist() == [33599, 31088, 30000.5, 33406, 33279, 33000]
    assert table["idle_clients"].tolist() == [0, 200, 400] * 2
    assert str(table["clients"].dtype) == "int64"


GAP = "{algorithm: pre14, expected: fail, reason: the model misses it}"


def test_a_series_can_be_marked_as_a_known_gap(tmp_path: Path) -> None:
    path = write_manifest(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace("tps_pre14: pre14",
                                                             f"tps_pre14: {GAP}"),
                    encoding="utf-8")
    dataset = load_manifest(path).dataset("tiny")
    assert dataset.series == {"tps_pre14": "pre14", "tps_post14": "post14"}
    assert dataset.known_gaps == {"tps_pre14": "the model misses it"}


@pytest.mark.parametrize(("entry", "key", "message"), [
    ("{algorithm: pre14, expected: fail}", "series.tps_pre14.reason", "required with expected"),
    ("{algorithm: pre14, expected: xfail, reason: r}", "series.tps_pre14.expected",
     "unknown value 'xfail' (choose one of: pass, fail)"),
    ("{algorithm: pre14, reason: r}", "series.tps_pre14.reason", "only a series with expected"),
    ("{expected: fail, reason: r}", "series.tps_pre14.algorithm", "missing required key"),
    ("{algorithm: pre14, expect: fail}", "series.tps_pre14.expect", "unknown key"),
])
def test_a_bad_known_gap_names_its_key(tmp_path: Path, entry: str, key: str,
                                       message: str) -> None:
    path = write_manifest(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace("tps_pre14: pre14",
                                                             f"tps_pre14: {entry}"),
                    encoding="utf-8")
    with pytest.raises(ConfigError, match=r"manifest\.yaml") as info:
        load_manifest(path)
    assert f"datasets.tiny.{key}: {message}" in str(info.value)


def errors_table(errors: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{"dataset": "tiny", "series": series, "algorithm": series.removeprefix("tps_"),
             "rel_error": error, "work_scale_point": False}
            for series, values in errors.items() for error in values]
    return pd.DataFrame(rows)


def test_a_known_gap_is_reported_and_only_fails_the_gate_when_it_passes(
        tmp_path: Path) -> None:
    path = write_manifest(tmp_path, thresholds="{median_abs_rel_error: 0.1, "
                                               "max_abs_rel_error: 0.25}")
    path.write_text(path.read_text(encoding="utf-8").replace("tps_pre14: pre14",
                                                             f"tps_pre14: {GAP}"),
                    encoding="utf-8")
    manifest = load_manifest(path)
    failing = summarise(errors_table({"tps_pre14": [0.5, 0.6], "tps_post14": [0.01, -0.02]}),
                        manifest)
    assert list(failing.columns) == list(SUMMARY_COLUMNS)
    assert failing[["series", "passed", "expected", "outcome", "reason"]].values.tolist() == [
        ["tps_pre14", False, "fail", "expected fail", "the model misses it"],
        ["tps_post14", True, "pass", "pass", ""]]
    assert gate_passes(failing)
    fixed = summarise(errors_table({"tps_pre14": [0.01, 0.02], "tps_post14": [0.01, 0.02]}),
                      manifest)
    assert fixed["outcome"].tolist() == ["unexpected pass", "pass"]
    assert not gate_passes(fixed)
    broken = summarise(errors_table({"tps_pre14": [0.5, 0.6], "tps_post14": [0.3, 0.02]}),
                       manifest)
    assert broken["outcome"].tolist() == ["expected fail", "fail"]
    assert not gate_passes(broken)


def test_the_summary_counts_scored_points_whose_window_did_not_converge(
        tmp_path: Path) -> None:
    manifest = load_manifest(write_manifest(tmp_path))
    table = errors_table({"tps_pre14": [0.01, 0.02, 0.03], "tps_post14": [0.01, 0.02]})
    table["window_converged"] = [True, False, False, True, True]
    table.loc[2, "work_scale_point"] = True  # fitted: neither scored nor counted
    summary = summarise(table, manifest)
    assert summary[["series", "points", "unconverged"]].values.tolist() == [
        ["tps_pre14", 2, 1], ["tps_post14", 2, 0]]


def test_a_written_manifest_reads_back_as_written(tmp_path: Path) -> None:
    """The writer and the reader share one module and one spelling of every key."""
    series = ["tps_pre14", "tps_post14"]
    datasets = {"m_idle": ("idle", series), "m_mostly_idle": ("mostly-idle", series)}
    descriptions = {"m_idle": "idle connections", "m_mostly_idle": "mostly idle: one query"}
    document = manifest_document("m", datasets, ("m_idle", "tps_pre14"), descriptions,
                                 background_threads=3)
    write_yaml(tmp_path / MANIFEST_FILE, document, "a measurement")
    for name in datasets:
        (tmp_path / f"{name}.csv").write_text(
            "idle_connections,active_connections,tps_pre14,tps_post14\n0,1,1000,1100\n"
            "100,1,900,1050\n", encoding="utf-8")
    manifest = load_manifest(tmp_path)
    assert list(manifest.datasets) == list(datasets)
    for name, (idle_kind, columns) in datasets.items():
        dataset = manifest.dataset(name)
        assert (dataset.path, dataset.description, dataset.machine) == (
            tmp_path / f"{name}.csv", descriptions[name], str(tmp_path / MACHINE_FILE))
        assert (dataset.workload, dataset.idle_kind) == (MEASURED_WORKLOAD, idle_kind)
        assert (dataset.clients, dataset.idle_clients) == ("active_connections",
                                                          "idle_connections")
        assert dataset.series == {column: column.removeprefix("tps_") for column in columns}
        assert not dataset.known_gaps
        mostly_idle = idle_kind == "mostly-idle"
        assert dataset.run == (MOSTLY_IDLE_RUN if mostly_idle else {})
        assert dataset.sets == (((BACKGROUND_THREADS, 3),) if mostly_idle else ())
        assert len(dataset.table()) == 2 * len(columns)
    assert manifest.work_scale_points == {"m": WorkScalePoint("m_idle", "tps_pre14", 1, 0)}
    figure = manifest.single_client("m")
    assert figure is not None
    assert (figure.tps, figure.algorithm, figure.workload, figure.idle_kind) == (
        1000.0, "pre14", MEASURED_WORKLOAD, "idle")
    assert (manifest.run, manifest.ratios) == (PRECISION_RUN, {})
    without = manifest_document("m", {"m_idle": datasets["m_idle"]}, None, descriptions)
    assert "machines" not in without
    assert load_manifest(data=without, path=tmp_path / MANIFEST_FILE).work_scale_points == {}


def test_the_model_words_a_measurement_writes_are_the_model_s() -> None:
    """``measure`` may not import the model's pipeline, so its words are checked here."""
    model = workload_model()
    assert MEASURED_WORKLOAD in model.workloads
    assert set(LABELS) <= set(model.algorithms)  # the installations' labels, and the series'
    assert set(IDLE_KINDS) <= set(model.idle_kinds)
    prefix, option = BACKGROUND_THREADS.split(".")
    assert prefix == SET_PREFIX
    assert model.resolve_options({option: 3})[option] == 3
