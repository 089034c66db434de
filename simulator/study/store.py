"""Finished points on disk, the lock of an output directory, and atomic writes of any file.

A point is stored as one JSON document and one Parquet line table (:class:`PointStore`), so that
an interrupted sweep resumes where it stopped. The JSON document carries the hash of the
experiment that produced the point, the hash of its settings without the grid (so that a run of
the same settings with more seeds, clients or algorithms reuses it), a schema version and the
SHA-256 of its row and of its line table, so that a resume keeps only points that verify
(:meth:`PointStore.verify`) and says why it computes the others again. :class:`DirectoryLock`
keeps two runs out of one directory. Every file snapsim writes goes through
:func:`simulator.config.files.atomic_path`, so an interrupted write never leaves a half-written
file in place.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import pandas as pd

from simulator.config.files import atomic_path, write_text_atomic
from simulator.errors import ConfigError
from simulator.study.sweep import PointRecord

POINT_SCHEMA = 2
"""Version of a point file's layout; a point of another version is computed again."""

LOCK_NAME = ".snapsim.lock"
"""The lock file of an output directory (:class:`DirectoryLock`)."""


def document_hash(document: Mapping[str, object]) -> str:
    """SHA-256 (hex) of a document's canonical JSON: sorted keys, no spaces, NaN allowed.

    Values JSON cannot hold (paths, enums) count by their ``str``.
    """
    return _sha256(_canonical(document))


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True,
                      default=str).encode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Verified:
    """What :meth:`PointStore.verify` found for one key."""

    record: PointRecord | None
    """The stored point, when it verifies and succeeded; else ``None``."""
    reason: str = ""
    """Why a stored point is not used (``""``: nothing stored, or it is used)."""


class PointStore:
    """Finished points in a directory, one JSON document and one Parquet line table per point.

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

    def save(self, record: PointRecord, experiment: str, settings: str = "") -> None:
        """Store a record of the experiment whose hash is ``experiment`` (replacing one).

        ``settings`` is the hash of the experiment's settings without its grid
        (:func:`~simulator.study.experiment.settings_hash`); ``""`` binds the point to
        ``experiment`` alone.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        lines_sha256 = ""
        if not record.failed:
            with atomic_path(self._lines(record.key)) as tmp:
                record.lines.to_parquet(tmp, index=False)
                lines_sha256 = _sha256(tmp.read_bytes())
        document = {"schema": POINT_SCHEMA, "experiment": experiment, "settings": settings,
                    "key": record.key,
                    "index": record.index, "row": record.row, "wall_s": record.wall_s,
                    "error": record.error, "row_sha256": _sha256(_canonical(record.row)),
                    "lines_sha256": lines_sha256}
        write_text_atomic(self._json(record.key), json.dumps(document, allow_nan=True))

    def verify(self, key: str, experiment: str,
               identity: Mapping[str, object] | None = None, settings: str = "") -> Verified:
        """The stored point of ``key`` if it verifies, else why not.

        A point verifies when its file parses, has this schema version, was produced by the
        experiment whose hash is ``experiment`` or by one whose settings hash is ``settings``
        (the same settings with another grid; not when ``settings`` is empty or the point
        carries none), its row and line table match their checksums,
        its row holds ``identity`` (the point's identifying columns) and it did not fail.
        Reasons: ``unreadable``, ``old format``, ``from another experiment``,
        ``checksum mismatch``, ``another point's file``, ``failed before``.
        """
        path = self._json(key)
        if not path.exists():
            return Verified(None)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(document, dict):
                return Verified(None, "unreadable")
            if document.get("schema") != POINT_SCHEMA:
                return Verified(None, "old format")
            if document.get("experiment") != experiment and not (
                    settings and document.get("settings") == settings):
                return Verified(None, "from another experiment")
            row = document["row"]
            if not isinstance(row, dict) or _sha256(_canonical(row)) != document["row_sha256"]:
                return Verified(None, "checksum mismatch")
            if document["key"] != key or any(
                    not _same(row.get(k), v) for k, v in (identity or {}).items()):
                return Verified(None, "another point's file")
            if document["error"]:
                return Verified(None, "failed before")
            data = self._lines(key).read_bytes()
            if _sha256(data) != document["lines_sha256"]:
                return Verified(None, "checksum mismatch")
            lines = pd.read_parquet(self._lines(key))
            record = PointRecord(key=key, index=int(document["index"]), row=row, lines=lines,
                                 wall_s=float(document["wall_s"]))
        except FileNotFoundError:
            return Verified(None, "checksum mismatch")  # the line table is missing
        except (OSError, ValueError, KeyError, TypeError):
            return Verified(None, "unreadable")
        return Verified(record)

    def load(self, key: str, experiment: str) -> PointRecord | None:
        """The stored, verified, successful record of ``key``, or ``None``."""
        return self.verify(key, experiment).record


def _same(stored: object, expected: object) -> bool:
    if isinstance(stored, float) and isinstance(expected, float):
        return stored == expected or (math.isnan(stored) and math.isnan(expected))
    return stored == expected


# --------------------------------------------------------------------------------------------
# The lock of an output directory
# --------------------------------------------------------------------------------------------

_held_fds: set[int] = set()
"""Descriptors of the locks this process holds: closed in forked children, so that a worker
that outlives its parent never keeps the parent's lock."""


def _close_held_in_child() -> None:
    for fd in _held_fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    _held_fds.clear()


os.register_at_fork(after_in_child=_close_held_in_child)


class DirectoryLock:
    """An exclusive lock of a directory for one run: ``DIR/.snapsim.lock`` holds the owner's pid.

    The lock is an ``flock`` of that file, which the kernel releases when the owner exits, however
    it exits: a lock left by a dead process never blocks. Use as a context manager; releasing
    removes the file.
    """

    def __init__(self, directory: Path, key: str = "--out", owner: str = "another snapsim run",
                 advice: str = "wait for it (--wait) or choose another --out") -> None:
        self.directory = directory
        self.path = directory / LOCK_NAME
        self.key = key
        self.owner = owner
        """Who holds the directory when it is locked, as the refusal names it."""
        self.advice = advice
        """What the refusal advises."""
        self._fd: int | None = None

    def acquire(self, wait: bool = False, poll_s: float = 0.2,
                on_wait: Callable[[str], None] | None = None) -> None:
        """Take the lock; wait for it when ``wait``, else refuse at once.

        Args:
            wait: wait until the other run releases the directory.
            poll_s: seconds between attempts while waiting.
            on_wait: told once, in one line, whom the run waits for.

        Raises:
            ConfigError: (named by ``key``) the directory is locked by another run and not
                ``wait``, or the lock file cannot be written.
        """
        told = False
        while True:
            fd = self._try_lock()
            if fd is not None:
                self._fd = fd
                _held_fds.add(fd)
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                return
            owner = self._owner()
            if not wait:
                raise ConfigError(self.key, f"{self.directory} is in use by {self.owner} "
                                  f"({owner}); {self.advice}")
            if on_wait is not None and not told:
                on_wait(f"waiting for {self.directory}: in use by {self.owner} ({owner})")
                told = True
            time.sleep(poll_s)

    def _try_lock(self) -> int | None:
        """The locked descriptor of the lock file, or ``None`` when another process holds it."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise ConfigError(self.key, f"cannot write to {self.directory}: "
                              f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the owner released (removed) the file between our open and our lock
            os.close(fd)
            return self._try_lock()
        return fd

    def _owner(self) -> str:
        try:
            pid = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            pid = ""
        return f"pid {pid}" if pid.isdigit() else "pid unknown"

    def release(self) -> None:
        """Remove the lock file and release the lock (nothing if not held)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        _held_fds.discard(fd)
        os.close(fd)

    def __enter__(self) -> DirectoryLock:
        if self._fd is None:
            self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release()
