"""The ``mix`` workload: scripts drawn by weight per transaction, as pgbench's ``-b name@weight``;
per-script TPS and latency columns; bad mixes named by key."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.cli import main
from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.study.workload_model import model_columns
from snapsim_models.options import resolve_options
from snapsim_models.plugin import MODEL
from snapsim_models.workloads import Mix, mix_of
from tests.models.points import simulate

GOLD = load_machine("gold5215-2s")


def test_pick_follows_the_cumulative_weights() -> None:
    mix = mix_of({"select-only": 9, "tpcb": 1})
    assert [mix.pick(u).name for u in (0.0, 0.5, 0.899, 0.9, 0.999)] == [
        "select-only", "select-only", "select-only", "tpcb", "tpcb"]
    draws = np.random.default_rng(1).random(100_000)
    share = sum(mix.pick(float(u)).name == "tpcb" for u in draws) / len(draws)
    assert share == pytest.approx(0.1, abs=0.01)


def test_a_run_realises_the_weights_and_reports_each_script() -> None:
    row = simulate(GOLD, "post14", workload="mix",
                                clients=16, duration_ns=20e6, warmup_ns=2e6,
                                mix=(("select-only", 3.0), ("tpcb", 1.0))).row
    select, tpcb = float(row["tps_select_only"]), float(row["tps_tpcb"])  # type: ignore[arg-type]
    assert select + tpcb == pytest.approx(float(row["tps"]))  # type: ignore[arg-type]
    assert int(row["transactions"]) > 3000  # type: ignore[call-overload]
    assert tpcb / (select + tpcb) == pytest.approx(0.25, abs=0.01)
    # a tpcb transaction (7 round trips) takes several times a select-only one
    assert row["latency_mean_us_tpcb"] > 3 * row["latency_mean_us_select_only"]  # type: ignore[operator]
    document = model_columns(MODEL).document(
        {"curve.csv": ["tps_tpcb", "latency_mean_us_select_only"]})
    assert document["curve.csv"]["tps_tpcb"]["unit"] == "1/s"
    assert "select_only" in str(document["curve.csv"]["latency_mean_us_select_only"]["meaning"])


@pytest.mark.parametrize(("mix", "key"), [
    ({"select-only": 0}, "options.mix.select-only"),
    ({"select-only": "lots"}, "options.mix.select-only"),
    ({"mix": 1}, "options.mix.mix"),
    ({"nonsense": 1}, "options.mix.nonsense"),
    ("select-only", "options.mix"),
])
def test_bad_mixes_name_the_key(mix: object, key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_options({"mix": mix})
    assert raised.value.key == key


def test_the_mix_workload_without_weights_is_bad_input(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match=r"options\.mix"):
        MODEL.check_workload_options("mix", {})
    MODEL.check_workload_options("select-only", {})  # the others need none
    assert main(["run", "tiny", "--workload", "mix", "--out", "unused-dir"]) == 2
    assert "options.mix" in capsys.readouterr().err


@pytest.mark.parametrize("workload", ["select-only", "select1", "tpcb"])
def test_a_batch_for_a_workload_that_reads_none_is_bad_input(
        workload: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match=r"apply to the batched and mix workloads only"):
        MODEL.check_workload_options(workload, {"batch": 10})
    MODEL.check_workload_options(workload, {"batch": 1})
    MODEL.check_workload_options("batched", {"batch": 10})
    MODEL.check_workload_options("mix", {"batch": 10, "mix": {"batched": 1}})
    assert main(["run", "tiny", "--workload", workload, "--set", "options.batch=10",
                 "--out", "unused-dir"]) == 2
    assert "options.batch" in capsys.readouterr().err


def test_a_mix_needs_positive_weights() -> None:
    with pytest.raises(ValueError, match="positive"):
        Mix(mix_of({"select-only": 1}).scripts, (0.0,))
