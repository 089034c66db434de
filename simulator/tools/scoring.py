"""How a validation is judged: errors against thresholds, ratios against tolerances, the gate.

:func:`summarise` gives per dataset and series the median and maximum absolute relative error of
:mod:`simulator.tools.validate`'s point table against the manifest's thresholds
(:data:`SUMMARY_COLUMNS`), with the outcome of a series the manifest marks ``expected: fail`` (a
known gap, gated like pytest's strict xfail: ``expected fail`` while it fails, ``unexpected
pass`` once it passes); :func:`score_ratios` scores the published ratios (:data:`RATIO_COLUMNS`);
:func:`gate_passes` is the command's exit status; :func:`plot_validation` draws one
predicted-vs-measured plot per dataset and a scatter of every point; and
:func:`validation_provenance` hashes what a validation depends on, so that ``snapsim validate
--check`` can say when a shipped one is stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from simulator.analysis.plotting import plot_tps, tps_panels
from simulator.config.machine_file import load_machine
from simulator.measure.manifest import Manifest
from simulator.study.code_hash import code_hash
from simulator.study.outputs import algorithm_colours, plot_title, save_png
from simulator.study.provenance import (
    MODEL_CODE,
    Provenance,
    files_provenance,
    machine_hash,
)
from simulator.study.store import document_hash
from simulator.study.workload_model import workload_model

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SUMMARY_COLUMNS = ("dataset", "series", "algorithm", "points", "median_abs_rel_error",
                   "max_abs_rel_error", "passed", "expected", "outcome", "reason", "unconverged",
                   "inside_interval")
"""Columns of :func:`summarise`: ``passed`` (within both thresholds), ``expected`` (``pass`` or
``fail``, from the manifest), ``outcome`` (one of :data:`OUTCOMES`), ``reason`` (the manifest's
reason of an expected failure, else empty), ``unconverged`` (scored points whose window did
not converge: their error may be the window's, not the model's) and ``inside_interval`` (scored
points whose measured TPS lies inside the model's 95 % interval over the seeds; empty with one
seed)."""
OUTCOMES = ("pass", "fail", "expected fail", "unexpected pass")
"""``outcome`` of a series: as expected (``pass``, ``expected fail``) or not (the other two)."""
FAILING_OUTCOMES = ("fail", "unexpected pass")
RATIO_COLUMNS = ("ratio", "machine", "workload", "batch", "clients", "idle_clients", "idle_kind",
                 "numerator", "denominator", "numerator_tps", "denominator_tps", "published",
                 "predicted", "rel_error", "tolerance", "passed", "expected", "outcome", "reason",
                 "error", "duration_ms", "warmup_ms", "window_converged", "numerator_wall_s",
                 "denominator_wall_s", "seeds", "predicted_low", "predicted_high")
"""Columns of a ratio's row (``ratios.csv``): its configuration (``batch``: the ``options.batch``
of both points, empty when the manifest gives none), the two sides' labels (an algorithm, ``with``
its ``set:`` overrides) and simulated TPS, ``published`` and ``predicted`` (numerator TPS /
denominator TPS), ``rel_error`` (predicted / published - 1), ``tolerance`` (relative),
``passed`` (``|rel_error| <= tolerance``), ``expected``, ``outcome`` and ``reason`` as in
:data:`SUMMARY_COLUMNS`, ``error`` (a failed simulation's), the window, ``window_converged``
(both points' windows converged) and each point's wall time in seconds (a point shared with a
curve or another ratio is simulated once and shows its one wall time in each row; summed over
the seeds). With several seeds the two TPS are means over the ``seeds`` seeds and
``predicted_low`` / ``predicted_high`` the 95 % interval of their ratio (delta method; empty
with one seed)."""


def score_ratios(rows: pd.DataFrame) -> pd.DataFrame:
    """Score ratio rows (:data:`RATIO_COLUMNS`; ``predicted`` and the outcome are computed).

    ``predicted`` is ``numerator_tps / denominator_tps`` (NaN when a point failed, which
    fails the ratio); it passes when ``|predicted / published - 1| <= tolerance``; a non-empty
    ``reason`` marks it ``expected: fail``.
    """
    table = rows.reindex(columns=list(RATIO_COLUMNS))
    if table.empty:
        return table
    table["batch"] = table["batch"].astype("Int64")
    table["predicted"] = (table["numerator_tps"].astype(float)
                          / table["denominator_tps"].astype(float))
    table["rel_error"] = table["predicted"] / table["published"].astype(float) - 1
    table["passed"] = (table["rel_error"].abs() <= table["tolerance"].astype(float)).astype(bool)
    table["reason"] = table["reason"].fillna("").astype(str)
    table["expected"] = ["fail" if reason else "pass" for reason in table["reason"]]
    table["outcome"] = [outcome(str(expected), bool(passed)) for expected, passed in
                        zip(table["expected"], table["passed"], strict=True)]
    table["error"] = table["error"].fillna("").astype(str)
    return table


def outcome(expected: str, passed: bool) -> str:
    """The outcome (:data:`OUTCOMES`) of a series or ratio expected to ``pass`` or ``fail``."""
    return {("pass", True): "pass", ("pass", False): "fail", ("fail", False): "expected fail",
            ("fail", True): "unexpected pass"}[expected, passed]


def summarise(table: pd.DataFrame, manifest: Manifest) -> pd.DataFrame:
    """Per dataset and series: points, median and max absolute relative error, pass/fail.

    Work-scale points are left out; a failed simulation counts as an error of infinity.
    """
    rows = []
    for (dataset, series), group in table.groupby(["dataset", "series"], sort=False):
        scored = group[~group["work_scale_point"]]
        errors = scored["rel_error"].abs().fillna(np.inf)
        median = float(errors.median()) if len(errors) else float("nan")
        worst = float(errors.max()) if len(errors) else float("nan")
        passed = bool(median <= manifest.median_abs_rel_error
                      and worst <= manifest.max_abs_rel_error)
        reason = manifest.dataset(str(dataset)).known_gaps.get(str(series), "")
        expected = "fail" if reason else "pass"
        rows.append({
            "dataset": dataset, "series": series, "algorithm": group["algorithm"].iloc[0],
            "points": len(scored), "median_abs_rel_error": median, "max_abs_rel_error": worst,
            "passed": passed, "expected": expected, "outcome": outcome(expected, passed),
            "reason": reason,
            "unconverged": int((~scored["window_converged"].astype(bool)).sum())
            if "window_converged" in scored else 0,
            "inside_interval": _inside(scored),
        })
    summary = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    summary["inside_interval"] = summary["inside_interval"].astype("Int64")
    return summary


def _inside(scored: pd.DataFrame) -> int | None:
    """Scored points whose measured TPS lies in the model's interval (``None``: no interval)."""
    if "measured_inside" not in scored:
        return None
    known = scored["measured_inside"].dropna()
    return int(known.astype(bool).sum()) if len(known) else None


def gate_passes(summary: pd.DataFrame, ratios: pd.DataFrame | None = None) -> bool:
    """Whether every series and ratio came out as expected: no fail, no unexpected pass."""
    tables = [summary] if ratios is None else [summary, ratios]
    return not any(table["outcome"].isin(FAILING_OUTCOMES).any() for table in tables)


def plot_validation(table: pd.DataFrame, directory: Path) -> list[Path]:
    """One predicted-vs-measured plot per dataset and a scatter of every point."""
    import matplotlib  # only when plotting: importing it is slow

    matplotlib.use("Agg")
    written = []
    colours = algorithm_colours()
    for dataset, group in table.groupby("dataset", sort=False):
        ok = group[group["predicted_tps"].notna()]
        if ok.empty:
            continue
        predicted = (ok.drop(columns=["measured_tps"])
                     .rename(columns={"predicted_tps": "tps"})
                     .drop_duplicates(["series", "clients", "idle_clients"]))
        measured = ok[["algorithm", "clients", "idle_clients", "measured_tps", "series"]]
        panels = tps_panels(predicted, measured)

        def draw(figure: Figure, panels: list[tuple[str, pd.DataFrame, pd.DataFrame | None]]
                 = panels, dataset: object = dataset, title: str = plot_title(ok)) -> None:
            figure.suptitle(title)
            for index, (panel, part, measurements) in enumerate(panels, start=1):
                ax = plot_tps(part, ax=figure.add_subplot(len(panels), 1, index),
                              measurements=measurements, colours=colours)
                suffix = f", {panel}" if panel else ""
                ax.set_title(f"{dataset}{suffix}: predicted (solid) vs measured (dashed)")

        written.append(save_png(directory / f"validation_{dataset}.png", draw,
                                size=(8, 4.5 * len(panels))))

    def scatter(figure: Figure) -> None:
        ax = figure.add_subplot()
        for dataset, group in table.groupby("dataset", sort=False):
            ax.scatter(group["measured_tps"], group["predicted_tps"], label=str(dataset), s=18)
        bounds = [float(table[["measured_tps", "predicted_tps"]].min().min()),
                  float(table[["measured_tps", "predicted_tps"]].max().max())]
        ax.plot(bounds, bounds, color="grey", linewidth=1, label="predicted = measured")
        for factor in (0.75, 1.25):
            ax.plot(bounds, [b * factor for b in bounds], color="grey", linestyle=":",
                    linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("measured TPS")
        ax.set_ylabel("predicted TPS")
        ax.legend(fontsize="small")
        ax.grid(True, which="both", alpha=0.3)

    written.append(save_png(directory / "validation_scatter.png", scatter, size=(6, 6)))
    return written


def validation_provenance(manifest: Manifest, recipe: Mapping[str, object]) -> Provenance:
    """What a validation of ``manifest`` run as ``recipe`` says depends on, hashed.

    ``recipe``: the run's settings (``seeds``, ``precision``, ``max_duration_ms``,
    ``duration_ms``, ``warmup_ms``, ``set``, ``machine_set``, ``dataset``, ``ratio``). The
    model's code, the manifest and every dataset file it names, every machine it names (loaded
    with ``machine_set``), the model's default options (the global cost file) and the settings.
    """
    machine_set = [str(item) for item in _items(recipe.get("machine_set"))]
    base = manifest.path.parent
    items: Provenance = {MODEL_CODE: code_hash()}
    items.update(files_provenance([manifest.path, *(d.path for d in manifest.datasets.values())],
                                  base))
    names = dict.fromkeys([*(d.machine for d in manifest.datasets.values()),
                           *(r.machine for r in manifest.ratios.values())])
    for name in names:
        machine = load_machine(name, machine_set)
        items[f"machine {machine.name}"] = machine_hash(machine)
    items["options"] = document_hash(dict(workload_model().resolve_options({})))
    items["settings"] = document_hash(dict(recipe))
    return items


def _items(value: object) -> list[object]:
    """A recipe's list (``None``: empty)."""
    return list(value) if isinstance(value, list | tuple) else []
