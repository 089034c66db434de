"""The ``options.atomics`` switch, ``options.pgbench_scale``, ``options.layout`` and
``options.working_sets``: defaults, parsing, and bad values named by key."""

from __future__ import annotations

import pytest

from simulator.errors import ConfigError
from simulator.hardware.layout_edits import Move, Pad
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


def test_layout_defaults_to_no_edit_and_is_parsed() -> None:
    assert resolve_options({})["layout"] == []
    assert parse_options(resolve_options({})).layout == ()
    edits = [{"move": "PGXACT.xmin", "to": "own_line"}, {"pad": "xids", "to": 64}]
    resolved = resolve_options({"layout": edits})
    assert resolved["layout"] == edits
    assert resolve_options(resolved) == resolved
    assert parse_options(resolved).layout == (
        Move("options.layout[0]", "PGXACT.xmin", "own_line"), Pad("options.layout[1]", "xids", 64))


def test_layout_edit_of_one_version_only_is_accepted() -> None:
    """PGPROC.xmin exists in 9.1 and 14, not in 13 (where it is in PGXACT): accepted."""
    resolved = resolve_options({"layout": [{"move": "PGPROC.xmin", "to": "array"}]})
    assert len(parse_options(resolved).layout) == 1


@pytest.mark.parametrize(("layout", "key", "message"), [
    ([{"move": "PGXAC.xmin", "to": "own_line"}], "options.layout[0].move",
     "no version's shared memory has a struct or array named 'PGXAC'"),
    ([{"move": "PGXACT.xmax", "to": "own_line"}], "options.layout[0].move",
     "PGXACT has no field 'xmax' (fields: xid, xmin"),
    ([{"reorder": "PGXACT", "fields": ["nxids", "xid"]}], "options.layout[0].fields",
     "overlap after the edit"),
    ([{"pad": "PGXACT", "to": 8}], "options.layout[0].to",
     "8 B is smaller than PGXACT's element (12 B) (version pre14)"),
    ([{"pad": "PGXACT", "to": -64}], "options.layout[0].to", "positive"),
    ([{"align": "PGXACT", "to": 96}], "options.layout[0].to", "power of two"),
    ([{"align": "PGXACT", "to": 0}], "options.layout[0].to", "power of two"),
    ([{"shrink": "PGXACT", "to": 8}], "options.layout[0]", "exactly one edit kind"),
    ([{"move": "PGXACT.xmin", "to": "own_line"}, {"pad": "PGXACT.xmin", "to": 64}],
     "options.layout[1].pad", "named 'PGXACT.xmin'"),
    ({"move": "PGXACT.xmin"}, "options.layout", "a list of edits"),
])
def test_bad_layouts_name_the_key(layout: object, key: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_options({"layout": layout}, "exp.yaml")
    assert raised.value.key == key
    assert message in raised.value.message
    assert raised.value.source == "exp.yaml"


def test_working_sets_default_to_on_and_are_parsed() -> None:
    assert resolve_options({})["working_sets"] is True
    assert parse_options(resolve_options({})).working_sets is True
    resolved = resolve_options({"working_sets": False})
    assert parse_options(resolved).working_sets is False
    assert resolve_options(resolved) == resolved


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_bad_working_sets_name_the_key(value: object) -> None:
    with pytest.raises(ConfigError, match="expected true or false") as raised:
        resolve_options({"working_sets": value}, "experiment.yaml")
    assert (raised.value.key, raised.value.source) == ("options.working_sets", "experiment.yaml")


def test_refill_rule_defaults_to_adaptive_and_is_parsed() -> None:
    assert resolve_options({})["refill_rule"] == "adaptive"
    assert parse_options(resolve_options({})).refill_rule == "adaptive"
    resolved = resolve_options({"refill_rule": "lru"})
    assert parse_options(resolved).refill_rule == "lru"
    assert resolve_options(resolved) == resolved


def test_a_bad_refill_rule_names_the_key() -> None:
    with pytest.raises(ConfigError, match="adaptive or lru") as raised:
        resolve_options({"refill_rule": "fifo"}, "experiment.yaml")
    assert (raised.value.key, raised.value.source) == ("options.refill_rule", "experiment.yaml")
