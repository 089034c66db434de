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
  table of ``simulator.study.ccbench.contention_sweep``), one line per placement and operation.

No file I/O and no ``plt.show()``: notebooks display the Axes, the CLI saves the figure. Each
function takes the ``curve`` table of a result and reads only generic columns (point keys,
``tps``, the access-class columns, ``share_*``/``*_us``); the time categories are whatever the
workload model reports. Left out: error bars (replicates at the same x are averaged), figure
layout, and styling beyond colour per algorithm.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from simulator.analysis.columns import POINT_KEYS
from simulator.hardware.codes import CLASS_NAMES, AccessClass

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_breakdown", "plot_contention", "plot_ratio", "plot_tps", "plot_transfers",
           "tps_panels"]

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


def _set_client_axis(ax: Axes, x: str) -> None:
    """Log x for client counts; symlog for idle connections, whose 0 is a real point."""
    if x == "idle_clients":
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlim(left=0)
    else:
        ax.set_xscale("log")
    ax.set_xlabel(_AXIS_LABELS.get(x, x.replace("_", " ")))


def _colours(algorithms: Sequence[object]) -> dict[object, str]:
    """One colour of the default cycle per algorithm, in order of first appearance."""
    unique = list(dict.fromkeys(algorithms))
    return {algorithm: f"C{index % 10}" for index, algorithm in enumerate(unique)}


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
             measurements: pd.DataFrame | None = None) -> Axes:
    """TPS against ``x`` (default: idle clients if they vary, else active clients), log x axis.

    One solid line per algorithm and value of the other varying point keys; an algorithm keeps
    its colour and its series differ by marker. Replicates at the same x are averaged.

    Args:
        curve: one row per point with the point keys and ``tps``.
        x: ``"clients"`` or ``"idle_clients"``.
        ax: the Axes to draw on (a new figure when ``None``).
        measurements: optional measured points, columns ``algorithm, clients, idle_clients,
            measured_tps`` and optionally ``series`` (e.g. the dataset's name); drawn as dashed
            lines with hollow markers in the colour of their algorithm, labelled "measured".

    Raises:
        ValueError: ``measurements`` lacks a required column.
    """
    ax = _axes(ax)
    x = x or _default_x(curve)
    others = _series_keys(curve, x)
    colours = _colours([*curve["algorithm"],
                        *(measurements["algorithm"] if measurements is not None else [])])
    markers: dict[tuple[object, ...], str] = {}
    for (algorithm, *values), group in _grouped(curve, ["algorithm", *others]):
        marker = markers.setdefault(tuple(values), MARKERS[len(markers) % len(MARKERS)])
        points = group.groupby(x, sort=True)["tps"].mean()
        label = ", ".join(filter(None, [str(algorithm), _describe(others, values)]))
        ax.plot(points.index, points.to_numpy(), marker=marker, color=colours[algorithm],
                label=label)
    if measurements is not None:
        _plot_measurements(ax, measurements, x, colours, markers)
    _set_client_axis(ax, x)
    ax.set_ylabel("TPS (transactions/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
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
                       markers: dict[tuple[object, ...], str]) -> None:
    required = ["algorithm", "clients", "idle_clients", "measured_tps"]
    missing = [c for c in required if c not in measurements.columns]
    if missing:
        raise ValueError(f"measurements lack the column(s) {', '.join(missing)}")
    other = "idle_clients" if x == "clients" else "clients"
    keys = [*(["series"] if "series" in measurements.columns else []), "algorithm", other]
    for values, group in _grouped(measurements, keys):
        named = dict(zip(keys, values, strict=True))
        marker = markers.get((named[other],), markers.get((), "o"))
        points = group.groupby(x, sort=True)["measured_tps"].mean()
        name = str(named.get("series", named["algorithm"]))
        if "series" in named and named["series"] != named["algorithm"]:
            name = f"{named['series']} {named['algorithm']}"
        varying = measurements[other].nunique() > 1
        label = f"{name}{', ' + _describe([other], [named[other]]) if varying else ''} (measured)"
        ax.plot(points.index, points.to_numpy(), linestyle="--", marker=marker,
                markerfacecolor="none", color=colours[named["algorithm"]], label=label)


# --------------------------------------------------------------------------------------------
# Bars per point: transfers and time breakdown
# --------------------------------------------------------------------------------------------


def _point_labels(curve: pd.DataFrame) -> list[str]:
    """One tick label per point: the varying point keys, algorithm first."""
    keys = [k for k in ("algorithm", *POINT_KEYS) if k != "seed" and k in curve.columns]
    varying = list(dict.fromkeys(k for k in keys if curve[k].nunique() > 1)) or ["algorithm"]
    labels = []
    for _, row in curve.iterrows():
        parts = [f"{row[k]} {_TICK_UNITS[k]}" if k in _TICK_UNITS else str(row[k])
                 for k in varying]
        labels.append("\n".join(parts))
    return labels


def _stacked_bars(ax: Axes, curve: pd.DataFrame, columns: Sequence[str],
                  labels: Sequence[str]) -> np.ndarray:
    positions = np.arange(len(curve))
    bottom = np.zeros(len(curve))
    for column, label in zip(columns, labels, strict=True):
        values = curve[column].fillna(0).to_numpy(dtype=float)
        ax.bar(positions, values, bottom=bottom, label=label, width=0.7)
        bottom = bottom + values
    ax.set_xticks(positions, _point_labels(curve),
                  fontsize="small" if len(curve) <= 12 else "x-small")
    ax.grid(True, axis="y", alpha=0.3)
    return positions


def _nonzero(curve: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    return [c for c in columns if c in curve.columns and curve[c].fillna(0).abs().sum() > 0]


def plot_transfers(curve: pd.DataFrame, ax: Axes | None = None, *,
                   classes: Sequence[str] | None = None) -> Axes:
    """Accesses per transaction by access class: one stacked bar per point (in table order).

    Classes are the access-class columns (``CLASS_NAMES``) except the private-cache hits
    (:data:`PRIVATE_HIT_CLASSES`) unless ``classes`` names them; classes that are zero at every
    point are omitted. Invalidations per transaction, which are not accesses, are drawn as
    black crosses on the same scale.
    """
    ax = _axes(ax, width=0.9 * len(curve))
    chosen = classes if classes is not None else [c for c in CLASS_NAMES
                                                  if c not in PRIVATE_HIT_CLASSES]
    shown = _nonzero(curve, chosen)
    positions = _stacked_bars(ax, curve, shown, [c.replace("_", " ") for c in shown])
    if "invalidations" in curve.columns and curve["invalidations"].fillna(0).sum() > 0:
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
    for values, group in _grouped(ratios, others):
        points = group.sort_values(x)
        ax.plot(points[x], points[name], marker="o", label=_describe(others, values) or name)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    _set_client_axis(ax, x)
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
