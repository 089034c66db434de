"""docs/predictions.py: the table it writes and its argument checks (the runs themselves are
``snapsim run`` of the shipped predict-* experiments, tested elsewhere)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.paths import REPO_ROOT, load_docs_script

ROOT = REPO_ROOT


def test_tps_table_has_one_row_per_point_and_the_post14_ratio() -> None:
    script = load_docs_script("predictions")
    curve = pd.DataFrame({
        "algorithm": ["pre14", "post14", "pre14", "post14"],
        "clients": [1, 1, 48, 48], "idle_clients": [0, 0, 0, 0],
        "tps": [30000.0, 33000.0, 400000.0, 1000000.0]})
    lines, flagged = script._tps_table(curve, ["clients"])
    assert flagged == 0
    assert lines[0] == "| clients | pre14 | post14 | post14 / pre14 |"
    assert lines[2] == "| 1 | 30,000 | 33,000 | 1.10 |"
    assert lines[3] == "| 48 | 400,000 | 1,000,000 | 2.50 |"


def test_tps_table_of_the_whatif_study_has_the_lockfree_ratio() -> None:
    script = load_docs_script("predictions")
    curve = pd.DataFrame({
        "algorithm": ["post14", "post14_lockfree"], "clients": [48, 48],
        "tps": [1000000.0, 1250000.0]})
    lines, _ = script._tps_table(curve, ["clients"])
    assert lines[0] == "| clients | post14 | post14_lockfree | post14_lockfree / post14 |"
    assert lines[2] == "| 48 | 1,000,000 | 1,250,000 | 1.25 |"


def test_tps_table_gives_intervals_over_seeds_and_marks_unconverged_cells() -> None:
    script = load_docs_script("predictions")
    curve = pd.DataFrame({
        "algorithm": ["pre14", "pre14", "pre14", "post14", "post14", "post14"],
        "clients": [48] * 6, "idle_clients": [1000] * 6,
        "tps": [1000.0, 1200.0, 1100.0, 2000.0, 2200.0, 2100.0],
        "window_converged": [True, True, True, True, False, True]})
    lines, flagged = script._tps_table(curve, ["clients", "idle_clients"])
    assert lines[0] == "| clients | idle clients | pre14 | post14 | post14 / pre14 |"
    # t(2) * 100 / sqrt(3) = 248; the ratio's delta-method interval around 2100 / 1100
    assert lines[2] == "| 48 | 1,000 | 1,100 ± 248 | 2,100 ± 248 * | 1.91 [1.58, 2.30] |"
    assert flagged == 1


def test_unknown_machine_or_study_exits_2_before_running(
        capsys: pytest.CaptureFixture[str]) -> None:
    script = load_docs_script("predictions")
    assert script.main(["--machines", "no-such-machine"]) == 2
    assert "no-such-machine" in capsys.readouterr().err
    assert script.main(["--studies", "nope"]) == 2


def test_a_failing_study_does_not_stop_the_others(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    script = load_docs_script("predictions")
    calls: list[tuple[str, str]] = []

    def run_study(machine: str, study: str, scratch: Path, jobs: int | None) -> int:
        calls.append((machine, study))
        return 2 if len(calls) == 1 else 0

    monkeypatch.setattr(script, "run_study", run_study)
    monkeypatch.setattr(script, "write_markdown", lambda: tmp_path / "predictions.md")
    code = script.main(["--machines", "gold5215-2s,graviton3", "--studies", "idle,active"])
    assert code == 2
    assert calls == [("gold5215-2s", "idle"), ("gold5215-2s", "active"),
                     ("graviton3", "idle"), ("graviton3", "active")]


def test_shipped_prediction_experiments_are_valid() -> None:
    from simulator.cli import main

    for name in ("predict-idle", "predict-active", "predict-many", "predict-whatif"):
        assert main(["check-config", str(ROOT / "configs" / "experiments" / f"{name}.yaml")]) == 0


def _study(rows: list[tuple[str, int, int, float]]) -> pd.DataFrame:
    curve = pd.DataFrame(rows, columns=["algorithm", "clients", "idle_clients", "tps"])
    curve["tps_ci_rel"] = 0.01
    curve["max_duration_reached"] = False
    return curve


def test_the_findings_are_computed_from_the_curves() -> None:
    """Hand-made curves of three machines: the spreads name their machines, the drift names the
    one far out, the peak and the precision come from the rows."""
    script = load_docs_script("predictions")
    curves = {}
    for machine, gain, drift in (("a", 1.5, 0.0), ("b", 2.0, 0.02), ("c", 3.0, 0.2)):
        idle = _study([(algorithm, clients, idle, tps)
                       for clients in (1, 48)
                       for algorithm, idle, tps in (("pre14", 0, 100.0), ("post14", 0, 100.0),
                                                    ("pre14", 10_000, 100.0 / gain),
                                                    ("post14", 10_000, 100.0 * (1 + drift)))])
        active = _study([("pre14", 100, 0, 1e6), ("post14", 100, 0, gain * 1e6),
                         ("pre14", 1000, 0, 1e6), ("post14", 1000, 0, gain * 5e5)])
        curves[machine] = {"idle": idle, "active": active}
    curves["c"]["active"].loc[3, "max_duration_reached"] = True
    text = "\n".join(script.findings(curves))
    assert "post14 runs 1.50x (`a`) to 3.60x (`c`) pre14 (3 machines); post14 itself stays " \
           "within 2.0 % of its 0-idle throughput on every machine but `c`, where it moves by " \
           "20.0 %" in text
    assert "**100 active clients, no idle connection**: post14 runs 1.50x (`a`) to 3.00x (`c`)" \
        in text
    assert "`b` 2.00M at 100 (0.50 of it at 1,000)" in text
    assert "**Precision**: 36 points; 1 reached their longest window" in text
