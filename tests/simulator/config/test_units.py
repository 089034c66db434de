"""Parsing of sizes, times and frequencies with units."""

from __future__ import annotations

import pytest

from simulator.config.units import parse_frequency_ghz, parse_size_bytes, parse_time_ns


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("32 KiB", 32 * 1024),
        ("1 MiB", 1024**2),
        ("13.75 MiB", 14_417_920),
        ("2 GiB", 2 * 1024**3),
        ("64 B", 64),
        ("64", 64),
        ("4kb", 4000),
        ("1 MB", 1_000_000),
        ("  16MiB ", 16 * 1024**2),
        (4096, 4096),
    ],
)
def test_sizes(text: object, expected: int) -> None:
    size = parse_size_bytes(text)
    assert size == expected
    assert isinstance(size, int)


@pytest.mark.parametrize(
    ("text", "clock", "expected"),
    [
        ("48 ns", None, 48.0),
        ("81.2 ns", None, 81.2),
        ("2 us", None, 2000.0),
        ("2 µs", None, 2000.0),
        ("2µs", None, 2000.0),
        ("3 ms", None, 3e6),
        ("1 s", None, 1e9),
        ("1.5e3 ns", None, 1500.0),
        ("0 us", None, 0.0),
        ("14 cycles", 2.5, 5.6),
        ("77 cycles", 2.5, 30.8),
        ("1 cycle", 2.0, 0.5),
        ("39 cyc", 2.9, 39 / 2.9),
        ("7", None, 7.0),
        (7.4, None, 7.4),
    ],
)
def test_times(text: object, clock: float | None, expected: float) -> None:
    assert parse_time_ns(text, clock) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2.5 GHz", 2.5), ("3400 MHz", 3.4), ("2.9ghz", 2.9), ("2.5", 2.5), (3, 3.0)],
)
def test_frequencies(text: object, expected: float) -> None:
    assert parse_frequency_ghz(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("32 KB/s", "cannot parse"),
        ("32 parsecs", "unknown size unit"),
        ("-1 KiB", "negative"),
        ("0.5 B", "whole number of bytes"),
        ("1.3 KiB", "whole number of bytes"),
        ("KiB", "cannot parse"),
        ("", "cannot parse"),
        (True, "expected a size"),
        (None, "expected a size"),
        ([32], "expected a size"),
        ("1e999 B", "not a finite"),
    ],
)
def test_size_errors(value: object, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        parse_size_bytes(value)


@pytest.mark.parametrize(
    ("value", "clock", "fragment"),
    [
        ("5 fortnights", None, "unknown time unit"),
        ("-3 ns", None, "negative"),
        ("14 cycles", None, "no clock"),
        ("14 cycles", 0.0, "no clock"),
        ("ns", None, "cannot parse"),
        (False, None, "expected a time"),
        ({"ns": 3}, None, "expected a time"),
    ],
)
def test_time_errors(value: object, clock: float | None, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        parse_time_ns(value, clock)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("2.5 GHz/s", "cannot parse"),
        ("2.5 THz", "unknown frequency unit"),
        ("0 GHz", "must be positive"),
        ("-2 GHz", "must be positive"),
        (None, "expected a frequency"),
    ],
)
def test_frequency_errors(value: object, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        parse_frequency_ghz(value)
