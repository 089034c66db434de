"""Finished points on disk, and atomic writes of any result file.

A point is stored as one JSON row and one Parquet line table (:class:`PointStore`), so that an
interrupted sweep resumes where it stopped; every file snapsim writes goes through
:func:`atomic_path`, so an interrupted write never leaves a half-written file in place.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from simulator.study.sweep import PointRecord


class PointStore:
    """Finished points in a directory, one JSON row and one Parquet line table per point.

    A point is stored when its JSON file exists; both files are written atomically (a
    temporary file renamed into place), the line table first, so an interrupted write never
    leaves a point that looks finished. Failed points are stored too (with their error) but do
    not count as done: a rerun tries them again.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _json(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def _lines(self, key: str) -> Path:
        return self.directory / f"{key}.lines.parquet"

    def save(self, record: PointRecord) -> None:
        """Store a record (replacing an earlier one of the same key)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if not record.failed:
            with atomic_path(self._lines(record.key)) as tmp:
                record.lines.to_parquet(tmp, index=False)
        document = {"key": record.key, "index": record.index, "row": record.row,
                    "wall_s": record.wall_s, "error": record.error}
        with atomic_path(self._json(record.key)) as tmp:
            tmp.write_text(json.dumps(document, allow_nan=True), encoding="utf-8")

    def load(self, key: str) -> PointRecord | None:
        """The stored, successful record of ``key``, or ``None``."""
        path = self._json(key)
        if not path.exists():
            return None
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            if document["error"]:
                return None
            lines = pd.read_parquet(self._lines(key))
        except (OSError, ValueError, KeyError):
            return None  # an unreadable point is simply computed again
        return PointRecord(key=document["key"], index=int(document["index"]),
                           row=dict(document["row"]), lines=lines,
                           wall_s=float(document["wall_s"]))


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path next to ``path``, renamed onto it when the block succeeds."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


