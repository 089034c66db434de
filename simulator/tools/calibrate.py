"""Fit global model parameters to published measurements (the library of ``snapsim calibrate``).

The parameters are experiment keys (``options.costs.scan_cycles_per_entry.pre14``, ...) with
bounds; every evaluation is a :func:`simulator.tools.validate.validate` run of the chosen datasets
with
the parameters applied as ``--set`` overrides to *every* point, so one set of values is fitted
jointly to all of them (never one curve at a time). The objective is

    mean over series of median |relative error| + 0.5 * mean over series of max |relative error|

(the calibration points of the manifest excluded), which follows the acceptance thresholds
(median and maximum per series). It is minimised by a bounded Nelder-Mead search (SciPy) on the
parameters scaled to [0, 1], with a budget of evaluations; the simulation is deterministic, so the
objective is too.

:func:`calibrate` returns every evaluation (the values, the objective and each series' median and
maximum error); the command writes it as ``calibration.csv`` and the best values as ``--set``
overrides in ``best.yaml``. :func:`sensitivity` moves each fitted value by a fraction (±10 %,
say) from the best point, one at a time, and reports the objective and the worst series of each
move: how sharply the data pin each value. Fitted values are then written into the model's
versioned cost file by hand, with the command and the objective (see ``docs/validation.md``).

Left out: uncertainty estimates of the fitted values and global optimisation (Nelder-Mead finds a
local minimum from the starting point, the middle of the bounds or ``START``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.errors import ConfigError
from simulator.measure.manifest import Manifest
from simulator.study.experiment_file import (
    apply_overrides,
    blame_overrides,
    experiment_from_document,
)
from simulator.tools.scoring import summarise
from simulator.tools.validate import validate


@dataclass(frozen=True, slots=True)
class Parameter:
    """A fitted experiment key: bounds, optional unit appended to the value, start."""

    key: str
    low: float
    high: float
    unit: str = ""
    start: float | None = None

    def value(self, unit_position: float) -> float:
        """The value at a position in [0, 1] of the bounds."""
        return self.low + min(max(unit_position, 0.0), 1.0) * (self.high - self.low)

    def position(self, value: float) -> float:
        """The position in [0, 1] of a value."""
        return (value - self.low) / (self.high - self.low)

    def override(self, value: float) -> str:
        """The ``key=value`` override (``value unit`` when the key needs a unit)."""
        text = f"{value:.6g}"
        return f"{self.key}={text} {self.unit}" if self.unit else f"{self.key}={text}"


def parse_parameter(text: str) -> Parameter:
    """``KEY=LOW:HIGH[:UNIT[:START]]``, e.g. ``options.costs.client=5000:20000:cycles``.

    Raises:
        ConfigError: malformed text or bounds.
    """
    key, sep, bounds = text.partition("=")
    parts = bounds.split(":")
    if not sep or not key.strip() or len(parts) < 2 or len(parts) > 4:
        raise ConfigError("--param", f"expected KEY=LOW:HIGH[:UNIT[:START]], got {text!r}")
    try:
        low, high = float(parts[0]), float(parts[1])
        start = float(parts[3]) if len(parts) == 4 and parts[3] else None
    except ValueError:
        raise ConfigError("--param", f"bounds must be numbers in {text!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ConfigError("--param", f"need LOW < HIGH in {text!r}")
    if start is not None and not low <= start <= high:
        raise ConfigError("--param", f"START must lie within the bounds in {text!r}")
    unit = parts[2].strip() if len(parts) >= 3 else ""
    return Parameter(key.strip(), low, high, unit, start)


def check_parameters(parameters: Sequence[Parameter], fixed: Sequence[str]) -> None:
    """Check every fitted key and unit, and the fixed ``--set``, before anything is simulated.

    Each parameter is tried at its lower bound (a value the user typed) on an experiment with
    the fixed overrides: a misspelt key or a unit the key does not take is found here, before
    the kernel is prepared, and the message shows the typed value.

    Raises:
        ConfigError: sourced ``--param`` (a fitted key or unit) or ``--set`` (a fixed one).
    """
    document = apply_overrides({}, fixed)
    with blame_overrides(fixed):
        experiment = experiment_from_document(document)
        model = experiment.check()
        model.resolve_options(experiment.options)
    for parameter in parameters:
        try:
            trial = apply_overrides(document, [parameter.override(parameter.low)])
            experiment = experiment_from_document(trial)
            experiment.check().resolve_options(experiment.options)
        except ConfigError as exc:
            raise ConfigError(exc.key, exc.message, "--param") from None


def objective(summary: pd.DataFrame) -> float:
    """Mean median error plus half the mean maximum error over the series."""
    return float(summary["median_abs_rel_error"].mean()
                 + 0.5 * summary["max_abs_rel_error"].mean())


def nelder_mead(function: Callable[[np.ndarray], float], start: np.ndarray, *,
                max_evaluations: int, step: float = 0.25) -> tuple[np.ndarray, float]:
    """Minimise ``function`` over [0, 1]^n from ``start`` with SciPy's bounded Nelder-Mead.

    The first simplex is ``start`` and, per parameter, ``start`` moved by ``step`` (inwards at a
    bound); the search stops after about ``max_evaluations`` evaluations or when the simplex's
    values agree to 1e-4. Returns the best point evaluated and its value.
    """
    from scipy.optimize import minimize

    start = np.clip(np.asarray(start, dtype=float), 0.0, 1.0)
    simplex = [start]
    for i in range(len(start)):
        vertex = start.copy()
        vertex[i] = vertex[i] + step if vertex[i] + step <= 1.0 else vertex[i] - step
        simplex.append(vertex)
    seen: list[tuple[float, np.ndarray]] = []

    def f(point: np.ndarray) -> float:
        clipped = np.clip(point, 0.0, 1.0)
        value = float(function(clipped))
        seen.append((value, clipped))
        return value

    minimize(f, start, method="Nelder-Mead", bounds=[(0.0, 1.0)] * len(start),
             options={"initial_simplex": np.array(simplex), "maxfev": max_evaluations,
                      "fatol": 1e-4, "xatol": 1e-6})
    value, best = min(seen, key=lambda pair: pair[0])
    return best, value


class Evaluator:
    """Evaluates parameter values: one validation run of the datasets with them as overrides.

    Every evaluation is appended to :attr:`rows` (the values, the objective, each series' median
    and maximum error) and logged.
    """

    def __init__(self, manifest: Manifest, parameters: Sequence[Parameter], *,
                 datasets: Sequence[str] | None, duration_ms: float, warmup_ms: float,
                 overrides: Sequence[str], jobs: int, log: Callable[[str], None],
                 precision: float | None = None, max_duration_ms: float | None = None) -> None:
        self.manifest = manifest
        self.parameters = tuple(parameters)
        self.datasets = datasets
        self.duration_ms = duration_ms
        self.warmup_ms = warmup_ms
        self.precision = precision
        self.max_duration_ms = max_duration_ms
        self.overrides = tuple(overrides)
        self.jobs = jobs
        self.log = log
        self.rows: list[dict[str, object]] = []

    def __call__(self, values: Sequence[float]) -> dict[str, object]:
        """Validate with ``values`` (one per parameter); return the evaluation's row."""
        parameters = self.parameters
        sets = [*self.overrides,
                *(p.override(v) for p, v in zip(parameters, values, strict=True))]
        started = time.perf_counter()
        table = validate(self.manifest, duration_ms=self.duration_ms, warmup_ms=self.warmup_ms,
                         overrides=sets, jobs=self.jobs, datasets=self.datasets,
                         precision=self.precision, max_duration_ms=self.max_duration_ms)
        summary = summarise(table, self.manifest)
        score = objective(summary)
        row: dict[str, object] = {p.key: v for p, v in zip(parameters, values, strict=True)}
        row["objective"] = score
        for item in summary.itertuples():
            row[f"median:{item.dataset}:{item.series}"] = item.median_abs_rel_error
            row[f"max:{item.dataset}:{item.series}"] = item.max_abs_rel_error
        self.rows.append(row)
        shown = ", ".join(f"{p.key.rsplit('.', 1)[-1]}={v:.4g}"
                          for p, v in zip(parameters, values, strict=True))
        self.log(f"evaluation {len(self.rows)}: {shown}: objective {score:.4f} "
                 f"({time.perf_counter() - started:.0f} s)")
        return row


def calibrate(evaluator: Evaluator, *, max_evaluations: int) -> pd.DataFrame:
    """Run the search; return one row per evaluation (values, objective, per-series errors)."""
    parameters = evaluator.parameters

    def evaluate(position: np.ndarray) -> float:
        values = [p.value(float(x)) for p, x in zip(parameters, position, strict=True)]
        return float(evaluator(values)["objective"])  # type: ignore[arg-type]

    first = len(evaluator.rows)
    start = np.array([p.position(p.start) if p.start is not None else 0.5 for p in parameters])
    nelder_mead(evaluate, start, max_evaluations=max_evaluations)
    return pd.DataFrame(evaluator.rows[first:])


def worst_series(row: Mapping[str, object]) -> tuple[str, float]:
    """The series with the largest maximum error in an evaluation's row: (name, error)."""
    errors = {key.removeprefix("max:"): float(value)  # type: ignore[arg-type]
              for key, value in row.items() if key.startswith("max:")}
    if not errors:
        return "", math.nan
    name = max(errors, key=lambda key: errors[key])
    return name, errors[name]


def sensitivity(evaluator: Evaluator, best: Sequence[float], *,
                fraction: float) -> pd.DataFrame:
    """Each value of ``best`` moved by ``-fraction`` and ``+fraction``, one at a time.

    One row per move: the parameter, the factor, the value, the objective, its change from the
    best point's objective (``best`` is evaluated first) and the worst series (largest maximum
    error) with its error. Moves leave the parameters' bounds if they must: the bounds limit the
    search, not the model.

    Raises:
        ValueError: ``fraction`` not in (0, 1), or not one value per parameter.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}")
    parameters = evaluator.parameters
    if len(best) != len(parameters):
        raise ValueError(f"expected {len(parameters)} values, got {len(best)}")
    base = evaluator(list(best))
    base_objective = float(base["objective"])  # type: ignore[arg-type]
    rows: list[dict[str, object]] = []

    def add(key: str, factor: float, value: float, row: Mapping[str, object]) -> None:
        name, error = worst_series(row)
        score = float(row["objective"])  # type: ignore[arg-type]
        rows.append({"parameter": key, "factor": factor, "value": value, "objective": score,
                     "objective_change": score - base_objective, "worst_series": name,
                     "worst_max_abs_rel_error": error})

    add("(best)", 1.0, math.nan, base)
    for index, parameter in enumerate(parameters):
        for factor in (1.0 - fraction, 1.0 + fraction):
            values = list(best)
            values[index] = best[index] * factor
            add(parameter.key, factor, values[index], evaluator(values))
    return pd.DataFrame(rows)
