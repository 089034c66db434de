"""Two finished run directories side by side, without running anything.

:func:`compare_runs` reads both directories' ``curve.csv`` and ``lines.csv`` and builds the
ratio curve and the per-line differences (:mod:`simulator.analysis.compare`);
:func:`write_comparison` writes ``compare.csv``, ``compare_lines.csv`` and ``compare.png`` (both
runs' values and the ratio B / A), each atomically.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from simulator.analysis import plotting
from simulator.analysis.compare import NoCommonPointError, compare_curves, compare_lines, match_keys
from simulator.config.files import atomic_write
from simulator.errors import ConfigError
from simulator.study.outputs import (
    check_finished,
    read_curve,
    read_lines,
    save_png,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COMPARE_FILES = ("compare.csv", "compare_lines.csv", "compare.png")


@dataclass(frozen=True, slots=True)
class Comparison:
    """Run B against run A: the ratio curve and the per-line differences."""

    directory_a: Path
    directory_b: Path
    key: str
    """The compared curve column (``tps`` by default)."""
    curve: pd.DataFrame
    """:func:`~simulator.analysis.compare.compare_curves` of the two runs."""
    lines: pd.DataFrame
    """:func:`~simulator.analysis.compare.compare_lines` of the two runs."""
    differ: tuple[str, ...]
    """The point keys whose values the two runs do not share (what they compare)."""


def compare_runs(directory_a: Path, directory_b: Path, key: str = "tps") -> Comparison:
    """Compare two finished ``snapsim run`` directories.

    Raises:
        ConfigError: a directory is not a finished run (``DIR_A``/``DIR_B``), ``key`` is not a
            numeric column of both curves (``--key``), or the runs share no successful point.
    """
    curves = []
    lines = []
    for name, directory in (("DIR_A", directory_a), ("DIR_B", directory_b)):
        check_finished(directory, name)
        curve = read_curve(directory)
        if key not in curve.columns or not pd.api.types.is_numeric_dtype(curve[key]):
            raise ConfigError("--key", f"{key!r} is not a numeric column of {directory}/curve.csv")
        curves.append(curve)
        lines.append(read_lines(directory) if (directory / "lines.csv").stat().st_size > 1
                     else pd.DataFrame(columns=["label"]))
    try:
        ratio = compare_curves(curves[0], curves[1], key)
    except NoCommonPointError as exc:
        raise ConfigError("DIR_B", f"{directory_b} and {directory_a} have {exc}") from None
    per_line = compare_lines(curves[0], lines[0], curves[1], lines[1])
    _, differ = match_keys(curves[0], curves[1])
    return Comparison(directory_a=directory_a, directory_b=directory_b, key=key, curve=ratio,
                      lines=per_line, differ=tuple(differ))


def write_comparison(comparison: Comparison, out: Path) -> list[Path]:
    """Write ``compare.csv``, ``compare_lines.csv`` and ``compare.png`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = [
        atomic_write(out / "compare.csv",
                         lambda path: comparison.curve.to_csv(path, index=False)),
        atomic_write(out / "compare_lines.csv",
                         lambda path: comparison.lines.to_csv(path, index=False)),
    ]
    import matplotlib

    matplotlib.use("Agg")
    written.append(save_png(out / "compare.png", lambda figure: _draw(figure, comparison),
                            size=(8, 8)))
    return written


def x_column(curve: pd.DataFrame) -> str:
    """The swept axis of a comparison: ``idle_clients`` when it varies, else ``clients``."""
    return "idle_clients" if curve["idle_clients"].nunique() > 1 else "clients"


def series(curve: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The comparison's rows grouped into curves along :func:`x_column`, each with a label."""
    x = x_column(curve)
    others = [c for c in curve.columns if c in ("clients", "idle_clients", "algorithm",
                                                 "algorithm_a", "algorithm_b", "root_seed")
              and c != x and curve[c].nunique() > 1]
    if not others:
        return [("", curve.sort_values(x))]
    return [(", ".join(f"{c}={v}" for c, v in zip(others, values if isinstance(values, tuple)
                                                   else (values,), strict=True)),
             part.sort_values(x))
            for values, part in curve.groupby(others, sort=False)]


def _draw(figure: Figure, comparison: Comparison) -> None:
    curve, key = comparison.curve, comparison.key
    x = x_column(curve)
    figure.suptitle(f"B: {comparison.directory_b.name} against A: "
                    f"{comparison.directory_a.name} \u00b7 {key}")
    top = figure.add_subplot(2, 1, 1)
    bottom = figure.add_subplot(2, 1, 2, sharex=top)
    zero = plotting.zero_position(curve[x].to_numpy()) if x == "idle_clients" else None
    for label, part in series(curve):
        suffix = f" ({label})" if label else ""
        where = plotting.place_zero(part[x].to_numpy(), zero)
        top.plot(where, part[f"{key}_a"], marker="o", label=f"A: {comparison.directory_a.name}"
                 f"{suffix}")
        top.plot(where, part[f"{key}_b"], marker="s", linestyle="--",
                 label=f"B: {comparison.directory_b.name}{suffix}")
        bottom.plot(where, part["ratio"], marker="o", label=label or None)
    bottom.axhline(1.0, color="grey", linewidth=0.8)
    plotting.set_client_axis(bottom, x, zero)
    top.tick_params(axis="x", labelbottom=False)
    top.set_ylabel(key)
    plotting.plain_numbers(top)
    top.legend(fontsize="small")
    bottom.set_ylabel(f"{key}: B / A")
    if any(label for label, _ in series(curve)):
        bottom.legend(fontsize="small")
