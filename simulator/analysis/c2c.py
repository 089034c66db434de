"""The per-line report in perf c2c terms (the library of ``snapsim c2c DIR``).

perf c2c's "Shared Data Cache Line Table" lists the cache lines with the most HITMs (loads that
hit a line modified in another core's cache), one row per line, sorted by remote HITM by
default (``perf-c2c(1)``, option ``-d``/``--display``). :func:`c2c_table` builds that table from a
simulated per-line table (``Result.lines`` or ``DIR/lines.csv``), one section per point, with
what perf cannot give: every line's label and the fields its accesses read and wrote, so a HITM
can be read as true sharing (same field) or false sharing (another field of the same line;
``false_sharing_hitm`` counts the HITMs whose bytes did not overlap the dirty ones).

Columns, per line: ``rmt_hitm`` (HITMs from another socket), ``lcl_hitm`` (from the same
socket, any L3 domain), ``tot_hitm``, ``hitm_pct`` (the line's percentage of the point's HITMs
of the kind sorted on, perf's "Rmt/Lcl Hitm" column), ``false_sharing_hitm``, ``stores``,
``loads``, ``rmws`` (locked read-modify-writes), ``invalidations`` (copies removed from other
cores), ``fields_read`` and ``fields_written``.

What it leaves out, compared with perf c2c: sampling (the simulator counts every access), the
"Trace Event Information" and "Pareto" tables (offsets, code addresses, pids, cycles), the load
and store hit-level breakdown columns, and perf's filter to lines with HITMs or stores (every
tracked line is listed; zero lines sort last). The counts are totals over the measured window
of the simulated run (the warm-up is excluded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.analysis.columns import POINT_KEYS
from simulator.errors import ConfigError

__all__ = [
    "C2C_COLUMNS",
    "SORT_KEYS",
    "c2c_table",
    "format_report",
    "lines_per_point",
    "read_run",
    "select_points",
    "with_transactions",
]

SORT_KEYS: dict[str, str] = {"rmt": "rmt_hitm", "lcl": "lcl_hitm", "tot": "tot_hitm"}
"""``--sort`` choices and the column each sorts on (perf c2c's ``-d rmt|lcl|tot``)."""

C2C_COLUMNS = ("line_index", "cacheline", "label", "rmt_hitm", "lcl_hitm", "tot_hitm",
               "hitm_pct", "false_sharing_hitm", "stores", "loads", "rmws", "invalidations",
               "fields_read", "fields_written")
"""Columns of :func:`c2c_table` after the point keys."""

_REQUIRED = ("label", "local_hitm", "remote_hitm")
_COUNTS = ("false_sharing_hitm", "stores", "loads", "rmws", "invalidations")
_HEADERS = {"line_index": "Index", "cacheline": "Cacheline", "label": "Label",
            "rmt_hitm": "Rmt HITM", "lcl_hitm": "Lcl HITM", "tot_hitm": "Total HITM",
            "false_sharing_hitm": "False-sharing HITM", "stores": "Stores", "loads": "Loads",
            "rmws": "RMWs", "invalidations": "Invalidations", "fields_read": "Fields read",
            "fields_written": "Fields written"}
_PCT_HEADERS = {"rmt": "Rmt HITM %", "lcl": "Lcl HITM %", "tot": "Tot HITM %"}
_TEXT = {"cacheline", "label", "fields_read", "fields_written"}


def c2c_table(lines: pd.DataFrame, sort: str = "tot", *, top: int | None = None) -> pd.DataFrame:
    """The Shared Data Cache Line Table of every point of a per-line table.

    Args:
        lines: one row per line (and point): ``label``, ``local_hitm`` (every same-socket HITM),
            ``remote_hitm`` and optionally ``address``, the counts of :data:`C2C_COLUMNS`, the
            field lists and the point keys; missing counts are 0.
        sort: ``"rmt"``, ``"lcl"`` or ``"tot"``: the HITM kind to sort on, most first (ties
            by total HITM, invalidations, stores and RMWs, loads, then address).
        top: keep this many lines per point (all when ``None``).

    Returns:
        The point keys present in ``lines``, then :data:`C2C_COLUMNS`; points in their order of
        appearance, ``line_index`` counting from 0 within each point.

    Raises:
        ValueError: an unknown ``sort``, ``top`` < 1, or a required column is missing.
    """
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}, got {sort!r}")
    if top is not None and top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    missing = [column for column in _REQUIRED if column not in lines.columns]
    if missing:
        raise ValueError(f"the lines table has no {', '.join(missing)} column")
    keys = [k for k in POINT_KEYS if k in lines.columns]
    table = _line_columns(lines)
    sections = [_section(group, SORT_KEYS[sort], top)
                for _, group in _point_groups(pd.concat([lines[keys], table], axis=1), keys)]
    if not sections:
        return pd.DataFrame(columns=[*keys, *C2C_COLUMNS])
    return pd.concat(sections, ignore_index=True)[[*keys, *C2C_COLUMNS]]


def _line_columns(lines: pd.DataFrame) -> pd.DataFrame:
    def count(column: str) -> pd.Series:
        if column not in lines.columns:
            return pd.Series(0, index=lines.index, dtype="int64")
        return lines[column].fillna(0).astype("int64")

    address = (pd.to_numeric(lines["address"], errors="coerce") if "address" in lines.columns
               else pd.Series(float("nan"), index=lines.index))
    table = pd.DataFrame(index=lines.index)
    table["cacheline"] = [f"{int(a):#x}" if pd.notna(a) else "" for a in address]
    table["label"] = lines["label"].fillna("").astype(str)
    table["rmt_hitm"] = count("remote_hitm")
    table["lcl_hitm"] = count("local_hitm")
    table["tot_hitm"] = table["rmt_hitm"] + table["lcl_hitm"]
    for column in _COUNTS:
        table[column] = count(column)
    for column in ("fields_read", "fields_written"):
        table[column] = (lines[column].fillna("").astype(str) if column in lines.columns
                         else pd.Series("", index=lines.index))
    table["_address"] = address
    return table


def _point_groups(frame: pd.DataFrame, keys: list[str]) -> list[tuple[object, pd.DataFrame]]:
    if not keys:
        return [((), frame)]
    return list(frame.groupby(keys, sort=False, dropna=False))


def _section(group: pd.DataFrame, sort_column: str, top: int | None) -> pd.DataFrame:
    ordered = group.assign(_writes=group["stores"] + group["rmws"]).sort_values(
        [sort_column, "tot_hitm", "invalidations", "_writes", "loads", "_address"],
        ascending=[False, False, False, False, False, True], kind="stable")
    total = ordered[sort_column].sum()
    ordered["hitm_pct"] = 100.0 * ordered[sort_column] / total if total > 0 else 0.0
    ordered["line_index"] = range(len(ordered))
    if top is not None:
        ordered = ordered.head(top)
    return ordered.drop(columns=["_writes", "_address"])


def select_points(lines: pd.DataFrame, *, algorithm: Sequence[str] | None = None,
                  clients: Sequence[int] | None = None,
                  idle_clients: Sequence[int] | None = None) -> pd.DataFrame:
    """The rows of the points whose algorithm, clients and idle clients are among those given.

    Raises:
        ConfigError: a filter names a column the table lacks, or matches no point (the message
            lists the values present).
    """
    selected = lines
    for key, wanted in (("algorithm", algorithm), ("clients", clients),
                        ("idle_clients", idle_clients)):
        if wanted is None:
            continue
        option = "--" + key.replace("_", "-")
        if key not in selected.columns:
            raise ConfigError(option, f"the per-line table has no {key!r} column")
        kept = selected[selected[key].isin(list(wanted))]
        if kept.empty:
            present = ", ".join(str(v) for v in sorted(selected[key].unique()))
            asked = ", ".join(str(v) for v in wanted)
            raise ConfigError(option, f"no point has {asked} (present: {present})")
        selected = kept
    return selected


# --------------------------------------------------------------------------------------------
# Reading a run directory and printing the report
# --------------------------------------------------------------------------------------------


def read_run(directory: str | Path) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """``DIR/lines.csv`` and, if present, ``DIR/curve.csv``.

    Raises:
        ConfigError: the directory or ``lines.csv`` does not exist, a file cannot be parsed, or
            ``lines.csv`` lacks a required column (each message names the path).
    """
    path = Path(directory)
    if not path.is_dir():
        raise ConfigError("", "no such directory", str(path))
    lines_path = path / "lines.csv"
    if not lines_path.is_file():
        raise ConfigError("", "no such file (the per-line table that snapsim run writes)",
                          str(lines_path))
    lines = _read_csv(lines_path)
    for column in _REQUIRED:
        if column not in lines.columns:
            raise ConfigError(column, "missing column", str(lines_path))
    curve_path = path / "curve.csv"
    curve = _read_csv(curve_path) if curve_path.is_file() else None
    return lines, curve


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, keep_default_na=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"cannot read: {exc}", str(path)) from None


def with_transactions(table: pd.DataFrame, curve: pd.DataFrame | None) -> pd.DataFrame:
    """``table`` with the points' ``transactions`` from ``curve`` after the point keys."""
    if curve is None or "transactions" not in curve.columns:
        return table
    keys = [k for k in POINT_KEYS if k in table.columns and k in curve.columns]
    if not keys:
        return table
    counts = curve[[*keys, "transactions"]].drop_duplicates(subset=keys)
    merged = table.merge(counts, on=keys, how="left")
    point_keys = [k for k in POINT_KEYS if k in table.columns]
    return merged[[*point_keys, "transactions", *C2C_COLUMNS]]


def format_report(table: pd.DataFrame, sort: str = "tot",
                  counts: Mapping[str, int] | None = None) -> list[str]:
    """Text lines of the report of a :func:`c2c_table` result, one section per point.

    ``counts`` maps the point header to the number of lines the point has in all (for "top N
    of M"); a ``transactions`` column, if present, is shown in each point's header.
    """
    out = ["=" * 60, "Shared Data Cache Line Table".center(60).rstrip(), "=" * 60,
           f"sorted by {_PCT_HEADERS[sort].removesuffix(' %')}; counts are totals over the "
           "measured window"]
    keys = [k for k in POINT_KEYS if k in table.columns]
    headers = {**_HEADERS, "hitm_pct": _PCT_HEADERS[sort]}
    for _, group in _point_groups(table, keys):
        header = _point_header(group, keys)
        out.append("")
        out.append(f"# {header}" if header else "#")
        detail = []
        if "transactions" in group.columns and pd.notna(group["transactions"].iloc[0]):
            detail.append(f"transactions: {int(group['transactions'].iloc[0])}")
        if counts is not None and header in counts:
            detail.append(f"lines: top {len(group)} of {counts[header]}")
        if detail:
            out.append("# " + "; ".join(detail))
        out.extend(_text_table(group, headers))
    return out


def lines_per_point(lines: pd.DataFrame) -> dict[str, int]:
    """The number of lines of every point of a per-line table, by the point's report header.

    These are the ``counts`` of :func:`format_report` ("top N of M").
    """
    keys = [k for k in POINT_KEYS if k in lines.columns]
    return {_point_header(group, keys): len(group) for _, group in _point_groups(lines, keys)}


def _point_header(group: pd.DataFrame, keys: list[str]) -> str:
    first = group.iloc[0]
    return " ".join(f"{key}={first[key]}" for key in keys)


def _text_table(group: pd.DataFrame, headers: Mapping[str, str]) -> list[str]:
    columns = list(C2C_COLUMNS)
    cells = [[headers[c] for c in columns]]
    for _, row in group.iterrows():
        cells.append([_cell(column, row[column]) for column in columns])
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return ["  ".join(cell.ljust(width) if column in _TEXT else cell.rjust(width)
                      for cell, width, column in zip(line, widths, columns, strict=True)).rstrip()
            for line in cells]


def _cell(column: str, value: Any) -> str:
    if column == "hitm_pct":
        return f"{float(value):.2f}%"
    if column in _TEXT:
        return str(value) if str(value) else "-"
    return str(int(value))
