"""Loading the PostgreSQL cost model: the shipped file, the units it takes, and its errors."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from simulator.errors import ConfigError
from snapsim_models.costs import (
    DEFAULT_COSTS_FILE,
    ConnectionCosts,
    PgCosts,
    ProcessWorkingSet,
    ScanCosts,
    StatementCosts,
    WorkingSetCosts,
    costs_from_dict,
    load_costs,
    read_costs_document,
)


def document() -> dict[str, object]:
    return copy.deepcopy(read_costs_document(DEFAULT_COSTS_FILE))


def with_value(path: str, value: object) -> dict[str, object]:
    data = document()
    *parents, last = path.split(".")
    target: dict[str, object] = data
    for key in parents:
        child = target[key]
        assert isinstance(child, dict)
        target = child
    target[last] = value
    return data


def test_shipped_model() -> None:
    costs = load_costs()
    assert costs.statements == StatementCosts(30000.0, 18000.0, 120000.0, 20000.0)
    assert costs.client_cycles == 14300.0
    assert costs.scan == ScanCosts(pg91=6.0, pre14=3.32, dense=1.5)
    assert (costs.footprint_private_bytes, costs.footprint_l3_bytes) == (64 * 1024, 16 * 1024)
    assert costs.mostly_idle_sleep_ns == 100e6
    assert costs.connection == ConnectionCosts(postmaster=250000.0, backend_startup=500000.0,
                                               backend_exit=100000.0, client=20000.0)
    assert costs.pgbench_loop_per_connection_cycles == 100.0
    assert costs.working_set == WorkingSetCosts(
        backend=ProcessWorkingSet(private=40 * 1024, code=128 * 1024),
        client=ProcessWorkingSet(private=16 * 1024, code=32 * 1024))


@pytest.mark.parametrize(("section", "partial", "missing"), [
    ("working_set", ("working_set.backend", {"private": "1 KiB"}), "working_set.backend.code"),
    ("connection", ("connection", {"postmaster": "1 cycles"}), "connection.backend_startup"),
])
def test_a_cost_file_without_a_later_section_takes_the_shipped_one(
        tmp_path: Path, section: str, partial: tuple[str, object], missing: str) -> None:
    """Cost files written before the section still load: the section is the shipped file's,
    and the resolved document carries it; a section given in part names what it misses."""
    data = document()
    del data[section]
    assert getattr(costs_from_dict(data), section) == getattr(load_costs(), section)
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(data))
    assert read_costs_document(path)[section] == document()[section]
    with pytest.raises(ConfigError, match="missing") as info:
        costs_from_dict(with_value(*partial))
    assert info.value.key == missing


def test_a_working_set_of_zero_switches_it_off() -> None:
    none = {"private": 0, "code": "0 KiB"}
    data = with_value("working_set", {"backend": none, "client": none})
    assert costs_from_dict(data).working_set == WorkingSetCosts(ProcessWorkingSet(0, 0),
                                                                ProcessWorkingSet(0, 0))


def test_a_cost_file_without_the_pgbench_loop_takes_the_shipped_one(tmp_path: Path) -> None:
    data = document()
    del data["pgbench_loop"]
    assert costs_from_dict(data).pgbench_loop_per_connection_cycles == 100.0
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(data))
    assert read_costs_document(path)["pgbench_loop"] == {"per_connection": "100 cycles"}
    with pytest.raises(ConfigError) as info:
        costs_from_dict(with_value("pgbench_loop.per_connection", "-5 cycles"))
    assert info.value.key == "pgbench_loop.per_connection"
    with pytest.raises(ConfigError) as info:
        costs_from_dict(with_value("pgbench_loop", {"per_connection": "1 cycles", "poll": 3}))
    assert "poll" in str(info.value)


def test_sizes_and_times_may_be_bare_numbers_cycles_may_not() -> None:
    data = with_value("footprint.private", 4096)
    data["mostly_idle_sleep"] = 2500
    costs = costs_from_dict(data)
    assert (costs.footprint_private_bytes, costs.mostly_idle_sleep_ns) == (4096, 2500.0)
    with pytest.raises(ConfigError, match=r"^client: .*'30000 cycles', got 5000$"):
        costs_from_dict(with_value("client", 5000))


@pytest.mark.parametrize(("path", "value", "message"), [
    ("client", "lots cycles", "number of cycles such as '30000 cycles'"),
    ("backend.tpcb", "-5 cycles", "non-negative number of cycles"),
    ("backend.select1", "18 ns", "number of cycles"),
    ("scan_cycles_per_entry.dense", -1.5, "must not be negative, got -1.5"),
    ("scan_cycles_per_entry.pre14", True, "expected a number, got boolean True"),
    ("footprint.l3", "16 KiX", "unknown size unit"),
    ("mostly_idle_sleep", "3 cycles", "no clock frequency"),
    ("backend.select_onlyy", "1 cycles", "unknown key"),
    ("footprint", 5, "expected a mapping"),
    ("connection.backend_startup", "-1 cycles", "non-negative number of cycles"),
    ("connection.postmaster", 250000, "number of cycles such as"),
    ("working_set.backend.private", "-192 KiB", "is negative"),
    ("working_set.client.code", "64 cycles", "unknown size unit"),
    ("working_set.client.private", True, "expected a size"),
    ("working_set.server", "1 KiB", "unknown key"),
    ("working_set.backend.text", "1 KiB", "unknown key"),
    ("working_set.client", "64 KiB", "expected a mapping"),
    ("working_set", [1], "expected a mapping"),
])
def test_bad_values_name_their_dotted_key_and_file(path: str, value: object,
                                                   message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        costs_from_dict(with_value(path, value), "costs.yaml")
    assert (info.value.key, info.value.source) == (path, "costs.yaml")


def test_missing_key() -> None:
    data = document()
    backend = data["backend"]
    assert isinstance(backend, dict)
    del backend["tpcb"]
    with pytest.raises(ConfigError, match="missing") as info:
        costs_from_dict(data)
    assert info.value.key == "backend.tpcb"


def test_file_errors_carry_the_file(tmp_path: Path) -> None:
    path = tmp_path / "costs.yaml"
    path.write_text("version: 1\nclient: 1 cycles\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_costs(path)
    assert info.value.source == str(path)


def test_scaled_multiplies_the_base_work_only() -> None:
    costs = load_costs()
    scaled = costs.scaled(2.0)
    assert isinstance(scaled, PgCosts)
    assert scaled.statements.tpcb == 2 * costs.statements.tpcb
    assert scaled.client_cycles == 2 * costs.client_cycles
    assert (scaled.scan, scaled.footprint_l3_bytes) == (costs.scan, costs.footprint_l3_bytes)
    assert scaled.working_set == costs.working_set
    assert costs.scaled(1.0) is costs


RECORD = {"command": "snapsim calibrate --param options.costs.client=2000:30000:cycles",
          "datasets": ["gold5215_idle"], "objective": 0.1, "evaluations": 12,
          "fitted": {"options.costs.client": "10000 cycles"}, "date": "2026-11-24",
          "sensitivity": [{"parameter": "options.costs.client", "factor": 0.9,
                           "objective": 0.11}]}


def test_a_calibration_record_is_checked_and_no_part_of_the_model(tmp_path: Path) -> None:
    data = document()
    data["calibration"] = copy.deepcopy(RECORD)
    assert costs_from_dict(data) == costs_from_dict(document())
    path = tmp_path / "costs.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert "calibration" not in read_costs_document(path)
    assert load_costs(path) == load_costs()


@pytest.mark.parametrize(("key", "value"), [
    ("command", ""), ("datasets", []), ("datasets", "gold5215_idle"), ("objective", -1),
    ("evaluations", 0), ("fitted", {}), ("date", 20261124), ("sensitivity", "none"),
    ("extra", 1),
])
def test_bad_calibration_records_name_their_key(key: str, value: object) -> None:
    data = document()
    data["calibration"] = {**copy.deepcopy(RECORD), key: value}
    with pytest.raises(ConfigError) as caught:
        costs_from_dict(data)
    assert caught.value.key == f"calibration.{key}"
