"""The ``options.atomics`` switch: defaults, the fused ablation, and bad values named by key."""

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
