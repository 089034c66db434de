"""Published ratios in a manifest: parsing and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.errors import ConfigError
from simulator.study.measurements import RatioSide, load_manifest
from tests.simulator.study.test_validate import write_manifest

RATIO = """\
ratios:
  tiny_ratio:
    machine: gold5215-2s
    stand_in: "the machine of the tiny dataset"
    workload: select-only
    clients: 4
    numerator: post14
    denominator: pre14
    published: 1.05
    tolerance: 0.9
    source: "a test"
"""


def ratio_manifest(tmp_path: Path, ratio: str = RATIO, **kwargs: str) -> Path:
    """The tiny manifest of the validate tests with ``ratio`` (a top-level section) appended."""
    return write_manifest(tmp_path, extra=ratio, **kwargs)


def edited(tmp_path: Path, old: str, new: str) -> Path:
    return ratio_manifest(tmp_path, RATIO.replace(old, new, 1))


def test_a_ratio_is_read_with_its_defaults(tmp_path: Path) -> None:
    ratio = load_manifest(ratio_manifest(tmp_path)).ratio("tiny_ratio")
    assert (ratio.machine, ratio.workload, ratio.clients, ratio.idle_clients,
            ratio.idle_kind) == ("gold5215-2s", "select-only", 4, 0, "idle")
    assert ratio.numerator == RatioSide("post14")
    assert ratio.denominator == RatioSide("pre14")
    assert (ratio.published, ratio.tolerance, ratio.batch, ratio.known_gap, dict(ratio.run)) == (
        1.05, 0.9, None, "", {})
    assert ratio.source == "a test"
    assert ratio.stand_in == "the machine of the tiny dataset"


def test_a_ratio_side_can_set_options_and_a_ratio_can_be_a_known_gap(tmp_path: Path) -> None:
    text = (RATIO.replace("numerator: post14", "numerator: {algorithm: pre14, set: "
                          "{options.layout: [{move: PGXACT.xmin, to: own_line}]}}")
            .replace("    source:", "    batch: 3\n    idle_clients: 10\n    idle_kind: "
                     "mostly-idle\n    run: {duration_ms: 2}\n    expected: fail\n"
                     "    reason: not modelled\n    source:"))
    ratio = load_manifest(ratio_manifest(tmp_path, text)).ratio("tiny_ratio")
    assert ratio.numerator.sets == (("options.layout", [{"move": "PGXACT.xmin",
                                                         "to": "own_line"}]),)
    assert ratio.numerator.label() == ('pre14 with options.layout=[{"move":"PGXACT.xmin",'
                                       '"to":"own_line"}]')
    assert (ratio.batch, ratio.idle_clients, ratio.idle_kind, dict(ratio.run),
            ratio.known_gap) == (3, 10, "mostly-idle", {"duration_ms": 2.0}, "not modelled")


@pytest.mark.parametrize(("old", "new", "key", "message"), [
    ("    source:", "    sauce: x\n    source:", "ratios.tiny_ratio.sauce", "unknown key"),
    ("    published: 1.05\n", "", "ratios.tiny_ratio.published", "missing required key"),
    ("published: 1.05", "published: 0", "ratios.tiny_ratio.published", "must be a positive"),
    ("published: 1.05", "published: -2", "ratios.tiny_ratio.published", "must be a positive"),
    ("published: 1.05", "published: fast", "ratios.tiny_ratio.published", "expected a number"),
    ("tolerance: 0.9", "tolerance: -0.1", "ratios.tiny_ratio.tolerance", "non-negative"),
    ("clients: 4", "clients: 0", "ratios.tiny_ratio.clients", "at least 1"),
    ("clients: 4", "clients: 4\n    idle_clients: -1", "ratios.tiny_ratio.idle_clients",
     "must not be negative"),
    ("clients: 4", "clients: 4\n    batch: 0", "ratios.tiny_ratio.batch", "at least 1"),
    ('source: "a test"', 'source: ""', "ratios.tiny_ratio.source", "must not be empty"),
    ("clients: 4", "clients: 4\n    expected: fail", "ratios.tiny_ratio.reason",
     "required with expected: fail"),
    ("clients: 4", "clients: 4\n    reason: why", "ratios.tiny_ratio.reason",
     "only a ratio with expected: fail"),
    ("clients: 4", "clients: 4\n    expected: maybe", "ratios.tiny_ratio.expected",
     "unknown value 'maybe'"),
    ("numerator: post14", "numerator: {algorithm: post14, set: {clients: 8}}",
     "ratios.tiny_ratio.numerator.set.clients", "expected a key of the experiment's options"),
    ("numerator: post14", "numerator: {algo: post14}", "ratios.tiny_ratio.numerator.algo",
     "unknown key"),
    ("clients: 4", "clients: 4\n    run: {duration_ms: 0}", "ratios.tiny_ratio.run.duration_ms",
     "must be positive"),
])
def test_a_bad_ratio_names_its_key(tmp_path: Path, old: str, new: str, key: str,
                                   message: str) -> None:
    path = edited(tmp_path, old, new)
    with pytest.raises(ConfigError) as error:
        load_manifest(path)
    assert error.value.key == key
    assert message in error.value.message
    assert error.value.source == str(path)


def test_an_unknown_ratio_lists_the_ratios(tmp_path: Path) -> None:
    manifest = load_manifest(ratio_manifest(tmp_path))
    with pytest.raises(ConfigError, match=r"no ratio 'other' .*\(ratios: tiny_ratio\)"):
        manifest.ratio("other")
