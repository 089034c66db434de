"""A machine's single-client TPS and measurements belong to that machine, whatever the door.

``single_client_tps: machine`` (the default) takes the machine's own measured figure from the
manifest and finds the work scale on the point it was measured at (its algorithm and workload);
every workload then runs with that work scale. A machine without a figure runs the global cost
model as is, and a dataset measured on another machine is never overlaid.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd
import pytest
import yaml

import simulator
from simulator.cli import main
from simulator.config.machine_file import machines_dir
from simulator.errors import ConfigError
from simulator.study.experiment import Experiment
from simulator.study.measurements import load_manifest
from simulator.study.work_scale import single_client_work_scale
from simulator.study.workload_model import workload_model

SHIPPED = sorted(path.stem for path in machines_dir().glob("*.yaml"))
DURATION_MS, WARMUP_MS = 10.0, 2.0  # tpcb's first transactions on cold caches take ms


def test_the_shipped_figures_are_the_manifests() -> None:
    manifest = load_manifest()
    gold = manifest.single_client("gold5215-2s")
    assert gold is not None
    assert (gold.tps, gold.algorithm, gold.workload, gold.idle_kind) == (
        33599.0, "pre14", "select-only", "idle")
    assert manifest.single_client("westmere-ex-8s") is None


def test_a_machine_without_a_figure_runs_the_global_cost_model_and_no_overlay(
        tmp_path: Path) -> None:
    """A machine file of another name (a probed host) is not calibrated to the Gold 5215."""
    document = yaml.safe_load((machines_dir() / "gold5215-2s.yaml").read_text(encoding="utf-8"))
    document["name"] = "my-host"
    host = tmp_path / "host.yaml"
    host.write_text(yaml.safe_dump(document), encoding="utf-8")
    prepared = Experiment(machine=str(host)).prepare()
    assert prepared.single_client is None
    assert prepared.measurements is None
    assert "work scale 1: my-host has no measured single-client TPS" in (
        prepared.work_scale_note(1.0))
    gold = Experiment(machine="gold5215-2s").prepare()
    assert gold.single_client is not None
    assert gold.measurements == "gold5215_idle"
    mostly = Experiment(machine="gold5215-2s", idle_kind="mostly-idle").prepare()
    assert mostly.measurements == "gold5215_mostly_idle"
    assert Experiment(machine="gold5215-2s", workload="tpcb").prepare().measurements is None


def test_a_dataset_of_another_machine_is_refused() -> None:
    with pytest.raises(ConfigError, match="gold5215_idle was measured on gold5215-2s, not "
                                          "westmere-ex-8s") as error:
        Experiment(machine="westmere-ex-8s", measurements="gold5215_idle").prepare()
    assert error.value.key == "measurements"
    with pytest.raises(ConfigError, match="expected a TPS, 'machine' or null, got 'gold'"):
        Experiment(single_client_tps="gold").check()


def test_an_explicit_figure_is_measured_with_the_experiments_own_workload() -> None:
    prepared = Experiment(machine="westmere-ex-8s", algorithms=("post14",), workload="tpcb",
                          single_client_tps=5000.0).prepare()
    figure = prepared.single_client
    assert figure is not None
    assert (figure.tps, figure.algorithm, figure.workload) == (5000.0, "post14", "tpcb")


@functools.cache
def work_scale_of(machine: str) -> float:
    """The machine's work scale, found once (1 without a measured figure)."""
    prepared = Experiment(machine=machine, seeds=(0,), duration_ms=DURATION_MS,
                          warmup_ms=WARMUP_MS).prepare()
    if prepared.single_client is None:
        return 1.0
    return single_client_work_scale(prepared, prepared.single_client)


@pytest.mark.slow
@pytest.mark.parametrize("machine", SHIPPED)
def test_every_shipped_machine_runs_every_workload(machine: str) -> None:
    """One short point per workload at the machine's work scale (found on its select-only
    point, so a heavier workload no longer asks for an impossible TPS)."""
    scale = work_scale_of(machine)
    assert (scale == 1.0) == (load_manifest().single_client(machine) is None)
    for workload in workload_model().workloads:
        options = {"mix": {"select-only": 9, "tpcb": 1}} if workload == "mix" else {}
        experiment = Experiment(machine=machine, algorithms=("post14",), workload=workload,
                                clients=(1,), idle_clients=(0,), options=options,
                                duration_ms=DURATION_MS, warmup_ms=WARMUP_MS)
        result = simulator.run(experiment, work_scale=scale)
        assert result.failures.empty, (machine, workload, result.failures["error"].tolist())
        assert float(result.curve["tps"].iloc[0]) > 0
        assert result.work_scale == scale


def test_tpcb_on_the_gold_runs_from_the_command_line(tmp_path: Path) -> None:
    """The Gold's single-client TPS is pgbench -S's: tpcb runs with the work scale found there."""
    out = tmp_path / "out"
    assert main(["-q", "run", "--workload", "tpcb", "--algorithms", "post14", "--clients", "1",
                 "--idle-clients", "0", "--duration-ms", str(DURATION_MS), "--warmup-ms",
                 str(WARMUP_MS),
                 "--out", str(out), "--no-progress"]) == 0
    curve = pd.read_csv(out / "curve.csv")
    assert curve["workload"].tolist() == ["tpcb"]
    assert curve["work_scale"].iloc[0] == pytest.approx(work_scale_of("gold5215-2s"), rel=1e-12)
    assert curve["work_scale"].iloc[0] > 1.2  # found on select-only, not 1
    assert "measured_tps" not in curve.columns  # no tpcb dataset of the Gold


def test_the_api_and_the_command_line_give_one_answer(tmp_path: Path) -> None:
    """The default experiment's settings through simulator.run and through snapsim run."""
    out = tmp_path / "cli"
    assert main(["-q", "run", "--clients", "1", "--idle-clients", "0,1000", "--duration-ms",
                 str(DURATION_MS), "--warmup-ms", str(WARMUP_MS), "--out", str(out),
                 "--no-progress"]) == 0
    cli = pd.read_csv(out / "curve.csv")
    api = simulator.run(Experiment(machine="gold5215-2s", algorithms=("pre14", "post14"),
                                   clients=(1,), idle_clients=(0, 1000),
                                   duration_ms=DURATION_MS, warmup_ms=WARMUP_MS)).curve
    assert api["tps"].tolist() == cli["tps"].tolist()
    assert api["work_scale"].tolist() == cli["work_scale"].tolist()
    assert api["measured_tps"].tolist() == cli["measured_tps"].tolist() == [
        33599, 29377, 33406, 33434]  # the Gold's published pre14 then post14, 0 and 1000 idle
