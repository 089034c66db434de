"""A small typed byte-layout toolkit: structs, arrays of structs, a sequential allocator.

Nothing here knows about any particular program: a model describes its program's shared memory
with it (the PostgreSQL model's is ``snapsim_models.shmem.build``). The vocabulary:

* :class:`Struct`: a named record with a size and named fields ``(offset, size)``. Fields may nest
  (``"content_lock"`` and ``"content_lock.state"``) but must not partially overlap.
* :class:`Region`: ``count`` elements of a :class:`Struct` placed at ``base`` with a ``stride``
  (the struct size, or more when each element is padded, e.g. 16-byte locks padded to 128). A
  scalar array is a region of a one-field struct (see :meth:`Struct.scalar`).
* :class:`SharedMemory`: places regions one after another, each start rounded up to the requested
  alignment, like a bump allocator, and labels cache lines for reports.

A region may keep some fields *out of line* (:attr:`Region.detached`): each such field lives in a
parallel region of the same count (structure of arrays), and every address, span and scan of that
field through the region goes there. :mod:`simulator.hardware.layout_edits` produces such regions
(a field moved into its own array); a region without detached fields behaves as before.

Addresses are byte addresses; a *line number* is ``address // LINE_BYTES`` (the machine's tracked
line of that number has byte address ``line * LINE_BYTES``). A *mask* is the set of bytes of one
line an access touches, bit i = byte i, as an unsigned Python int (``Machine.access`` accepts that;
:meth:`Region.scan_parts` returns the signed int64 form that ``Machine.scan`` wants).

Line labels (perf-c2c style), produced by :meth:`Region.label_for_line`:

* a single struct: ``"VariableCache"``; a line starting inside it: ``"VariableCache+64"`` (byte
  offset in the struct at which the line starts);
* an array whose elements are at most one line apart (stride <= 64): the first and last element
  whose bytes (padding excluded) overlap the line, ``"PGXACT[5..10]"``, or ``"xids[3]"`` for one;
* an array of big elements (stride > 64): the element and the offset inside it at which the line
  starts (or, for the region's first line, where the region starts): ``"PGPROC[3]+64"``, plain
  ``"PGPROC[3]"`` at offset 0. The line may also hold the start of the next element;
* elements can be named (``element_names``): a named element prints as its name instead of
  ``array[i]`` (``"ProcArrayLock"``, ``"ProcArrayLock+64"``), and a line holding several elements
  of which one is named lists them all, ``"ProcArrayLock & SInvalReadLock"``;
* several regions on one line are joined with ``" & "``, in address order
  (``"ProcArrayStruct & pgprocnos[0..5]"``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from simulator.config.machine import LINE_BYTES
from simulator.types import IntArray

__all__ = [
    "LINE_BYTES",
    "LinePart",
    "Region",
    "SharedMemory",
    "Struct",
    "align_up",
    "line_parts",
]

_EMPTY_NAMES: Mapping[int, str] = MappingProxyType({})


class LinePart(NamedTuple):
    """The part of a byte range that falls in one cache line."""

    line: int
    """Line number (byte address // LINE_BYTES)."""
    mask: int
    """Bytes of that line covered, bit i = byte i (unsigned, < 2**64)."""


def align_up(value: int, alignment: int) -> int:
    """Round ``value`` up to a multiple of ``alignment`` (a positive integer)."""
    if alignment < 1:
        raise ValueError(f"alignment must be positive, got {alignment}")
    return -(-value // alignment) * alignment


def line_parts(address: int, size: int) -> list[LinePart]:
    """Split the byte range ``[address, address + size)`` into per-line parts, in address order.

    Args:
        address: first byte (non-negative).
        size: number of bytes (positive).

    Returns:
        One :class:`LinePart` per line the range touches (two when a 4-byte field straddles).
    """
    if address < 0 or size < 1:
        raise ValueError(f"bad byte range: address {address}, size {size}")
    parts: list[LinePart] = []
    end = address + size
    line = address // LINE_BYTES
    while line * LINE_BYTES < end:
        lo = max(address, line * LINE_BYTES) - line * LINE_BYTES
        hi = min(end, (line + 1) * LINE_BYTES) - line * LINE_BYTES
        parts.append(LinePart(line, ((1 << (hi - lo)) - 1) << lo))
        line += 1
    return parts


def _merge(parts: Iterable[LinePart]) -> list[LinePart]:
    merged: dict[int, int] = {}
    for line, mask in parts:
        merged[line] = merged.get(line, 0) | mask
    return [LinePart(line, merged[line]) for line in sorted(merged)]


@dataclass(frozen=True)
class Struct:
    """A named record: size in bytes and named fields ``name -> (offset, size)``.

    Attributes:
        name: type name, used in labels (``"PGXACT"``).
        size: ``sizeof`` in bytes, including tail padding.
        fields: field name to ``(offset, size)``. Nested fields are allowed (a field wholly
            inside another); partial overlaps are rejected.
    """

    name: str
    size: int
    fields: Mapping[str, tuple[int, int]] = field(hash=False)

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError(f"struct {self.name}: size must be positive, got {self.size}")
        checked: dict[str, tuple[int, int]] = {}
        for fname, (offset, fsize) in self.fields.items():
            if offset < 0 or fsize < 1 or offset + fsize > self.size:
                raise ValueError(
                    f"struct {self.name}: field {fname} ({offset}, {fsize}) "
                    f"is outside 0..{self.size}"
                )
            for other, (o2, s2) in checked.items():
                disjoint = offset + fsize <= o2 or o2 + s2 <= offset
                nested = (o2 <= offset and offset + fsize <= o2 + s2) or (
                    offset <= o2 and o2 + s2 <= offset + fsize
                )
                if not (disjoint or nested):
                    raise ValueError(f"struct {self.name}: fields {fname} and {other} overlap")
            checked[fname] = (offset, fsize)
        object.__setattr__(self, "fields", MappingProxyType(checked))

    @classmethod
    def scalar(cls, name: str, size: int) -> Struct:
        """A one-field struct (field ``"value"``) for arrays of plain integers."""
        return cls(name, size, {"value": (0, size)})

    def field(self, name: str | None) -> tuple[int, int]:
        """``(offset, size)`` of a field; ``None`` means the whole struct.

        Raises:
            KeyError: unknown field (the message lists the known ones).
        """
        if name is None:
            return (0, self.size)
        try:
            return self.fields[name]
        except KeyError:
            raise KeyError(
                f"struct {self.name} has no field {name!r} (fields: {', '.join(self.fields)})"
            ) from None


@dataclass(frozen=True)
class Region:
    """``count`` elements of ``element`` at ``base``, ``stride`` bytes apart.

    Attributes:
        name: label stem (``"PGXACT"``, ``"xids"``, ``"MainLWLockArray"``).
        element: the element type.
        count: number of elements (>= 1).
        base: byte address of element 0.
        stride: distance between elements (>= element size; larger when padded).
        element_names: optional names of single elements, used in labels.
        detached: fields kept out of line: field name -> a region of the same count whose
            element has that field (under the same name, with its nested fields); element ``i``'s
            field is element ``i`` of that region. The field is not in :attr:`element`.
    """

    name: str
    element: Struct
    count: int
    base: int
    stride: int
    element_names: Mapping[int, str] = field(default_factory=dict, hash=False)
    detached: Mapping[str, Region] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"region {self.name}: count must be positive, got {self.count}")
        if self.base < 0:
            raise ValueError(f"region {self.name}: base must not be negative")
        if self.stride < self.element.size:
            raise ValueError(
                f"region {self.name}: stride {self.stride} < element size {self.element.size}"
            )
        names = dict(self.element_names)
        for index in names:
            self._check_index(index)
        object.__setattr__(self, "element_names", MappingProxyType(names))
        detached = dict(self.detached)
        for fname, side in detached.items():
            if side.count != self.count or fname not in side.element.fields:
                raise ValueError(f"region {self.name}: detached field {fname} needs a region of "
                                 f"{self.count} elements with that field, got {side.name}")
            if fname in self.element.fields:
                raise ValueError(f"region {self.name}: field {fname} is both in line and detached")
        object.__setattr__(self, "detached", MappingProxyType(detached))

    def home(self, field_name: str | None) -> Region:
        """The region that holds a field.

        This one, or the parallel region of a detached field (or of the detached field it is
        nested in).
        """
        if field_name is None or not self.detached:
            return self
        for fname, side in self.detached.items():
            if field_name == fname or field_name.startswith(fname + "."):
                return side
        return self

    # ------------------------------------------------------------------ geometry

    @property
    def nbytes(self) -> int:
        """Bytes the region occupies (``count * stride``, padding of the last element included)."""
        return self.count * self.stride

    @property
    def end(self) -> int:
        """First byte address after the region."""
        return self.base + self.nbytes

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.count:
            raise IndexError(f"region {self.name}: index {index} outside 0..{self.count - 1}")

    def element_address(self, index: int) -> int:
        """Byte address of element ``index``."""
        self._check_index(index)
        return self.base + index * self.stride

    def address(self, index: int, field_name: str | None = None) -> int:
        """Byte address of a field of element ``index`` (``None``: the element itself)."""
        home = self.home(field_name)
        offset, _ = home.element.field(field_name)
        return home.element_address(index) + offset

    def field_span(self, index: int, field_name: str | None = None) -> list[LinePart]:
        """The lines and byte masks a field of element ``index`` covers (two parts if it straddles).

        Args:
            index: element index.
            field_name: field name, or ``None`` for the whole element (padding and detached
                fields excluded).

        Returns:
            ``[(line, mask), ...]`` in address order.
        """
        home = self.home(field_name)
        offset, size = home.element.field(field_name)
        return line_parts(home.element_address(index) + offset, size)

    def fields_span(self, index: int, field_names: Iterable[str]) -> list[LinePart]:
        """Union of :meth:`field_span` over several fields of one element, one part per line."""
        return _merge(part for f in field_names for part in self.field_span(index, f))

    def straddles(self, index: int, field_name: str | None = None) -> bool:
        """True when the field (or element) of ``index`` touches more than one line."""
        return len(self.field_span(index, field_name)) > 1

    def line_of(self, index: int, field_name: str | None = None) -> int:
        """Line number of the first byte of a field of element ``index``."""
        return self.address(index, field_name) // LINE_BYTES

    def lines(self) -> range:
        """Line numbers covering the region's bytes (``nbytes``, padding included)."""
        return range(self.base // LINE_BYTES, (self.end - 1) // LINE_BYTES + 1)

    def contains_line(self, line: int) -> bool:
        """True when the region has at least one byte on ``line``."""
        return self.base < (line + 1) * LINE_BYTES and line * LINE_BYTES < self.end

    def elements_on_line(self, line: int) -> range:
        """Indices of elements whose bytes (padding excluded) overlap ``line``; may be empty."""
        start = line * LINE_BYTES - self.base
        stop = start + LINE_BYTES
        # element i overlaps when i*stride < stop and i*stride + size > start
        lo = max(0, (start - self.element.size) // self.stride + 1)
        hi = min(self.count, -(-stop // self.stride)) if stop > 0 else 0
        return range(lo, max(lo, hi))

    # ------------------------------------------------------------------ vectorised helpers

    def _indices(self, start: int, stop: int | None) -> IntArray:
        stop = self.count if stop is None else stop
        if not 0 <= start <= stop <= self.count:
            raise IndexError(f"region {self.name}: bad element range {start}..{stop}")
        return np.arange(start, stop, dtype=np.int64)

    def lines_touched(
        self, start: int = 0, stop: int | None = None, field_name: str | None = None
    ) -> list[int]:
        """Distinct line numbers touched by a field of elements ``start..stop-1``, ascending.

        This is the set of lines a scan of that field over those elements reads.
        """
        home = self.home(field_name)
        if home is not self:
            return home.lines_touched(start, stop, field_name)
        offset, size = self.element.field(field_name)
        addresses = self.base + self._indices(start, stop) * self.stride + offset
        first = addresses // LINE_BYTES
        last = (addresses + size - 1) // LINE_BYTES
        if size <= LINE_BYTES:  # at most two lines per element
            return [int(x) for x in np.unique(np.concatenate([first, last]))]
        touched: set[int] = set()
        for lo, hi in zip(first.tolist(), last.tolist(), strict=True):
            touched.update(range(lo, hi + 1))
        return sorted(touched)

    def scan_parts(
        self, start: int = 0, stop: int | None = None, field_names: Iterable[str] | None = None
    ) -> tuple[IntArray, IntArray]:
        """Per-element access parts for a scan, in element order, ready for ``Machine.scan``.

        For each element ``start..stop-1``, the union of the given fields (``None``: the whole
        element) is split into line parts; a straddling element yields two consecutive parts.

        Returns:
            ``(lines, masks)``: line numbers and byte masks as signed int64 (bit 63 is the sign
            bit, so a mask of the whole line is -1). Line numbers, not tracked-line indices: map
            them to the machine's tracked lines before calling ``Machine.scan``.
        """
        indices = self._indices(start, stop)
        names = None if field_names is None else list(field_names)
        lines: list[int] = []
        masks: list[int] = []
        for index in indices.tolist():
            parts = (
                self.field_span(index, None) if names is None else self.fields_span(index, names)
            )
            for line, mask in parts:
                lines.append(line)
                masks.append(mask - (1 << 64) if mask >= 1 << 63 else mask)
        return np.asarray(lines, dtype=np.int64), np.asarray(masks, dtype=np.int64)

    # ------------------------------------------------------------------ views and labels

    def element_label(self, index: int) -> str:
        """``element_names[index]`` or ``"name[index]"``."""
        return self.element_names.get(index, f"{self.name}[{index}]")

    def view(self, index: int, name: str | None = None, count: int = 1) -> Region:
        """A region over elements ``index..index+count-1`` (same stride), e.g. one named lock.

        Views are for addressing; register only allocations with :class:`SharedMemory`. A view
        keeps the detached fields (views of their regions over the same elements).
        """
        self._check_index(index)
        self._check_index(index + count - 1)
        label = name if name is not None else self.element_label(index)
        detached = {fname: side.view(index, count=count) for fname, side in self.detached.items()}
        return Region(label, self.element, count, self.element_address(index), self.stride,
                      detached=detached)

    def label_for_line(self, line: int) -> str:
        """Label of the part of ``line`` that belongs to this region (see the module docstring).

        Raises:
            ValueError: the region has no byte on ``line``.
        """
        if not self.contains_line(line):
            raise ValueError(f"region {self.name} has no byte on line {line}")
        position = max(line * LINE_BYTES, self.base) - self.base
        if self.count == 1:
            return self.name + (f"+{position}" if position else "")
        elements = self.elements_on_line(line)
        if self.stride > LINE_BYTES or len(elements) == 0:
            index, offset = divmod(position, self.stride)
            return self.element_label(index) + (f"+{offset}" if offset else "")
        if any(i in self.element_names for i in elements):
            return " & ".join(self.element_label(i) for i in elements)
        if len(elements) == 1:
            return f"{self.name}[{elements[0]}]"
        return f"{self.name}[{elements[0]}..{elements[-1]}]"


@dataclass
class SharedMemory:
    """A bump allocator over a byte address space that remembers what it placed.

    Attributes:
        base: address of the first byte (the allocator starts there).
        free: address of the next free byte.
    """

    base: int = 0
    free: int = field(init=False)
    _regions: list[Region] = field(init=False, default_factory=list)
    _bases: list[int] = field(init=False, default_factory=list)
    """Start address of each region, in allocation order (ascending: a bump allocator)."""

    def __post_init__(self) -> None:
        if self.base < 0:
            raise ValueError("base must not be negative")
        self.free = self.base

    @property
    def regions(self) -> tuple[Region, ...]:
        """Registered regions in allocation order."""
        return tuple(self._regions)

    def __getitem__(self, name: str) -> Region:
        for region in self._regions:
            if region.name == name:
                return region
        raise KeyError(f"no region named {name!r}")

    def __contains__(self, name: object) -> bool:
        return any(region.name == name for region in self._regions)

    def alloc(
        self,
        name: str,
        element: Struct | int,
        count: int = 1,
        align: int = 8,
        *,
        stride: int | None = None,
        element_names: Mapping[int, str] | None = None,
    ) -> Region:
        """Place ``count`` elements at the next ``align``-aligned address and register them.

        Args:
            name: unique region name (label stem).
            element: a :class:`Struct`, or an element size in bytes for a scalar array.
            count: number of elements.
            align: alignment of the start address (bytes).
            stride: element spacing; defaults to the element size.
            element_names: names of single elements, for labels.

        Returns:
            The placed region; the free pointer moves to its end.
        """
        struct = Struct.scalar(name, element) if isinstance(element, int) else element
        region = Region(
            name,
            struct,
            count,
            align_up(self.free, align),
            struct.size if stride is None else stride,
            element_names if element_names is not None else _EMPTY_NAMES,
        )
        self.register(region)
        return region

    def register(self, region: Region) -> None:
        """Register a region placed by the caller at or above the free pointer.

        The free pointer moves to its end. :meth:`alloc` places and registers in one step; an
        allocator that lays regions out itself (:mod:`simulator.hardware.layout_edits`) registers
        them here, in address order.
        """
        if region.name in self:
            raise ValueError(f"a region named {region.name!r} already exists")
        if region.base < self.free:
            raise ValueError(f"region {region.name!r} starts below the free pointer")
        self._regions.append(region)
        self._bases.append(region.base)
        self.free = region.end

    def reserve(self, nbytes: int, align: int = 1) -> int:
        """Skip ``nbytes`` of unmodelled memory at the next ``align``-aligned address.

        Returns:
            The start address of the skipped bytes.
        """
        if nbytes < 0:
            raise ValueError("nbytes must not be negative")
        start = align_up(self.free, align)
        self.free = start + nbytes
        return start

    def skip_to(self, modulus: int, residue: int = 0) -> int:
        """Advance the free pointer to the next address ``= residue (mod modulus)``.

        Stands for unmodelled allocations whose total size is unknown but whose effect on the
        phase of the next region is assumed.

        Returns:
            The new free address.
        """
        if modulus < 1 or not 0 <= residue < modulus:
            raise ValueError(f"bad phase {residue} mod {modulus}")
        self.free += (residue - self.free) % modulus
        return self.free

    def regions_on_line(self, line: int) -> list[Region]:
        """Registered regions with at least one byte on ``line``, in address order."""
        start = line * LINE_BYTES
        # Regions are placed in ascending, non-overlapping order: those starting before the
        # line's end, walked back until one ends before the line's start.
        k = bisect.bisect_left(self._bases, start + LINE_BYTES)
        found: list[Region] = []
        while k > 0:
            k -= 1
            region = self._regions[k]
            if region.end <= start:
                break
            found.append(region)
        found.reverse()
        return found

    def label_for_line(self, line: int) -> str:
        """perf-c2c-style label of a line; an unallocated line is labelled by its hex address."""
        regions = self.regions_on_line(line)
        if not regions:
            return f"{line * LINE_BYTES:#x}"
        return " & ".join(region.label_for_line(line) for region in regions)

    def lines(self) -> list[int]:
        """All line numbers holding a byte of some registered region, ascending."""
        return sorted({line for region in self._regions for line in region.lines()})
