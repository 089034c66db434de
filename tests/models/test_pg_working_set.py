"""Private working sets in whole runs: refills on, and off reproducing the baseline."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from simulator.cli import main
from simulator.config.machine_file import load_machine
from snapsim_models.costs import ProcessWorkingSet, WorkingSetCosts
from tests.models.points import default_options, simulate
from tests.paths import BASELINES_DIR

GOLD = load_machine("gold5215-2s")
TINY = BASELINES_DIR / "tiny"
TINY_OFF = BASELINES_DIR / "tiny-no-working-sets"


def test_off_reproduces_its_baseline_exactly(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``--set options.working_sets=false`` gives the off baseline's curve byte for byte (the
    tiny experiment with ``working_sets: false`` in its file): no task gets a working set, no
    refill is charged."""
    out = tmp_path / "off"
    assert main(["run", str(TINY / "experiment.yaml"), "--set", "options.working_sets=false",
                 "--out", str(out), "--jobs", "1", "--no-progress", "-q"]) == 0
    capsys.readouterr()
    before = pd.read_csv(TINY_OFF / "curve.csv")
    after = pd.read_csv(out / "curve.csv")
    assert (after["refill_us_per_txn"] == 0.0).all()
    columns = [column for column in before.columns if column != "wall_s"]
    pd.testing.assert_frame_equal(after[columns], before[columns], check_exact=True)


def test_mostly_idle_backends_refill_their_working_sets() -> None:
    settings: dict[str, object] = {"idle_clients": 200, "idle_kind": "mostly-idle",
                                   "duration_ns": 10e6, "warmup_ns": 5e6}
    on = simulate(GOLD, "post14", working_sets=True, **settings).row
    # 200 backends wake every 100 ms (~2,000 per second, for ~33,000 transactions per
    # second), each with its 64 KiB of private data off the chip (1,024 lines from DRAM at
    # 81.2 ns / 4: 21 us) and postgres's code mostly on it.
    refill = on["refill_us_per_txn"]
    assert isinstance(refill, float)
    assert 0.5 < refill < 5.0
    assert simulate(GOLD, "post14", working_sets=False,
                    **settings).row["refill_us_per_txn"] == 0.0
    none = dataclasses.replace(default_options().costs, working_set=WorkingSetCosts(
        ProcessWorkingSet(0, 0), ProcessWorkingSet(0, 0)))
    assert simulate(GOLD, "post14", working_sets=True, costs=none,
                    **settings).row["refill_us_per_txn"] == 0.0
