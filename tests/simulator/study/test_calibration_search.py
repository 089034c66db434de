"""The single-client calibration's search (solve_work_scale) on synthetic 1/TPS curves."""

from __future__ import annotations

import re

import pytest

from simulator.errors import ConfigError
from simulator.study.work_scale import WORK_SCALE_TOLERANCE, solve_work_scale


class Curve:
    """1/TPS = fixed + work * scale, plus ``jump`` above ``threshold``; counts its runs."""

    def __init__(self, fixed_us: float, work_us: float, jump_us: float = 0.0,
                 threshold: float = float("inf")) -> None:
        self.fixed, self.work, self.jump, self.threshold = fixed_us, work_us, jump_us, threshold
        self.runs = 0

    def __call__(self, scale: float) -> float:
        self.runs += 1
        jump = self.jump if scale > self.threshold else 0.0
        return (self.fixed + self.work * scale + jump) * 1e-6


def within(curve: Curve, scale: float, target_tps: float) -> bool:
    return abs(curve(scale) * target_tps - 1) <= WORK_SCALE_TOLERANCE


def test_an_affine_curve_takes_the_secant_steps() -> None:
    curve = Curve(fixed_us=10.0, work_us=20.0)
    scale = solve_work_scale(curve, 1e6 / 26.0)  # 26 us: scale 0.8
    assert scale == pytest.approx(0.8, rel=1e-6)
    assert curve.runs == 3


def test_a_jump_below_the_target_is_bracketed_and_bisected() -> None:
    # 1/TPS is 10 + 20 s us, plus 3 us above s = 0.9 (28 us below the jump, 31 above): the
    # target of 32 us lies on the upper piece (s = 0.95), where the secant step from the
    # lower one overshoots; the search still ends there.
    curve = Curve(fixed_us=10.0, work_us=20.0, jump_us=3.0, threshold=0.9)
    scale = solve_work_scale(curve, 1e6 / 32.0)
    assert scale > 0.9
    assert within(curve, scale, 1e6 / 32.0)


def test_a_jump_over_the_target_is_an_error_that_names_both_sides() -> None:
    curve = Curve(fixed_us=10.0, work_us=20.0, jump_us=5.0, threshold=0.8)
    with pytest.raises(ConfigError, match=r"single_client_tps.*a jump") as raised:
        solve_work_scale(curve, 1e6 / 28.0)  # 26 just below 0.8, 31 just above
    message = str(raised.value)
    low_tps, high_tps = (float(tps.replace(",", "")) for tps in
                         re.findall(r"([\d,]+) (?:TPS )?at (?:work scale )?[\d.]+", message))
    assert high_tps < 1e6 / 28.0 < low_tps  # the two sides straddle the target
    assert low_tps == pytest.approx(1e6 / 26.0, rel=0.01)
    assert high_tps == pytest.approx(1e6 / 31.0, rel=0.01)
    assert "ask for a TPS on one side" in message


def test_a_target_faster_than_the_fixed_costs_is_an_error() -> None:
    with pytest.raises(ConfigError, match="faster than the model's fixed"):
        solve_work_scale(Curve(fixed_us=30.0, work_us=20.0), 1e6 / 25.0)
