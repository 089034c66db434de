"""``snapsim ccbench --contention``: the sweep as a table, as CSV, as a plot, and bad flags."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from simulator.cli import main
from simulator.tools.ccbench import CONTENTION_COLUMNS
from simulator.tools.contention import OPERATIONS

QUICK = ["--duration-us", "2", "--warmup-us", "1"]


def test_contention_prints_one_row_per_operation_placement_and_count(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ccbench", "gold5215-2s", "--contention", "--threads", "1,2,4", *QUICK]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith("gold5215-2s: atomics on one line")
    rows = [line.split() for line in lines[3:] if line.strip()]
    # core holds 2 threads, socket and cross hold 4: (2 + 3 + 3) counts x 7 operations.
    assert len(rows) == 8 * len(OPERATIONS) == 56
    fetch_add = {(row[1], int(row[2])): float(row[3]) for row in rows if row[0] == "fetch-add"}
    assert fetch_add[("socket", 1)] == pytest.approx(1e3 / 7.0, rel=0.01)  # 1 / atomic_local
    assert "placement core holds at most 2 threads" in captured.err


def test_contention_csv_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plot = tmp_path / "contention.png"
    assert main(["ccbench", "threadripper-3990x", "--contention", "--ops", "load-cas",
                 "--placements", "socket,cross", "--threads", "2,16", "--csv",
                 "--plot", str(plot), *QUICK]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert tuple(table.columns) == CONTENTION_COLUMNS
    assert list(zip(table["placement"], table["threads"], strict=True)) == [
        ("socket", 2), ("cross", 2), ("cross", 16)]
    assert set(table["operation"]) == {"load-cas"}
    assert table.loc[table["placement"] == "cross", "domains_used"].tolist() == [2, 16]
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_machine_set_selects_the_line_service_rule(capsys: pytest.CaptureFixture[str]) -> None:
    rates = {}
    for rule in ("fifo", "home"):
        assert main(["ccbench", "platinum8168-2s-vm", "--contention", "--ops", "fetch-add",
                     "--placements", "cross", "--threads", "16", "--csv", "--machine-set",
                     f"line_service.rule={rule}", "--duration-us", "10", "--warmup-us",
                     "2"]) == 0
        rates[rule] = float(pd.read_csv(io.StringIO(capsys.readouterr().out))["ops_per_s"][0])
    assert rates["home"] > 3 * rates["fifo"]
    assert main(["ccbench", "gold5215-2s", "--machine-set", "line_service.rule=lifo"]) == 2
    assert "line_service.rule" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [
    ["--contention", "--ops", "swap"],
    ["--contention", "--placements", "numa"],
    ["--contention", "--threads", "two"],
    ["--contention", "--threads", "0"],
    ["--contention", "--threads", "41"],
    ["--contention", "--duration-us", "0"],
    ["--contention", "--warmup-us", "-1"],
    ["--contention", "--threads", "4", "--placements", "core"],
    ["--contention", "--plot", "/no/such/dir/x.png"],
    ["--threads", "2"],
    ["--csv"],
    ["--seeds", "2"],
    ["--sosp13", "--contention"],
    ["--sosp13"],  # no SOSP'13 rows for the Gold 5215
])
def test_bad_contention_flags_are_one_line_exit_2(
        flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ccbench", "gold5215-2s", *flags]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1


def test_sosp13_operations_and_rows_from_the_command_line(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["ccbench", "opteron-6172-4s", "--contention", "--ops", "store-shared,mcs-lock",
                 "--placements", "fill", "--threads", "2", "--csv", *QUICK]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert table["operation"].tolist() == ["store-shared", "mcs-lock"]
    assert table["latency_ns"].iloc[0] == pytest.approx(246 / 2.1)  # Table 2, same die
    from simulator.cli import ccbench as command
    from simulator.tools.sosp13 import SOSP13_PUBLISHED, sosp13_comparison

    few = [row for row in SOSP13_PUBLISHED["westmere-ex-80c"] if row.operation == "store-shared"]
    monkeypatch.setattr(command, "sosp13_comparison",
                        lambda config, seeds: sosp13_comparison(config, seeds, few))
    assert main(["ccbench", "westmere-ex-80c", "--sosp13", "--seeds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("westmere-ex-80c: SOSP'13 rows, line service rule home")
    assert [line.split()[:2] for line in lines[3:]] == [
        ["store-shared", "same-die"], ["store-shared", "one-hop"], ["store-shared", "two-hops"],
        ["store-shared", "all"]]
    assert main(["ccbench", "westmere-ex-80c", "--sosp13", "--csv"]) == 0
    assert len(pd.read_csv(io.StringIO(capsys.readouterr().out))) == len(few)
