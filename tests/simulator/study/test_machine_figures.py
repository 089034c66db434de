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
from simulator.measure.manifest import load_manifest
from simulator.study.experiment import Experiment
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
def work_scale_of(machine: str, precision: float | None = None) -> float:
    """The machine's work scale, found once (1 without a measured figure), in fixed windows or
    grown to ``precision`` (the single client's window then depends on its noise)."""
    prepared = Experiment(machine=machine, seeds=(0,), duration_ms=DURATION_MS,
                          warmup_ms=WARMUP_MS, precision=precision).prepare()
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
    """The Gold's single-client TPS is pgbench -S's: tpcb runs with the work scale found there
    (under the default experiment's precision, 2 %, which ``snapsim run`` keeps)."""
    out = tmp_path / "out"
    assert main(["-q", "run", "--workload", "tpcb", "--algorithms", "post14", "--clients", "1",
                 "--idle-clients", "0", "--duration-ms", str(DURATION_MS), "--warmup-ms",
                 str(WARMUP_MS),
                 "--out", str(out), "--no-progress"]) == 0
    curve = pd.read_csv(out / "curve.csv")
    assert curve["workload"].tolist() == ["tpcb"]
    expected = work_scale_of("gold5215-2s", precision=0.02)
    assert curve["work_scale"].iloc[0] == pytest.approx(expected, rel=1e-12)
    assert curve["work_scale"].iloc[0] > 1.2  # found on select-only, not 1
    assert "measured_tps" not in curve.columns  # no tpcb dataset of the Gold


def test_the_api_and_the_command_line_give_one_answer(tmp_path: Path) -> None:
    """The default experiment's settings through simulator.run and through snapsim run (the
    file's precision included: the API's own default is the fixed window)."""
    out = tmp_path / "cli"
    assert main(["-q", "run", "--clients", "1", "--idle-clients", "0,1000", "--duration-ms",
                 str(DURATION_MS), "--warmup-ms", str(WARMUP_MS), "--out", str(out),
                 "--no-progress"]) == 0
    cli = pd.read_csv(out / "curve.csv")
    api = simulator.run(Experiment(machine="gold5215-2s", algorithms=("pre14", "post14"),
                                   clients=(1,), idle_clients=(0, 1000),
                                   duration_ms=DURATION_MS, warmup_ms=WARMUP_MS,
                                   precision=0.02)).curve
    assert api["tps"].tolist() == cli["tps"].tolist()
    assert api["work_scale"].tolist() == cli["work_scale"].tolist()
    assert api["measured_tps"].tolist() == cli["measured_tps"].tolist() == [
        33599, 29377, 33406, 33434]  # the Gold's published pre14 then post14, 0 and 1000 idle


def _host_dataset(tmp_path: Path) -> tuple[Path, str]:
    """A probed host's file (``my-host``) and its dataset, measured with 50 us between
    transactions (the dataset's ``set:``), as ``snapsim measure`` writes one."""
    document = yaml.safe_load((machines_dir() / "gold5215-2s.yaml").read_text(encoding="utf-8"))
    document["name"] = "my-host"
    host = tmp_path / "host.yaml"
    host.write_text(yaml.safe_dump(document), encoding="utf-8")
    (tmp_path / "mine.csv").write_text("idle_connections,active_connections,tps\n0,1,30000\n",
                                       encoding="utf-8")
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("""\
version: 1
thresholds: {median_abs_rel_error: 0.1, max_abs_rel_error: 0.2}
datasets:
  mine:
    file: mine.csv
    machine: host.yaml
    workload: select-only
    idle_kind: idle
    set: {options.think_time: 50 us}
    clients: active_connections
    idle_clients: idle_connections
    series: {tps: post14}
""", encoding="utf-8")
    return host, f"{manifest}:mine"


def test_a_hosts_own_dataset_overlays_and_names_the_settings_it_was_measured_under(
        tmp_path: Path) -> None:
    host, reference = _host_dataset(tmp_path)
    # its machine is given as the host file's path: the file's name is the machine's
    prepared = Experiment(machine=str(host), measurements=reference,
                          single_client_tps=None).prepare()
    assert prepared.measurements == reference
    assert prepared.overlay_differences() == [("options.think_time", "50 us", "0 us")]
    for same in ("50 us", "50000 ns", "0.05 ms"):  # one quantity in any unit
        assert Experiment(machine=str(host), measurements=reference, single_client_tps=None,
                          options={"think_time": same}).prepare().overlay_differences() == []
    with pytest.raises(ConfigError, match="mine was measured on my-host, not gold5215-2s"):
        Experiment(machine="gold5215-2s", measurements=reference).prepare()
    assert Experiment(machine="gold5215-2s").prepare().overlay_differences() == []


def test_snapsim_run_says_how_the_overlaid_dataset_was_measured(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    host, reference = _host_dataset(tmp_path)
    experiment = tmp_path / "e.yaml"
    experiment.write_text(yaml.safe_dump({
        "machine": str(host), "algorithms": ["post14"], "clients": [1], "idle_clients": [0],
        "duration_ms": 0.4, "warmup_ms": 0.1, "seeds": [0], "single_client_tps": None,
        "measurements": reference}), encoding="utf-8")
    assert main(["run", str(experiment), "--out", str(tmp_path / "out"), "--no-progress",
                 "--jobs", "1"]) == 0
    assert (f"measurements: {reference} was measured with options.think_time=\"50 us\", this "
            "run has \"0 us\"; add --set options.think_time=\"50 us\" to compare like for like"
            ) in capsys.readouterr().err
    assert main(["run", str(experiment), "--out", str(tmp_path / "same"), "--no-progress",
                 "--jobs", "1", "--set", "options.think_time=50 us"]) == 0
    assert "was measured with" not in capsys.readouterr().err
