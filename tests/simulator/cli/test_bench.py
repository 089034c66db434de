"""``snapsim bench`` prints its figures (their values are never asserted: no timed tests)."""

from __future__ import annotations

import json
import math

import pytest

from simulator.cli import main
from simulator.tools.bench import Settings

KERNEL = {"kernel_hits_lines_per_s", "kernel_mixed_lines_per_s", "reference_lines_per_s",
          "reference_mixed_lines_per_s", "simpy_event_us", "sequence_call_us", "pollute_call_us"}
END_TO_END = {"slowdown_pre14_n10000", "cpu_slowdown_pre14_n10000", "slowdown_post14_n10000",
              "cpu_slowdown_post14_n10000", "line_accesses_per_s", "events_per_s",
              "slowdown_pre14_n15000_128t", "cpu_slowdown_pre14_n15000_128t", "peak_rss_mb",
              "sweep_speedup_2_workers"}
TINY = ["--scale", "0.01", "--duration-ms", "0.5", "--n15000-duration-ms", "0.2",
        "--sweep-duration-ms", "0.5"]


def test_bench_json_has_every_default_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--json", "--repeats", "1", *TINY]) == 0
    captured = capsys.readouterr()
    figures = json.loads(captured.out)
    conditions = figures.pop("conditions")
    assert set(figures) == KERNEL | END_TO_END | {"scaling_exponent_pre14"}
    # The exponent of a tiny run can have any sign; every other figure is a positive rate.
    assert math.isfinite(figures.pop("scaling_exponent_pre14"))
    assert all(value > 0 for value in figures.values())
    assert conditions["repeats"] == 1
    assert conditions["scale"] == 0.01
    assert "validate" not in conditions["groups"]
    assert conditions["cpu_share"] > 0
    assert conditions["sweep_cpus_2_workers"] > 0
    # One progress line per figure on stderr.
    assert all(f"bench: {name} = " in captured.err for name in figures)


def test_bench_skips_groups(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--json", "--repeats", "1", *TINY,
                 "--skip", "kernel,n15000,sweep,scaling"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert set(figures) == {"slowdown_pre14_n10000", "cpu_slowdown_pre14_n10000",
                            "slowdown_post14_n10000", "cpu_slowdown_post14_n10000",
                            "line_accesses_per_s", "events_per_s", "conditions"}


@pytest.mark.parametrize(("argv", "key"), [
    (["--repeats", "0"], "repeats"),
    (["--duration-ms", "0"], "--duration-ms"),
    (["--scale", "-1"], "--scale"),
    (["--skip", "kernel,nope"], "--skip"),
    (["--set", "options.working_sets=maybe"], "options.working_sets"),
    (["--set", "options.bogus=1"], "options.bogus"),
])
def test_bench_rejects_bad_options(argv: list[str], key: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", *argv]) == 2
    assert key in capsys.readouterr().err


def test_set_overrides_the_experiment_of_every_end_to_end_point(
        capsys: pytest.CaptureFixture[str]) -> None:
    # the 15000-client point runs in a fresh process, which gets the overrides too
    assert main(["bench", "--json", "--repeats", "1", *TINY, "--skip", "kernel,sweep,scaling",
                 "--set", "options.working_sets=false"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["conditions"]["set"] == ["options.working_sets=false"]
    assert figures["slowdown_pre14_n15000_128t"] > 0
    assert Settings(overrides=("options.working_sets=false",)).base().options[
        "working_sets"] is False
    assert "working_sets" not in Settings().base().options  # the file's own: none


def test_a_failing_group_is_reported_and_the_others_still_measured(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import simulator.tools.bench as bench

    def broken(settings: object, report: object) -> dict[str, float]:
        raise RuntimeError("benchmark point failed: NoTransactionError: no transaction")

    monkeypatch.setattr(bench, "n15000_figures", broken)
    assert main(["bench", "--json", "--repeats", "1", *TINY,
                 "--skip", "kernel,sweep,scaling"]) == 1
    captured = capsys.readouterr()
    figures = json.loads(captured.out)
    assert "slowdown_pre14_n10000" in figures  # the e2e group still ran
    assert "slowdown_pre14_n15000_128t" not in figures
    assert figures["conditions"]["failed_groups"] == {
        "n15000": "RuntimeError: benchmark point failed: NoTransactionError: no transaction"}
    assert "bench: group n15000 failed: RuntimeError" in captured.err


def test_full_times_the_default_experiment_in_a_fresh_process(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    commands: list[list[str]] = []

    def fake_run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    assert main(["bench", "--json", "--full", "--repeats", "2", *TINY,
                 "--skip", "kernel,e2e,n15000,sweep,scaling"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert set(figures) == {"validate_wall_s", "default_experiment_wall_s", "conditions"}
    runs = [command for command in commands if "run" in command]
    assert len(runs) == 2  # one fresh process per repeat
    assert all(command[1:3] == ["-m", "simulator"] and "--out" in command for command in runs)
    assert figures["conditions"]["groups"] == ["validate", "default"]
