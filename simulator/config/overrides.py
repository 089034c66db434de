"""``KEY=VALUE`` overrides of a parsed YAML document: dotted keys, YAML values.

Shared by the experiment's ``--set`` and the machine's ``--machine-set``: each caller checks its
own top-level keys; the document's loader then checks every value as it would in a file.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

from simulator.config.values import describe_kind
from simulator.config.yaml_io import parse_yaml
from simulator.errors import ConfigError

__all__ = ["parse_override", "set_dotted"]


def parse_override(item: str, flag: str) -> tuple[list[str], object]:
    """``a.b=VALUE`` as the key's parts and the value parsed as YAML (empty text: ``""``).

    Raises:
        ConfigError: not ``key=value``, or the value is malformed YAML (naming ``flag``).
    """
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(flag, f"expected key=value, got {item!r}")
    value = parse_yaml(text, flag) if text.strip() else ""
    return key.split("."), value


def set_dotted(document: Mapping[str, object], parts: Sequence[str], value: object,
               flag: str) -> dict[str, object]:
    """A copy of ``document`` with the dotted key ``parts`` set to ``value``.

    Missing mappings on the way are created.

    Raises:
        ConfigError: a key on the way holds a value that is not a mapping.
    """
    result = copy.deepcopy(dict(document))
    target = result
    for depth, part in enumerate(parts[:-1]):
        child = target.get(part)
        if child is None:
            child = {}
            target[part] = child
        if not isinstance(child, dict):
            raise ConfigError(".".join(parts[:depth + 1]),
                              f"is {describe_kind(child)}, cannot set {'.'.join(parts)}", flag)
        target = child
    target[parts[-1]] = value
    return result
