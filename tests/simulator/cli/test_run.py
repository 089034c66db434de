"""``snapsim run`` and ``snapsim plot``: outputs, determinism, resume, refusal, failures, Dask."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

import simulator.study.experiment
import simulator.study.sweep
from simulator.cli import main
from simulator.study.workload_model import PointOutput, PointSpec, workload_model
from snapsim_models.plugin import PostgresModel

SMALL = """\
name: small
machine: gold5215-2s
algorithms: [pre14, post14]
clients: [1, 2]
idle_clients: [0, 50, 300]
duration_ms: 0.4
warmup_ms: 0.2
single_client_tps: null
measurements: null
"""
EXPECTED_FILES = ["curve.csv", "curve.parquet", "curve_summary.csv", "lines.csv", "timings.csv",
                  "usl.csv", "config.resolved.yaml", "experiment.yaml", "tps.png",
                  "transfers.png", "breakdown.png", "ratio.png"]


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL, encoding="utf-8")
    return path


def snapsim(*argv: str) -> int:
    return main(["run", "--no-progress", *argv])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uninterrupted run of SMALL with one job, shared by the comparisons."""
    base = tmp_path_factory.mktemp("clean")
    path = base / "small.yaml"
    path.write_text(SMALL, encoding="utf-8")
    assert snapsim(str(path), "--jobs", "1", "--out", str(base / "out")) == 0
    return base / "out"


def test_run_writes_every_output(clean_run: Path) -> None:
    for name in EXPECTED_FILES:
        assert (clean_run / name).is_file(), name
        assert (clean_run / name).stat().st_size > 0, name
    curve = pd.read_csv(clean_run / "curve.csv")
    assert len(curve) == 12
    for column in ("machine", "algorithm", "workload", "clients", "idle_clients", "seed", "tps",
                   "latency_p50_us", "latency_p99_us", "remote_hitm", "share_get_snapshot"):
        assert column in curve.columns
    assert "wall_s" not in curve.columns  # wall time lives in timings.csv
    assert (curve["tps"] > 0).all()
    lines = pd.read_csv(clean_run / "lines.csv")
    assert {"label", "fields_read", "fields_written", "algorithm"} <= set(lines.columns)
    assert len(list((clean_run / "points").glob("*.json"))) == 12
    curve["error"] = curve["error"].astype(object).where(curve["error"].notna(), "")
    pd.testing.assert_frame_equal(pd.read_parquet(clean_run / "curve.parquet"), curve,
                                  check_dtype=False)


def test_same_seed_gives_byte_identical_curves_with_one_or_two_jobs(
        clean_run: Path, small: Path, tmp_path: Path) -> None:
    assert snapsim(str(small), "--jobs", "2", "--out", str(tmp_path / "two")) == 0
    assert digest(tmp_path / "two" / "curve.csv") == digest(clean_run / "curve.csv")
    assert digest(tmp_path / "two" / "lines.csv") == digest(clean_run / "lines.csv")


def test_another_seed_changes_the_curve(clean_run: Path, small: Path, tmp_path: Path) -> None:
    assert snapsim(str(small), "--jobs", "1", "--seed", "7", "--algorithms", "pre14",
                   "--out", str(tmp_path / "s7")) == 0
    other = pd.read_csv(tmp_path / "s7" / "curve.csv")
    base = pd.read_csv(clean_run / "curve.csv")
    assert set(other["seed"]).isdisjoint(set(base["seed"]))


def _run_pre14_one_client(small: Path, out: Path) -> int:
    """Run the small experiment's pre14 points with one client into ``out``."""
    return snapsim(str(small), "--jobs", "1", "--algorithms", "pre14", "--clients", "1",
                   "--out", str(out))


def test_rerun_of_the_same_experiment_resumes_without_recomputing(
        small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    assert _run_pre14_one_client(small, out) == 0
    before = digest(out / "curve.csv")
    calls: list[str] = []
    monkeypatch.setattr(simulator.study.sweep, "execute",
                        lambda task: calls.append(task.key))  # must not be called
    capsys.readouterr()
    assert _run_pre14_one_client(small, out) == 0
    assert calls == []
    assert "resuming: 3 of 3 points already done" in capsys.readouterr().err
    assert digest(out / "curve.csv") == before


def test_points_stored_by_other_code_are_computed_again(
        small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The same settings run by another version of the model's code (its hash differs) must
    # not resume the stored points: their results came from that code.
    out = tmp_path / "out"
    assert _run_pre14_one_client(small, out) == 0
    before = digest(out / "curve.csv")
    monkeypatch.setattr(simulator.study.experiment, "code_hash", lambda model: "other code")
    capsys.readouterr()
    assert _run_pre14_one_client(small, out) == 0
    err = capsys.readouterr().err
    assert "already done" not in err
    assert "from another experiment" in err
    assert digest(out / "curve.csv") == before  # computed again, the same result


def test_a_killed_sweep_resumes_and_ends_equal_to_a_clean_run(
        clean_run: Path, small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "simulator", "run", str(small), "--jobs", "1", "--no-progress",
         "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list((out / "points").glob("*.json"))) < 3:
        assert process.poll() is None, "the sweep finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    stored = len(list((out / "points").glob("*.json")))
    assert 3 <= stored < 12
    assert not (out / "curve.csv").exists()
    capsys.readouterr()
    assert snapsim(str(small), "--jobs", "1", "--out", str(out)) == 0
    assert f"resuming: {stored} of 12 points already done" in capsys.readouterr().err
    assert digest(out / "curve.csv") == digest(clean_run / "curve.csv")


def test_non_empty_directory_of_another_experiment_is_refused(
        clean_run: Path, small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert snapsim(str(small), "--jobs", "1", "--algorithms", "pre14", "--clients", "1",
                   "--out", str(out)) == 0
    before = {p.name: digest(p) for p in out.iterdir() if p.is_file()}
    capsys.readouterr()
    assert snapsim(str(small), "--jobs", "1", "--clients", "2", "--out", str(out)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--overwrite" in err[0]
    assert {p.name: digest(p) for p in out.iterdir() if p.is_file()} == before
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    assert snapsim(str(small), "--jobs", "1", "--algorithms", "pre14", "--clients", "2",
                   "--out", str(out), "--overwrite") == 0
    assert set(pd.read_csv(out / "curve.csv")["clients"]) == {2}
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"  # not ours: kept


def test_extend_adds_seeds_to_a_run_and_computes_only_the_new_points(
        small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        computed_points: list[str]) -> None:
    out = tmp_path / "out"
    base = ["--jobs", "1", "--algorithms", "pre14", "--clients", "1", "--out", str(out)]
    assert snapsim(str(small), *base) == 0
    first = pd.read_csv(out / "curve.csv")
    capsys.readouterr()
    more_seeds = [*base, "--set", "seeds=[0, 1]"]
    assert snapsim(str(small), *more_seeds) == 2  # refused without --extend; nothing touched
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "same settings with another grid" in err[0]
    assert "--extend" in err[0]
    pd.testing.assert_frame_equal(pd.read_csv(out / "curve.csv"), first)
    computed = computed_points
    computed.clear()  # the runs above
    assert snapsim(str(small), *more_seeds, "--extend") == 0
    assert sorted(computed) == ["pre14-c1-i0-r1", "pre14-c1-i300-r1", "pre14-c1-i50-r1"]
    assert "resuming: 3 of 6 points already done" in capsys.readouterr().err
    curve = pd.read_csv(out / "curve.csv")
    assert sorted(set(curve["root_seed"])) == [0, 1]
    seed_0 = curve[curve["root_seed"] == 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(seed_0, first)
    assert len(pd.read_csv(out / "curve_summary.csv")) == 3
    capsys.readouterr()
    computed.clear()
    overlay = [*more_seeds, "--set", "measurements=gold5215_idle", "--extend"]
    assert snapsim(str(small), *overlay) == 0  # another overlay reuses every point
    assert computed == []
    overlaid = pd.read_csv(out / "curve.csv")
    assert overlaid["measured_tps"].notna().any()
    pd.testing.assert_frame_equal(overlaid.drop(columns=["measured_tps", "rel_error"]), curve)
    capsys.readouterr()
    longer = [*base, "--set", "duration_ms=0.6", "--extend"]
    assert snapsim(str(small), *longer) == 2  # other settings: --extend does not apply
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "duration_ms" in err[0]
    assert "--overwrite" in err[0]


def test_foreign_non_empty_directory_is_refused(small: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "data.txt").write_text("x", encoding="utf-8")
    assert snapsim(str(small), "--out", str(tmp_path / "out")) == 2
    assert "not snapsim results" in capsys.readouterr().err


BAD_INPUTS = [
    ("malformed YAML", "clients: [1, 2\n", [], "malformed YAML at line"),
    ("unknown key", "machine: gold5215-2s\nclientz: [1]\n", [], "clientz: unknown key"),
    ("wrong type", "duration_ms: fast\n", [], "duration_ms: expected a number"),
    ("unknown machine", "machine: gold9999\n", [], "shipped machine 'gold9999' (shipped: "),
    ("unknown algorithm", "algorithms: [pre15]\n", [], "choose from pg91, pre14"),
    ("empty client list", "clients: []\n", [], "clients: must be a non-empty list"),
    ("negative duration", "duration_ms: -1\n", [], "duration_ms: must be positive"),
    ("unknown nested key", "options: {costs: {clinet: 1 cycles}}\n", [],
     "options.costs.clinet: unknown key"),
    ("unknown idle kind", "idle_kind: sleepy\n", [], "choose from idle, mostly-idle"),
    ("negative idle clients", "idle_clients: [0, -5]\n", [], "idle_clients: must be integers >= 0"),
    ("bad flag list", "{}\n", ["--clients", "1,a"], "clients: must be integers >= 1, got 'a'"),
    ("empty --clients", "{}\n", ["--clients", ","],
     "clients: must be a non-empty list of integers"),
    ("empty list via --set", "{}\n", ["--set", "clients=[]"], "clients: must be a non-empty list"),
    ("wrong type via --set", "{}\n", ["--set", "duration_ms=fast"],
     "duration_ms: expected a number, got string 'fast'"),
    ("negative --duration-ms", "{}\n", ["--duration-ms", "-1"], "duration_ms: must be positive"),
    ("unknown --machine", "{}\n", ["--machine", "gold9999"], "(shipped: azure-f72s-v2, "),
    ("unknown --algorithms", "{}\n", ["--algorithms", "pre14,pre15"], "choose from pg91, pre14"),
    ("unknown nested --set key", "{}\n", ["--set", "options.costs.backend.select_onlyy=1"],
     "options.costs.backend.select_onlyy: unknown key (expected one of: select_only"),
    ("bad --set key", "{}\n", ["--set", "durationms=1"], "durationms: unknown key"),
    ("unknown --machine-set key", "{}\n", ["--machine-set", "scheduler.run_queue=global"],
     "scheduler.run_queue: unknown key"),
    ("bad --machine-set value", "{}\n", ["--machine-set", "scheduler.run_queues=glob"],
     "scheduler.run_queues: unknown value 'glob'"),
    ("--machine-set of the name", "{}\n", ["--machine-set", "name=other"],
     "name: a machine's name cannot be overridden"),
    ("machine_set not a list of edits", "machine_set: [{a: 1}]\n", [],
     "machine_set[0]: expected a string"),
    ("negative jobs", "{}\n", ["--jobs", "0"], "--jobs: must be at least 1, got 0"),
    ("layout: unknown struct", "{}\n", ["--set", "options.layout=[{pad: PGXAC, to: 64}]"],
     "options.layout[0].pad: no version's shared memory has a struct or array named 'PGXAC'"),
    ("layout: unknown field", "{}\n", ["--set", "options.layout=[{move: PGXACT.x, to: array}]"],
     "options.layout[0].move: PGXACT has no field 'x'"),
    ("layout: overlap", "{}\n",
     ["--set", "options.layout=[{reorder: PGXACT, fields: [nxids, xid]}]"],
     "options.layout[0].fields: fields xid and xmin of PGXACT overlap after the edit"),
    ("layout: pad below the struct", "{}\n", ["--set", "options.layout=[{pad: PGXACT, to: 8}]"],
     "options.layout[0].to: 8 B is smaller than PGXACT's element (12 B)"),
    ("layout: zero pad", "{}\n", ["--set", "options.layout=[{pad: PGXACT, to: 0}]"],
     "options.layout[0].to: must be a positive number of bytes"),
    ("layout: alignment", "{}\n", ["--set", "options.layout=[{align: PGXACT, to: 48}]"],
     "options.layout[0].to: must be a power of two"),
    ("layout: unknown edit", "{}\n", ["--set", "options.layout=[{split: PGXACT, to: 2}]"],
     "options.layout[0]: expected exactly one edit kind of move, pad, align, reorder"),
    ("layout: fits no algorithm run", "{}\n",
     ["--algorithms", "pre14", "--set", "options.layout=[{move: PGPROC.xmin, to: own_line}]"],
     "options.layout[0].move: changes none of the experiment's algorithms (pre14); it changes "
     "pg91, pgxact_split, post14"),
]


@pytest.mark.parametrize(("case", "text", "flags", "message"), BAD_INPUTS,
                         ids=[case[0] for case in BAD_INPUTS])
def test_bad_input_exits_2_with_one_line_and_keeps_earlier_results(
        clean_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str,
        text: str, flags: list[str], message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    before = {p.name: digest(p) for p in clean_run.iterdir() if p.is_file()}
    capsys.readouterr()
    assert snapsim(str(path), *flags, "--out", str(clean_run)) == 2, case
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("snapsim: error: ")
    assert message in err[0]
    assert {p.name: digest(p) for p in clean_run.iterdir() if p.is_file()} == before


def test_unwritable_output_directory_exits_2_and_keeps_earlier_results(
        clean_run: Path, small: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = {p.name: digest(p) for p in clean_run.iterdir() if p.is_file()}
    capsys.readouterr()
    assert snapsim(str(small), "--out", str(clean_run / "curve.csv" / "out")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("snapsim: error: --out: cannot write to")
    assert {p.name: digest(p) for p in clean_run.iterdir() if p.is_file()} == before


def test_unwritable_output_directory_exits_2(small: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    assert snapsim(str(small), "--out", str(blocker / "out")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--out: cannot write to" in err[0]
    assert snapsim(str(small), "--out", str(blocker)) == 2
    assert "not a directory" in capsys.readouterr().err


class _FailingModel(PostgresModel):
    """The shipped model, except that one point raises."""

    def run_point(self, spec: PointSpec) -> PointOutput:
        if spec.algorithm == "post14" and spec.idle_clients == 50:
            raise RuntimeError("injected failure")
        return super().run_point(spec)


def test_a_failing_point_is_recorded_and_the_run_exits_1_after_writing_everything(
        small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simulator.study.sweep, "workload_model",
                        lambda name: _FailingModel())
    out = tmp_path / "out"
    assert snapsim(str(small), "--jobs", "1", "--clients", "1", "--out", str(out)) == 1
    assert "failed: post14 clients=1 idle_clients=50: RuntimeError: injected failure" in \
        capsys.readouterr().err
    curve = pd.read_csv(out / "curve.csv", keep_default_na=False)
    failed = curve[curve["error"] != ""]
    assert list(failed["algorithm"]) == ["post14"]
    assert list(failed["idle_clients"]) == [50]
    assert (curve[curve["error"] == ""]["tps"].astype(float) > 0).all()
    summary = pd.read_csv(out / "curve_summary.csv")
    lost = (summary["algorithm"] == "post14") & (summary["idle_clients"] == 50)
    assert list(summary[lost][["n_seeds", "n_failed"]].itertuples(index=False)) == [(0, 1)]
    assert summary[lost]["tps_mean"].isna().all()
    assert (summary[~lost]["n_seeds"] == 1).all()
    assert (summary[~lost]["tps_mean"] > 0).all()
    for name in ("lines.csv", "tps.png", "breakdown.png", "config.resolved.yaml"):
        assert (out / name).exists()
    monkeypatch.setattr(simulator.study.sweep, "workload_model", workload_model)
    capsys.readouterr()
    assert snapsim(str(small), "--jobs", "1", "--clients", "1", "--out", str(out)) == 0
    assert "resuming: 5 of 6 points already done" in capsys.readouterr().err


def test_plot_redraws_from_the_directory(clean_run: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("curve.csv", "config.resolved.yaml"):
        (copy / name).write_bytes((clean_run / name).read_bytes())
    assert main(["plot", str(copy)]) == 0
    for name in ("tps.png", "transfers.png", "breakdown.png", "ratio.png"):
        assert (copy / name).stat().st_size > 0
    assert main(["plot", str(tmp_path / "nothing")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_default_experiment_runs_with_its_measurement_overlay(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert snapsim("--clients", "1", "--idle-clients", "0,1000", "--duration-ms", "0.5",
                   "--warmup-ms", "0.2", "--jobs", "1", "--out", str(out)) == 0
    curve = pd.read_csv(out / "curve.csv")
    assert list(curve["measured_tps"]) == [33599, 29377, 33406, 33434]
    assert "rel_error" in curve.columns
    summary = pd.read_csv(out / "curve_summary.csv")
    assert list(summary["measured_tps"]) == list(curve["measured_tps"])
    assert list(summary["rel_error_mean"]) == pytest.approx(list(curve["rel_error"]))
    assert "TPS" in capsys.readouterr().out


def test_machine_set_edits_the_machine_and_is_recorded(clean_run: Path, small: Path,
                                                       tmp_path: Path) -> None:
    out = tmp_path / "edited"
    flags = ["--machine-set", "scheduler.wakeup=0 us", "--machine-set", "idle.states=[]"]
    assert snapsim(str(small), *flags, "--jobs", "1", "--out", str(out)) == 0
    resolved = (out / "config.resolved.yaml").read_text(encoding="utf-8")
    assert "machine_set: [scheduler.wakeup=0 us, 'idle.states=[]']" in resolved
    edited = pd.read_csv(out / "curve.csv")
    shipped = pd.read_csv(clean_run / "curve.csv")
    assert (edited["tps"] > shipped["tps"]).all()  # no wake-up or idle-exit cost
    # the resolved file repeats the edited run
    again = tmp_path / "again"
    assert snapsim(str(out / "config.resolved.yaml"), "--jobs", "1", "--out", str(again)) == 0
    assert digest(again / "curve.csv") == digest(out / "curve.csv")
    # the same directory without the edits is another experiment
    assert snapsim(str(small), "--jobs", "1", "--out", str(out)) == 2


def test_single_client_tps_rescales_the_work(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert snapsim("tiny", "--clients", "1", "--idle-clients", "0", "--algorithms", "pre14",
                   "--single-client-tps", "25000", "--jobs", "1", "--out", str(out)) == 0
    curve = pd.read_csv(out / "curve.csv")
    assert curve["work_scale"].iloc[0] > 1.2
    config = (out / "config.resolved.yaml").read_text(encoding="utf-8")
    assert "work_scale" in config
    assert "single_client_tps: 25000" in config


def test_dask_local_cluster_gives_the_local_curve(clean_run: Path, small: Path,
                                                  tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        out = tmp_path / "dask"
        assert snapsim(str(small), "--scheduler", cluster.scheduler_address,
                       "--out", str(out)) == 0
    assert digest(out / "curve.csv") == digest(clean_run / "curve.csv")


def test_unreachable_scheduler_exits_2(small: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert snapsim(str(small), "--scheduler", "tcp://127.0.0.1:9", "--out",
                   str(tmp_path / "o")) == 2
    assert "--scheduler: cannot connect to the Dask scheduler" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing written before the cluster is reachable


@pytest.mark.parametrize(("duration_ms", "warmup_ms", "marked"), [("0.3", "0.5", True),
                                                                   ("5", "2", False)])
def test_the_tps_table_marks_points_whose_window_did_not_converge(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], duration_ms: str, warmup_ms: str,
        marked: bool) -> None:
    code = snapsim("tiny", "--machine", "threadripper-3990x", "--clients", "64",
                   "--idle-clients", "500", "--algorithms", "post14", "--jobs", "1",
                   "--duration-ms", duration_ms, "--warmup-ms", warmup_ms,
                   "--out", str(tmp_path / "out"))
    assert code == 0
    table = capsys.readouterr().out
    curve = pd.read_csv(tmp_path / "out" / "curve.csv")
    assert bool(curve["window_converged"].iloc[0]) is not marked
    assert curve["transactions_per_client"].iloc[0] == pytest.approx(
        curve["transactions"].iloc[0] / 64)
    assert (" *\n" in table) is marked
    assert ("* not precise enough to trust (1 point(s))" in table) is marked


def test_the_tps_table_gives_the_seeds_interval(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    experiment = tmp_path / "seeded.yaml"
    experiment.write_text("name: seeded\nextends: tiny\nalgorithms: [pre14]\nclients: [1]\n"
                          "idle_clients: [0, 100]\nseeds: [0, 1, 2]\n", encoding="utf-8")
    assert snapsim(str(experiment), "--jobs", "1", "--out", str(tmp_path / "out")) == 0
    table = capsys.readouterr().out
    summary = pd.read_csv(tmp_path / "out" / "curve_summary.csv")
    assert "TPS (mean over the seeds ± the half-width of its 95 % interval)" in table
    for mean, high in zip(summary["tps_mean"], summary["tps_high"], strict=True):
        half = high - mean  # the summary's interval (a rounding of it may differ by one)
        assert any(f"{mean:,.0f} ±{round(half) + d:,}" in table for d in (-1, 0, 1))
