"""The perf c2c style per-line report: table, sorting and the columns of perf c2c."""

from __future__ import annotations

import pandas as pd
import pytest

from simulator.analysis.c2c import C2C_COLUMNS, c2c_table

# label: (remote_hitm, local_hitm); orders: rmt X Z Y W, lcl Y Z X W, tot Y X Z W.
HITM = {"X": (10, 1), "Y": (2, 20), "Z": (5, 5), "W": (0, 0)}
ORDERS = {"rmt": ["X", "Z", "Y", "W"], "lcl": ["Y", "Z", "X", "W"], "tot": ["Y", "X", "Z", "W"]}
POINTS = [("pre", 1, 0), ("pre", 4, 0), ("post", 4, 100)]


def point_keys(algorithm: str, clients: int, idle: int) -> dict[str, object]:
    return {"machine": "m", "algorithm": algorithm, "workload": "w", "clients": clients,
            "idle_clients": idle, "idle_kind": "idle", "seed": clients * 1000 + idle}


def make_lines() -> pd.DataFrame:
    rows = []
    for algorithm, clients, idle in POINTS:
        for index, (label, (rmt, lcl)) in enumerate(HITM.items()):
            rows.append({**point_keys(algorithm, clients, idle), "label": label,
                         "address": 64 * (index + 1), "home": 0, "loads": 100 + index,
                         "stores": 3, "rmws": 1, "local_hitm": lcl, "cross_domain_hitm": 0,
                         "remote_hitm": rmt, "false_sharing_hitm": rmt // 2,
                         "invalidations": rmt + lcl, "fields_read": f"{label}.r",
                         "fields_written": "" if label == "W" else f"{label}.w"})
    return pd.DataFrame(rows)


def make_curve() -> pd.DataFrame:
    return pd.DataFrame([{**point_keys(*p), "tps": 1000.0, "transactions": 10 + i}
                         for i, p in enumerate(POINTS)])


# --------------------------------------------------------------------------------- c2c_table


@pytest.mark.parametrize("sort", ["rmt", "lcl", "tot"])
def test_table_sorts_each_point_by_the_hitm_kind(sort: str) -> None:
    table = c2c_table(make_lines(), sort=sort)
    assert list(table.columns[-len(C2C_COLUMNS):]) == list(C2C_COLUMNS)
    for _, group in table.groupby(["algorithm", "clients", "idle_clients"]):
        assert list(group["label"]) == ORDERS[sort]
        assert list(group["line_index"]) == [0, 1, 2, 3]
        assert group["hitm_pct"].sum() == pytest.approx(100.0)


def test_table_columns_follow_perf_c2c() -> None:
    row = c2c_table(make_lines(), sort="rmt").iloc[0]
    assert row["label"] == "X"
    assert row["cacheline"] == "0x40"
    assert (row["rmt_hitm"], row["lcl_hitm"], row["tot_hitm"]) == (10, 1, 11)
    assert row["hitm_pct"] == pytest.approx(100 * 10 / 17)
    assert (row["false_sharing_hitm"], row["invalidations"]) == (5, 11)
    assert (row["stores"], row["loads"], row["rmws"]) == (3, 100, 1)
    assert (row["fields_read"], row["fields_written"]) == ("X.r", "X.w")


def test_table_keeps_the_top_lines_of_every_point() -> None:
    table = c2c_table(make_lines(), sort="lcl", top=2)
    assert len(table) == 2 * len(POINTS)
    assert list(table["label"]) == ["Y", "Z"] * len(POINTS)


def test_table_rejects_an_unknown_sort() -> None:
    with pytest.raises(ValueError, match="sort"):
        c2c_table(make_lines(), sort="peer")


# --------------------------------------------------------------------------------- snapsim c2c
