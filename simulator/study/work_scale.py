"""The single-client work scale: the one per-machine fit of the model's work.

``single_client_tps``, a machine's measured single-client TPS, rescales the model's base
per-transaction work so that one client with no idle connections simulates it:
:func:`single_client_work_scale` finds the factor by a secant search on 1/TPS, which is affine in
the work for a single client (:func:`solve_work_scale`, with bisection where an idle state's
residency threshold makes 1/TPS jump). Every other cost comes from the global cost model, whose
fit is ``snapsim calibrate``'s (:mod:`simulator.tools.calibrate`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from simulator.errors import ConfigError
from simulator.measure.manifest import SingleClientFigure
from simulator.study.experiment import Prepared, plan
from simulator.study.sweep import execute

__all__ = ["WORK_SCALE_TOLERANCE", "single_client_work_scale", "solve_work_scale"]

WORK_SCALE_MIN_DURATION_MS = 20.0
"""The single-client point simulates at least this long (about 700 transactions)."""
WORK_SCALE_TOLERANCE = 0.005
WORK_SCALE_MAX_STEPS = 6
WORK_SCALE_BISECTION_STEPS = 12


def single_client_work_scale(prepared: Prepared, figure: SingleClientFigure,
                             log: Callable[[str], None] | None = None) -> float:
    """The work scale at which one client with no idle connections simulates ``target_tps``.

    Runs the experiment's first algorithm and workload with 1 client, 0 idle connections (of the
    model's ``work_scale_idle_kind``) and the first root seed, for at least
    :data:`WORK_SCALE_MIN_DURATION_MS`, and searches the scale with
    :func:`solve_work_scale`.

    Raises:
        ConfigError: the target cannot be reached (the fixed costs alone are slower).
    """
    experiment = prepared.experiment
    target_tps = figure.tps
    duration = max(experiment.duration_ms, WORK_SCALE_MIN_DURATION_MS)
    single_client = prepared.replace(
        clients=(1,), idle_clients=(0,), idle_kind=figure.idle_kind,
        algorithms=(figure.algorithm,), workload=figure.workload, seeds=experiment.seeds[:1],
        duration_ms=duration, warmup_ms=max(experiment.warmup_ms, 1.0))

    def inverse_tps(scale: float) -> float:
        record = execute(plan(single_client, scale)[0])
        if record.failed:
            raise ConfigError("single_client_tps",
                              f"the work scale's single-client point failed: {record.error}")
        tps = float(record.row["tps"])  # type: ignore[arg-type]
        if log is not None:
            log(f"work scale {scale:.4f} -> {tps:,.0f} TPS (target {target_tps:,.0f})")
        return 1.0 / tps if tps > 0 else math.inf

    return solve_work_scale(inverse_tps, target_tps)


def solve_work_scale(inverse_tps: Callable[[float], float], target_tps: float) -> float:
    """The work scale at which 1/TPS, ``inverse_tps(scale)``, is ``1 / target_tps``.

    ``inverse_tps`` grows with the scale; the result is within :data:`WORK_SCALE_TOLERANCE`.

    Secant steps from scale 1 converge in two or three runs where 1/TPS is affine. Where it
    is not (an idle state's residency threshold crossed changes every wake-up's exit latency,
    so 1/TPS jumps), bisection on the bracket the runs so far give, for at most
    :data:`WORK_SCALE_BISECTION_STEPS` more runs.

    Raises:
        ConfigError: the target cannot be reached: the fixed costs alone are slower, or 1/TPS
            jumps over the target (the error names both sides of the jump).
    """
    target = 1.0 / target_tps
    samples: list[tuple[float, float]] = []

    def sample(scale: float) -> float:
        value = inverse_tps(scale)
        samples.append((scale, value))
        return value

    def close(value: float, tolerance: float = WORK_SCALE_TOLERANCE) -> bool:
        return abs(value / target - 1) <= tolerance

    x0, y0 = 1.0, sample(1.0)
    if not math.isfinite(y0):
        raise ConfigError("single_client_tps", "the work scale's single-client point completed no "
                          "transaction")
    x1 = target / y0  # as if all of the time were work
    y1 = sample(x1)
    for _ in range(WORK_SCALE_MAX_STEPS):
        if close(y1):
            return x1
        slope = (y1 - y0) / (x1 - x0) if x1 != x0 else 0.0
        if not slope > 0:
            break
        x2 = x1 + (target - y1) / slope
        if x2 <= 0:
            break
        x0, y0, x1, y1 = x1, y1, x2, sample(x2)
    low = max((x for x, y in samples if y < target), default=None)
    high = min((x for x, y in samples if y > target), default=None)
    if low is None:
        smallest = min(x for x, _ in samples) / 64
        if not sample(smallest) < target:
            raise ConfigError("single_client_tps", f"{target_tps:,.0f} TPS is faster than the "
                              "model's fixed per-transaction costs allow on this machine")
        low = smallest
    if high is None:
        high = max(x for x, _ in samples) * 2
        while not sample(high) > target:
            if high > 1e6:
                raise ConfigError("single_client_tps", f"could not slow the single-client point "
                                  f"down to {target_tps:,.0f} TPS")
            high *= 2
    for _ in range(WORK_SCALE_BISECTION_STEPS):
        middle = (low + high) / 2
        value = sample(middle)
        if close(value):
            return middle
        if value < target:
            low = middle
        else:
            high = middle
    best_scale, best_value = min(samples, key=lambda item: abs(item[1] / target - 1))
    if close(best_value, 2 * WORK_SCALE_TOLERANCE):
        return best_scale
    by_scale = dict(samples)
    raise ConfigError("single_client_tps",
                      f"could not reach {target_tps:,.0f} TPS: the model gives "
                      f"{1 / by_scale[low]:,.0f} TPS at work scale {low:.4f} and "
                      f"{1 / by_scale[high]:,.0f} at {high:.4f} (a jump, e.g. an idle state's "
                      "residency threshold, lies between); ask for a TPS on one side of it")
