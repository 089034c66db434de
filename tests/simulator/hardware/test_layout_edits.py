"""Layout what-ifs: each edit on a small struct (offsets worked out by hand), the detached-field
region, the bad inputs named by key, and a property over random edit sequences."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import ConfigError
from simulator.hardware.fields import fields_in_mask
from simulator.hardware.layout import LINE_BYTES, Region, Struct
from simulator.hardware.layout_edits import (
    Align,
    EditedSharedMemory,
    Move,
    Pad,
    Reorder,
    natural_alignment,
    parse_layout_edits,
)

# A PGXACT-like entry: 11 B of fields, sizeof 12 (4-B aligned).
ENTRY = Struct("Entry", 12, {"xid": (0, 4), "xmin": (4, 4), "flags": (8, 1), "over": (9, 1),
                             "nxids": (10, 1)})
# A padded element with a nested field (an LWLock inside a 64-B buffer descriptor).
DESC = Struct("Desc", 52, {"tag": (0, 20), "id": (20, 4), "state": (24, 4),
                           "lock": (36, 16), "lock.state": (40, 4)})


def build(edits: list[dict[str, object]], count: int = 10) -> EditedSharedMemory:
    """``Before`` (3 ints), then ``Entry[count]`` 128-aligned, then ``After`` (3 ints)."""
    shm = EditedSharedMemory(0, parse_layout_edits(edits, "options.layout"))
    shm.alloc("Before", 4, 3, align=128)
    shm.alloc("Entry", ENTRY, count, align=128)
    shm.alloc("After", 4, 3, align=4)
    return shm


# ------------------------------------------------------------------------------ parsing


def test_parse_each_kind() -> None:
    edits = parse_layout_edits([
        {"move": "Entry.xmin", "to": "own_line"},
        {"move": "Entry.xmin", "to": "array"},
        {"pad": "Entry", "to": 64},
        {"align": "Entry", "to": 256},
        {"reorder": "Entry", "fields": ["xmin", "xid"]},
    ], "options.layout")
    assert edits == (
        Move("options.layout[0]", "Entry.xmin", "own_line"),
        Move("options.layout[1]", "Entry.xmin", "array"),
        Pad("options.layout[2]", "Entry", 64),
        Align("options.layout[3]", "Entry", 256),
        Reorder("options.layout[4]", "Entry", ("xmin", "xid")),
    )


@pytest.mark.parametrize(("value", "key", "message"), [
    ({"move": "Entry.xmin"}, "options.layout", "a list of edits"),
    (["move Entry.xmin"], "options.layout[0]", "expected a mapping"),
    ([{"shrink": "Entry", "to": 8}], "options.layout[0]", "exactly one edit kind"),
    ([{"pad": "Entry", "align": "Entry", "to": 8}], "options.layout[0]", "exactly one edit kind"),
    ([{"pad": "Entry", "to": 64, "by": 2}], "options.layout[0].by", "unknown key"),
    ([{"pad": "Entry"}], "options.layout[0].to", "missing required key"),
    ([{"move": "Entry", "to": "own_line"}], "options.layout[0].move", "PGXACT.xmin"),
    ([{"move": "Entry.xmin", "to": "elsewhere"}], "options.layout[0].to", "own_line or array"),
    ([{"pad": "Entry", "to": 0}], "options.layout[0].to", "positive"),
    ([{"pad": "Entry", "to": -64}], "options.layout[0].to", "positive"),
    ([{"pad": "Entry", "to": "64 B"}], "options.layout[0].to", "number of bytes"),
    ([{"align": "Entry", "to": 48}], "options.layout[0].to", "power of two"),
    ([{"align": "Entry", "to": 0}], "options.layout[0].to", "power of two"),
    ([{"align": "Entry", "to": -8}], "options.layout[0].to", "power of two"),
    ([{"reorder": "Entry", "fields": []}], "options.layout[0].fields", "non-empty"),
    ([{"reorder": "Entry", "fields": ["xid", "xid"]}], "options.layout[0].fields", "twice"),
    ([{}, {"pad": ".Entry", "to": 8}], "options.layout[0]", "exactly one"),
])
def test_bad_edits_name_the_key(value: object, key: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        parse_layout_edits(value, "options.layout")
    assert raised.value.key == key


def test_natural_alignment() -> None:
    assert [natural_alignment(n) for n in (1, 2, 4, 8, 12, 16, 20, 256, 6)] == \
        [1, 2, 4, 8, 4, 8, 4, 8, 2]


# ------------------------------------------------------------------------- each edit


def test_no_edit_is_the_plain_allocator() -> None:
    shm = build([])
    entry = shm["Entry"]
    assert (entry.base, entry.stride, entry.element) == (128, 12, ENTRY)
    assert shm["After"].base == 248


def test_move_to_own_line() -> None:
    """xmin goes to offset align_up(12, 64) = 64; the element is 128 B, 64-aligned; the other
    fields keep their offsets and xmin's old bytes 4..7 are padding."""
    shm = build([{"move": "Entry.xmin", "to": "own_line"}])
    entry = shm["Entry"]
    assert dict(entry.element.fields) == {"xid": (0, 4), "xmin": (64, 4), "flags": (8, 1),
                                          "over": (9, 1), "nxids": (10, 1)}
    assert (entry.element.size, entry.stride, entry.base) == (128, 128, 128)
    assert shm["After"].base == 128 + 10 * 128
    # Element 3's xmin is alone on line (128 + 3*128 + 64) / 64 = 9; its xid on line 8.
    assert entry.field_span(3, "xmin") == [(9, 0xF)]
    assert entry.fields_span(3, ["xid", "xmin", "flags"]) == [(8, 0x10F), (9, 0xF)]
    assert shm.label_for_line(8) == "Entry[3]"
    assert shm.label_for_line(9) == "Entry[3]+64"
    assert fields_in_mask(entry, 9, 0xFFFF_FFFF_FFFF_FFFF) == ["xmin"]
    assert fields_in_mask(entry, 8, 0xFFFF_FFFF_FFFF_FFFF) == ["xid", "flags", "over", "nxids"]


def test_move_to_own_line_raises_alignment_and_keeps_a_padded_stride() -> None:
    """A 128-B stride (LWLocks padded to 128) stays; a 52-B descriptor padded to 64 grows to 128
    with its nested field; the start alignment rises from 8 to 64."""
    shm = EditedSharedMemory(0, parse_layout_edits(
        [{"move": "Descs.lock", "to": "own_line"}, {"move": "Locks.state", "to": "own_line"}],
        "layout"))
    shm.alloc("Pad", 1, 8)
    descs = shm.alloc("Descs", DESC, 4, align=8, stride=64)
    locks = shm.alloc("Locks", Struct("Lock", 16, {"state": (4, 4), "waiters": (8, 8)}), 2,
                      align=128, stride=128)
    assert descs.base == 64  # 8 -> aligned to 64
    assert (descs.element.size, descs.stride) == (128, 128)
    assert descs.element.fields["lock"] == (64, 16)
    assert descs.element.fields["lock.state"] == (68, 4)
    assert (locks.element.size, locks.stride, locks.element.fields["state"]) == (128, 128,
                                                                                  (64, 4))


def test_move_to_array() -> None:
    """xmin leaves Entry for Entry.xmin (4 B apart, 128-aligned right after Entry); Entry keeps
    sizeof 12 (fields end at 11) and a hole at 4..7; accesses to xmin go to the array."""
    shm = build([{"move": "Entry.xmin", "to": "array"}])
    entry, xmins = shm["Entry"], shm["Entry.xmin"]
    assert [r.name for r in shm.regions] == ["Before", "Entry", "Entry.xmin", "After"]
    assert "xmin" not in entry.element.fields
    assert (entry.element.size, entry.stride) == (12, 12)
    assert (xmins.base, xmins.stride, xmins.count) == (256, 4, 10)
    assert dict(xmins.element.fields) == {"xmin": (0, 4)}
    assert shm["After"].base == 296
    assert entry.home("xmin") is xmins
    assert entry.address(7, "xmin") == 256 + 28
    assert entry.field_span(7, "xmin") == [(4, 0xF << 28)]
    assert entry.fields_span(0, ["xid", "xmin"]) == [(2, 0xF), (4, 0xF)]
    assert entry.lines_touched(0, 10, "xmin") == [4]
    lines, masks = entry.scan_parts(0, 2, ["xid", "xmin"])
    assert lines.tolist() == [2, 4, 2, 4]
    assert masks.tolist() == [0xF, 0xF, 0xF << 12, 0xF0]
    assert shm.label_for_line(4) == "Entry.xmin[0..9] & After[0..2]"
    assert fields_in_mask(xmins, 4, 0xF0) == ["xmin"]
    view = entry.view(7)
    assert view.field_span(0, "xmin") == entry.field_span(7, "xmin")
    assert view.field_span(0, "xid") == entry.field_span(7, "xid")


def test_move_to_array_then_reorder_and_pad() -> None:
    """xid, flags, over, nxids packed: 0, 4, 5, 6, sizeof 8; the xmin array padded to one line
    per entry (64-B stride), starting at the next 128 after Entry's 80 B."""
    shm = build([{"move": "Entry.xmin", "to": "array"},
                 {"reorder": "Entry", "fields": ["xid", "flags", "over", "nxids"]},
                 {"pad": "Entry.xmin", "to": 64}])
    entry, xmins = shm["Entry"], shm["Entry.xmin"]
    assert dict(entry.element.fields) == {"xid": (0, 4), "flags": (4, 1), "over": (5, 1),
                                          "nxids": (6, 1)}
    assert (entry.element.size, entry.stride) == (8, 8)
    assert (xmins.base, xmins.stride) == (256, 64)
    assert [entry.field_span(i, "xmin")[0].line for i in range(3)] == [4, 5, 6]


def test_pad() -> None:
    shm = build([{"pad": "Entry", "to": 64}])
    entry = shm["Entry"]
    assert (entry.element.size, entry.stride) == (12, 64)
    assert shm.label_for_line(5) == "Entry[3]"
    with pytest.raises(ConfigError, match="smaller than Entry's element") as raised:
        build([{"pad": "Entry", "to": 11}])
    assert raised.value.key == "options.layout[0].to"


def test_pad_after_own_line_compares_with_the_grown_element() -> None:
    with pytest.raises(ConfigError, match=r"\(128 B\)"):
        build([{"move": "Entry.xmin", "to": "own_line"}, {"pad": "Entry", "to": 64}])


def test_align() -> None:
    shm = build([{"align": "Entry", "to": 4}, {"align": "After", "to": 1024}])
    assert shm["Entry"].base == 12  # right after Before's 12 B
    assert shm["After"].base == 1024


def test_reorder() -> None:
    """[flags, over, nxids, xmin, xid] from offset 0: 0, 1, 2, then xmin at 4 and xid at 8."""
    shm = build([{"reorder": "Entry", "fields": ["flags", "over", "nxids", "xmin", "xid"]}])
    assert dict(shm["Entry"].element.fields) == {"xid": (8, 4), "xmin": (4, 4), "flags": (0, 1),
                                                 "over": (1, 1), "nxids": (2, 1)}
    assert shm["Entry"].element.size == 12


def test_reorder_moves_nested_fields_and_starts_at_the_lowest_offset() -> None:
    """[lock, state] of Desc: lowest offset 24; lock (16 B, 8-aligned) at 24, its state at 28;
    state (4 B) at 40."""
    shm = EditedSharedMemory(0, parse_layout_edits(
        [{"reorder": "Descs", "fields": ["lock", "state"]}], "layout"))
    descs = shm.alloc("Descs", DESC, 4, stride=64)
    fields = descs.element.fields
    assert (fields["lock"], fields["lock.state"], fields["state"]) == ((24, 16), (28, 4), (40, 4))
    assert (descs.element.size, descs.stride) == (48, 64)  # fields end at 44, 8-aligned


def test_reorder_overlap_is_an_error_of_the_edit() -> None:
    with pytest.raises(ConfigError, match="overlap after the edit") as raised:
        build([{"reorder": "Entry", "fields": ["nxids", "xid"]}])  # xid at 4 over xmin
    assert raised.value.key == "options.layout[0].fields"


def test_reorder_of_a_field_with_its_nested_field_is_an_error() -> None:
    shm = EditedSharedMemory(0, parse_layout_edits(
        [{"reorder": "Descs", "fields": ["lock", "lock.state"]}], "layout"))
    with pytest.raises(ConfigError, match="nested in lock") as raised:
        shm.alloc("Descs", DESC, 4, stride=64)
    assert raised.value.key == "layout[0].fields"


def test_array_of_an_array_and_the_only_field_are_errors() -> None:
    with pytest.raises(ConfigError, match="already an array") as raised:
        build([{"move": "Entry.xmin", "to": "array"},
               {"move": "Entry.xmin.xmin", "to": "array"}])
    assert raised.value.key == "options.layout[1].move"
    shm = EditedSharedMemory(0, parse_layout_edits([{"move": "Ints.value", "to": "array"}], "l"))
    with pytest.raises(ConfigError, match="only field"):
        shm.alloc("Ints", 4, 16)


def test_edits_that_do_not_fit_are_skipped_and_remembered() -> None:
    shm = build([{"move": "Entry.xmax", "to": "own_line"}, {"pad": "Elsewhere", "to": 64},
                 {"move": "Entry.xmin", "to": "array"}, {"move": "Entry.xmin", "to": "own_line"},
                 {"reorder": "Entry", "fields": ["xid", "xmax"]}])
    assert shm.applied == {2}
    assert shm.unapplied[0].startswith("Entry has no field 'xmax' (fields: xid, xmin, flags")
    assert shm.unapplied[1] == ""
    assert "already the separate array Entry.xmin" in shm.unapplied[3]
    assert "no field 'xmax'" in shm.unapplied[4]
    assert shm["Entry"].element.size == 12  # the skipped edits changed nothing


def test_region_detached_fields_are_checked() -> None:
    side = Region("E.xmin", Struct("E.xmin", 4, {"xmin": (0, 4)}), 3, 0, 4)
    with pytest.raises(ValueError, match="needs a region of 2 elements"):
        Region("E", ENTRY, 2, 64, 12, detached={"xmin": side})
    with pytest.raises(ValueError, match="both in line and detached"):
        Region("E", ENTRY, 3, 64, 12, detached={"xmin": side})


# ------------------------------------------------------------------------------ property


_EDITS = st.lists(st.one_of(
    st.builds(lambda f, to: {"move": f"Entry.{f}", "to": to},
              st.sampled_from(list(ENTRY.fields)), st.sampled_from(["own_line", "array"])),
    st.builds(lambda n: {"pad": "Entry", "to": n}, st.integers(1, 300)),
    st.builds(lambda n: {"align": "Entry", "to": 1 << n}, st.integers(0, 9)),
    st.builds(lambda fs: {"reorder": "Entry", "fields": fs},
              st.permutations(list(ENTRY.fields))),
), max_size=6)


@settings(max_examples=200, deadline=None)
@given(_EDITS)
def test_any_edit_sequence_keeps_fields_whole_and_disjoint(edits: list[dict[str, object]]
                                                           ) -> None:
    """Whatever the edits, every field of every element keeps its size, no two fields of any
    elements or regions share a byte, every region lies in its own address range, and a field
    last moved to its own line has that line to itself."""
    try:
        shm = build(edits, count=5)
    except ConfigError:
        return  # a pad below the element size: rejected, as it must be
    entry = shm["Entry"]
    owned: dict[int, tuple[int, str]] = {}
    for index in range(entry.count):
        for fname, (_, size) in ENTRY.fields.items():
            address = entry.address(index, fname)
            span = entry.field_span(index, fname)
            assert sum(bin(mask).count("1") for _, mask in span) == size
            home = entry.home(fname)
            assert home.base <= address
            assert address + size <= home.end
            for byte in range(address, address + size):
                assert byte not in owned, (byte, owned[byte], (index, fname))
                owned[byte] = (index, fname)
    regions = sorted(shm.regions, key=lambda r: r.base)
    assert all(a.end <= b.base for a, b in itertools.pairwise(regions))
    own_line = [e["move"] for e in edits if e.get("to") == "own_line"]
    to_array = {e["move"] for e in edits if e.get("to") == "array"}
    only_moves = all("move" in e for e in edits)
    if own_line and own_line[-1] not in to_array and only_moves:
        fname = str(own_line[-1]).split(".", 1)[1]
        for index in range(entry.count):
            line = entry.line_of(index, fname)
            on_line = {owner for byte, owner in owned.items() if byte // LINE_BYTES == line}
            assert on_line == {(index, fname)}

