"""docs/ablations.py: one table per group from the variants' validate summaries."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.paths import load_docs_script

ABLATIONS = load_docs_script("ablations")


def write_summary(scratch: Path, variant: str, median: float, worst: float) -> None:
    """A validate summary.csv of two series, as ``snapsim validate`` writes it."""
    folder = scratch / variant
    folder.mkdir(parents=True)
    pd.DataFrame({"dataset": ["gold5215_idle", "platinum8168_master_vs_split"],
                  "series": ["tps_pre14", "tps_master"],
                  "median_abs_rel_error": [median, 2 * median],
                  "max_abs_rel_error": [worst, 2 * worst]}).to_csv(folder / "summary.csv",
                                                                  index=False)


def test_every_table_variant_exists() -> None:
    for columns in ABLATIONS.GROUPS.values():
        assert "shipped" in columns
        assert set(columns) <= set(ABLATIONS.VARIANTS)


def test_stored_summaries_are_tabulated_not_rerun(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for index, variant in enumerate(ABLATIONS.GROUPS["fan-out"]):
        write_summary(tmp_path, variant, 0.01 * (index + 1), 0.1 * (index + 1))
    csv = tmp_path / "errors.csv"
    assert ABLATIONS.main(["--groups", "fan-out", "--scratch", str(tmp_path),
                           "--csv", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "$" not in out  # every summary was there: no validate run
    assert "| series | fan-out-0ns | shipped | fan-out-10ns |" in out
    assert "| gold5215_idle tps_pre14 | 1.0 / 10.0 | 2.0 / 20.0 | 3.0 / 30.0 |" in out
    assert "| platinum8168_master_vs_split tps_master | 2.0 / 20.0 | 4.0 / 40.0 | 6.0 / 60.0 |" \
        in out
    errors = pd.read_csv(csv)
    assert list(errors["variant"].unique()) == ["fan-out-0ns", "shipped", "fan-out-10ns"]
    assert len(errors) == 6


def test_unknown_names_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        ABLATIONS.main(["--groups", "fan-out,nope", "--scratch", str(tmp_path)])
    assert raised.value.code == 2
    assert "unknown group 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as raised:
        ABLATIONS.main(["--variants", "shipped,off", "--scratch", str(tmp_path)])
    assert raised.value.code == 2
    assert "unknown variant 'off'" in capsys.readouterr().err
    assert ABLATIONS.main(["--groups", ",", "--scratch", str(tmp_path)]) == 2
    assert "no variant chosen" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
