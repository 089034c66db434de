"""Writing a file: every file snapsim writes goes through :func:`atomic_path`.

The content goes to a temporary file beside the target (``.NAME.PID.tmp``, so that two processes
never share one), which is flushed to the disk and then renamed onto the target: an interrupted
write or a full disk never leaves a half-written file in place, and the previous file stays as it
was. :func:`atomic_write` and :func:`write_text_atomic` are the two common forms of it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from simulator.errors import WriteError

__all__ = ["atomic_path", "atomic_write", "write_text_atomic"]


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path next to ``path``, synced and renamed onto it when the block succeeds.

    Raises:
        WriteError: the block, the sync or the rename failed with an :class:`OSError` (a full
            disk): the temporary file is removed and ``path`` is left as it was.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        _sync(tmp)
        os.replace(tmp, path)
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(path, exc) from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _sync(path: Path) -> None:
    """Flush ``path``'s content to the disk (before the rename makes it the file)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, writer: Callable[[Path], object]) -> Path:
    """Write ``path`` through ``writer`` (given the temporary path): :func:`atomic_path`."""
    with atomic_path(path) as tmp:
        writer(tmp)
    return path


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path``: :func:`atomic_path`."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
