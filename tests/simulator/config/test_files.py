"""The one atomic writer: the new file whole, or the old one untouched and no temporary left."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from simulator.config.files import atomic_write, write_text_atomic
from simulator.errors import WriteError


def test_a_write_replaces_the_file_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "out.yaml"
    target.write_text("old\n")
    assert write_text_atomic(target, "new\n") == target
    assert target.read_text() == "new\n"
    assert atomic_write(tmp_path / "b.csv", lambda path: path.write_text("a,b\n")) == (
        tmp_path / "b.csv")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["b.csv", "out.yaml"]


def test_a_full_disk_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "curve.csv"
    target.write_text("old\n")

    def fill_the_disk(tmp: Path) -> None:
        tmp.write_text("half a tab")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(WriteError) as info:
        atomic_write(target, fill_the_disk)
    assert str(info.value) == f"cannot write {target}: No space left on device"
    assert info.value.errno == errno.ENOSPC  # still an OSError to a caller that words its own
    assert target.read_text() == "old\n"
    assert [path.name for path in tmp_path.iterdir()] == ["curve.csv"]


def test_a_failed_sync_or_rename_leaves_the_old_file(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "metadata.yaml"
    target.write_text("old\n")

    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", broken_fsync)
        with pytest.raises(WriteError, match=r"metadata\.yaml: Input/output error"):
            write_text_atomic(target, "new\n")
    (tmp_path / "a directory").mkdir()
    with pytest.raises(WriteError, match="a directory: Is a directory"):
        write_text_atomic(tmp_path / "a directory", "text\n")
    assert target.read_text() == "old\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a directory", "metadata.yaml"]


def test_another_error_passes_through_and_nothing_is_written(tmp_path: Path) -> None:
    target = tmp_path / "best.yaml"

    def refuse(tmp: Path) -> None:
        tmp.write_text("half")
        raise ValueError("not a document")

    with pytest.raises(ValueError, match="not a document"):
        atomic_write(target, refuse)
    assert not list(tmp_path.iterdir())
