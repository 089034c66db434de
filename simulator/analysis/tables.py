"""Plain-text tables for the command line."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned text table with two spaces between columns (no trailing blanks)."""
    widths = [max(len(row[i]) for row in (headers, *rows)) for i in range(len(headers))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in (headers, *rows)]
