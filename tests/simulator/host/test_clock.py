"""The clock measurement: the compiled chain against its reference, a real run, refusals."""

from __future__ import annotations

import os
import platform

import pytest

from simulator.errors import ConfigError
from simulator.host import clock
from simulator.host.clock import MeasuredClock, chain_reference, measure_clock


@pytest.mark.parametrize(("steps", "value"), [(0, 7), (1, 1), (1000, 1), (4097, 2**63 + 5)])
def test_the_compiled_chain_computes_what_the_reference_does(steps: int, value: int) -> None:
    """The timed loop is the chain the docstring counts (no step folded away)."""
    assert clock._compiled_chain()(steps, value) == chain_reference(steps, value)


def test_the_reference_by_hand() -> None:
    # 1 -> (1 ^ 0) + 1 = 2 -> (2 ^ 1) + 1 = 4 -> (4 ^ 2) + 1 = 7
    assert [chain_reference(steps, 1) for steps in range(4)] == [1, 2, 4, 7]
    assert chain_reference(1, 2**64 - 1) == ((2**64 - 1) ^ (2**63 - 1)) + 1


@pytest.mark.skipif(platform.machine().lower() not in clock.X86_64, reason="x86-64 only")
def test_this_host_s_clock_is_a_cpu_s_and_the_affinity_is_given_back() -> None:
    before = os.sched_getaffinity(0)
    measured = measure_clock(steps=20_000_000, repeats=3)
    assert os.sched_getaffinity(0) == before
    assert len(measured.runs_ghz) == 3
    assert measured.ghz == max(measured.runs_ghz)
    # a loaded CI machine runs slow, never faster than any CPU's clock
    assert 0.3 < measured.ghz < 7.0
    assert measured.cpu == min(before)


def test_another_instruction_set_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    with pytest.raises(ConfigError, match="x86-64 only, this host is aarch64"):
        measure_clock()


@pytest.mark.parametrize(("steps", "repeats"), [(0, 1), (1, 0)])
def test_counts_below_one_are_refused(steps: int, repeats: int) -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        measure_clock(steps=steps, repeats=repeats)


def test_the_log_line_gives_the_fastest_and_slowest_run() -> None:
    line = MeasuredClock(ghz=4.4, runs_ghz=(4.1, 4.4, 3.9), cpu=0).line()
    assert line == ("clock 4.40 GHz on CPU 0 (a dependent-operation chain; runs 3.90-4.40 GHz)")
