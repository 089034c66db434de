"""Plots of result DataFrames; every function draws on (and returns) a matplotlib Axes.

No file I/O and no ``plt.show()``: notebooks display the Axes, the CLI saves the figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def _axes(ax: Axes | None) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, new = plt.subplots(figsize=(7, 4.5))
    return new


def plot_tps(curve: pd.DataFrame, x: str | None = None, ax: Axes | None = None) -> Axes:
    """TPS against ``x`` (default: idle clients if they vary, else clients), log x axis.

    One line per (algorithm, other parameter value).
    """
    ax = _axes(ax)
    if x is None:
        x = "idle_clients" if curve["idle_clients"].nunique() > 1 else "clients"
    other = "clients" if x == "idle_clients" else "idle_clients"
    for (algorithm, value), group in curve.sort_values(x).groupby(["algorithm", other]):
        label = f"{algorithm}, {other.replace('_', ' ')}={value}"
        ax.plot(group[x].clip(lower=1) if x == "idle_clients" else group[x], group["tps"],
                marker="o", label=label)
    ax.set_xscale("symlog" if x == "idle_clients" else "log")
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel("TPS")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return ax
