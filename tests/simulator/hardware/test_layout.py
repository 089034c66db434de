"""The generic byte-layout toolkit: structs, regions, spans, masks, labels, the allocator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from simulator.hardware.layout import (
    LINE_BYTES,
    LinePart,
    Region,
    SharedMemory,
    Struct,
    align_up,
    line_parts,
)

ENTRY = Struct("Entry", 12, {"a": (0, 4), "b": (4, 4), "c": (8, 1)})
BIG = Struct("Big", 880, {"hot": (52, 12), "far": (700, 4)})


def brute_lines(address: int, size: int) -> dict[int, int]:
    """Reference: byte-by-byte line masks."""
    masks: dict[int, int] = {}
    for byte in range(address, address + size):
        masks[byte // 64] = masks.get(byte // 64, 0) | 1 << (byte % 64)
    return masks


# ------------------------------------------------------------------------------ helpers


def test_line_bytes_is_the_machines() -> None:
    assert LINE_BYTES == 64


@pytest.mark.parametrize(
    ("value", "alignment", "expected"),
    [(0, 8, 0), (1, 8, 8), (96, 32, 96), (104, 32, 128), (184, 128, 256), (57, 1, 57)],
)
def test_align_up(value: int, alignment: int, expected: int) -> None:
    assert align_up(value, alignment) == expected


def test_align_up_rejects_zero() -> None:
    with pytest.raises(ValueError, match="alignment"):
        align_up(5, 0)


def test_line_parts_inside_one_line() -> None:
    assert line_parts(64 + 4, 4) == [LinePart(1, 0xF0)]


def test_line_parts_straddle_masks() -> None:
    # 12 bytes 60..71: 4 on line 0 (bytes 60..63), 8 on line 1 (bytes 0..7)
    assert line_parts(60, 12) == [LinePart(0, 0xF << 60), LinePart(1, 0xFF)]


def test_line_parts_whole_line_and_three_lines() -> None:
    assert line_parts(128, 64) == [LinePart(2, (1 << 64) - 1)]
    parts = line_parts(120, 80)
    assert [p.line for p in parts] == [1, 2, 3]
    assert parts[1].mask == (1 << 64) - 1
    assert parts[2].mask == (1 << 8) - 1


@pytest.mark.parametrize(("address", "size"), [(0, 1), (63, 2), (5, 200), (1000, 64), (64, 1)])
def test_line_parts_matches_byte_by_byte(address: int, size: int) -> None:
    assert dict(line_parts(address, size)) == brute_lines(address, size)


def test_line_parts_rejects_bad_ranges() -> None:
    with pytest.raises(ValueError, match="byte range"):
        line_parts(-1, 4)
    with pytest.raises(ValueError, match="byte range"):
        line_parts(0, 0)


# ------------------------------------------------------------------------------- Struct


def test_struct_field_lookup() -> None:
    assert ENTRY.field("b") == (4, 4)
    assert ENTRY.field(None) == (0, 12)


def test_struct_unknown_field_lists_known_ones() -> None:
    with pytest.raises(KeyError, match="fields: a, b, c"):
        ENTRY.field("zz")


def test_struct_rejects_field_outside() -> None:
    with pytest.raises(ValueError, match="outside"):
        Struct("S", 8, {"x": (6, 4)})


def test_struct_rejects_partial_overlap_allows_nesting() -> None:
    with pytest.raises(ValueError, match="overlap"):
        Struct("S", 16, {"x": (0, 8), "y": (4, 8)})
    nested = Struct("S", 16, {"lock": (0, 16), "lock.state": (4, 4)})
    assert nested.field("lock.state") == (4, 4)


def test_struct_is_immutable_and_hashable() -> None:
    assert hash(ENTRY) == hash(Struct("Entry", 12, {"other": (0, 1)}))
    with pytest.raises(TypeError):
        ENTRY.fields["d"] = (9, 1)  # type: ignore[index]


def test_scalar_struct() -> None:
    scalar = Struct.scalar("xids", 4)
    assert scalar.size == 4
    assert scalar.field("value") == (0, 4)


# ------------------------------------------------------------------------------- Region


def test_region_addresses() -> None:
    region = Region("E", ENTRY, 100, 128, 12)
    assert region.element_address(5) == 188
    assert region.address(5, "b") == 192
    assert region.address(5) == 188
    assert region.nbytes == 1200
    assert region.end == 1328


def test_region_index_checked() -> None:
    region = Region("E", ENTRY, 3, 0, 12)
    with pytest.raises(IndexError):
        region.address(3, "a")
    with pytest.raises(IndexError):
        region.address(-1, "a")


def test_region_rejects_small_stride_and_empty() -> None:
    with pytest.raises(ValueError, match="stride"):
        Region("E", ENTRY, 3, 0, 8)
    with pytest.raises(ValueError, match="count"):
        Region("E", ENTRY, 0, 0, 12)


def test_field_span_straddling_entry() -> None:
    region = Region("E", ENTRY, 16, 0, 12)
    # entry 5 = bytes 60..71: a on line 0, b and c on line 1
    assert region.field_span(5, "a") == [(0, 0xF << 60)]
    assert region.field_span(5, "b") == [(1, 0xF)]
    assert region.field_span(5, "c") == [(1, 1 << 4)]
    assert region.field_span(5) == [(0, 0xF << 60), (1, 0xFF)]
    assert region.straddles(5)
    assert not region.straddles(5, "b")
    assert region.line_of(5, "b") == 1


def test_field_span_of_a_straddling_field() -> None:
    region = Region("E", ENTRY, 16, 2, 12)
    # entry 5 starts at 62: field a = bytes 62..65
    assert region.field_span(5, "a") == [(0, 0b11 << 62), (1, 0b11)]


def test_fields_span_merges_per_line() -> None:
    region = Region("E", ENTRY, 16, 0, 12)
    assert region.fields_span(5, ["b", "c", "a"]) == [(0, 0xF << 60), (1, 0xF | 1 << 4)]


def test_lines_of_region() -> None:
    assert Region("E", ENTRY, 16, 0, 12).lines() == range(0, 3)
    assert Region("E", ENTRY, 1, 60, 12).lines() == range(0, 2)
    assert Region("L", Struct("L", 16, {}), 4, 128, 128).lines() == range(2, 10)


@pytest.mark.parametrize(
    ("base", "size", "stride", "count"),
    [
        (0, 12, 12, 40),
        (40, 4, 4, 50),
        (8, 16, 32, 20),
        (128, 16, 128, 5),
        (16, 656, 656, 6),
        (0, 52, 64, 9),
        (3, 1, 1, 200),
        (60, 12, 12, 3),
    ],
)
def test_elements_on_line_matches_brute_force(
    base: int, size: int, stride: int, count: int
) -> None:
    region = Region("R", Struct("R", size, {}), count, base, stride)
    for line in range(base // 64 - 1, region.end // 64 + 2):
        expected = [
            i
            for i in range(count)
            if base + i * stride < (line + 1) * 64 and base + i * stride + size > line * 64
        ]
        assert list(region.elements_on_line(line)) == expected, line


@pytest.mark.parametrize(
    ("base", "stride", "field"), [(0, 12, "b"), (40, 12, None), (16, 880, None)]
)
def test_lines_touched_matches_spans(base: int, stride: int, field: str | None) -> None:
    struct = ENTRY if stride == 12 else BIG
    region = Region("R", struct, 50, base, stride)
    expected = sorted({part.line for i in range(3, 47) for part in region.field_span(i, field)})
    assert region.lines_touched(3, 47, field) == expected


def test_lines_touched_range_checked() -> None:
    with pytest.raises(IndexError):
        Region("R", ENTRY, 5, 0, 12).lines_touched(0, 6)


def test_scan_parts_signed_masks() -> None:
    region = Region("W", Struct("W", 64, {"w": (0, 64), "top": (56, 8)}), 3, 0, 64)
    lines, masks = region.scan_parts(0, 2)
    assert lines.tolist() == [0, 1]
    assert masks.dtype == np.int64
    assert masks.tolist() == [-1, -1]
    lines, masks = region.scan_parts(1, 3, ["top"])
    assert lines.tolist() == [1, 2]
    assert masks.tolist() == [(0xFF << 56) - (1 << 64)] * 2  # bytes 56..63, sign bit set


def test_scan_parts_lists_straddles_in_order() -> None:
    region = Region("E", ENTRY, 16, 0, 12)
    lines, masks = region.scan_parts(4, 7, ["a", "b"])
    # entry 4 = 48..59 (line 0), entry 5 = 60..67 (a line 0, b line 1), entry 6 = 72..79 (line 1)
    assert lines.tolist() == [0, 0, 1, 1]
    assert masks.tolist() == [0xFF << 48, (0xF << 60) - (1 << 64), 0xF, 0xFF << 8]


def test_view_is_a_one_element_region() -> None:
    locks = Region("Locks", Struct("L", 16, {"state": (4, 4)}), 8, 256, 128, {4: "Main"})
    main = locks.view(4)
    assert main.name == "Main"
    assert main.count == 1
    assert main.address(0, "state") == 256 + 4 * 128 + 4
    assert locks.view(5).name == "Locks[5]"
    assert locks.view(2, "Two", count=3).count == 3
    with pytest.raises(IndexError):
        locks.view(7, count=2)


# ------------------------------------------------------------------------------- labels


def test_label_single_struct() -> None:
    vc = Region("VariableCache", Struct("VC", 72, {}), 1, 128, 72)
    assert vc.label_for_line(2) == "VariableCache"
    assert vc.label_for_line(3) == "VariableCache+64"
    straddling = Region("VariableCache", Struct("VC", 40, {}), 1, 56, 40)
    assert straddling.label_for_line(0) == "VariableCache"
    assert straddling.label_for_line(1) == "VariableCache+8"


def test_label_small_elements() -> None:
    pgxact = Region("PGXACT", ENTRY, 100, 128, 12)
    assert [pgxact.label_for_line(line) for line in (2, 3, 4, 5)] == [
        "PGXACT[0..5]",
        "PGXACT[5..10]",
        "PGXACT[10..15]",
        "PGXACT[16..21]",
    ]
    xids = Region("xids", Struct.scalar("xids", 4), 100, 0, 4)
    assert xids.label_for_line(0) == "xids[0..15]"
    assert xids.label_for_line(6) == "xids[96..99]"
    one = Region("descs", Struct("D", 52, {}), 10, 0, 64)
    assert one.label_for_line(3) == "descs[3]"


def test_label_big_elements() -> None:
    pgproc = Region("PGPROC", BIG, 4, 0, 880)
    assert pgproc.label_for_line(0) == "PGPROC[0]"
    assert pgproc.label_for_line(1) == "PGPROC[0]+64"
    assert pgproc.label_for_line(13) == "PGPROC[0]+832"  # also holds PGPROC[1]'s first 16 B
    assert pgproc.label_for_line(14) == "PGPROC[1]+16"
    late = Region("PGPROC", BIG, 4, 40, 880)
    assert late.label_for_line(0) == "PGPROC[0]"  # the region starts inside the line


def test_label_named_elements() -> None:
    padded = Region("Main", Struct("L", 16, {}), 8, 0, 128, {4: "ProcArrayLock"})
    assert padded.label_for_line(8) == "ProcArrayLock"
    assert padded.label_for_line(9) == "ProcArrayLock+64"
    assert padded.label_for_line(6) == "Main[3]"
    dense = Region("Arr", Struct("L", 24, {}), 8, 0, 32, {4: "ProcArrayLock", 5: "SInval"})
    assert dense.label_for_line(2) == "ProcArrayLock & SInval"
    assert dense.label_for_line(1) == "Arr[2..3]"
    half = Region("Arr", Struct("L", 24, {}), 8, 0, 32, {3: "XidGen"})
    assert half.label_for_line(1) == "Arr[2] & XidGen"


def test_label_of_a_line_outside_the_region() -> None:
    with pytest.raises(ValueError, match="no byte"):
        Region("E", ENTRY, 2, 0, 12).label_for_line(1)


def test_label_of_padding_only_line() -> None:
    region = Region("D", Struct("D", 10, {}), 2, 0, 100)
    # stride > 64: position style; line 1 = bytes 64..127 = D[0]+64..D[1]+27
    assert region.label_for_line(1) == "D[0]+64"


# ------------------------------------------------------------------------------- allocator


def test_sequential_allocation_with_alignment() -> None:
    shm = SharedMemory()
    header = shm.alloc("Header", Struct("H", 48, {}), align=8)
    lock = shm.alloc("Lock", 1, align=8)
    vc = shm.alloc("VC", Struct("VC", 40, {}), align=8)
    assert (header.base, lock.base, vc.base) == (0, 48, 56)
    arr = shm.alloc("Arr", ENTRY, 10, align=128)
    assert arr.base == 128
    tail = shm.alloc("Tail", 4, 5, align=4)
    assert tail.base == 248
    buf = shm.alloc("Buf", 8, 1, align=32)
    assert buf.base == 288
    assert shm.free == 296
    assert [r.name for r in shm.regions] == ["Header", "Lock", "VC", "Arr", "Tail", "Buf"]


def test_scalar_alloc_and_padded_stride() -> None:
    shm = SharedMemory(base=1024)
    xids = shm.alloc("xids", 4, 100, align=128)
    assert xids.element.field("value") == (0, 4)
    locks = shm.alloc("Locks", Struct("L", 16, {}), 10, align=128, stride=128)
    assert locks.base == 1024 + 512
    assert locks.nbytes == 1280


def test_reserve_and_skip_to() -> None:
    shm = SharedMemory()
    shm.alloc("A", 1)
    assert shm.reserve(8, align=32) == 32
    assert shm.free == 40
    assert shm.skip_to(64, 8) == 72
    assert shm.skip_to(64, 8) == 72
    assert shm.skip_to(64) == 128
    with pytest.raises(ValueError, match="phase"):
        shm.skip_to(64, 64)
    with pytest.raises(ValueError, match="negative"):
        shm.reserve(-1)


def test_region_lookup_and_duplicates() -> None:
    shm = SharedMemory()
    shm.alloc("A", ENTRY, 2)
    assert shm["A"].count == 2
    assert "A" in shm
    assert "B" not in shm
    with pytest.raises(KeyError):
        shm["B"]
    with pytest.raises(ValueError, match="already"):
        shm.alloc("A", 4)


def test_labels_join_regions_on_a_line() -> None:
    shm = SharedMemory()
    shm.alloc("ProcArrayStruct", Struct("P", 40, {}), align=128)
    shm.alloc("pgprocnos", 4, 100, align=4)
    assert shm.label_for_line(0) == "ProcArrayStruct & pgprocnos[0..5]"
    assert shm.label_for_line(1) == "pgprocnos[6..21]"
    assert [r.name for r in shm.regions_on_line(0)] == ["ProcArrayStruct", "pgprocnos"]
    assert shm.label_for_line(1000) == hex(64000)


def test_all_lines() -> None:
    shm = SharedMemory()
    shm.alloc("A", 4, 20, align=8)  # bytes 0..79
    shm.alloc("B", 4, 1, align=256)  # line 4
    assert shm.lines() == [0, 1, 4]


def test_regions_never_overlap_when_allocated() -> None:
    shm = SharedMemory()
    for i, (size, align) in enumerate(itertools.product((1, 12, 100), (1, 8, 128))):
        shm.alloc(f"r{i}", size, 3, align=align)
    spans = sorted((r.base, r.end) for r in shm.regions)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
