"""Layout what-ifs on PostgreSQL's shared memory (``options.layout``): the edited layouts, the
lines a GetSnapshotData reads under them, and the false sharing they remove.

The acceptance check of the what-if "move xmin out of PGXACT" in pre14 (9.2-13 as of 13, PGXACT
12 B, 5.33 entries per line: proc.h:222-237@13): with ``{move: PGXACT.xmin, to: own_line}`` every
PGXACT line holds one entry's bytes, so no HITM on a PGXACT line can be false sharing, and a
snapshot reads two lines per entry (its xid/vacuumFlags line and its xmin line) instead of 12/64.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest

from simulator.config.machine_file import load_machine
from simulator.hardware.layout_edits import parse_layout_edits
from snapsim_models.shmem.build import build_shared_memory, check_layout_edits
from snapsim_models.snapshots import ALGORITHMS
from tests.models.harness import (
    HEADER_COUNTED_TWICE,
    PgHarness,
    build_harness,
    cross_socket_pair,
    entries,
    pre14_formula,
    run_pair,
    snapshot,
    sockets,
)
from tests.models.points import simulate

XMIN_OWN_LINE = parse_layout_edits([{"move": "PGXACT.xmin", "to": "own_line"}], "options.layout")
XMIN_ARRAY_PACKED = parse_layout_edits([
    {"move": "PGXACT.xmin", "to": "array"},
    {"reorder": "PGXACT", "fields": ["xid", "vacuumFlags", "overflowed", "nxids"]},
], "options.layout")
SCANNED = ("vacuumFlags", "xmin", "xid")
"""The PGXACT fields pre14's scan reads per entry (pa:1504-1782@13)."""


def pgxact_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Rows of the per-line table whose line holds PGXACT bytes (not the xmin array's)."""
    labels = table["label"].str
    return table.loc[labels.startswith("PGXACT") & ~labels.startswith("PGXACT.xmin")]


# ----------------------------------------------------------------------------- the layouts


def test_pre14_xmin_on_its_own_line_layout() -> None:
    """PGXACT becomes 128 B: xid, vacuumFlags, overflowed, nxids at 0..10 on the first line,
    xmin at 64 alone on the second; 128-aligned as before; the procArray header follows."""
    plain = build_shared_memory(ALGORITHMS["pre14"], 10)
    edited = build_shared_memory(ALGORITHMS["pre14"], 10, layout_edits=XMIN_OWN_LINE)
    pgxact = edited.pgxact
    assert pgxact is not None
    assert plain.pgxact is not None
    assert pgxact.base == plain.pgxact.base  # the edit changes nothing before PGXACT
    assert (pgxact.stride, pgxact.element.size) == (128, 128)
    assert pgxact.element.fields["xmin"] == (64, 4)
    assert pgxact.element.fields["xid"] == (0, 4)
    assert edited.procarray.base == pgxact.end  # 128-aligned allocation right after
    line = pgxact.line_of(7, "xmin")
    assert edited.label_for_line(line) == "PGXACT[7]+64"
    assert edited.label_for_line(pgxact.line_of(7, "xid")) == "PGXACT[7]"


def test_pre14_xmin_array_layout() -> None:
    """xmin in its own dense array ``PGXACT.xmin`` (4 B per entry, 16 per line), allocated
    128-aligned right after PGXACT (as every 13 allocation, shmem.c:212@13); PGXACT packed to
    8 B."""
    edited = build_shared_memory(ALGORITHMS["pre14"], 10, layout_edits=XMIN_ARRAY_PACKED)
    pgxact = edited.pgxact
    assert pgxact is not None
    xmins = edited.memory["PGXACT.xmin"]
    assert (pgxact.stride, dict(pgxact.element.fields)) == (
        8, {"xid": (0, 4), "vacuumFlags": (4, 1), "overflowed": (5, 1), "nxids": (6, 1)})
    assert (xmins.base, xmins.stride, xmins.count) == (
        -(-pgxact.end // 128) * 128, 4, pgxact.count)
    assert edited.procarray.base == -(-xmins.end // 128) * 128
    assert pgxact.address(5, "xmin") == xmins.base + 20
    assert edited.label_for_line(pgxact.line_of(0, "xmin")) == "PGXACT.xmin[0..15]"


@pytest.mark.parametrize("version", ["pg91", "pgxact_split", "post14", "csn"])
def test_a_pgxact_edit_leaves_versions_without_pgxact_unchanged(version: str) -> None:
    plain = build_shared_memory(ALGORITHMS[version], 10)
    edited = build_shared_memory(ALGORITHMS[version], 10, layout_edits=XMIN_OWN_LINE)
    assert [(r.name, r.base, r.stride, r.element) for r in edited.memory.regions] == \
        [(r.name, r.base, r.stride, r.element) for r in plain.memory.regions]


def test_pg14_xmin_of_pgproc_on_its_own_line() -> None:
    """The same edit syntax on 14's PGPROC (880 B, xmin at 56: proc.h:121-254@14): xmin moves
    to offset 896 (the line after the struct), each PGPROC becomes 960 B."""
    edited = build_shared_memory(ALGORITHMS["post14"], 10, layout_edits=parse_layout_edits(
        [{"move": "PGPROC.xmin", "to": "own_line"}], "options.layout"))
    assert edited.pgproc.element.fields["xmin"] == (896, 4)
    assert edited.pgproc.stride == 960


# ------------------------------------------------------------------------ lines per snapshot


def _pgxact_lines(h: PgHarness) -> set[int]:
    return h.lines_of(h.shmem.pgxact, h.procarray.entries, SCANNED)


@pytest.mark.parametrize("connections", [1, 5, 100, 1000])
def test_pre14_xmin_on_own_line_snapshot_reads_two_lines_per_entry(connections: int) -> None:
    """One GetSnapshotData reads the lock line, the VariableCache line, ceil((40+4N)/64) lines of
    header and pgprocnos, and 2N PGXACT lines (each entry's first line and its xmin line), against
    the formula's ceil(12N/64)+1 (+1 per launcher) without the edit."""
    h = build_harness("pre14", connections, layout_edits=XMIN_OWN_LINE)
    delta = snapshot(h, h.running[0])
    n = entries(h)
    pgprocnos_lines = h.lines_of(h.shmem.pgprocnos, range(n), None) | {h.header_line}
    pgxact_lines = _pgxact_lines(h)
    assert delta.read == {h.lock_line, h.vc_line} | pgprocnos_lines | pgxact_lines
    assert len(pgxact_lines) == 2 * n
    assert len(delta.read) == 2 + math.ceil((40 + 4 * n) / 64) + 2 * n
    plain = build_harness("pre14", connections)
    before = len(snapshot(plain, plain.running[0]).read)
    assert abs(before - (pre14_formula(n, plain.launchers()) - HEADER_COUNTED_TWICE)) <= 1
    assert len(delta.read) - before == 2 * n - len(_pgxact_lines(plain))


@pytest.mark.parametrize("connections", [5, 100, 1000])
def test_pre14_xmin_array_snapshot_lines_follow_the_layout(connections: int) -> None:
    """xmin in a dense array and PGXACT packed to 8 B: the scan reads the PGXACT lines (8 per
    line) and the xmin-array lines (16 per line) the layout gives, about N/8 + N/16 against
    12N/64 before; with pgprocnos, about as many lines as without the edit (N/4)."""
    h = build_harness("pre14", connections, layout_edits=XMIN_ARRAY_PACKED)
    delta = snapshot(h, h.running[0])
    n = entries(h)
    pgprocnos_lines = h.lines_of(h.shmem.pgprocnos, range(n), None) | {h.header_line}
    xmins = h.shmem.memory["PGXACT.xmin"]
    xmin_lines = h.lines_of(xmins, h.procarray.entries, ["xmin"])
    rest = h.lines_of(h.shmem.pgxact, h.procarray.entries, ["xid", "vacuumFlags"])
    assert _pgxact_lines(h) == xmin_lines | rest
    assert delta.read == {h.lock_line, h.vc_line} | pgprocnos_lines | xmin_lines | rest
    assert all(h.shmem.label_for_line(line).startswith("PGXACT.xmin[") for line in xmin_lines)
    launchers = h.launchers()  # their slots are far from the clients'
    clients = n - launchers
    assert abs(len(rest) - (math.ceil(8 * clients / 64) + launchers)) <= 1
    assert abs(len(xmin_lines) - (math.ceil(4 * clients / 64) + launchers)) <= 1


# --------------------------------------------------------------------------- false sharing


def test_pre14_xmin_on_own_line_has_no_false_sharing_across_sockets() -> None:
    """The pair of ``test_pre14_pgxact_false_sharing_across_sockets`` (two backends on different
    sockets, adjacent PGXACT entries): without the edit their shared line shows false-sharing
    HITMs; with xmin on its own line no PGXACT line does, while each backend's xmin line still
    shows the true sharing of its stores read by the other's snapshots."""
    plain = cross_socket_pair("pre14")
    before = pgxact_rows(run_pair(plain, 20))
    assert before["false_sharing_hitm"].sum() > 0
    h = cross_socket_pair("pre14", XMIN_OWN_LINE)
    table = run_pair(h, 20)
    assert len(set(sockets(h))) == 2
    rows = pgxact_rows(table)
    assert len(rows) == 2 * len(h.procarray)
    assert (rows["false_sharing_hitm"] == 0).all()
    for backend in h.running:
        line = h.line(h.shmem.pgxact, backend.pgprocno, "xmin")
        row = table.loc[table["line"] == line].iloc[0]
        assert row["remote_hitm"] > 0
        assert row["fields_written"] == "xmin"
        assert row["fields_read"] == "xmin"


def test_run_point_per_line_table_shows_no_false_sharing_on_pgxact() -> None:
    """A whole 16-client pre14 run: the per-line table's PGXACT lines show false-sharing HITMs
    without the edit and none with xmin on its own line, where every PGXACT line belongs to one
    entry (labels ``PGXACT[k]`` and ``PGXACT[k]+64``)."""
    gold = replace(load_machine("gold5215-2s"), idle=None)
    settings: dict[str, object] = {"clients": 16, "duration_ns": 1e6, "warmup_ns": 2e5}
    before = pgxact_rows(simulate(gold, "pre14", **settings).lines)
    assert before["false_sharing_hitm"].sum() > 0
    after = pgxact_rows(simulate(gold, "pre14", **settings, layout=XMIN_OWN_LINE).lines)
    assert after["false_sharing_hitm"].sum() == 0
    assert after[["local_hitm", "remote_hitm"]].to_numpy().sum() > 0  # true sharing remains
    assert after["label"].str.fullmatch(r"PGXACT\[\d+\](\+64)?").all()


@pytest.mark.parametrize(("region", "version"), [
    ("runningXids", "running_xids"), ("sharedSnapshotXids", "post14_shared_cache")])
def test_an_edit_of_a_what_ifs_own_region_is_accepted_and_applied(region: str,
                                                                  version: str) -> None:
    """Regions only a what-if allocates are edits like any other (checked against every version)."""
    edits = parse_layout_edits([{"pad": region, "to": 64}], "options.layout")
    check_layout_edits(edits, tuple(ALGORITHMS.values()))
    padded = build_shared_memory(ALGORITHMS[version], 4, layout_edits=edits).memory
    plain = build_shared_memory(ALGORITHMS[version], 4).memory
    assert next(r for r in padded.regions if r.name == region).stride == 64
    assert next(r for r in plain.regions if r.name == region).stride < 64
