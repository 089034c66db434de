"""Plots of result DataFrames; every function draws on (and returns) a matplotlib Axes.

- :func:`plot_tps`: TPS against active or idle clients, one line per algorithm and series, with
  optional measured points (same colour per algorithm, hollow markers, dashed lines).
- :func:`tps_panels`: how to split a curve into panels so that curves of very different scale
  (1 and 48 active clients against idle connections) each get their own y axis.
- :func:`plot_transfers`: accesses per transaction by access class, one stacked bar per point.
- :func:`plot_breakdown`: time per transaction by category (the model's ``<category>_us``
  columns), one stacked bar per point.
- :func:`plot_ratio`: TPS of one algorithm over another's on the same grid.
- :func:`plot_contention`: throughput or latency of atomics on one line against threads (the
  table of ``simulator.tools.contention.contention_sweep``), one line per placement and operation.

No file I/O and no ``plt.show()``: notebooks display the Axes, the CLI saves the figure. Each
function takes the ``curve`` table of a result and reads only generic columns (point keys,
``tps``, the access-class columns, ``share_*``/``*_us``); the time categories are whatever the
workload model reports.

Conventions: an algorithm keeps one colour in every plot when the caller passes ``colours``
(:func:`algorithm_colours` of the workload model's algorithms; otherwise colours follow the
order of first appearance); replicates (seeds) at the same x are averaged and, where there are
several, the 95 % Student-t interval of their mean (:mod:`simulator.analysis.intervals`) is
drawn as a band; an idle-connection axis is logarithmic with the
0-connection point set half a decade left of the smallest other count, labelled 0 behind an
axis break (a symmetric-log axis would spend half its width between 0 and 100, where there is
no point). Left out: figure layout (the caller's).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from simulator.analysis.columns import POINT_KEYS
from simulator.analysis.intervals import CONFIDENCE, mean_interval
from simulator.hardware.codes import CLASS_NAMES, AccessClass

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["algorithm_colours", "place_zero", "plain_numbers", "plot_breakdown",
           "plot_contention", "plot_ratio", "plot_tps", "plot_transfers", "set_client_axis",
           "tps_panels", "zero_position"]

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">")
"""Markers of the series of one algorithm, in order."""

PRIVATE_HIT_CLASSES = (AccessClass.L1_HIT.name.lower(), AccessClass.L2_HIT.name.lower())
"""Classes :func:`plot_transfers` leaves out by default: hits in the core's own private caches,
which move no line between caches and would dwarf the rest."""

_AXIS_LABELS = {"clients": "active clients", "idle_clients": "idle clients"}
_SHORT = {"clients": "clients", "idle_clients": "idle"}
_TICK_UNITS = {"clients": "active", "idle_clients": "idle"}
MICRO = "\u00b5"


def _axes(ax: Axes | None, width: float = 7.0) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, new = plt.subplots(figsize=(max(7.0, width), 4.5))
    return new


def _default_x(frame: pd.DataFrame) -> str:
    if "idle_clients" in frame.columns and frame["idle_clients"].nunique() > 1:
        return "idle_clients"
    return "clients"


ZERO_OFFSET_DECADES = 0.5
"""How far left of the smallest non-zero count the 0 of an idle-connection axis sits (decades)."""


def zero_position(values: Sequence[float] | np.ndarray) -> float | None:
    """Where 0 is drawn on a log axis of counts (``None`` when there is no 0 among ``values``).

    Half a decade below the smallest other count, or below 1 when there is none.
    """
    array = np.asarray(values, dtype=float)
    if not (array == 0).any():
        return None
    positive = array[array > 0]
    smallest = float(positive.min()) if len(positive) else 1.0
    return smallest / 10 ** ZERO_OFFSET_DECADES


def place_zero(values: Sequence[float] | np.ndarray, zero: float | None) -> np.ndarray:
    """``values`` with 0 moved to ``zero`` (its place on the log axis)."""
    array = np.asarray(values, dtype=float)
    return array if zero is None else np.where(array == 0, zero, array)


def set_client_axis(ax: Axes, x: str, zero: float | None = None) -> None:
    """Log x for client counts; for idle connections 0 sits at ``zero``, behind an axis break."""
    ax.set_xscale("log")
    ax.set_xlabel(_AXIS_LABELS.get(x, x.replace("_", " ")))
    if zero is None:
        return
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    high = ax.get_xlim()[1]
    first = zero * 10 ** ZERO_OFFSET_DECADES  # the smallest count other than 0
    decades = [10.0 ** k for k in range(int(np.floor(np.log10(first))) + 1,
                                        int(np.floor(np.log10(high))) + 1)]
    ticks = [zero, first, *(d for d in decades if d > first * 1.5)]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda value, _: "0" if value == zero else f"{value:,.0f}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(zero / 10 ** (ZERO_OFFSET_DECADES / 2), high)
    if len(ticks) <= 2:  # 0 and one count: no scale to break, a mark would sit mid-axis
        return
    # the break: two short slanted strokes on the axis between 0 and the first count
    gap = zero * 10 ** (ZERO_OFFSET_DECADES / 2)
    for offset in (0.97, 1.03):
        ax.plot([gap * offset / 1.02, gap * offset * 1.02], [-0.015, 0.015], color="black",
                linewidth=1, transform=ax.get_xaxis_transform(), clip_on=False,
                label="_axis_break")


def plain_numbers(ax: Axes) -> None:
    """Plain y tick labels, thousands separated from 1,000 on (no "1e6" offset)."""
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(
        lambda value, _: f"{value:,.0f}" if abs(value) >= 1000 else f"{value:g}"))


def algorithm_colours(algorithms: Sequence[object]) -> dict[object, str]:
    """One colour of the default cycle per algorithm, in the order given.

    Pass the workload model's whole list of algorithms to keep each one's colour in every plot,
    whichever of them a plot shows.
    """
    unique = list(dict.fromkeys(algorithms))
    return {algorithm: f"C{index % 10}" for index, algorithm in enumerate(unique)}


def _colours(algorithms: Sequence[object],
             given: Mapping[object, str] | None = None) -> dict[object, str]:
    """``given`` for the algorithms it names, then the next colours in order of appearance."""
    colours = dict(given or {})
    extra = [a for a in dict.fromkeys(algorithms) if a not in colours]
    start = len(colours)
    for index, algorithm in enumerate(extra, start=start):
        colours[algorithm] = f"C{index % 10}"
    return colours


def _series_keys(frame: pd.DataFrame, x: str) -> list[str]:
    """Point keys other than ``x``, ``algorithm`` and ``seed`` that vary in ``frame``."""
    return [k for k in POINT_KEYS
            if k not in (x, "algorithm", "seed") and k in frame.columns
            and frame[k].nunique() > 1]


def _describe(keys: Sequence[str], values: Sequence[object]) -> str:
    return ", ".join(f"{_SHORT.get(k, k.replace('_', ' '))}={v}"
                     for k, v in zip(keys, values, strict=True))


def _grouped(frame: pd.DataFrame, keys: list[str]) -> Iterator[tuple[tuple[object, ...],
                                                                     pd.DataFrame]]:
    if not keys:
        yield (), frame
        return
    for values, group in frame.groupby(keys, sort=True):
        yield (values if isinstance(values, tuple) else (values,)), group


# --------------------------------------------------------------------------------------------
# TPS
# --------------------------------------------------------------------------------------------


def plot_tps(curve: pd.DataFrame, x: str | None = None, ax: Axes | None = None,
             measurements: pd.DataFrame | None = None,
             colours: Mapping[object, str] | None = None) -> Axes:
    """TPS against ``x`` (default: idle clients if they vary, else active clients), log x axis.

    One solid line per algorithm and value of the other varying point keys; an algorithm keeps
    its colour and its series differ by marker. Replicates (seeds) at the same x are averaged;
    where some x has two or more, a shaded band is the 95 % t-interval of the mean at each x
    that has (:func:`~simulator.analysis.intervals.mean_interval`).

    Args:
        curve: one row per point with the point keys and ``tps``.
        x: ``"clients"`` or ``"idle_clients"``.
        ax: the Axes to draw on (a new figure when ``None``).
        measurements: optional measured points, columns ``algorithm, clients, idle_clients,
            measured_tps`` and optionally ``series`` (e.g. the dataset's name); drawn as dashed
            lines with hollow markers in the colour of their algorithm, labelled "measured".
        colours: colour per algorithm (:func:`algorithm_colours`); others get the next ones.

    Raises:
        ValueError: ``measurements`` lacks a required column.
    """
    ax = _axes(ax)
    x = x or _default_x(curve)
    others = _series_keys(curve, x)
    colours = _colours([*curve["algorithm"],
                        *(measurements["algorithm"] if measurements is not None else [])],
                       colours)
    zero = None
    if x == "idle_clients":
        every = [*curve[x], *(measurements[x] if measurements is not None
                              and x in measurements.columns else [])]
        zero = zero_position(every)
    markers: dict[tuple[object, ...], str] = {}
    banded = False
    for (algorithm, *values), group in _grouped(curve, ["algorithm", *others]):
        marker = markers.setdefault(tuple(values), MARKERS[len(markers) % len(MARKERS)])
        intervals = {at: mean_interval([float(v) for v in part["tps"]])
                     for at, part in group.groupby(x, sort=True)}
        where = place_zero(np.asarray(list(intervals)), zero)
        label = ", ".join(filter(None, [str(algorithm), _describe(others, values)]))
        ax.plot(where, [i.mean for i in intervals.values()], marker=marker,
                color=colours[algorithm], label=label)
        if max(i.n for i in intervals.values()) > 1:  # replicates (seeds): their interval
            ax.fill_between(where, [i.low for i in intervals.values()],
                            [i.high for i in intervals.values()], color=colours[algorithm],
                            alpha=0.2, linewidth=0, label="_seed interval")
            banded = True
    if measurements is not None:
        _plot_measurements(ax, measurements, x, colours, markers, zero)
    set_client_axis(ax, x, zero)
    ax.set_ylabel("TPS (transactions/s)")
    ax.set_ylim(bottom=0)
    plain_numbers(ax)
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if banded:  # one legend entry says what the bands are
        from matplotlib.patches import Patch

        handles.append(Patch(facecolor="grey", alpha=0.2, linewidth=0))
        labels.append(f"shaded: {CONFIDENCE:.0%} interval of the mean over seeds")
    ax.legend(handles, labels, fontsize="small")
    return ax


def tps_panels(curve: pd.DataFrame, measurements: pd.DataFrame | None = None
               ) -> list[tuple[str, pd.DataFrame, pd.DataFrame | None]]:
    """``(title suffix, curve, measurements)`` per panel of a TPS figure.

    When TPS is drawn against idle clients (:func:`plot_tps`'s default x) for several active
    client counts, one panel per count: their TPS differ by orders of magnitude, and on one
    linear axis the small ones lie flat on zero. Otherwise a single panel with everything.
    """
    if _default_x(curve) != "idle_clients" or curve["clients"].nunique() < 2:
        return [("", curve, measurements)]
    panels: list[tuple[str, pd.DataFrame, pd.DataFrame | None]] = []
    for clients in sorted(curve["clients"].unique()):
        measured = (None if measurements is None
                    else measurements[measurements["clients"] == clients])
        title = f"{clients} active client{'' if clients == 1 else 's'}"
        panels.append((title, curve[curve["clients"] == clients],
                       measured if measured is None or not measured.empty else None))
    return panels


def _plot_measurements(ax: Axes, measurements: pd.DataFrame, x: str,
                       colours: dict[object, str],
                       markers: dict[tuple[object, ...], str], zero: float | None) -> None:
    """Measured points: dashed, hollow markers, in the algorithm's colour.

    Labelled "<algorithm> (measured)", with the series' name when several measured series of
    one algorithm share the Axes.
    """
    required = ["algorithm", "clients", "idle_clients", "measured_tps"]
    missing = [c for c in required if c not in measurements.columns]
    if missing:
        raise ValueError(f"measurements lack the column(s) {', '.join(missing)}")
    other = "idle_clients" if x == "clients" else "clients"
    keys = [*(["series"] if "series" in measurements.columns else []), "algorithm", other]
    named_series = ("series" in measurements.columns
                    and measurements.groupby("algorithm")["series"].nunique().max() > 1)
    varying = measurements[other].nunique() > 1
    for values, group in _grouped(measurements, keys):
        named = dict(zip(keys, values, strict=True))
        marker = markers.get((named[other],), markers.get((), "o"))
        points = group.groupby(x, sort=True)["measured_tps"].mean()
        details = [str(named["series"])] if named_series else []
        if varying:
            details.append(_describe([other], [named[other]]))
        label = f"{named['algorithm']} (measured{', ' + ', '.join(details) if details else ''})"
        ax.plot(place_zero(points.index.to_numpy(), zero), points.to_numpy(), linestyle="--",
                marker=marker, markerfacecolor="none", color=colours[named["algorithm"]],
                label=label)


# --------------------------------------------------------------------------------------------
# Bars per point: transfers and time breakdown
# --------------------------------------------------------------------------------------------


def _point_labels(curve: pd.DataFrame) -> list[str]:
    """One tick label per point, on one line: the varying point keys, algorithm first."""
    keys = [k for k in ("algorithm", *POINT_KEYS) if k != "seed" and k in curve.columns]
    varying = list(dict.fromkeys(k for k in keys if curve[k].nunique() > 1)) or ["algorithm"]
    labels = []
    for _, row in curve.iterrows():
        parts = [f"{row[k]:,} {_TICK_UNITS[k]}" if k in _TICK_UNITS else str(row[k])
                 for k in varying]
        labels.append(", ".join(parts))
    return labels


def _stacked_bars(ax: Axes, curve: pd.DataFrame, columns: Sequence[str],
                  labels: Sequence[str]) -> np.ndarray:
    positions = np.arange(len(curve))
    bottom = np.zeros(len(curve))
    for column, label in zip(columns, labels, strict=True):
        values = curve[column].fillna(0).to_numpy(dtype=float)
        ax.bar(positions, values, bottom=bottom, label=label, width=0.7)
        bottom = bottom + values
    # vertical, one line each: labels of neighbouring bars never overlap
    ax.set_xticks(positions, _point_labels(curve), rotation=90,
                  fontsize="small" if len(curve) <= 12 else "x-small")
    ax.grid(True, axis="y", alpha=0.3)
    return positions


def _nonzero(curve: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    return [c for c in columns if c in curve.columns and curve[c].fillna(0).abs().sum() > 0]


def plot_transfers(curve: pd.DataFrame, ax: Axes | None = None, *,
                   classes: Sequence[str] | None = None, invalidations: bool = True) -> Axes:
    """Accesses per transaction by access class: one stacked bar per point (in table order).

    Classes are the access-class columns (``CLASS_NAMES``) except the private-cache hits
    (:data:`PRIVATE_HIT_CLASSES`) unless ``classes`` names them; classes that are zero at every
    point are omitted. Invalidations per transaction, which are not accesses, are drawn as
    black crosses on the same scale (unless ``invalidations`` is false).
    """
    ax = _axes(ax, width=0.9 * len(curve))
    chosen = classes if classes is not None else [c for c in CLASS_NAMES
                                                  if c not in PRIVATE_HIT_CLASSES]
    shown = _nonzero(curve, chosen)
    positions = _stacked_bars(ax, curve, shown, [c.replace("_", " ") for c in shown])
    if (invalidations and "invalidations" in curve.columns
            and curve["invalidations"].fillna(0).sum() > 0):
        ax.plot(positions, curve["invalidations"].to_numpy(dtype=float), linestyle="none",
                marker="x", color="black", label="invalidations")
    ax.set_ylabel("accesses per transaction")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", ncol=2)
    else:
        ax.text(0.5, 0.5, "no transfers between caches", transform=ax.transAxes,
                ha="center", va="center")
    return ax


def plot_breakdown(curve: pd.DataFrame, ax: Axes | None = None) -> Axes:
    """Time per transaction by category, in microseconds: one stacked bar per point.

    Categories are those with both a ``share_<category>`` and a ``<category>_us`` column (as
    the workload model defines them); categories that are zero at every point are omitted.
    """
    ax = _axes(ax, width=0.9 * len(curve))
    categories = [c.removeprefix("share_") for c in curve.columns
                  if c.startswith("share_") and f"{c.removeprefix('share_')}_us" in curve.columns]
    shown = _nonzero(curve, [f"{c}_us" for c in categories])
    _stacked_bars(ax, curve, shown, [c.removesuffix("_us").replace("_", " ") for c in shown])
    ax.set_ylabel(f"time per transaction ({MICRO}s)")
    ax.legend(fontsize="small")
    return ax


# --------------------------------------------------------------------------------------------
# Ratio of two algorithms
# --------------------------------------------------------------------------------------------


def plot_ratio(curve: pd.DataFrame, numerator: str, denominator: str, ax: Axes | None = None,
               *, x: str | None = None) -> Axes:
    """TPS of ``numerator`` over ``denominator`` at every grid point both have, against ``x``.

    Replicates are averaged first. One line per value of the other varying point keys; a dashed
    line marks parity (1).

    Raises:
        ValueError: no grid point has both algorithms.
    """
    ax = _axes(ax)
    on = [k for k in POINT_KEYS if k not in ("algorithm", "seed") and k in curve.columns]
    means = curve.groupby([*on, "algorithm"], dropna=False)[["tps"]].mean().reset_index()
    name = f"{numerator}/{denominator}"
    ratios = ratio_curve(means, numerator, denominator, on=on).dropna(subset=[name])
    if ratios.empty:
        raise ValueError(f"no grid point has both {numerator!r} and {denominator!r}")
    x = x or _default_x(ratios)
    others = _series_keys(ratios, x)
    zero = zero_position(ratios[x].to_numpy()) if x == "idle_clients" else None
    for values, group in _grouped(ratios, others):
        points = group.sort_values(x)
        ax.plot(place_zero(points[x].to_numpy(), zero), points[name], marker="o",
                label=_describe(others, values) or name)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    set_client_axis(ax, x, zero)
    ax.set_ylabel(f"TPS ratio {numerator} / {denominator}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return ax


def ratio_curve(curve: pd.DataFrame, numerator: str, denominator: str,
                on: Sequence[str] = ("clients", "idle_clients")) -> pd.DataFrame:
    """TPS of one algorithm over another on the same grid."""
    keys = list(on)
    top = curve[curve["algorithm"] == numerator].groupby(keys)["tps"].mean()
    bottom = curve[curve["algorithm"] == denominator].groupby(keys)["tps"].mean()
    ratio = (top / bottom).rename(f"{numerator}/{denominator}")
    return ratio.reset_index().replace([np.inf, -np.inf], np.nan)


# --------------------------------------------------------------------------------------------
# Contention on one line
# --------------------------------------------------------------------------------------------

CONTENTION_METRICS = {"ops_per_s": ("throughput (M ops/s)", 1e-6),
                      "latency_ns": ("mean latency per operation (ns)", 1.0)}
"""Columns :func:`plot_contention` can draw, with their axis label and scale factor."""

_LINESTYLES = ("-", "--", ":", "-.")


def plot_contention(table: pd.DataFrame, metric: str = "ops_per_s",
                    ax: Axes | None = None) -> Axes:
    """``metric`` of a contention sweep against threads, log-log.

    One line per placement (a colour each) and operation (a line style and marker each).

    Args:
        table: rows with ``operation, placement, threads`` and ``metric``.
        metric: a key of :data:`CONTENTION_METRICS`.
        ax: the Axes to draw on (a new figure when ``None``).

    Raises:
        ValueError: unknown metric.
    """
    if metric not in CONTENTION_METRICS:
        raise ValueError(f"unknown metric {metric!r} (choose from "
                         f"{', '.join(CONTENTION_METRICS)})")
    label, scale = CONTENTION_METRICS[metric]
    ax = _axes(ax)
    colours = _colours(list(table["placement"]))
    operations = list(dict.fromkeys(table["operation"]))
    for (operation, placement), group in table.groupby(["operation", "placement"], sort=False):
        index = operations.index(operation)
        points = group.sort_values("threads")
        ax.plot(points["threads"], points[metric] * scale, color=colours[placement],
                linestyle=_LINESTYLES[index % len(_LINESTYLES)],
                marker=MARKERS[index % len(MARKERS)], label=f"{operation}, {placement}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("threads on the line")
    ax.set_ylabel(label)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return ax
