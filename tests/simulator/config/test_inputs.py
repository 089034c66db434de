"""YAML numbers in every spelling, and cache sizes that cannot nest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.config.machine_file import machine_from_dict
from simulator.config.yaml_io import parse_yaml, read_yaml
from simulator.errors import ConfigError
from simulator.study.experiment_file import apply_overrides, experiment_from_document

WriteYaml = Any


@pytest.mark.parametrize(("text", "value"), [
    ("1e-9", 1e-9), ("1e6", 1e6), ("-2E3", -2000.0), ("+1.5e2", 150.0), (".5e1", 5.0),
    ("1.0e+3", 1000.0), ("3", 3), ("2.5", 2.5), ("1_000", 1000),
])
def test_numbers_with_an_exponent_are_numbers(text: str, value: float) -> None:
    parsed = parse_yaml(f"x: {text}")
    assert parsed == {"x": value}
    assert isinstance(parsed, dict)
    assert not isinstance(parsed["x"], str)


@pytest.mark.parametrize("text", ["1e", "e5", "1e6x", "'1e6'", "1.2.3e4", "0x1e3g"])
def test_other_scalars_stay_strings(text: str) -> None:
    parsed = parse_yaml(f"x: {text}")
    assert isinstance(parsed, dict)
    assert isinstance(parsed["x"], str)


def test_a_file_reads_exponents_as_numbers(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("duration_ms: 1e-1\nwarmup_ms: 5e-2\n", encoding="utf-8")
    assert read_yaml(path) == {"duration_ms": 0.1, "warmup_ms": 0.05}


def test_set_accepts_exponent_numbers() -> None:
    document = apply_overrides({}, ["duration_ms=1e-9", "warmup_ms=2e0",
                                    "single_client_tps=3.3e4"])
    experiment = experiment_from_document(document, "--set")
    assert experiment.duration_ms == 1e-9
    assert experiment.warmup_ms == 2.0
    assert experiment.single_client_tps == 33000.0


@pytest.mark.parametrize(("caches", "inclusion", "key", "message"), [
    ({"l1d": {"size": "2 MiB", "ways": 8, "latency": "5 cycles"}}, None, "caches.l1d.size",
     "2097152 bytes is larger than caches.l2.size (1048576 bytes)"),
    ({"l3": {"size": "512 KiB", "ways": 8, "latency": "77 cycles"}}, "inclusive",
     "caches.l3.size", "524288 bytes is smaller than one core's caches.l2.size"),
])
def test_caches_that_cannot_nest_are_rejected(
        gold_data: dict[str, Any], caches: dict[str, object], inclusion: str | None, key: str,
        message: str) -> None:
    gold_data["caches"].update(caches)
    if inclusion is not None:
        gold_data["coherence"]["l3_inclusion"] = inclusion
    with pytest.raises(ConfigError) as info:
        machine_from_dict(gold_data, source="bad.yaml")
    assert info.value.key == key
    assert message in str(info.value)


def test_a_small_non_inclusive_l3_is_allowed(gold_data: dict[str, Any]) -> None:
    gold_data["caches"]["l3"] = {"size": "512 KiB", "ways": 8, "latency": "77 cycles"}
    assert machine_from_dict(gold_data).l3.size_bytes == 512 * 1024


def test_run_refuses_a_machine_whose_l1_is_larger_than_its_l2(
        gold_data: dict[str, Any], write_yaml: WriteYaml, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    gold_data["caches"]["l1d"]["size"] = "2 MiB"
    machine = write_yaml(gold_data)
    out = tmp_path / "out"
    assert main(["run", "tiny", "--machine", str(machine), "--out", str(out),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "caches.l1d.size" in err[0]
    assert not (out / "points").exists()
