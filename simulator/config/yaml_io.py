"""Reading YAML: one safe loader for every file snapsim reads, with errors a user can act on.

A malformed document is reported with its line and column, and a mapping key given twice is an
error naming its dotted path (the YAML safe loader would silently keep the last one).

Numbers follow YAML 1.2 as well as 1.1: ``1e-9``, ``1e6`` and ``2.5E3`` are numbers (PyYAML's
YAML 1.1 resolver reads a float without a dot or an exponent without a sign as a string).
Everything else resolves as the safe loader resolves it.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from simulator.config.values import join_key
from simulator.errors import ConfigError

__all__ = ["Loader", "parse_yaml", "read_yaml"]

_YAML12_FLOAT = re.compile(r"""^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$""")
"""Floats with an exponent that YAML 1.1 misses: ``1e6``, ``1e-9``, ``2.5E3``, ``.5e2``."""


class Loader(yaml.SafeLoader):
    """The safe loader, resolving YAML 1.2 exponent floats (``1e-9``) as numbers."""


Loader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML12_FLOAT,
                             list("-+0123456789."))


def read_yaml(path: str | Path) -> object:
    """Read one YAML document with the safe loader, rejecting duplicate mapping keys.

    Raises:
        ConfigError: the file cannot be read or is not well-formed YAML (with line and column).
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("", "no such file", source) from None
    except IsADirectoryError:
        raise ConfigError("", "is a directory, not a YAML file", source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"cannot read file: {exc}", source) from exc
    return parse_yaml(text, source)


def parse_yaml(text: str, source: str | None = None) -> object:
    """Parse one YAML document (safe loader, duplicate keys rejected).

    Raises:
        ConfigError: malformed YAML (naming line and column) or a duplicate key (naming its path).
    """
    try:
        node = yaml.compose(text, Loader=Loader)
        if node is not None:
            _reject_duplicate_keys(node, "", set())
        return yaml.load(text, Loader=Loader)
    except yaml.MarkedYAMLError as exc:
        raise ConfigError("", _describe_yaml_error(exc), source) from exc
    except yaml.YAMLError as exc:
        raise ConfigError("", f"malformed YAML: {exc}", source) from exc
    except ConfigError as exc:
        raise ConfigError(exc.key, exc.message, source) from exc


def _describe_yaml_error(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "syntax error"
    if mark is None:
        return f"malformed YAML: {problem}"
    return f"malformed YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"


def _reject_duplicate_keys(node: Node, path: str, seen: set[int]) -> None:
    if id(node) in seen:  # an alias of a node already checked (also stops recursive aliases)
        return
    seen.add(id(node))
    if isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            _reject_duplicate_keys(item, f"{path}[{index}]", seen)
    elif isinstance(node, MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, ScalarNode) else "?"
            child = join_key(path, key)
            if isinstance(key_node, ScalarNode) and key != "<<":
                if key in keys:
                    line = key_node.start_mark.line + 1
                    raise ConfigError(child, f"duplicate key (line {line})")
                keys.add(key)
            _reject_duplicate_keys(value_node, child, seen)
