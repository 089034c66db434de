"""``snapsim validate`` and ``snapsim calibrate``: files written, exit codes, bad manifests."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from simulator.cli import main
from simulator.tools.scoring import RATIO_COLUMNS
from snapsim_models.costs import costs_from_dict, read_costs_document
from tests.simulator.tools.test_ratios import RATIO, ratio_manifest
from tests.simulator.tools.test_validate import write_manifest


def test_cli_writes_results_and_exit_code_follows_thresholds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loose = write_manifest(tmp_path)
    out = tmp_path / "out"
    assert main(["validate", "--manifest", str(loose), "--out", str(out), "--jobs", "1",
                 "--no-progress"]) == 0
    for name in ("validation.csv", "summary.csv", "validation_tiny.png",
                 "validation_scatter.png"):
        assert (out / name).stat().st_size > 0, name
    printed = capsys.readouterr().out
    assert "tps_pre14" in printed
    assert "ok" in printed
    strict = write_manifest(tmp_path, thresholds="{median_abs_rel_error: 0.0001, "
                                                 "max_abs_rel_error: 0.0001}")
    assert main(["validate", "--manifest", str(strict), "--out", str(out), "--jobs", "1",
                 "--no-progress"]) == 1
    assert "FAIL" in capsys.readouterr().out


@pytest.mark.parametrize(("edit", "message"), [
    ("file: m.csv", "file: nothere.csv"),
    ("tps_pre14: pre14", "tps_pre15: pre14"),
])
def test_bad_manifests_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            edit: str, message: str) -> None:
    path = write_manifest(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace(edit, message), encoding="utf-8")
    assert main(["validate", "--manifest", str(path), "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "datasets.tiny" in err[0]


def test_machine_set_changes_every_point_and_bad_items_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = str(write_manifest(tmp_path))
    predicted = []
    for sets in ([], ["--machine-set", "scheduler.context_switch=20 us",
                      "--machine-set", "scheduler.wakeup=20 us"]):
        out = tmp_path / f"out{len(sets)}"
        assert main(["validate", "--manifest", manifest, "--out", str(out), "--jobs", "1",
                     "--no-progress", "--duration-ms", "2", *sets]) == 0
        predicted.append(pd.read_csv(out / "validation.csv")["predicted_tps"])
    assert (predicted[1] < 0.8 * predicted[0]).all()  # 40 us more per round trip
    capsys.readouterr()
    for item, key in (("scheduler.wakup=1 us", "scheduler.wakup"),
                      ("scheduler.wakeup=-1 us", "scheduler.wakeup"),
                      ("name=other", "name"), ("novalue", "--machine-set")):
        assert main(["validate", "--manifest", manifest, "--out", str(tmp_path / "bad"),
                     "--no-progress", "--machine-set", item]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert key in err[0]
        assert "--machine-set" in err[0]


def test_calibrate_cli_writes_history_and_best(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write_manifest(tmp_path)
    out = tmp_path / "cal"
    assert main(["calibrate", "--manifest", str(manifest), "--param",
                 "options.costs.client=5000:20000:cycles", "--max-evaluations", "3",
                 "--jobs", "1", "--out", str(out)]) == 0
    history = pd.read_csv(out / "calibration.csv")
    assert len(history) == 3
    assert {"options.costs.client", "objective", "median:tiny:tps_pre14"} <= set(history)
    best = (out / "best.yaml").read_text(encoding="utf-8")
    assert "options.costs.client=" in best
    assert "command: snapsim calibrate --manifest" in best
    assert "sensitivity" not in best
    assert "--set options.costs.client=" in capsys.readouterr().out


def test_calibrate_cli_sensitivity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write_manifest(tmp_path)
    out = tmp_path / "cal"
    assert main(["calibrate", "--manifest", str(manifest), "--param",
                 "options.costs.client=5000:20000:cycles", "--max-evaluations", "2",
                 "--sensitivity", "0.1", "--duration-ms", "1", "--warmup-ms", "0.5",
                 "--jobs", "1", "--out", str(out)]) == 0
    moves = pd.read_csv(out / "sensitivity.csv")
    assert list(moves["factor"]) == pytest.approx([1.0, 0.9, 1.1])
    recorded = yaml.safe_load((out / "best.yaml").read_text(encoding="utf-8"))["sensitivity"]
    assert [move["factor"] for move in recorded] == pytest.approx([1.0, 0.9, 1.1])
    assert all(move["worst_series"].startswith("tiny:") for move in recorded)
    # what best.yaml records is the cost file's calibration record
    document = yaml.safe_load((out / "best.yaml").read_text(encoding="utf-8"))
    costs = read_costs_document()
    costs["calibration"] = {key: document[key] for key in (
        "command", "datasets", "objective", "evaluations", "fitted", "date", "sensitivity")}
    assert costs_from_dict(costs) == costs_from_dict(read_costs_document())
    assert "sensitivity (each value moved by -0.1 and +0.1" in capsys.readouterr().out
    for bad in ("1.5", "-0.1"):
        assert main(["calibrate", "--manifest", str(manifest), "--param",
                     "options.costs.client=5000:20000:cycles", "--sensitivity", bad,
                     "--out", str(tmp_path / "bad")]) == 2
        assert "--sensitivity" in capsys.readouterr().err


def test_cli_checks_ratios_beside_the_curves_and_selects_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    loose = ratio_manifest(tmp_path)
    assert main(["validate", "--manifest", str(loose), "--out", str(out), "--jobs", "1",
                 "--no-progress"]) == 0
    ratios = pd.read_csv(out / "ratios.csv", keep_default_na=False)
    assert list(ratios.columns) == list(RATIO_COLUMNS)
    assert ratios[["ratio", "numerator", "denominator", "outcome"]].values.tolist() == [
        ["tiny_ratio", "post14", "pre14", "pass"]]
    assert len(pd.read_csv(out / "validation.csv")) == 4
    printed = capsys.readouterr().out
    assert "published ratios" in printed
    assert any(line.startswith("tiny_ratio") and line.endswith("ok")
               for line in printed.splitlines())

    strict = ratio_manifest(tmp_path, RATIO.replace("tolerance: 0.9", "tolerance: 0"))
    assert main(["validate", "--manifest", str(strict), "--out", str(out), "--jobs", "1",
                 "--no-progress", "--ratio", "tiny_ratio"]) == 1
    assert pd.read_csv(out / "validation.csv").empty  # --ratio alone runs no curve
    assert pd.read_csv(out / "ratios.csv")["outcome"].tolist() == ["fail"]
    assert "FAIL" in capsys.readouterr().out

    gap = ratio_manifest(tmp_path, RATIO.replace("tolerance: 0.9", "tolerance: 0\n"
                                                 "    expected: fail\n    reason: too strict"))
    assert main(["validate", "--manifest", str(gap), "--out", str(out), "--jobs", "1",
                 "--no-progress", "--ratio", "tiny_ratio"]) == 0
    assert "known gap ratio tiny_ratio: too strict" in capsys.readouterr().out
    assert pd.read_csv(out / "ratios.csv")["outcome"].tolist() == ["expected fail"]

    assert main(["validate", "--manifest", str(gap), "--out", str(out), "--jobs", "1",
                 "--no-progress", "--dataset", "tiny"]) == 0
    assert pd.read_csv(out / "ratios.csv").empty  # --dataset alone runs no ratio
    assert len(pd.read_csv(out / "validation.csv")) == 4


@pytest.mark.parametrize(("old", "new", "key"), [
    ("numerator: post14", "numerator: post15", "ratios.tiny_ratio.numerator"),
    ("tolerance: 0.9", "tolerance: -0.5", "ratios.tiny_ratio.tolerance"),
    ("published: 1.05", "published: 0", "ratios.tiny_ratio.published"),
])
def test_a_bad_ratio_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           old: str, new: str, key: str) -> None:
    path = ratio_manifest(tmp_path, RATIO.replace(old, new))
    assert main(["validate", "--manifest", str(path), "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"{key}: " in err[0]
    assert not (tmp_path / "o" / "ratios.csv").exists()


def test_cli_seeds_print_how_many_measured_values_lie_inside(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = str(ratio_manifest(tmp_path))
    out = tmp_path / "out"
    assert main(["validate", "--manifest", manifest, "--out", str(out), "--jobs", "1",
                 "--no-progress", "--seeds", "2"]) == 0
    printed = capsys.readouterr().out
    assert "IN 95 %" in printed
    summary = pd.read_csv(out / "summary.csv")
    assert summary["inside_interval"].notna().all()
    assert (pd.read_csv(out / "validation.csv")["seeds"] == 2).all()
    ratio = pd.read_csv(out / "ratios.csv").iloc[0]
    assert f"{ratio['predicted']:.3f} [{ratio['predicted_low']:.3f}, " in printed
    assert main(["validate", "--manifest", manifest, "--out", str(out), "--no-progress",
                 "--seeds", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--seeds" in err[0]


@pytest.mark.parametrize(("command", "flags", "message"), [
    ("validate", ["--dataset", "nope"], "no dataset 'nope'"),
    ("validate", ["--ratio", "nope"], "nope"),
    ("validate", ["--jobs", "0"], "--jobs: must be at least 1"),
    ("calibrate", ["--param", "options.costs.client=5000:20000:cycles", "--dataset", "nope"],
     "no dataset 'nope'"),
    ("calibrate", ["--param", "options.costs.client=5000:20000:cycles", "--jobs", "0"],
     "--jobs: must be at least 1"),
])
def test_a_bad_selection_exits_2_before_the_output_directory_is_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, flags: list[str],
        message: str) -> None:
    manifest = str(ratio_manifest(tmp_path))
    out = tmp_path / "never"
    capsys.readouterr()
    quiet = ["--no-progress"] if command == "validate" else []
    assert main([command, "--manifest", manifest, *flags, "--out", str(out), *quiet]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert message in err[0]
    assert not out.exists()
