"""The machine facade: validation, byte masks, false sharing, scans with MLP, line table."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simulator.config.machine import LineServiceConfig
from simulator.config.machine_file import load_machine
from simulator.hardware.codes import AccessClass, Op
from simulator.hardware.machine import ALL_BYTES, Machine, byte_mask, new_counters
from tests.toy_machines import toy_machine


@pytest.fixture(scope="module")
def gold_config():  # type: ignore[no-untyped-def]
    return load_machine("gold5215-2s")


def test_byte_mask() -> None:
    assert byte_mask(0, 4) == 0xF
    assert byte_mask(4, 4) == 0xF0
    assert byte_mask(0, 64) == ALL_BYTES
    with pytest.raises(ValueError, match="not inside one line"):
        byte_mask(60, 8)


@pytest.mark.parametrize(
    ("addresses", "message"),
    [
        ([], "non-empty"),
        ([0, 65], "multiple of 64"),
        ([64, 64], "distinct"),
        ([-64], "multiple of 64"),
    ],
)
def test_bad_line_addresses(gold_config, addresses, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        Machine(gold_config, addresses)


def test_bad_thread_line_backend_and_labels(gold_config) -> None:  # type: ignore[no-untyped-def]
    machine = Machine(gold_config, [0, 64])
    with pytest.raises(IndexError, match="hardware thread 40 does not exist"):
        machine.access(40, 0, Op.LOAD)
    with pytest.raises(IndexError, match="line 2 is not tracked"):
        machine.access(0, 2, Op.LOAD)
    with pytest.raises(IndexError, match="outside"):
        machine.scan(0, np.array([0, 5]))
    with pytest.raises(ValueError, match="unknown scan pattern"):
        machine.scan(0, np.array([0]), pattern="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown implementation"):
        Machine(gold_config, [0], implementation="fpga")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one entry per line"):
        Machine(gold_config, [0, 64], labels=["only one"])


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_hitm_attribution_false_and_true_sharing(gold_config, implementation) -> None:  # type: ignore[no-untyped-def]
    # A PGXACT-like entry: xid in bytes 0-3, xmin in bytes 4-7. Under fifo: at one instant the
    # home rule's owner window would let the writer keep the line (test_line_service).
    config = dataclasses.replace(gold_config, line_service=LineServiceConfig())
    machine = Machine(config, [0], labels=["PGXACT[0..5]"], implementation=implementation)
    writer = machine.topology.thread_by_name("s0.d0.c0.t0")
    reader = machine.topology.thread_by_name("s1.d0.c0.t0")
    machine.access(writer, 0, Op.STORE, mask=byte_mask(4, 4))  # xmin written
    machine.access(reader, 0, Op.LOAD, mask=byte_mask(0, 4))  # xid read: false sharing
    machine.access(writer, 0, Op.STORE, mask=byte_mask(4, 4))
    machine.access(reader, 0, Op.LOAD, mask=byte_mask(4, 4))  # xmin read: true sharing
    counts = machine.class_counts()
    assert counts["false_sharing_hitm"] == 1
    assert counts["true_sharing_hitm"] == 1
    table = machine.line_table()
    row = table.iloc[0]
    assert row["label"] == "PGXACT[0..5]"
    assert (row["remote_hitm"], row["false_sharing_hitm"]) == (2, 1)
    assert (row["loads"], row["stores"], row["rmws"]) == (2, 2, 0)
    assert (row["bytes_read"], row["bytes_written"]) == (0xFF, 0xF0)
    assert row["invalidations"] == 1  # the second store invalidated the reader's copy


def test_scan_stall_is_latency_over_mlp(gold_config) -> None:  # type: ignore[no-untyped-def]
    n = 2000  # does not fit the L1: a rescan hits the L2 every time
    machine = Machine(gold_config, np.arange(n) * 64)
    lines = np.arange(n)
    first = machine.scan(0, lines)
    assert first == pytest.approx(n * gold_config.memory.dram_near_ns / gold_config.mlp.stream)
    out = new_counters()
    stall = machine.scan(0, lines, out=out)
    assert out[AccessClass.L2_HIT] == n
    assert stall == pytest.approx(n * gold_config.l2.latency_ns / gold_config.mlp.stream)
    indirect = machine.scan(0, lines, pattern="indirect")
    assert indirect == pytest.approx(n * gold_config.l2.latency_ns / gold_config.mlp.indirect)
    assert machine.totals[AccessClass.L2_HIT] == n  # the indirect scan; the out= scan went to out


def test_scan_of_l1_resident_lines_costs_nothing_beyond_instructions(gold_config) -> None:  # type: ignore[no-untyped-def]
    machine = Machine(gold_config, np.arange(16) * 64)
    machine.scan(0, np.arange(16))
    assert machine.scan(0, np.arange(16)) == 0.0


def test_busy_line_wait_is_reported_separately() -> None:
    machine = Machine(toy_machine(), [0])
    a, b = 0, machine.topology.thread_by_name("s0.d0.c1.t0")
    machine.access(a, 0, Op.RMW, now=0.0)
    first = machine.access(b, 0, Op.RMW, now=0.0)  # transfer a -> b: 45 ns, line busy until 45
    second = machine.access(a, 0, Op.RMW, now=10.0)  # queued until 45, then 45 ns back
    assert (first.wait_ns, first.latency_ns) == (0.0, 45.0)
    assert (second.wait_ns, second.latency_ns, second.cost_ns) == (35.0, 45.0, 80.0)
    assert machine.line_table()["wait_ns"].iloc[0] == 35.0


def test_line_table_columns(gold_config) -> None:  # type: ignore[no-untyped-def]
    table = Machine(gold_config, [0, 64]).line_table()
    for column in (
        "label",
        "address",
        "home",
        "loads",
        "stores",
        "rmws",
        "l1_hit",
        "local_hitm",
        "remote_hitm",
        "false_sharing_hitm",
        "invalidations",
        "wait_ns",
        "bytes_read",
        "bytes_written",
        "dram_remote",
    ):
        assert column in table.columns
    assert list(table["label"]) == ["0x0", "0x40"]


def test_interleaved_placement_rotates_homes() -> None:
    machine = Machine(toy_machine(placement="interleave"), [0, 4096, 8192, 8256])
    assert list(machine.homes) == [0, 1, 0, 0]
