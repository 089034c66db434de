"""``snapsim bench`` prints the kernel figures (their values are not asserted: no timed tests)."""

from __future__ import annotations

import json

import pytest

from simulator.cli import main

KEYS = {"kernel_hits_lines_per_s", "kernel_mixed_lines_per_s", "reference_lines_per_s",
        "reference_mixed_lines_per_s"}


def test_bench_json_has_the_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--json", "--repeats", "1"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert set(figures) == KEYS
    assert all(value > 0 for value in figures.values())


def test_bench_rejects_zero_repeats(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--repeats", "0"]) == 2
    assert "repeats" in capsys.readouterr().err
