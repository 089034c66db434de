"""Experiment files (YAML), ``extends:``, command-line overrides and the resolved configuration.

An experiment file sets any of the keys of :class:`~simulator.study.experiment.Experiment`; absent
keys
take the dataclass defaults. ``extends: OTHER`` (a shipped experiment name, or a file relative to
this one) starts from another file: mappings merge key by key (so ``options`` overrides single
values), everything else replaces. Command-line flags and ``--set key=value`` (a dotted key, a
YAML value) apply on top with the same strict validation; lists also accept ``1,48``.

A list of counts (``clients``, ``idle_clients``, ``seeds``) takes one of four forms on its way to
a point: the text of a flag or a file (``1,48``, a YAML list or a single number), the
experiment's tuple, and a point's integer. This module only turns text into items
(:func:`list_items`); whether they are integers in range is checked once, by
:meth:`~simulator.study.experiment.Experiment.check`, whichever door the experiment came in by.

Relative paths in ``machine`` and ``measurements`` are resolved from the file that sets them;
``options`` paths (a cost-model file) from the file that is run.

The resolved configuration (:func:`resolved_document`) has every key with its value in effect,
the model's options complete, and a ``computed`` section (work scale, version) that snapsim
writes and ignores when the file is read back, so ``snapsim run config.resolved.yaml`` repeats a
run.
"""

from __future__ import annotations

import contextlib
import copy
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import yaml

from simulator.config.machine import MachineConfig
from simulator.config.machine_file import machines_dir, names_a_file
from simulator.config.overrides import parse_override, set_dotted
from simulator.config.values import (
    check_keys,
    describe_kind,
    expect_list,
    expect_number,
    expect_str,
)
from simulator.config.yaml_io import parse_yaml, read_yaml
from simulator.errors import ConfigError
from simulator.study.experiment import GRID_KEYS, KEYS, MAX_SEED, Experiment, experiments_dir
from simulator.version import __version__

__all__ = [
    "EMPTY_FILE",
    "EXPERIMENT_KEYS",
    "STDIN",
    "STDIN_SOURCE",
    "apply_overrides",
    "apply_seed_flags",
    "blame_overrides",
    "dropped_grid_values",
    "dump_yaml",
    "experiment_from_document",
    "experiments_dir",
    "list_items",
    "load_document",
    "read_experiment_source",
    "resolved_document",
    "shipped_experiments",
]

EXPERIMENT_KEYS = ("extends", *KEYS, "computed")
"""The keys of an experiment file: ``extends``, :class:`Experiment`'s fields, ``computed``."""
MAX_EXTENDS_DEPTH = 16


def shipped_experiments() -> list[str]:
    """Names of the shipped experiments (file stems), sorted."""
    return sorted(path.stem for path in experiments_dir().glob("*.yaml"))


def _resolve_path(name_or_path: str, relative_to: Path | None) -> Path:
    looks_like_name = "/" not in name_or_path and not name_or_path.endswith((".yaml", ".yml"))
    if looks_like_name:
        shipped = experiments_dir() / f"{name_or_path}.yaml"
        if shipped.exists():
            return shipped
    path = Path(name_or_path)
    if not path.is_absolute() and relative_to is not None:
        path = relative_to / path
    if path.exists() or not looks_like_name:
        return path
    raise ConfigError("", f"no such experiment file or shipped experiment {name_or_path!r} "
                      f"(shipped: {', '.join(shipped_experiments()) or 'none'})")


EMPTY_FILE = ("the file is empty (an experiment file needs at least one key; "
              "'extends: default' runs the defaults)")
"""Every command's message for an empty experiment file (or one holding only comments)."""

STDIN = "-"
STDIN_SOURCE = "<stdin>"
"""``-`` names standard input on the command line; messages call it ``<stdin>``."""


def read_experiment_source(name_or_path: str) -> tuple[dict[str, object], str]:
    """:func:`load_document` of a command's EXPERIMENT argument.

    ``-`` reads standard input (its relative paths taken from the current directory); anything
    else is a file or a shipped experiment's name.
    """
    if name_or_path != STDIN:
        return load_document(name_or_path)
    data = parse_yaml(sys.stdin.read(), STDIN_SOURCE)
    if data is None:
        raise ConfigError("", EMPTY_FILE, STDIN_SOURCE)
    return load_document(STDIN_SOURCE, data)


def load_document(name_or_path: str, data: object = None) -> tuple[dict[str, object], str]:
    """Read an experiment file with its ``extends`` chain merged; return it and its path.

    ``data``: the file's contents already parsed (a stream such as standard input, which can be
    read only once); ``name_or_path`` then only names it and is the base of its relative paths.

    Raises:
        ConfigError: missing or malformed file, an unknown key, a cycle of ``extends``.
    """
    if data is not None:
        path = Path(name_or_path)
        return _load(path, [], data), str(path)
    path = _resolve_path(name_or_path, None)
    return _load(path, []), str(path)


def _load(path: Path, chain: list[Path], data: object = None) -> dict[str, object]:
    source = str(path)
    resolved = path.resolve()
    if resolved in chain:
        raise ConfigError("extends", "extends itself (cycle: "
                          + " -> ".join(p.name for p in [*chain, resolved]) + ")", source)
    if len(chain) >= MAX_EXTENDS_DEPTH:
        raise ConfigError("extends", f"more than {MAX_EXTENDS_DEPTH} levels of extends", source)
    if data is None:
        data = read_yaml(path)
    if data is None:
        raise ConfigError("", EMPTY_FILE, source)
    if not isinstance(data, Mapping):
        raise ConfigError("", f"the top level must be a mapping of experiment keys, got "
                          f"{describe_kind(data)}", source)
    try:
        check_keys(data, "", EXPERIMENT_KEYS, optional=EXPERIMENT_KEYS)
        document = _absolutise(dict(data), path.parent)
    except ConfigError as exc:
        raise ConfigError(exc.key, exc.message, source) from None
    parent = document.pop("extends", None)
    if parent is None:
        return document
    try:
        parent_path = _resolve_path(expect_str("extends", parent), path.parent)
    except ConfigError as exc:
        raise ConfigError("extends", exc.message, source) from None
    return merge(_load(parent_path, [*chain, resolved]), document)


def _absolutise(document: dict[str, object], base: Path) -> dict[str, object]:
    """Make the file paths of ``machine`` and ``measurements`` independent of the file."""
    machine = document.get("machine")
    if isinstance(machine, str) and names_a_file(machine):
        path = Path(machine)
        document["machine"] = str(path if path.is_absolute() else (base / path).resolve())
    measurements = document.get("measurements")
    if isinstance(measurements, str) and ":" in measurements:
        file, dataset = measurements.rsplit(":", 1)
        path = Path(file)
        document["measurements"] = f"{path if path.is_absolute() else (base / path).resolve()}" \
                                   f":{dataset}"
    return document


def merge(base: Mapping[str, object], top: Mapping[str, object]) -> dict[str, object]:
    """``base`` with ``top`` on it: mappings merge key by key, other values replace."""
    result = copy.deepcopy(dict(base))
    for key, value in top.items():
        current = result.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            result[key] = merge(current, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


@contextlib.contextmanager
def blame_overrides(sets: Sequence[str] | None) -> Iterator[None]:
    """Blame an error of a value a ``--set`` gave on that ``--set``, not on the experiment file.

    A :class:`ConfigError` raised in the block at a key that a ``--set KEY=VALUE`` set, below it
    (``options.churn`` set, ``options.churn.rate_per_s`` wrong) or above it (a misspelt
    ``options.costs.backnd`` of ``options.costs.backnd.x``) is raised again with
    ``--set`` as its source; any other error is left as it is.
    """
    try:
        yield
    except ConfigError as exc:
        for item in reversed(sets or ()):
            key = item.partition("=")[0].strip()
            if key and exc.key and (exc.key == key or exc.key.startswith((f"{key}.", f"{key}["))
                                    or key.startswith(f"{exc.key}.")):
                raise ConfigError(exc.key, exc.message, "--set") from None
        raise


def apply_seed_flags(document: dict[str, object], seed: int | None, seeds: int | None) -> None:
    """Put ``--seed N`` (one root seed) and ``--seeds N`` into ``document``'s ``seeds``.

    ``--seeds N``: N root seeds, the first seed and the next N-1, as ``validate --seeds``.

    Raises:
        ConfigError: a negative ``--seed`` or a ``--seeds`` below 1, naming the flag.
    """
    if seed is not None:
        if seed < 0:
            raise ConfigError("--seed", f"must be a non-negative integer, got {seed}")
        if seed > MAX_SEED:
            raise ConfigError("--seed", f"must be at most {MAX_SEED} (2**63 - 1, the 64-bit "
                              f"integer the tables store), got {seed}")
        document["seeds"] = [seed]
    if seeds is not None:
        if seeds < 1:
            raise ConfigError("--seeds", f"must be at least 1, got {seeds}")
        current = document.get("seeds")
        first = current[0] if isinstance(current, list) and current else current
        start = first if isinstance(first, int) and not isinstance(first, bool) else 0
        if start + seeds - 1 > MAX_SEED:
            raise ConfigError("--seeds", f"{seeds} root seeds from {start} pass {MAX_SEED} "
                              "(2**63 - 1, the 64-bit integer the tables store)")
        document["seeds"] = list(range(start, start + seeds))


def dropped_grid_values(previous: Mapping[str, object],
                        resolved: Mapping[str, object]) -> list[str]:
    """The values of a stored run's grid that a new grid leaves out, e.g. ``['clients 1']``.

    Each of :data:`~simulator.study.experiment.GRID_KEYS` (algorithms, clients, idle_clients,
    seeds) is compared as a set; an extended run whose grid leaves one out would write tables
    without the rows of those stored points.
    """
    dropped: list[str] = []
    for key in GRID_KEYS:
        before, after = previous.get(key), resolved.get(key)
        if not isinstance(before, list) or not isinstance(after, list):
            continue
        missing = [value for value in before if value not in after]
        if missing:
            dropped.append(f"{key} {', '.join(str(value) for value in missing)}")
    return dropped


def apply_overrides(document: Mapping[str, object], sets: Sequence[str]) -> dict[str, object]:
    """Apply ``--set key=value`` overrides (dotted keys, YAML values) to a document.

    Raises:
        ConfigError: a malformed override, an unknown top-level key, or a dotted key into a
            value that is not a mapping.
    """
    result = dict(document)
    for item in sets:
        parts, value = parse_override(item, "--set")
        key = ".".join(parts)
        if parts[0] not in EXPERIMENT_KEYS or parts[0] in ("extends", "computed"):
            choices = ", ".join(k for k in EXPERIMENT_KEYS if k not in ("extends", "computed"))
            raise ConfigError(key, f"unknown key (expected one of: {choices})", "--set")
        if len(parts) == 1 and KEYS[parts[0]].whole_items and isinstance(value, str):
            value = [value]
        result = set_dotted(result, parts, value, "--set")
    return result


def experiment_from_document(document: Mapping[str, object], source: str | None = None,
                             default_name: str = "experiment") -> Experiment:
    """Build an :class:`Experiment` from a merged document, checking every key's type.

    Names (algorithms, workload, ...) are checked later against the model
    (:meth:`Experiment.validate`).

    Raises:
        ConfigError: an unknown key or a value of the wrong type, with the dotted key.
    """
    try:
        return _experiment(document, default_name)
    except ConfigError as exc:
        if exc.source is not None:
            raise
        raise ConfigError(exc.key, exc.message, source) from None


def _experiment(document: Mapping[str, object], default_name: str) -> Experiment:
    check_keys(document, "", EXPERIMENT_KEYS, optional=EXPERIMENT_KEYS)
    defaults = Experiment()
    kwargs: dict[str, object] = {}
    for name, key in KEYS.items():
        if name not in document:
            continue
        value = document[name]
        if key.read is not None:
            kwargs[name] = key.read(name, value)
        elif key.list_of is not None:
            kwargs[name] = tuple(list_items(name, value))
        elif key.number:
            kwargs[name] = expect_number(name, value)
        else:
            kwargs[name] = expect_str(name, value)
    kwargs.setdefault("name", default_name or defaults.name)
    return Experiment(**kwargs)  # type: ignore[arg-type]


def list_items(key: str, value: object) -> list[object]:
    """The items of a list key's value: a YAML list, one number, or text such as ``1,48``.

    Text is split at commas (but for a key of whole items, whose text is one item), and an
    item of a count key that reads as an integer becomes one; every other item is kept as it is
    for :meth:`~simulator.study.experiment.Experiment.check` to judge (a name list's items must
    be strings here already).

    Raises:
        ConfigError: the value is not a list, a string or (for counts) a number.
    """
    kind = KEYS[key].list_of
    if isinstance(value, str) and KEYS[key].whole_items:
        value = [value]
    elif isinstance(value, str):
        value = [_count(part.strip()) if kind is int else part.strip()
                 for part in value.split(",") if part.strip()]
    elif isinstance(value, int | float) and not isinstance(value, bool) and kind is int:
        value = [value]
    items = expect_list(key, value)
    if kind is int:
        return list(items)
    return [expect_str(f"{key}[{i}]", item) for i, item in enumerate(items)]


def _count(text: str) -> object:
    """An integer written as text, or the text itself (the check names it)."""
    try:
        return int(text)
    except ValueError:
        return text


def resolved_document(experiment: Experiment, options: Mapping[str, object],
                      work_scale: float | None = None) -> dict[str, object]:
    """Every key of the experiment with the value in effect (for ``config.resolved.yaml``)."""
    machine = experiment.machine
    if isinstance(machine, MachineConfig):
        machine_value = machine.name
    elif (machines_dir() / f"{machine}.yaml").exists():
        machine_value = machine
    else:
        machine_value = str(Path(machine).resolve())
    document: dict[str, object] = {
        "name": experiment.name,
        "description": experiment.description,
        "machine": machine_value,
        **({"machine_set": list(experiment.machine_set)} if experiment.machine_set else {}),
        **experiment.run_settings(),
        "measurements": experiment.measurements,
        "model": experiment.model,
        "options": copy.deepcopy(dict(options)),
    }
    if work_scale is not None:
        document["computed"] = {"work_scale": float(work_scale), "snapsim_version": __version__}
    return document


def dump_yaml(document: Mapping[str, object]) -> str:
    """YAML text of a document: keys in order, short lists inline."""
    return yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=None, width=100,
                          allow_unicode=True)
