"""Parsing of quantities with units: sizes, times and frequencies.

Machine files write quantities as strings with units (``"32 KiB"``, ``"48 ns"``, ``"14 cycles"``,
``"2.5 GHz"``), as gem5 and desmod do. Internally sizes are bytes (int), times are nanoseconds
(float) and frequencies GHz (float). A plain number is accepted where the unit is implied by the
name of the key (``size_bytes``-style keys are not used in files; every file value carries a unit).
"""

from __future__ import annotations

import math
import re

__all__ = ["parse_frequency_ghz", "parse_size_bytes", "parse_time_ns"]

_NUMBER = r"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_QUANTITY = re.compile(rf"^\s*{_NUMBER}\s*([A-Za-z]*)\s*$")

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
}
_TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_FREQ_UNITS_GHZ = {"ghz": 1.0, "mhz": 1e-3}
_CYCLE_UNITS = {"cycle", "cycles", "cyc"}


def _split(value: object, what: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise ValueError(f"expected a {what}, got {value!r}")
    if isinstance(value, int | float):
        return float(value), ""
    if not isinstance(value, str):
        raise ValueError(f"expected a {what} such as {_EXAMPLES[what]!r}, got {value!r}")
    match = _QUANTITY.match(value.replace("µs", "us"))
    if match is None:
        raise ValueError(f"cannot parse {value!r} as a {what} (e.g. {_EXAMPLES[what]!r})")
    number = float(match.group(1))
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite {what}")
    return number, match.group(2)


_EXAMPLES = {"size": "32 KiB", "time": "48 ns", "frequency": "2.5 GHz"}


def parse_size_bytes(value: object) -> int:
    """Parse a size such as ``"32 KiB"`` or ``"13.75 MiB"`` into a whole number of bytes.

    Raises:
        ValueError: unknown unit, negative or fractional byte count.
    """
    number, unit = _split(value, "size")
    factor = _SIZE_UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(f"unknown size unit {unit!r} in {value!r} (use B, KiB, MiB, GiB)")
    size = number * factor
    if size < 0:
        raise ValueError(f"size {value!r} is negative")
    if size != int(size):
        raise ValueError(f"size {value!r} is not a whole number of bytes")
    return int(size)


def parse_time_ns(value: object, clock_ghz: float | None = None) -> float:
    """Parse a time such as ``"48 ns"``, ``"3 us"`` or ``"14 cycles"`` into nanoseconds.

    Cycles are converted with ``clock_ghz``; a bare number is taken as nanoseconds.

    Raises:
        ValueError: unknown unit, negative time, or cycles without a clock.
    """
    number, unit = _split(value, "time")
    lowered = unit.lower()
    if lowered in _CYCLE_UNITS:
        if clock_ghz is None or clock_ghz <= 0:
            raise ValueError(f"{value!r} is in cycles but no clock frequency is known")
        ns = number / clock_ghz
    elif lowered == "":
        ns = number
    elif lowered in _TIME_UNITS_NS:
        ns = number * _TIME_UNITS_NS[lowered]
    else:
        raise ValueError(f"unknown time unit {unit!r} in {value!r} (use ns, us, ms, s or cycles)")
    if ns < 0:
        raise ValueError(f"time {value!r} is negative")
    return ns


def parse_frequency_ghz(value: object) -> float:
    """Parse a frequency such as ``"2.5 GHz"`` or ``"3400 MHz"`` into GHz.

    Raises:
        ValueError: unknown unit or a frequency that is not positive.
    """
    number, unit = _split(value, "frequency")
    factor = _FREQ_UNITS_GHZ.get(unit.lower()) if unit else 1.0
    if factor is None:
        raise ValueError(f"unknown frequency unit {unit!r} in {value!r} (use GHz or MHz)")
    ghz = number * factor
    if ghz <= 0:
        raise ValueError(f"frequency {value!r} must be positive")
    return ghz
