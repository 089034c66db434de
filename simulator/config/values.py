"""Strict checks of parsed YAML values, shared by every configuration loader.

Each ``expect_*`` function returns the value with its Python type or raises
:class:`~simulator.errors.ConfigError` naming the full dotted key path and describing what was
found in YAML terms ("expected an integer, got string '4'"). Booleans are never accepted as
numbers. Loaders attach the source file to the error.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from enum import StrEnum
from typing import TypeVar

from simulator.errors import ConfigError

__all__ = [
    "check_keys",
    "describe_kind",
    "expect_bool",
    "expect_enum",
    "expect_int",
    "expect_list",
    "expect_mapping",
    "expect_number",
    "expect_section",
    "expect_str",
    "join_key",
]

_E = TypeVar("_E", bound=StrEnum)


def join_key(path: str, key: str) -> str:
    """``path.key``, or ``key`` at the top level."""
    return f"{path}.{key}" if path else key


def describe_kind(value: object) -> str:
    """Describe a value in YAML terms for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {value!r}"
    if isinstance(value, int):
        return f"integer {value!r}"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def expect_mapping(path: str, value: object) -> Mapping[str, object]:
    """A mapping."""
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"expected a mapping, got {describe_kind(value)}")
    return value


def expect_section(
    value: object, path: str, keys: Sequence[str], optional: Collection[str] = ()
) -> Mapping[str, object]:
    """A mapping whose keys are exactly ``keys`` (those in ``optional`` may be absent)."""
    data = expect_mapping(path, value)
    check_keys(data, path, keys, optional)
    return data


def check_keys(
    data: Mapping[str, object], path: str, keys: Sequence[str], optional: Collection[str] = ()
) -> None:
    """Reject keys not in ``keys`` and require those not in ``optional``."""
    for key in data:
        if not isinstance(key, str) or key not in keys:
            expected = ", ".join(keys)
            raise ConfigError(join_key(path, str(key)),
                              f"unknown key (expected one of: {expected})")
    for key in keys:
        if key not in data and key not in optional:
            raise ConfigError(join_key(path, key), "missing required key")


def expect_list(path: str, value: object) -> list[object]:
    """A list."""
    if not isinstance(value, list):
        raise ConfigError(path, f"expected a list, got {describe_kind(value)}")
    return value


def expect_int(path: str, value: object) -> int:
    """An integer (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"expected an integer, got {describe_kind(value)}")
    return value


def expect_number(path: str, value: object) -> float:
    """An integer or a float (not a boolean), as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(path, f"expected a number, got {describe_kind(value)}")
    return float(value)


def expect_bool(path: str, value: object) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise ConfigError(path, f"expected true or false, got {describe_kind(value)}")
    return value


def expect_str(path: str, value: object) -> str:
    """A string."""
    if not isinstance(value, str):
        raise ConfigError(path, f"expected a string, got {describe_kind(value)}")
    return value


def expect_enum(path: str, value: object, enum_type: type[_E]) -> _E:
    """A member of ``enum_type`` given by its value."""
    text = expect_str(path, value)
    try:
        return enum_type(text)
    except ValueError:
        choices = ", ".join(member.value for member in enum_type)
        raise ConfigError(path, f"unknown value {text!r} (choose one of: {choices})") from None
