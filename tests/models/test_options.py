"""The ``options.atomics`` switch and ``options.pgbench_scale``: defaults, parsing, and bad values
named by key."""

from __future__ import annotations

import pytest

from simulator.errors import ConfigError
from snapsim_models.options import parse_options, resolve_options


def test_atomics_default_to_read_cas_and_fused_users_are_parsed() -> None:
    resolved = resolve_options({})
    assert resolved["atomics"] == {"lwlock": "read_cas", "buffer": "read_cas"}
    assert parse_options(resolved).fused_atomics == frozenset()
    fused = parse_options(resolve_options({"atomics": {"buffer": "fused"}}))
    assert fused.fused_atomics == frozenset({"buffer"})


@pytest.mark.parametrize(("atomics", "key"), [
    ({"lwlock": "fast"}, "options.atomics.lwlock"),
    ({"pins": "fused"}, "options.atomics.pins"),
    ("fused", "options.atomics"),
])
def test_bad_atomics_name_the_key(atomics: object, key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_options({"atomics": atomics})
    assert raised.value.key == key


def test_pgbench_scale_defaults_to_100_and_is_parsed() -> None:
    assert resolve_options({})["pgbench_scale"] == 100
    assert parse_options(resolve_options({"pgbench_scale": 10})).pgbench_scale == 10


@pytest.mark.parametrize(("scale", "message"), [
    (0, "at least 1"), ("ten", "integer"), (1_000_000, "inner index pages"),
])
def test_bad_pgbench_scales_name_the_key(scale: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        resolve_options({"pgbench_scale": scale})
    assert raised.value.key == "options.pgbench_scale"


def test_pin_defaults_to_atomic_and_spinlock_is_parsed() -> None:
    assert resolve_options({})["pin"] == "atomic"
    assert parse_options(resolve_options({"pin": "spinlock"})).pin_protocol == "spinlock"
    with pytest.raises(ConfigError) as raised:
        resolve_options({"pin": "mutex"})
    assert raised.value.key == "options.pin"
