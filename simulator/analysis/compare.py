"""Two runs side by side: the ratio of a curve column and the per-line differences.

Pure functions on result frames (``curve.csv``, ``lines.csv`` of two runs, A and B). Points are
matched on the grid keys (``clients``, ``idle_clients``, ``root_seed`` where both have it) and on
every categorical point key (``machine``, ``algorithm``, ``workload``, ``idle_kind``) whose values
the two runs share; a categorical key whose values are disjoint is what the runs compare (two
algorithms, two machines) and appears as ``KEY_a`` and ``KEY_b``. Failed points are left out.
What is not compared: usl fits, timings, columns other than the chosen one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.analysis.columns import POINT_KEYS

GRID_KEYS = ("clients", "idle_clients", "root_seed")
"""Point keys always matched (when both curves have them)."""
CATEGORICAL_KEYS = ("machine", "algorithm", "workload", "idle_kind")
"""Point keys matched only when the two runs share one of their values."""
LINE_CLASSES = ("l1_hit", "l2_hit", "l3_hit", "smt_sibling", "local_hit", "local_hitm",
                "cross_domain_hit", "cross_domain_hitm", "remote_hit", "remote_hitm",
                "dram_local", "dram_remote", "upgrade", "invalidations", "false_sharing_hitm",
                "wait_ns")
"""Per-line access classes compared, per transaction of the point (``wait_ns``: the time spent
queued on the hot line, ns per transaction)."""

TRANSFER_CLASSES = ("local_hit", "local_hitm", "cross_domain_hit", "cross_domain_hitm",
                    "remote_hit", "remote_hitm", "upgrade", "invalidations",
                    "false_sharing_hitm")
"""The classes that move a line between caches (the coherence traffic the study is about), as
opposed to hits in a core's own caches and DRAM reads."""

WAIT_CLASS = "wait_ns"


def largest_changes(lines: pd.DataFrame, top: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``top`` largest changes of coherence transfers, and of hot-line waits.

    ``lines`` is :func:`compare_lines`' table. Transfers (:data:`TRANSFER_CLASSES`, counts per
    transaction) and waits (ns per transaction) are ranked apart, by the absolute change; a
    core's own cache hits are left to the CSV (they move most, and say least).
    """
    def ranked(rows: pd.DataFrame, count: int) -> pd.DataFrame:
        order = rows["change"].abs().sort_values(ascending=False, kind="stable").index
        return rows.reindex(order).head(count)

    transfers = lines[lines["class"].isin(TRANSFER_CLASSES)]
    waits = lines[(lines["class"] == WAIT_CLASS) & (lines["change"] != 0)]
    return ranked(transfers, top), ranked(waits, max(top // 4, 1))


class NoCommonPointError(ValueError):
    """The two curves share no point (or no successful point) to compare."""


def match_keys(a: pd.DataFrame, b: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The keys the points are matched on, and the categorical keys the runs differ in."""
    keys = [key for key in GRID_KEYS if key in a.columns and key in b.columns]
    differ: list[str] = []
    for key in CATEGORICAL_KEYS:
        if key not in a.columns or key not in b.columns:
            continue
        if set(a[key].astype(str)) & set(b[key].astype(str)):
            keys.append(key)
        else:
            differ.append(key)
    return keys, differ


def successful(curve: pd.DataFrame, key: str = "tps") -> pd.DataFrame:
    """The rows of a curve without an error and with a value of ``key``."""
    ok = curve[curve[key].notna()]
    if "error" in ok.columns:
        ok = ok[ok["error"].isna() | (ok["error"].astype(str) == "")]
    return ok


def compare_curves(a: pd.DataFrame, b: pd.DataFrame, key: str = "tps") -> pd.DataFrame:
    """The ratio curve: one row per common point, B's ``key`` over A's.

    Columns: the match keys, the differing keys (``KEY_a``, ``KEY_b``), ``{key}_a``,
    ``{key}_b``, ``ratio`` and ``change_pct``.

    Raises:
        KeyError: ``key`` is not a column of both curves.
        NoCommonPointError: no successful point of A matches one of B.
    """
    for name, curve in (("A", a), ("B", b)):
        if key not in curve.columns:
            raise KeyError(f"{key!r} is not a column of run {name}'s curve")
    keys, differ = match_keys(a, b)
    if not {"clients", "idle_clients"} <= set(keys):
        raise NoCommonPointError("the curves lack the clients and idle_clients columns")
    left = successful(a, key)[[*keys, *differ, key]]
    right = successful(b, key)[[*keys, *differ, key]]
    merged = left.merge(right, on=keys, how="inner", suffixes=("_a", "_b"))
    if merged.empty:
        raise NoCommonPointError(f"no common successful point (matched on {', '.join(keys)})")
    merged["ratio"] = merged[f"{key}_b"] / merged[f"{key}_a"]
    merged["change_pct"] = (merged["ratio"] - 1) * 100
    columns = [*keys, *(f"{k}_{side}" for k in differ for side in ("a", "b")),
               f"{key}_a", f"{key}_b", "ratio", "change_pct"]
    return merged[columns].reset_index(drop=True)


def per_transaction_lines(curve: pd.DataFrame, lines: pd.DataFrame) -> pd.DataFrame:
    """Tidy per-line transfers per transaction of every successful point.

    Columns: the point keys, ``root_seed``, ``label``, ``class`` and ``per_transaction`` (the
    line's count of the class over the point's transactions).
    """
    classes = [c for c in LINE_CLASSES if c in lines.columns]
    keys = [k for k in POINT_KEYS if k in lines.columns and k in curve.columns]
    extra = [k for k in ("root_seed",) if k in curve.columns]
    if "label" not in lines.columns or not keys or "transactions" not in curve.columns:
        keys = [k for k in POINT_KEYS if k in curve.columns]  # no line table: no rows
        return pd.DataFrame(columns=[*keys, *extra, "label", "class", "per_transaction"])
    points = successful(curve)[[*keys, *extra, "transactions"]]
    joined = lines[[*keys, "label", *classes]].merge(points, on=keys, how="inner")
    tidy = joined.melt(id_vars=[*keys, *extra, "label", "transactions"], value_vars=classes,
                       var_name="class", value_name="count")
    tidy["per_transaction"] = tidy["count"] / tidy["transactions"].where(
        tidy["transactions"] > 0, np.nan)
    return tidy.drop(columns=["count", "transactions"])


def compare_lines(curve_a: pd.DataFrame, lines_a: pd.DataFrame, curve_b: pd.DataFrame,
                  lines_b: pd.DataFrame) -> pd.DataFrame:
    """Per-line differences: per common point, line (by label) and class, B minus A.

    Columns: the match keys, ``label``, ``class``, the differing keys, ``per_txn_a``,
    ``per_txn_b`` and ``change``.

    A line only one run has counts 0 in the other; a class of zero in both is left out.
    """
    keys, differ = match_keys(curve_a, curve_b)
    a = per_transaction_lines(curve_a, lines_a)
    b = per_transaction_lines(curve_b, lines_b)
    on = [k for k in keys if k in a.columns and k in b.columns] + ["label", "class"]
    keep = [*on, *(k for k in differ if k in a.columns), "per_transaction"]
    merged = a[keep].merge(b[keep], on=on, how="outer", suffixes=("_a", "_b"))
    merged = merged.rename(columns={"per_transaction_a": "per_txn_a",
                                    "per_transaction_b": "per_txn_b"})
    common = compare_curves(curve_a, curve_b)[[k for k in keys if k in on]].drop_duplicates()
    merged = merged.merge(common, on=list(common.columns), how="inner")
    merged[["per_txn_a", "per_txn_b"]] = merged[["per_txn_a", "per_txn_b"]].fillna(0.0)
    for key in differ:  # a line one run lacks still names both runs' values
        for side, frame in (("a", a), ("b", b)):
            values = list(frame[key].dropna().unique()) if key in frame.columns else []
            if f"{key}_{side}" in merged.columns and len(values) == 1:
                merged[f"{key}_{side}"] = merged[f"{key}_{side}"].fillna(values[0])
    merged = merged[(merged["per_txn_a"] != 0) | (merged["per_txn_b"] != 0)]
    merged["change"] = merged["per_txn_b"] - merged["per_txn_a"]
    sides = [f"{k}_{side}" for k in differ for side in ("a", "b") if f"{k}_{side}" in merged]
    columns = [*on, *sides, "per_txn_a", "per_txn_b", "change"]
    return merged.sort_values(on)[columns].reset_index(drop=True)
