"""Faults a newcomer met: options that would change nothing, machines too large to build, a full
disk, windows too short or too long; each is one line naming the cause and exit code 2."""

from __future__ import annotations

import errno
import io
import os
import re
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from simulator.cli import calibrate as calibrate_cli
from simulator.cli import common, main
from simulator.config import configs_dir
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine, machines_dir
from simulator.errors import ConfigError
from simulator.hardware import warmup
from simulator.hardware.machine import Machine
from simulator.measure.manifest import load_manifest
from simulator.study import estimate


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("snapsim: error: ")
    return err[0]


MIX_EXPERIMENT = ("name: mixed\nworkload: mix\nclients: [1]\nidle_clients: [0]\n"
                  "algorithms: [post14]\nduration_ms: 0.5\nwarmup_ms: 0.1\n"
                  "options: {mix: {select-only: 9, tpcb: 1}}\n")


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_mix_for_another_workload_is_refused_even_when_inherited(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    (tmp_path / "mixed.yaml").write_text(MIX_EXPERIMENT, encoding="utf-8")
    child = tmp_path / "child.yaml"
    child.write_text("extends: mixed.yaml\nname: child\nworkload: select-only\n",
                     encoding="utf-8")
    flags = ["--out", str(tmp_path / "out")] if command == "run" else []
    assert main([command, str(child), *flags]) == 2
    assert ("options.mix: scripts and weights apply to the mix workload only, not select-only "
            "(they would change nothing; drop options.mix or run workload: mix)"
            in error_line(capsys))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_batch_for_a_workload_of_single_statements_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("extends: tiny\noptions: {batch: 4}\n", encoding="utf-8")
    flags = ["--out", str(tmp_path / "out")] if command == "run" else []
    assert main([command, str(path), *flags]) == 2
    assert ("options.batch: 4 statements per round trip apply to the batched and mix workloads "
            "only, not select-only" in error_line(capsys))



def huge_machine_file(tmp_path: Path) -> Path:
    """The Gold 5215 with 100,000 cores per domain: about 43 GB of cache arrays."""
    text = (machines_dir() / "gold5215-2s.yaml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^  cores_per_domain: .*$", "  cores_per_domain: 100000", text)
    path = tmp_path / "huge.yaml"
    path.write_text(re.sub(r"(?m)^name: .*$", "name: huge", text), encoding="utf-8")
    return path


def test_check_config_refuses_a_machine_too_large_to_build(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(estimate, "available_memory", lambda: (16e9, "MemAvailable"))
    path = huge_machine_file(tmp_path)
    assert main(["check-config", str(path)]) == 2
    line = error_line(capsys)
    assert re.match(rf"snapsim: error: {re.escape(str(path))}: topology: machine huge "
                    r"\(200,000 cores\) needs about [0-9.]+ GB for its caches alone", line)
    assert line.endswith("GB for its caches alone (an estimate), more than the 16.0 GB "
                         "available (MemAvailable); use fewer cores")
    assert main(["check-config", str(machines_dir() / "gold5215-2s.yaml")]) == 0


def test_run_refuses_a_machine_too_large_to_build_before_building_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    real_machine = Machine

    def machine(config: MachineConfig, lines: npt.NDArray[np.int64]) -> Machine:
        built.append(config.topology.cores_per_domain)
        return real_machine(config, lines)

    monkeypatch.setattr(warmup, "Machine", machine)
    monkeypatch.setattr(warmup, "kernel_compiled", lambda: False)
    monkeypatch.setattr(common, "kernel_compiled", lambda: False)
    monkeypatch.setattr(estimate, "available_memory", lambda: (16e9, "MemAvailable"))
    out = tmp_path / "out"
    assert main(["run", "tiny", "--machine", str(huge_machine_file(tmp_path)), "--jobs", "1",
                 "--no-progress", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("snapsim: error: point pre14 clients=4 idle_clients=500 needs ")
    assert "the machine's caches alone take 4" in err[-1]
    assert "use a machine with fewer cores (topology), or force the run" in err[-1]
    assert 100_000 not in built  # the kernel was warmed on a shipped machine
    assert not out.exists()


def test_a_long_warm_up_is_blamed_for_the_memory_it_needs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(estimate, "available_memory", lambda: (16e9, "MemAvailable"))
        assert main(["-q", "run", "tiny", "--set", "warmup_ms=1e6", "--clients", "1",
                     "--idle-clients", "0", "--jobs", "1", "--no-progress",
                     "--out", str(out)]) == 2
    line = error_line(capsys)
    assert ("the 1,000,002 ms simulated (warm-up and window) take 38.0 GB for their "
            "transactions; shorten warmup_ms or duration_ms, or force the run") in line
    assert "lower clients" not in line


def test_a_full_disk_while_the_tables_are_written_is_one_line_and_keeps_the_points(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_to_csv = pd.DataFrame.to_csv

    def to_csv(frame: pd.DataFrame, path: object = None, **kwargs: object) -> object:
        if isinstance(path, Path) and "lines.csv" in path.name:
            path.write_bytes(b"half a table")  # then the disk fills up
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_to_csv(frame, path, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(pd.DataFrame, "to_csv", to_csv)
    out = tmp_path / "out"
    assert main(["-q", "run", "tiny", "--clients", "1", "--idle-clients", "0", "--algorithms",
                 "post14", "--out", str(out)]) == 2
    line = error_line(capsys)
    assert line == (f"snapsim: error: cannot write {out / 'lines.csv'}: No space left on device; "
                    f"the points are kept in {out / 'points'}: free some space and run the same "
                    "command again to write the tables")
    assert len(list((out / "points").iterdir())) >= 1
    assert not list(out.rglob("*.tmp"))
    assert not (out / "lines.csv").exists()
    monkeypatch.setattr(pd.DataFrame, "to_csv", real_to_csv)
    assert main(["run", "tiny", "--clients", "1", "--idle-clients", "0", "--algorithms",
                 "post14", "--no-progress", "--out", str(out)]) == 0
    assert "resuming: 1 of 1 points already done" in capsys.readouterr().err
    assert (out / "lines.csv").exists()


def test_verbose_point_lines_are_not_written_onto_the_progress_bar(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-v", "run", "tiny", "--clients", "1", "--idle-clients", "0,100",
                 "--algorithms", "post14", "--jobs", "1", "--out", str(tmp_path / "out")]) == 0
    segments = re.split(r"[\r\n]", capsys.readouterr().err)
    points = [segment for segment in segments if "point post14-" in segment]
    assert len(points) == 2
    assert all(segment.startswith("point post14-") for segment in points), points


def test_extend_with_a_smaller_grid_is_refused_and_keeps_the_tables(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    base = ["-q", "run", "tiny", "--idle-clients", "0", "--algorithms", "post14", "--jobs", "1",
            "--out", str(out)]
    assert main([*base, "--clients", "1,4"]) == 0
    before = (out / "curve.csv").read_bytes()
    capsys.readouterr()
    assert main([*base, "--clients", "4", "--extend"]) == 2
    assert error_line(capsys) == (
        f"snapsim: error: --extend: the run in {out} also has clients 1, which this grid "
        "leaves out; --extend only adds points: give a grid that includes them, or choose "
        "another --out")
    assert (out / "curve.csv").read_bytes() == before
    assert main([*base, "--clients", "1,4,8", "--extend"]) == 0  # a larger grid still extends


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_window_that_cannot_hold_one_transaction_is_refused_before_the_simulation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("extends: tiny\nclients: [200000]\nidle_clients: [0]\nduration_ms: 2\n"
                    "warmup_ms: 1\nalgorithms: [post14]\n", encoding="utf-8")
    flags = ["--out", str(tmp_path / "out")] if command == "run" else []
    assert main([command, str(path), *flags]) == 2
    assert ("point post14 clients=200000 idle_clients=0: its 3 ms of warm-up and window cannot "
            "hold one transaction, since the clients' first ones need at least about 131.6 ms "
            "(an estimate); lengthen warmup_ms or duration_ms" in error_line(capsys))
    assert not (tmp_path / "out").exists()


def test_the_window_bound_is_below_the_measured_first_transactions() -> None:
    """2,000 clients on gold5215-2s complete their first transactions after about 1.4 ms
    (1 ms of warm-up and window held none, 2.5 ms held 1.5 per client): the bound is below."""
    gold = load_machine("gold5215-2s")
    postgres = estimate.coefficients_of()
    assert 1.0 < estimate.first_transaction_ms(2000, gold, postgres) < 1.4
    assert estimate.first_transaction_ms(1, gold, postgres) == pytest.approx(1e3 / 38_000)


def test_run_reads_the_experiment_from_standard_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(
        "extends: tiny\nclients: [1]\nidle_clients: [0]\nalgorithms: [post14]\n"))
    out = tmp_path / "out"
    assert main(["-q", "run", "-", "--out", str(out)]) == 0
    assert list(pd.read_csv(out / "curve.csv")["clients"]) == [1]


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_an_empty_experiment_file_is_the_same_error_in_every_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing yet\n", encoding="utf-8")
    flags = ["--out", str(tmp_path / "out")] if command == "run" else []
    assert main([command, str(path), *flags]) == 2
    assert error_line(capsys) == (
        f"snapsim: error: {path}: the file is empty (an experiment file needs at least one key; "
        "'extends: default' runs the defaults)")


def test_check_config_takes_shipped_names_and_the_cost_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["check-config", "tiny"]) == 0
    assert "ok: experiment tiny: 8 points (pre14, post14) on gold5215-2s" in (
        capsys.readouterr().out)
    assert main(["check-config", "gold5215-2s"]) == 0
    assert capsys.readouterr().out.startswith("ok: gold5215-2s (2 sockets")
    costs = configs_dir() / "postgres-costs.yaml"
    assert main(["check-config", str(costs)]) == 0
    assert capsys.readouterr().out.strip() == (
        "ok: PostgreSQL cost model (version 1, calibrated); an experiment uses it with options: "
        "{costs: FILE}")
    bad = tmp_path / "costs.yaml"
    bad.write_text(costs.read_text(encoding="utf-8").replace("\nclient:", "\nclinet:"),
                   encoding="utf-8")
    assert main(["check-config", str(bad)]) == 2
    assert f"{bad}: clinet: unknown key" in error_line(capsys)
    assert main(["check-config", "no-such-thing"]) == 2
    assert "no-such-thing" in error_line(capsys)


@pytest.mark.parametrize(("flags", "message"), [
    (["--seed", "-1"], "--seed: must be a non-negative integer, got -1"),
    (["--seeds", "0"], "--seeds: must be at least 1, got 0"),
    (["--seed", str(2**64)], "--seed: must be at most 9223372036854775807 (2**63 - 1, the 64-bit "
                             "integer the tables store), got 18446744073709551616"),
    (["--seed", str(2**63 - 1), "--seeds", "2"],
     "--seeds: 2 root seeds from 9223372036854775807 pass 9223372036854775807"),
    (["--set", f"seeds=[{2**63}]"], "--set: seeds: must be integers from 0 to "),
    (["--set", "seeds=[-3]"], "--set: seeds: must be integers >= 0, got -3"),
    (["--set", "options.costs.clinet=5"], "--set: options.costs.clinet: unknown key"),
    (["--set", "options.churn.rate_per_s=lots"],
     "--set: options.churn.rate_per_s: expected connections per second"),
])
def test_bad_seeds_and_set_values_are_blamed_on_their_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
        message: str) -> None:
    assert main(["run", "tiny", *flags, "--out", str(tmp_path / "out")]) == 2
    line = error_line(capsys)
    assert line.startswith(f"snapsim: error: {message}"), line
    assert "tiny.yaml" not in line


def test_run_seeds_runs_the_first_seed_and_the_next(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["-q", "run", "tiny", "--seed", "5", "--seeds", "3", "--clients", "1",
                 "--idle-clients", "0", "--algorithms", "post14", "--out", str(out)]) == 0
    assert sorted(pd.read_csv(out / "curve.csv")["root_seed"]) == [5, 6, 7]
    assert len(pd.read_csv(out / "curve_summary.csv")) == 1


@pytest.mark.parametrize(("param", "message"), [
    ("options.costs.clinet=2000:30000:cycles", "--param: options.costs.clinet: unknown key"),
    ("options.costs.client=2000:30000:furlongs", "got '2000 furlongs'"),
])
def test_calibrate_refuses_a_bad_param_before_preparing_the_kernel(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        param: str, message: str) -> None:
    def no_kernel(config: object = None) -> None:
        raise AssertionError("the kernel was prepared before the check")

    monkeypatch.setattr(calibrate_cli, "prepare_kernel", no_kernel)
    assert main(["calibrate", "--param", param, "--out", str(tmp_path / "out")]) == 2
    assert message in error_line(capsys)
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``tiny`` with pre14 (A) and post14 (B): 4 clients, 0 and 500 idle connections."""
    root = tmp_path_factory.mktemp("runs")
    for name, algorithm in (("a", "pre14"), ("b", "post14")):
        assert main(["-q", "run", "tiny", "--clients", "4", "--algorithms", algorithm,
                     "--duration-ms", "1", "--out", str(root / name)]) == 0
    return root / "a", root / "b"


def test_compare_ranks_the_coherence_transfers_not_the_private_hits(
        two_runs: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    a, b = two_runs
    assert main(["-q", "compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    transfers = out.split("coherence transfers per transaction", 1)[1]
    transfers = transfers.split("hot-line waits", 1)[0]
    rows = transfers.strip().splitlines()[3:]
    assert rows
    assert not any(f" {name} " in row for row in rows for name in ("l1_hit", "l2_hit", "l3_hit"))
    assert any("hitm" in row for row in rows)
    every = pd.read_csv(tmp_path / "cmp" / "compare_lines.csv")
    assert {"l1_hit", "wait_ns"} <= set(every["class"])  # the CSV keeps every class


def test_the_report_opens_with_the_tps_and_ends_with_versions(
        two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = two_runs
    assert main(["-q", "report", str(a)]) == 0
    page = (a / "report.html").read_text(encoding="utf-8")
    headings = re.findall(r"<h2>([^<(]+)", page)
    assert headings[0].strip() == "TPS"
    assert headings[-2:] == ["Run", "Resolved configuration"]
    tps = page.split("<h2>TPS</h2>", 1)[1].split("<h2>", 1)[0]
    assert "<th class=\"num\">pre14</th>" in tps
    assert f"{pd.read_csv(a / 'curve.csv')['tps'].iloc[0]:,.0f}" in tps
    curve = page.split("<h2>Curve</h2>", 1)[1].split("<h2>", 1)[0]
    assert '<div class="wide">' in curve
    assert ">machine</th>" not in curve
    assert ">seed</th>" not in curve  # not the derived 19-digit seed
    assert ">workload</th>" not in curve
    assert ">idle_<wbr>clients</th>" in curve
    assert ">tps</th>" in curve


def test_a_window_shorter_than_one_transaction_names_a_readable_bound() -> None:
    """A bound below 1 ms reads as two significant digits, not 0.0 ms."""
    assert estimate._ms(131.6) == "131.6"
    assert estimate._ms(0.0316) == "0.032"


def test_plot_redraws_the_default_runs_own_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The default experiment (``measurements: machine``) shrunk to one point, then ``snapsim plot
    DIR``: the overlay resolves to the machine's dataset as ``snapsim run`` resolved it."""
    out = tmp_path / "snapsim-out"
    assert main(["-q", "run", "--clients", "1", "--idle-clients", "0", "--algorithms", "post14",
                 "--duration-ms", "1", "--warmup-ms", "1", "--jobs", "1", "--no-progress",
                 "--out", str(out)]) == 0
    assert "measurements: machine" in (out / "config.resolved.yaml").read_text(encoding="utf-8")
    (out / "tps.png").unlink()
    capsys.readouterr()
    assert main(["plot", str(out)]) == 0
    assert (out / "tps.png").stat().st_size > 0
    assert "error" not in capsys.readouterr().err


def test_an_interrupt_before_any_point_does_not_count_another_runs_points(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the machine is still being checked: the points in ``--out`` are another
    run's, and the same command would not resume them."""
    from simulator.cli import run as run_cli

    out = tmp_path / "good"
    assert main(["-q", "run", "tiny", "--clients", "1", "--idle-clients", "0", "--jobs", "1",
                 "--out", str(out)]) == 0
    capsys.readouterr()

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run_cli, "check_estimate", interrupted)
    assert main(["run", "tiny", "--clients", "4", "--out", str(out)]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["snapsim: interrupted by SIGINT: stopped before any point ran (nothing to "
                   "resume)"]


def test_an_interrupt_mid_run_counts_this_runs_points(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from simulator.cli import run as run_cli

    out = tmp_path / "out"
    base = ["-q", "run", "tiny", "--idle-clients", "0", "--algorithms", "post14", "--jobs", "1",
            "--no-progress", "--out", str(out)]
    assert main([*base, "--clients", "1,4"]) == 0
    capsys.readouterr()

    def interrupted(record: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run_cli, "_point_detail", interrupted)
    assert main([*base, "--clients", "1,4,8,16", "--extend"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"snapsim: interrupted by SIGINT: 3 of this run's 4 point(s) stored in "
                       f"{out / 'points'}; run the same command again to resume")


@pytest.fixture
def huge_client_manifest(tmp_path: Path) -> Path:
    """The shipped manifest with one row of 100,000,000 active clients (newcomer-4 N31)."""
    import shutil

    copy = tmp_path / "measurements"
    shutil.copytree(configs_dir() / "measurements", copy)
    table = copy / "gold5215_idle.csv"
    table.write_text(table.read_text(encoding="utf-8").replace("\n100,1,", "\n100,100000000,", 1),
                     encoding="utf-8")
    return copy / "manifest.yaml"


def test_check_config_of_a_manifest_refuses_a_point_too_large_for_memory(
        huge_client_manifest: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(estimate, "available_memory", lambda: (16e9, "MemAvailable"))
    assert main(["check-config", str(huge_client_manifest)]) == 2
    line = error_line(capsys)
    assert line.startswith(f"snapsim: error: {huge_client_manifest}: point ")
    assert "clients=100000000 idle_clients=100 needs about" in line
    assert "more than the 16.0 GB available (MemAvailable)" in line


def test_validate_refuses_a_point_too_large_for_memory_before_any_work(
        huge_client_manifest: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from simulator.cli import validate as validate_cli
    from simulator.tools import validate as validate_tools

    def nothing_runs(*args: object, **kwargs: object) -> None:
        raise AssertionError("simulated before the memory check")

    monkeypatch.setattr(estimate, "available_memory", lambda: (16e9, "MemAvailable"))
    monkeypatch.setattr(validate_tools, "run_tasks", nothing_runs)
    monkeypatch.setattr(validate_tools, "single_client_work_scale", nothing_runs)
    monkeypatch.setattr(validate_cli, "prepare_kernel", nothing_runs)
    out = tmp_path / "validation"
    assert main(["validate", "--manifest", str(huge_client_manifest), "--dataset",
                 "gold5215_idle", "--jobs", "2", "--out", str(out)]) == 2
    line = error_line(capsys)
    assert "point pre14 clients=100000000 idle_clients=100 needs about" in line
    assert " x 2 workers = " in line
    assert line.endswith("lower clients or idle_clients, or force the run (--force, force=True)")
    assert not out.exists()
    # the library refuses it too (calibrate's evaluations go through it)
    with pytest.raises(ConfigError, match="clients=100000000 idle_clients=100 needs about"):
        validate_tools.validate(load_manifest(huge_client_manifest), datasets=["gold5215_idle"],
                                jobs=1)


@pytest.mark.parametrize("name", ["mix_key", "seeds"])
def test_run_names_the_experiment_file_in_its_errors_as_check_config_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """newcomer-4 §3 item 8: `options.mix.tpcc: unknown key` and `seeds: ...` lacked the file."""
    path = tmp_path / f"{name}.yaml"
    path.write_text({"mix_key": "extends: tiny\nworkload: mix\noptions: {mix: {tpcc: 1}}\n",
                     "seeds": "extends: tiny\nseeds: [a]\n"}[name], encoding="utf-8")
    lines = []
    for command in (["check-config", str(path)], ["run", str(path), "--out",
                                                   str(tmp_path / "out")]):
        assert main(command) == 2
        lines.append(error_line(capsys))
    assert lines[0] == lines[1]
    assert lines[1].startswith(f"snapsim: error: {path}: ")
    assert main(["run", "tiny", "--machine", "nope", "--out", str(tmp_path / "out")]) == 2
    assert "tiny.yaml" not in error_line(capsys)  # a flag's value is the flag's, not the file's


def test_run_refuses_a_bad_out_before_preparing_the_kernel(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from simulator.cli import run as run_cli

    def no_kernel(config: object = None) -> None:
        raise AssertionError("the kernel was prepared before --out was checked")

    monkeypatch.setattr(run_cli, "prepare_kernel", no_kernel)
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("x", encoding="utf-8")
    assert main(["run", "tiny", "--out", str(not_a_directory)]) == 2
    assert error_line(capsys).endswith(f"--out: {not_a_directory} exists and is not a directory")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["run", "tiny", "--out", str(other)]) == 2
    assert "is not empty" in error_line(capsys)


def test_report_of_a_partial_directory_lists_only_what_it_shows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["-q", "run", "tiny", "--clients", "1", "--idle-clients", "0", "--algorithms",
                 "post14", "--out", str(out)]) == 0
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "curve.csv").write_bytes((out / "curve.csv").read_bytes())
    capsys.readouterr()
    assert main(["report", str(partial)]) == 0
    assert f"wrote {partial / 'report.html'}: TPS and curve in one file" in capsys.readouterr().err
    assert main(["report", str(out)]) == 0
    assert ("TPS, curve, plots, hot lines, configuration and run metadata in one file"
            in capsys.readouterr().err)


def test_the_readme_says_which_postgresql_stands_for_pre14_as_the_tool_does() -> None:
    from simulator.measure.installations import label_for
    from tests.paths import REPO_ROOT

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "12 or 13" not in readme
    assert "PostgreSQL 9.2 to 13\n(the `pre14` algorithm)" in readme
    assert label_for(9.2) == label_for(13) == "pre14" != label_for(14)
