"""A self-contained HTML page of a finished run: what ran, the plots, the tables, the settings.

:func:`write_report` reads a ``snapsim run`` output directory and writes one HTML file that needs
nothing else (the plots are embedded as PNG data, there is no script, stylesheet or image to
fetch), so that it can be mailed or attached to a mailing-list post:

* a heading naming the experiment, machine, workload and window, and first the results: the
  TPS of every point (active clients and idle connections against the algorithms, the mean over
  the seeds, ``*`` for a point not precise enough to trust);
* the plots the run drew (``tps.png``, ``transfers.png``, ``breakdown.png``, ``ratio.png``);
* the curve (every point's keys, TPS, latencies and time per transaction by category, without
  the columns that hold one value throughout, so that it fits the page), each column's unit and
  meaning on hover (``columns.yaml``);
* when a point has several root seeds, per point its TPS and latencies as the mean over the
  seeds ± the half-width of the 95 % interval of the mean
  (:func:`~simulator.analysis.summary.curve_summary`, as ``curve_summary.csv``);
* per point, the lines with the most HITMs in perf c2c terms
  (:func:`~simulator.analysis.c2c.c2c_table`);
* last, the run's metadata (snapsim version and commit, Python and packages, the machine file's
  hash, start and wall time, command line) from ``metadata.yaml`` and the resolved
  configuration (``config.resolved.yaml``).

Left out: interactive plots, the per-line table beyond the top lines of each point, and runs
that did not finish (a directory without ``curve.csv`` is refused).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from simulator.analysis.c2c import c2c_table
from simulator.analysis.columns import SUMMARY_KEYS
from simulator.analysis.summary import curve_summary
from simulator.config.files import atomic_write
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.study.outputs import plot_title, read_curve, read_lines

__all__ = ["PLOTS", "write_report"]

PLOTS = ("tps.png", "transfers.png", "breakdown.png", "ratio.png")
"""The figures a report embeds when the run has them, in this order."""

CURVE_COLUMNS = ("machine", "algorithm", "workload", "clients", "idle_clients", "idle_kind",
                 "root_seed", "tps", "latency_mean_us", "latency_p99_us", "cpu_utilisation")
"""The curve columns shown first; every ``*_us`` time-per-transaction column follows."""

SEED_COLUMNS = ("tps", "latency_mean_us", "latency_p99_us")
"""The columns the table over the seeds shows as mean ± half-width."""

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 80em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }
th { background: #eee; }
div.wide { max-width: 100%; overflow-x: auto; }
td.text, th.text { text-align: left; }
img { max-width: 100%; border: 1px solid #ddd; margin-bottom: 1em; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 0.85em; }
"""


def _mapping(path: Path) -> Mapping[str, object]:
    if not path.exists():
        return {}
    data = read_yaml(path)
    return data if isinstance(data, Mapping) else {}


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return html.escape(str(value))


def _table(frame: pd.DataFrame, meanings: Mapping[str, object]) -> str:
    """An HTML table; a column's meaning (``columns.yaml``) is its header's tooltip."""
    head = []
    for column in frame.columns:
        meaning = meanings.get(str(column))
        tip = ""
        if isinstance(meaning, Mapping):
            tip = f"{meaning.get('unit', '')}: {meaning.get('meaning', '')}".strip(": ")
        kind = "text" if frame[column].dtype == object else "num"
        name = html.escape(str(column)).replace("_", "_<wbr>")  # a long name breaks at a _
        head.append(f'<th class="{kind}" title="{html.escape(tip)}">{name}</th>')
    rows = []
    for _, row in frame.iterrows():
        cells = [f'<td class="{"text" if isinstance(v, str) else "num"}">{_cell(v)}</td>'
                 for v in row]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return ("<table><thead><tr>" + "".join(head) + "</tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>")


def _image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{html.escape(path.name)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{html.escape(path.name)}'
            "</figcaption></figure>")


def _metadata_rows(metadata: Mapping[str, object]) -> str:
    rows = []
    for key, value in metadata.items():
        if isinstance(value, Mapping):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        rows.append(f'<tr><th class="text">{html.escape(str(key))}</th>'
                    f'<td class="text">{html.escape(str(value))}</td></tr>')
    return "<table>" + "".join(rows) + "</table>"


def _curve_frame(curve: pd.DataFrame) -> pd.DataFrame:
    """:data:`CURVE_COLUMNS` and the time-per-transaction columns that vary.

    A column with one value in every row (the machine, the workload: the page's first line
    names them) is left out, so that the table fits the page.
    """
    shown = [c for c in CURVE_COLUMNS if c in curve.columns]
    shown += [c for c in curve.columns if str(c).endswith("_us") and c not in shown]
    if len(curve) > 1:
        kept = ("algorithm", "clients", "idle_clients", "tps")
        shown = [c for c in shown if c in kept or curve[c].nunique(dropna=False) > 1]
    return curve[shown]


def _tps_table(curve: pd.DataFrame) -> str:
    """The TPS of every point as ``snapsim run`` prints it, the mean over the seeds.

    Active clients and idle connections against the algorithms; ``*`` marks a point not precise
    enough to trust.
    """
    needed = {"algorithm", "clients", "idle_clients", "tps"}
    if not needed <= set(curve.columns) or curve.empty:
        return "<p>No TPS in this run's curve.</p>"
    ok = curve[curve["tps"].notna()]
    if ok.empty:
        return "<p>Every point of this run failed.</p>"
    keys = ["clients", "idle_clients"]
    table = ok.pivot_table(index=keys, columns="algorithm", values="tps", aggfunc="mean",
                           sort=False)
    short: set[tuple[object, ...]] = set()
    if "window_converged" in ok.columns:
        unconverged = ok[ok["window_converged"].astype(str).str.lower() == "false"]
        short = {(row.algorithm, row.clients, row.idle_clients)
                 for row in unconverged.itertuples()}
    rows = []
    for index, values in table.iterrows():
        clients, idle = index if isinstance(index, tuple) else (index, 0)
        cells = [f'<td class="num">{int(clients):,}</td>', f'<td class="num">{int(idle):,}</td>']
        for algorithm, tps in values.items():
            text = "-" if pd.isna(tps) else f"{tps:,.0f}"
            if (algorithm, clients, idle) in short:
                text += " *"
            cells.append(f'<td class="num">{html.escape(text)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f'<th class="num">{html.escape(str(c))}</th>'
                   for c in ("clients", "idle clients", *table.columns))
    note = ("<p>* not precise enough to trust (<code>window_converged</code> false: the 95 % "
            "interval of its TPS, <code>tps_ci_rel</code>, is wider than its target): run with "
            "--precision 0.02, or a longer duration_ms.</p>" if short else "")
    return (f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            + note)


def _seeds_frame(curve: pd.DataFrame) -> pd.DataFrame | None:
    """Per point, :data:`SEED_COLUMNS` as ``mean ± half-width``; ``None`` with one seed each."""
    summary = curve_summary(curve)
    if summary.empty or summary["n_seeds"].max() < 2:
        return None
    frame = summary[[k for k in (*SUMMARY_KEYS, "n_seeds", "n_failed") if k in summary.columns]]
    frame = frame.copy()
    for column in SEED_COLUMNS:
        if f"{column}_mean" not in summary.columns:
            continue
        cells = []
        for mean, high in zip(summary[f"{column}_mean"], summary[f"{column}_high"], strict=True):
            text = "-" if pd.isna(mean) else _cell(float(mean))
            if not pd.isna(high):
                text += f" \u00b1 {_cell(float(high - mean))}"
            cells.append(text)
        frame[column] = cells
    return frame


def _hot_lines(lines: pd.DataFrame, top: int) -> str:
    if lines.empty or "label" not in lines.columns:
        return "<p>No per-line table in this run.</p>"
    table = c2c_table(lines, top=top)
    keys = [k for k in ("algorithm", "clients", "idle_clients", "seed") if k in table.columns]
    point = [k for k in keys if k != "seed"]
    if "seed" in keys and point and table.groupby(point)["seed"].nunique().max() == 1:
        keys = point  # one seed per point: its derived 19-digit number says nothing
    columns = [c for c in ("label", "tot_hitm", "rmt_hitm", "lcl_hitm", "stores", "loads",
                           "rmws", "invalidations", "fields_written") if c in table.columns]
    parts = []
    groups: Sequence[tuple[object, pd.DataFrame]] = (
        list(table.groupby(keys, sort=False)) if keys else [((), table)])
    for values, group in groups:
        named = dict(zip(keys, values if isinstance(values, tuple) else (values,), strict=True))
        title = ", ".join(f"{k} {v}" for k, v in named.items())
        parts.append(f"<h3>{html.escape(title)}</h3>" + _table(group[columns], {}))
    return "".join(parts)


def report_html(directory: Path, top_lines: int = 5) -> str:
    """The report of the run in ``directory`` as one HTML document.

    Raises:
        ConfigError: ``directory`` is not a finished run (no readable ``curve.csv``).
    """
    curve = read_curve(directory)
    resolved = _mapping(directory / "config.resolved.yaml")
    metadata = _mapping(directory / "metadata.yaml")
    columns = _mapping(directory / "columns.yaml")
    meanings = columns.get("curve.csv", {})
    lines_path = directory / "lines.csv"
    lines = (read_lines(directory) if lines_path.exists() and lines_path.stat().st_size > 1
             else pd.DataFrame())
    name = str(resolved.get("name", directory.name))
    window = ((float(str(resolved["duration_ms"])), float(str(resolved["warmup_ms"])))
              if {"duration_ms", "warmup_ms"} <= set(resolved) else None)
    what = plot_title(curve, window)  # the plots' own title
    seeds = _seeds_frame(curve)
    summary_meanings = columns.get("curve_summary.csv", {})
    seed_meanings = {**(meanings if isinstance(meanings, Mapping) else {}),
                     **(summary_meanings if isinstance(summary_meanings, Mapping) else {})}
    figures = "".join(_image(directory / p) for p in PLOTS if (directory / p).exists())
    config_text = ((directory / "config.resolved.yaml").read_text(encoding="utf-8")
                   if (directory / "config.resolved.yaml").exists() else "(none)")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>snapsim: {html.escape(name)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>snapsim run: {html.escape(name)}</h1>",
        f"<p>{html.escape(what)}; {len(curve)} point(s).</p>",
        "<h2>TPS</h2>", _tps_table(curve),
        "<h2>Plots</h2>", figures or "<p>No plot in this run.</p>",
        "<h2>Curve</h2>",
        "<p>One row per point; hover over a column's name for its unit and meaning "
        "(<code>curve.csv</code> has every column).</p>",
        '<div class="wide">',
        _table(_curve_frame(curve), meanings if isinstance(meanings, Mapping) else {}),
        "</div>",
        *([] if seeds is None else [
            "<h2>Over the seeds</h2>",
            "<p>Per point, the mean over its successful seeds \u00b1 the half-width of the 95 % "
            "interval of the mean (<code>curve_summary.csv</code> has every column).</p>",
            _table(seeds, seed_meanings)]),
        f"<h2>Hot lines (top {top_lines} per point by total HITMs)</h2>",
        _hot_lines(lines, top_lines),
        "<h2>Run</h2>", _metadata_rows(metadata) if metadata else "<p>No metadata.yaml.</p>",
        "<h2>Resolved configuration</h2>", f"<pre>{html.escape(config_text)}</pre>",
        "</body></html>",
    ]) + "\n"


def report_contents(directory: Path) -> list[str]:
    """What the report of ``directory`` shows beside its TPS and curve, by what the run wrote.

    For example ``['plots', 'hot lines', 'configuration', 'run metadata']``; a partial
    directory (only ``curve.csv``) gives ``[]``.
    """
    lines = directory / "lines.csv"
    present = {
        "plots": any((directory / plot).exists() for plot in PLOTS),
        "hot lines": lines.exists() and lines.stat().st_size > 1,
        "configuration": (directory / "config.resolved.yaml").exists(),
        "run metadata": (directory / "metadata.yaml").exists(),
    }
    return [name for name, there in present.items() if there]


def write_report(directory: Path, out: Path | None = None, top_lines: int = 5) -> Path:
    """Write the report of the run in ``directory`` (default ``DIR/report.html``), atomically.

    Raises:
        ConfigError: not a finished run, or ``out`` cannot be written.
    """
    target = out or directory / "report.html"
    text = report_html(directory, top_lines)
    try:
        return atomic_write(target, lambda path: path.write_text(text, encoding="utf-8"))
    except OSError as exc:
        raise ConfigError("--out", f"cannot write {target}: {exc.strerror or exc}") from None
