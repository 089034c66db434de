"""docs/whatif.py: the line counts it adds, its interval arithmetic, the page it writes from
synthetic curves (no simulation), its argument checks, and every study's runs as valid input."""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from tests.paths import REPO_ROOT

T_2 = 4.302652729911275
"""Student's t, two-sided 95 %, 2 degrees of freedom."""


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("whatif", REPO_ROOT / "docs" / "whatif.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["whatif"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


WHATIF = load_script()


def test_labels_name_their_regions() -> None:
    assert WHATIF.regions_of("PGXACT[5..10]") == {"PGXACT"}
    assert WHATIF.regions_of("PGXACT[3]+64") == {"PGXACT"}
    assert WHATIF.regions_of("PGXACT.xmin[0..15]") == {"PGXACT.xmin"}
    assert WHATIF.regions_of("ProcArrayStruct & pgprocnos[0..5]") == {"ProcArrayStruct",
                                                                      "pgprocnos"}
    assert WHATIF.regions_of("PROC_HDR+64") == {"PROC_HDR"}
    assert WHATIF.regions_of("ProcArrayLock") == {"ProcArrayLock"}


def test_line_counts_per_transaction_and_per_snapshot() -> None:
    point = {"machine": "m", "algorithm": "post14", "workload": "select-only", "clients": 2,
             "idle_clients": 0, "idle_kind": "idle"}
    curve = pd.DataFrame([{**point, "seed": 1, "transactions": 100, "full_snapshots": 0.5,
                           "reused_snapshots": 1.5, "copied_snapshots": 0.0},
                          {**point, "seed": 2, "transactions": 50, "full_snapshots": 2.0,
                           "reused_snapshots": 0.0, "copied_snapshots": 0.0}])
    lines = pd.DataFrame([
        {**point, "seed": 1, "label": "xids[0..15]", "loads": 300, "local_hitm": 4,
         "cross_domain_hitm": 0, "remote_hitm": 6},
        {**point, "seed": 1, "label": "xids[16..31]", "loads": 100, "local_hitm": 0,
         "cross_domain_hitm": 0, "remote_hitm": 10},
        {**point, "seed": 1, "label": "ProcArrayStruct & pgprocnos[0..5]", "loads": 999,
         "local_hitm": 50, "cross_domain_hitm": 0, "remote_hitm": 0},
        {**point, "seed": 2, "label": "VariableCache", "loads": 7, "local_hitm": 1,
         "cross_domain_hitm": 0, "remote_hitm": 0},
    ])
    counts = (WHATIF.LineCount("loads_per_snapshot", ("xids",), ("loads",), "snapshot"),
              WHATIF.LineCount("hitm_per_txn", ("xids", "pgprocnos"), WHATIF.HITM))
    result = WHATIF.add_line_counts(curve, lines, counts)
    # seed 1: 400 loads / (100 transactions x 2 snapshots); 70 HITMs / 100 transactions
    assert result["loads_per_snapshot"].tolist() == [2.0, 0.0]
    assert result["hitm_per_txn"].tolist() == [0.7, 0.0]  # seed 2 has no such line
    assert "loads_per_snapshot" not in curve.columns  # the input is left alone


def test_mean_interval_is_the_t_interval_of_the_mean() -> None:
    cell = WHATIF.mean_interval([1.0, 2.0, 3.0])
    assert cell.mean == 2.0
    assert cell.n == 3
    assert cell.half == pytest.approx(T_2 * 1.0 / math.sqrt(3))
    assert WHATIF.mean_interval([5.0, 5.0, 5.0]).half == 0.0
    single = WHATIF.mean_interval([7.0, float("nan")])
    assert (single.mean, single.n) == (7.0, 1)
    assert math.isnan(single.half)


def test_ratio_interval_by_the_delta_method() -> None:
    top = WHATIF.mean_interval([110.0, 120.0, 130.0])  # mean 120, s 10
    bottom = WHATIF.mean_interval([100.0, 100.0, 100.0])  # no spread
    ratio, low, high = WHATIF.ratio_interval(top, bottom)
    # only the top varies: se = (10 / 120) / sqrt(3), 2 degrees of freedom
    se = 10.0 / 120.0 / math.sqrt(3)
    assert ratio == pytest.approx(1.2)
    assert low == pytest.approx(1.2 * math.exp(-T_2 * se))
    assert high == pytest.approx(1.2 * math.exp(T_2 * se))
    assert low < 1.0 < high  # three seeds this far apart do not resolve +20 %
    both = WHATIF.ratio_interval(top, top)
    assert both[0] == pytest.approx(1.0)
    # two equal halves of the variance: Welch-Satterthwaite gives 4 degrees of freedom
    se_both = math.sqrt(2) * se
    assert both[2] == pytest.approx(math.exp(2.7764451051977987 * se_both))
    assert WHATIF.ratio_interval(bottom, bottom) == (1.0, 1.0, 1.0)
    lone = WHATIF.ratio_interval(WHATIF.mean_interval([2.0]), bottom)
    assert lone[0] == pytest.approx(0.02)
    assert math.isnan(lone[1])
    assert all(math.isnan(v) for v in WHATIF.ratio_interval(top, WHATIF.mean_interval([])))


def synthetic_lockfree(out: Path) -> None:
    """Three seeds of two algorithms at two points, one seed's window not converged."""
    rows = []
    for seed, (a, b, c, d) in enumerate([(100.0, 110.0, 1000.0, 990.0),
                                         (102.0, 112.0, 1010.0, 1000.0),
                                         (104.0, 114.0, 1020.0, 1010.0)]):
        for algorithm, clients, tps in (("post14", 1, a), ("post14_lockfree", 1, b),
                                        ("post14", 48, c), ("post14_lockfree", 48, d)):
            rows.append({"machine": "gold5215-2s", "algorithm": algorithm,
                         "workload": "select-only", "clients": clients, "idle_clients": 0,
                         "idle_kind": "idle", "seed": 10 * seed + clients, "root_seed": seed,
                         "tps": tps, "transactions": 1000, "window_converged":
                         not (algorithm == "post14" and clients == 48 and seed == 2),
                         "reused_snapshots": 2.0, "lock_wait_us": 0.5, "get_snapshot_us": 0.25,
                         "procarraylock_atomics_per_txn": 4.0,
                         "procarraylock_hitm_per_txn": 1.5, "duration_ms": 20.0,
                         "warmup_ms": 10.0, "wall_s": 30.0})
    pd.DataFrame(rows).to_csv(out / "lockfree-gold5215-2s-base.csv", index=False)


def test_the_page_from_synthetic_curves(tmp_path: Path) -> None:
    out = tmp_path / "whatif"
    out.mkdir()
    synthetic_lockfree(out)
    page = WHATIF.write_markdown(out, tmp_path / "whatif.md")
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# What-ifs\n\nGenerated by `python docs/whatif.py`")
    section = text.split("## 1. A lock-free reuse check", 1)[1].split("\n## 2.", 1)[0]
    assert "snapsim run whatif-lockfree --machine gold5215-2s --out lockfree-gold5215-2s-base" \
        in section
    assert "![lockfree on gold5215-2s](whatif/lockfree-gold5215-2s.png)" in section
    assert (out / "lockfree-gold5215-2s.png").stat().st_size > 0
    assert "**Assumed design?** **`post14_lockfree` is an assumed design" in section
    half = T_2 * 2.0 / math.sqrt(3)  # 100, 102, 104: s = 2
    ratio = WHATIF.ratio_interval(WHATIF.mean_interval([110.0, 112.0, 114.0]),
                                  WHATIF.mean_interval([100.0, 102.0, 104.0]))
    assert ratio[0] == pytest.approx(112.0 / 102.0)
    assert ratio[1] > 1.0  # resolved: the seeds agree within 2 %
    header = ("| clients | idle | `post14` TPS | `post14_lockfree` TPS | "
              "`post14_lockfree` / `post14` |")
    assert header in section
    row = (f"| 1 | 0 | 102 ± {half:.0f} | 112 ± {half:.0f} | "
           f"{ratio[0]:.3f} [{ratio[1]:.3f}, {ratio[2]:.3f}] |")
    assert row in section
    assert "| 48 | 0 | 1,010 ± 25 * | 1,000 ± 25 |" in section
    assert "`*`: 1 of 4 cells have a seed whose point failed or whose window did not" in section
    assert "| 48 | 0 | `post14_lockfree` | 2.00 | 4.00 | 1.50 | 0.50 | 0.25 |" in section
    assert "lies wholly above 1 at 1 and wholly below 1 at 0 of 2 points" in section
    assert "at 1 client and 0 idle" in section
    assert "Windows: 20 ms after 10 ms; root seeds 0, 1, 2; curves: " in section
    assert "| 1 | A lock-free reuse check (`post14_lockfree`) | **yes**: `post14_lockfree` |" \
        in text
    assert "| 6 | The historical pin: " in text
    glance = text.split("## Answers at a glance", 1)[1].split("\n## 1.", 1)[0]
    assert "* lockfree on gold5215-2s: `post14_lockfree` / `post14`: " in glance
    assert "The points took 6 min of simulation" in glance  # 12 points x 30 s
    assert "Not run yet: `python docs/whatif.py --studies pin`." in text
    # the reference material is on the page whether or not its study has run
    assert "| `{move: R.f, to: own_line}` |" in text
    assert "### Lines per snapshot, derived by hand" in text


def test_tables_of_runs_compare_variants_with_the_baseline_run(tmp_path: Path) -> None:
    study = WHATIF.PIN
    rows = [{"run": run, "algorithm": "pre14", "clients": 128, "idle_clients": 0,
             "root_seed": seed, "tps": tps, "window_converged": True}
            for run, values in (("spinlock", (100.0, 100.0)), ("atomic", (250.0, 250.0)))
            for seed, tps in enumerate(values)]
    tables = WHATIF.build_tables(study, pd.DataFrame(rows))
    assert [t.group for t in tables] == ["pre14"]
    assert tables[0].series == ["spinlock", "atomic"]
    lines = WHATIF.tps_table(study, tables[0])
    assert lines[0] == ("| clients | idle | spinlock pins (9.2-9.5) TPS | atomic pins (9.6) TPS "
                        "| atomic pins (9.6) / spinlock pins (9.2-9.5) |")
    assert lines[2] == "| 128 | 0 | 100 ± 0 | 250 ± 0 | 2.500 [2.500, 2.500] |"


def test_churn_runs_are_points_on_the_rate_axis(tmp_path: Path) -> None:
    study = WHATIF.CHURN
    assert [run.value for run in study.runs if not run.variant] == list(WHATIF.CHURN_RATES)
    assert study.baseline == "r0"
    assert study.axis
    out = tmp_path / "whatif"
    out.mkdir()
    for run in study.runs:
        rows = [{"machine": "gold5215-2s", "algorithm": algorithm, "workload": "select-only",
                 "clients": 48, "idle_clients": idle, "idle_kind": "idle", "root_seed": seed,
                 "seed": seed, "tps": 1000.0 - (run.value or 0) / 10 + seed,
                 "transactions": 1000, "window_converged": True,
                 "connects_per_s": run.value, "disconnects_per_s": run.value,
                 "procarray_exclusive_per_txn": 0.01, "lock_wait_us": 1.0,
                 "get_snapshot_us": 0.5, "duration_ms": 20.0, "warmup_ms": 5.0, "wall_s": 1.0}
                for algorithm in ("pre14", "post14") for seed in range(3)
                for idle in ((10000,) if run.variant else (0, 1000, 10000))]
        pd.DataFrame(rows).to_csv(out / f"churn-gold5215-2s-{run.name}.csv", index=False)
    text = WHATIF.write_markdown(out, tmp_path / "whatif.md").read_text(encoding="utf-8")
    section = text.split("Connection churn", 2)[2]
    assert "![churn on gold5215-2s](whatif/churn-gold5215-2s.png)" in section
    assert (out / "churn-gold5215-2s.png").stat().st_size > 0
    assert "| clients | idle | 0/s TPS | 500/s TPS | 1,000/s TPS |" in section
    assert "| 48 | 0 | 1,001 ± 2 | 951 ± 2 |" in section  # 1000 - 500/10, seeds 0-2
    assert "| 48 | 0 | - |" not in section
    assert "options.churn.per_transaction=true" in section
    assert "* 1,000/s, fifo / 0/s: 0.900 [" in section
    assert "10,000 idle, its one point; the interval lies wholly below 1." in section


def test_the_pgbench_c_command_is_valid_input() -> None:
    from simulator.cli.check_config import check_experiment
    from simulator.cli.run import add_arguments, load_experiment

    command = WHATIF.CHURN.reference.split("`snapsim run ", 1)[1].split("`", 1)[0].split()
    args = _parsed(add_arguments, command)
    _, document, source = load_experiment(args)
    assert check_experiment(source, document).startswith("experiment whatif-churn: ")
    options = document["options"]
    assert isinstance(options, dict)
    assert options["churn"] == {"rate_per_s": 0, "per_transaction": True}


def test_unknown_study_or_machine_exits_2_before_running(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert WHATIF.main(["--studies", "churn-nope"]) == 2
    assert "churn-nope" in capsys.readouterr().err
    assert WHATIF.main(["--machines", "no-such-machine"]) == 2


def test_every_study_has_its_experiment_file_and_valid_runs() -> None:
    from simulator.cli.check_config import check_experiment
    from simulator.cli.run import add_arguments, load_experiment
    from simulator.config.machine_file import shipped_machines

    names = [study.name for study in WHATIF.STUDIES]
    assert len(set(names)) == len(names)
    for study in WHATIF.STUDIES:
        path = REPO_ROOT / "configs" / "experiments" / f"{study.experiment}.yaml"
        assert path.read_text(encoding="utf-8").startswith("# What-if study of docs/whatif.md")
        assert set(study.machines) <= set(shipped_machines())
        assert study.baseline in {run.name for run in study.runs} | set(
            load_experiment(_parsed(add_arguments, [study.experiment]))[0].algorithms)
        for machine in study.machines:
            for run in study.runs:
                args = _parsed(add_arguments, study.command(machine, run)[2:])
                experiment, document, source = load_experiment(args)
                assert len(experiment.seeds) >= 3, study.name
                summary = check_experiment(source, document)
                assert summary.startswith(f"experiment {study.experiment}: "), summary
                assert machine in summary


def _parsed(add: Callable[[argparse.ArgumentParser], None],
            argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add(parser)
    return parser.parse_args(argv)
