"""Name the fields behind a line's byte masks (``fields_read`` / ``fields_written`` columns).

The machine records, per tracked line, which bytes were read and written (64-bit masks). This
module maps those bytes back to struct fields through the layout, so a per-line report can say
"xmin written, xid read": the basis of the true/false sharing attribution.
"""

from __future__ import annotations

import pandas as pd

from simulator.config.machine import LINE_BYTES
from simulator.hardware.layout import Region, SharedMemory
from simulator.hardware.machine import Machine


def fields_in_mask(region: Region, line: int, mask: int) -> list[str]:
    """Names of the region's fields (leaf fields first) with a byte in ``mask`` on ``line``."""
    line_start = line * LINE_BYTES
    starts = tuple(region.element_address(i) - line_start for i in region.elements_on_line(line))
    return list(_fields_at(region, starts, mask)) if mask else []


def _fields_at(region: Region, element_starts: tuple[int, ...], mask: int) -> tuple[str, ...]:
    """:func:`fields_in_mask` for elements starting at these byte offsets from the line start."""
    names: list[str] = []
    for base in element_starts:
        for name, (offset, size) in region.element.fields.items():
            start = base + offset
            stop = start + size
            lo, hi = max(start, 0), min(stop, LINE_BYTES)
            if lo >= hi:
                continue
            field_mask = ((1 << (hi - lo)) - 1) << lo
            if mask & field_mask and name not in names:
                names.append(name)
    # Keep the most specific names: drop "content_lock" when "content_lock.state" is listed.
    return tuple(n for n in names if not any(o != n and o.startswith(n + ".") for o in names))


def describe_masks(memory: SharedMemory, machine: Machine,
                   table: pd.DataFrame | None = None) -> tuple[list[str], list[str]]:
    """Per tracked line, the comma-separated fields read and written so far.

    ``table`` is the machine's :meth:`~simulator.hardware.machine.Machine.line_table` if already at
    hand.
    """
    if table is None:
        table = machine.line_table()
    read: list[str] = []
    written: list[str] = []
    known: dict[tuple[int, tuple[int, ...], int], tuple[str, ...]] = {}
    """Fields by (region, element starts relative to the line, mask): arrays repeat them."""

    def names(region: Region, starts: tuple[int, ...], mask: int) -> tuple[str, ...]:
        if not mask:
            return ()
        key = (id(region), starts, mask)
        found = known.get(key)
        if found is None:
            found = known[key] = _fields_at(region, starts, mask)
        return found

    for address, read_mask, write_mask in zip(table["address"], table["bytes_read"],
                                              table["bytes_written"], strict=True):
        line = int(address) // LINE_BYTES
        line_start = line * LINE_BYTES
        layout = [(region, tuple(region.element_address(i) - line_start
                                 for i in region.elements_on_line(line)))
                  for region in memory.regions_on_line(line)]
        read.append(", ".join(f for r, starts in layout for f in names(r, starts, int(read_mask))))
        written.append(", ".join(f for r, starts in layout
                                 for f in names(r, starts, int(write_mask))))
    return read, written
