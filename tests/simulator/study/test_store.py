"""The point store's verification and the output directory's lock (no simulation runs here)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from simulator.errors import ConfigError
from simulator.study.store import LOCK_NAME, POINT_SCHEMA, DirectoryLock, PointStore
from simulator.study.sweep import PointRecord

EXPERIMENT = "a" * 64
IDENTITY = {"algorithm": "pre14", "clients": 1, "idle_clients": 0}


def record(key: str = "pre14-c1-i0-r0", tps: float = 1000.0, error: str = "") -> PointRecord:
    row: dict[str, object] = {**IDENTITY, "tps": tps, "latency_p99_us": float("nan")}
    lines = pd.DataFrame({"label": ["ProcArrayLock", "PGXACT[0..5]"], "loads": [3, 4]})
    return PointRecord(key=key, index=0, row=row, lines=lines, wall_s=0.5, error=error)


@pytest.fixture
def store(tmp_path: Path) -> PointStore:
    store = PointStore(tmp_path / "points")
    store.save(record(), EXPERIMENT)
    return store


def edit(store: PointStore, change: dict[str, object], key: str = "pre14-c1-i0-r0") -> None:
    path = store.directory / f"{key}.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document.update(change)
    path.write_text(json.dumps(document), encoding="utf-8")


def test_a_stored_point_verifies_with_its_row_and_lines(store: PointStore) -> None:
    found = store.verify("pre14-c1-i0-r0", EXPERIMENT, IDENTITY)
    assert found.reason == ""
    assert found.record is not None
    assert found.record.row["tps"] == 1000.0
    pd.testing.assert_frame_equal(found.record.lines, record().lines)
    assert store.verify("post14-c1-i0-r0", EXPERIMENT).reason == ""  # nothing stored
    assert store.verify("post14-c1-i0-r0", EXPERIMENT).record is None


def test_an_edited_tps_is_a_checksum_mismatch(store: PointStore) -> None:
    path = store.directory / "pre14-c1-i0-r0.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["row"]["tps"] = 5.0
    path.write_text(json.dumps(document), encoding="utf-8")
    assert store.verify("pre14-c1-i0-r0", EXPERIMENT).reason == "checksum mismatch"


def test_a_row_missing_a_column_is_a_checksum_mismatch(store: PointStore) -> None:
    path = store.directory / "pre14-c1-i0-r0.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    del document["row"]["tps"]
    path.write_text(json.dumps(document), encoding="utf-8")
    assert store.verify("pre14-c1-i0-r0", EXPERIMENT).reason == "checksum mismatch"


@pytest.mark.parametrize("damage", ["truncated", "missing", "other table"])
def test_a_damaged_line_table_is_a_checksum_mismatch(store: PointStore, damage: str) -> None:
    path = store.directory / "pre14-c1-i0-r0.lines.parquet"
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "missing":
        path.unlink()
    else:  # a valid Parquet file, but not the one stored
        pd.DataFrame({"label": ["x"], "loads": [1]}).to_parquet(path, index=False)
    assert store.verify("pre14-c1-i0-r0", EXPERIMENT).reason == "checksum mismatch"


def test_a_point_of_another_experiment_or_format_is_not_used(store: PointStore) -> None:
    assert store.verify("pre14-c1-i0-r0", "b" * 64).reason == "from another experiment"
    edit(store, {"schema": POINT_SCHEMA - 1})
    assert store.verify("pre14-c1-i0-r0", EXPERIMENT).reason == "old format"
    edit(store, {"schema": POINT_SCHEMA, "experiment": None})
    assert store.verify("pre14-c1-i0-r0", EXPERIMENT).reason == "from another experiment"


def test_a_point_of_the_same_settings_verifies_for_another_grid(tmp_path: Path) -> None:
    store = PointStore(tmp_path / "points")
    settings = "c" * 64
    store.save(record(), EXPERIMENT, settings)
    other_grid = "b" * 64
    assert store.verify("pre14-c1-i0-r0", other_grid, IDENTITY, settings).record is not None
    found = store.verify("pre14-c1-i0-r0", other_grid, IDENTITY, "d" * 64)
    assert (found.record, found.reason) == (None, "from another experiment")
    assert store.verify("pre14-c1-i0-r0", other_grid, IDENTITY).reason == (
        "from another experiment")  # no settings given: the experiment alone decides


def test_a_point_stored_without_settings_needs_its_own_experiment(store: PointStore) -> None:
    found = store.verify("pre14-c1-i0-r0", "b" * 64, IDENTITY, "")
    assert found.reason == "from another experiment"
    edit(store, {"settings": ""})
    assert store.verify("pre14-c1-i0-r0", "b" * 64, IDENTITY, "").reason == (
        "from another experiment")  # an empty settings hash never matches


def test_a_file_renamed_to_another_point_is_not_used(store: PointStore) -> None:
    directory = store.directory
    for suffix in (".json", ".lines.parquet"):
        os.replace(directory / f"pre14-c1-i0-r0{suffix}", directory / f"pre14-c2-i0-r0{suffix}")
    found = store.verify("pre14-c2-i0-r0", EXPERIMENT, {**IDENTITY, "clients": 2})
    assert (found.record, found.reason) == (None, "another point's file")


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "", '{"schema": 2}'])
def test_an_unreadable_point_file_says_so(store: PointStore, text: str) -> None:
    (store.directory / "pre14-c1-i0-r0.json").write_text(text, encoding="utf-8")
    reason = store.verify("pre14-c1-i0-r0", EXPERIMENT).reason
    assert reason in {"unreadable", "from another experiment"}
    assert reason == ("from another experiment" if text == '{"schema": 2}' else "unreadable")


def test_a_failed_point_is_stored_but_not_used(tmp_path: Path) -> None:
    store = PointStore(tmp_path)
    store.save(record(error="RuntimeError: boom"), EXPERIMENT)
    assert store.verify("pre14-c1-i0-r0", EXPERIMENT).reason == "failed before"


# --------------------------------------------------------------------------------------------
# DirectoryLock
# --------------------------------------------------------------------------------------------

HOLDER = """\
import sys, time
from pathlib import Path
from simulator.study.store import DirectoryLock
lock = DirectoryLock(Path(sys.argv[1]))
lock.acquire()
print("locked", flush=True)
time.sleep(60)
"""


def hold(directory: Path) -> subprocess.Popen[str]:
    """Another process holding the directory's lock."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory)],
                               stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "locked"
    return process


def test_a_held_lock_refuses_naming_the_directory_and_the_owner(tmp_path: Path) -> None:
    holder = hold(tmp_path)
    try:
        with pytest.raises(ConfigError) as caught:
            DirectoryLock(tmp_path).acquire()
        message = str(caught.value)
        assert message.startswith("--out: ")
        assert str(tmp_path) in message
        assert f"pid {holder.pid}" in message
        assert "\n" not in message
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_left_by_a_dead_process_does_not_block(tmp_path: Path) -> None:
    holder = hold(tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (tmp_path / LOCK_NAME).exists()  # left behind, but no longer locked
    with DirectoryLock(tmp_path):
        assert (tmp_path / LOCK_NAME).read_text(encoding="utf-8").strip() == str(os.getpid())
    assert not (tmp_path / LOCK_NAME).exists()


def test_wait_takes_the_lock_when_the_owner_exits(tmp_path: Path) -> None:
    holder = hold(tmp_path)
    told: list[str] = []
    lock = DirectoryLock(tmp_path)
    started = time.monotonic()
    killer = subprocess.Popen(["sh", "-c", f"sleep 0.5; kill {holder.pid}"])
    try:
        lock.acquire(wait=True, poll_s=0.05, on_wait=told.append)
    finally:
        holder.wait()
        killer.wait()
    try:
        assert time.monotonic() - started < 10
        assert len(told) == 1
        assert f"in use by another snapsim run (pid {holder.pid})" in told[0]
    finally:
        lock.release()


FORKER = """\
import os, sys, time
from pathlib import Path
from simulator.study.store import DirectoryLock
DirectoryLock(Path(sys.argv[1])).acquire()
child = os.fork()
if child == 0:
    # the child's own line: its at-fork handlers (which let go of the lock) have run by now
    print(os.getpid(), flush=True)
    time.sleep(60)
    os._exit(0)
time.sleep(60)
"""


def test_a_forked_child_that_outlives_the_owner_does_not_keep_the_lock(tmp_path: Path) -> None:
    owner = subprocess.Popen([sys.executable, "-c", FORKER, str(tmp_path)],
                             stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert owner.stdout is not None
    child = int(owner.stdout.readline())
    try:
        owner.kill()  # dies holding the lock; its forked child lives on
        owner.wait()
        os.kill(child, 0)  # alive
        with DirectoryLock(tmp_path):
            pass
    finally:
        os.kill(child, signal.SIGKILL)
