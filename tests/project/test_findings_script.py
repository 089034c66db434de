"""docs/findings.py: each finding's number from measured and predicted TPS, and its verdict."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.paths import load_docs_script

FINDINGS = load_docs_script("findings")


def synthetic() -> pd.DataFrame:
    """Every point the findings read: measured TPS as published shapes, predictions flat."""
    rows = []

    def add(dataset: str, series: str, clients: int, idle: int, measured: float,
            predicted: float) -> None:
        rows.append({"dataset": dataset, "series": series, "clients": clients,
                     "idle_clients": idle, "measured_tps": measured, "predicted_tps": predicted})

    for series in ("tps_pre14", "tps_post14"):
        for clients in (1, 48):
            add("gold5215_idle", series, clients, 0, 100.0, 100.0)
            add("gold5215_idle", series, clients, 10000,
                50.0 if clients == 1 else 35.0, 100.0)
        add("gold5215_idle", series, 1, 5000, 70.0, 100.0)
        add("gold5215_mostly_idle", series, 1, 5000, 35.0, 100.0)
    for clients in (100, 200, 500):
        add("platinum8168_master_vs_split", "tps_master", clients, 0, 1.0, 1.0)
        add("platinum8168_master_vs_split", "tps_pgxact_split", clients, 0, 2.0, 1.0)
    return pd.DataFrame(rows)


def test_measured_shapes_hold_and_flat_predictions_do_not() -> None:
    lines = FINDINGS.table(synthetic())
    assert len(lines) == 2 + len(FINDINGS.FINDINGS)
    cells = [line.split(" | ") for line in lines[2:]]
    measured = [row[3] for row in cells]
    assert measured == ["0.50", "0.50", "0.35", "0.35", "0.50", "0.50", "2.00"]
    # the synthetic post14 falls like pre14: its flatness findings fail on the measured side
    assert [row[4] for row in cells] == ["yes", "**no**", "yes", "**no**", "yes", "yes", "yes"]
    # flat predictions: pre14 does not fall, so every finding about a fall or a gap fails
    assert [row[6].rstrip(" |") for row in cells] == [
        "**no**", "yes", "**no**", "yes", "**no**", "**no**", "**no**"]


def test_missing_points_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "validation.csv"
    synthetic().query("dataset != 'platinum8168_master_vs_split'").to_csv(path, index=False)
    assert FINDINGS.main(["--validation", str(path)]) == 2
    assert "Platinum 8168" in capsys.readouterr().err
    assert FINDINGS.main(["--validation", str(tmp_path / "none.csv")]) == 2


def test_the_shipped_validation_table_has_every_point(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert FINDINGS.main([]) == 0
    assert capsys.readouterr().out.count("\n") == 2 + len(FINDINGS.FINDINGS)
