"""The experiment of a command line: a file or shipped name, its flags and ``--set``.

Shared by ``snapsim run`` and ``snapsim trace``. The flags go into the experiment's document as
a file's values would (``--clients 1,48`` is the text ``1,48``), so that whatever the door, the
values meet the one check of :meth:`~simulator.study.experiment.Experiment.check`.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.study.experiment import DEFAULT_EXPERIMENT, FLAGS, KEYS, Experiment, Flag
from simulator.study.experiment_file import (
    STDIN_SOURCE,
    apply_overrides,
    apply_seed_flags,
    experiment_from_document,
    list_items,
    read_experiment_source,
)


def add_experiment_arguments(parser: argparse.ArgumentParser) -> None:
    """The experiment and the flags that change it, but ``--set`` (:func:`load_experiment`).

    A flag per key that has one (:data:`~simulator.study.experiment.FLAGS`), then ``--seed``.
    """
    parser.add_argument("experiment", nargs="?", metavar="EXPERIMENT",
                        help="experiment file, shipped experiment name or - (standard input) "
                             "(default: default)")
    for key, flag in FLAGS:
        settings: dict[str, Any] = {"metavar": flag.metavar, "help": flag.help}
        if flag.parse is not None:
            settings["type"] = flag.parse
        if flag.repeatable:
            settings["action"] = "append"
        parser.add_argument(f"--{key.replace('_', '-')}", **settings)
    parser.add_argument("--seed", type=int, metavar="N", help="root seed (one replication)")


def _document_value(key: str, flag: Flag, value: object) -> object:
    """A flag's value as the experiment's document holds it.

    A list of names is split here; a list of counts stays text, as in a file (the experiment's
    check judges its items).
    """
    if isinstance(value, str) and value.strip().lower() in flag.null_words:
        return None
    if KEYS[key].list_of is str and isinstance(value, str):
        return list_items(key, value)
    return value


def load_experiment(args: argparse.Namespace) -> tuple[Experiment, dict[str, object], str]:
    """The experiment of the command line: file, flags, ``--set``; checked, not yet run.

    Returns the experiment, its input document (``extends`` merged, overrides applied) and the
    experiment file's path.
    """
    document, source = read_experiment_source(args.experiment or DEFAULT_EXPERIMENT)
    document = apply_overrides(document, [])  # a private copy
    for key, flag in FLAGS:
        value = getattr(args, key, None)
        if value is not None and not flag.repeatable:
            document[key] = _document_value(key, flag, value)
    apply_seed_flags(document, args.seed, getattr(args, "seeds", None))
    document = apply_overrides(document, args.set)
    for key, flag in FLAGS:  # a repeatable flag's items add to what the file and --set give
        items = getattr(args, key, None)
        if flag.repeatable and items:
            previous = document.get(key) or []
            document[key] = [*(previous if isinstance(previous, list) else [previous]), *items]
    document.pop("computed", None)
    name = "stdin" if source == STDIN_SOURCE else Path(source).stem
    with blame_file(source, flag_keys(args)):
        experiment = experiment_from_document(document, source, default_name=name)
    return experiment, document, source


def flag_keys(args: argparse.Namespace) -> set[str]:
    """The experiment keys this command line's flags set (their errors are the flags')."""
    keys = {key for key, _ in FLAGS if getattr(args, key, None) is not None}
    if getattr(args, "seed", None) is not None or getattr(args, "seeds", None) is not None:
        keys.add("seeds")
    return keys


@contextlib.contextmanager
def blame_file(source: str, flagged: set[str]) -> Iterator[None]:
    """Name the experiment file in an error of one of its values, as ``check-config`` does.

    A :class:`ConfigError` without a source, at a key no flag in ``flagged`` set (and not the
    whole file's, ``""``, which a flag's value may also raise), is raised again with ``source``
    (``--set`` errors are :func:`blame_overrides`'s, around this).
    """
    try:
        yield
    except ConfigError as exc:
        key = exc.key
        by_flag = key.startswith("-") or any(
            key == flag or key.startswith((f"{flag}.", f"{flag}[")) for flag in flagged)
        if exc.source is not None or by_flag or not key:  # no key: whose, is not known
            raise
        raise ConfigError(key, exc.message, source) from None
