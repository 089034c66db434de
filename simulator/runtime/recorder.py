"""Collection of result rows during a simulation, converted to DataFrames once at the end.

Model code records rows into named tables while the simulation runs. Recording is a list append
(SimPy's own advice: keep monitoring data in plain lists), and no pandas work happens until
:meth:`Recorder.to_frame` converts a whole table at once.

A table's columns are fixed by its first row (or by :meth:`Recorder.declare`): the field order of
that row is the column order of the frame. Later rows must have the same fields; keyword rows may
give them in another order.

Example:
    >>> rec = Recorder()
    >>> rec.record("txn", client=3, latency_ns=25_000.0)
    >>> rec.to_frame("txn").columns.tolist()
    ['client', 'latency_ns']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import pandas as pd

__all__ = ["Recorder"]


class _Table:
    """Rows of one table, stored as tuples in column order."""

    __slots__ = ("columns", "rows")

    def __init__(self, columns: tuple[str, ...] | None = None) -> None:
        self.columns = columns
        self.rows: list[tuple[Any, ...]] = []


class Recorder:
    """Append-only tables of rows, each converted to a :class:`pandas.DataFrame` on demand."""

    def __init__(self) -> None:
        self._tables: dict[str, _Table] = {}

    def declare(self, table: str, columns: Iterable[str]) -> None:
        """Fix the columns of a table before any row, so an empty table still has its columns.

        Raises:
            ValueError: the table already has other columns, or a column name repeats.
        """
        cols = tuple(columns)
        if len(set(cols)) != len(cols):
            raise ValueError(f"table {table!r}: repeated column in {cols!r}")
        entry = self._tables.setdefault(table, _Table())
        if entry.columns is None:
            entry.columns = cols
        elif entry.columns != cols:
            raise ValueError(
                f"table {table!r} already has columns {entry.columns!r}, not {cols!r}"
            )

    def record(self, table: str, /, **fields: Any) -> None:
        """Append one row given as keyword fields.

        Raises:
            ValueError: the fields differ from the table's columns.
        """
        entry = self._tables.get(table)
        if entry is None or entry.columns is None:
            entry = self._tables.setdefault(table, _Table())
            entry.columns = tuple(fields)
            entry.rows.append(tuple(fields.values()))
            return
        columns = entry.columns
        if tuple(fields) == columns:
            entry.rows.append(tuple(fields.values()))
        elif fields.keys() == set(columns):
            entry.rows.append(tuple(fields[name] for name in columns))
        else:
            raise ValueError(
                f"table {table!r} has columns {columns!r}, got fields {tuple(fields)!r}"
            )

    def append(self, table: str, row: NamedTuple, /) -> None:
        """Append one row given as a :class:`~typing.NamedTuple` (its fields are the columns).

        Raises:
            ValueError: the row's fields differ from the table's columns.
        """
        fields: tuple[str, ...] = row._fields
        entry = self._tables.get(table)
        if entry is None or entry.columns is None:
            entry = self._tables.setdefault(table, _Table())
            entry.columns = fields
        elif fields != entry.columns:
            raise ValueError(
                f"table {table!r} has columns {entry.columns!r}, got a row with {fields!r}"
            )
        entry.rows.append(row)

    def tables(self) -> list[str]:
        """Names of the tables recorded or declared so far, in order of creation."""
        return list(self._tables)

    def n_rows(self, table: str) -> int:
        """Number of rows of a table (0 for an unknown table)."""
        entry = self._tables.get(table)
        return 0 if entry is None else len(entry.rows)

    def to_frame(self, table: str) -> pd.DataFrame:
        """The rows of a table as a DataFrame, columns in the order of the first row.

        A table without rows gives a frame with no rows: with its declared columns if it was
        declared, with no columns if it was never recorded.
        """
        entry = self._tables.get(table)
        if entry is None or entry.columns is None:
            return pd.DataFrame()
        return pd.DataFrame.from_records(entry.rows, columns=list(entry.columns))
