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

from simulator.errors import ConfigError
from simulator.study.experiment import DEFAULT_EXPERIMENT, Experiment
from simulator.study.experiment_file import (
    STDIN_SOURCE,
    apply_overrides,
    apply_seed_flags,
    experiment_from_document,
    read_experiment_source,
)

_FLAG_KEYS = {  # flag attribute -> experiment key
    "machine": "machine", "workload": "workload", "idle_kind": "idle_kind",
    "single_client_tps": "single_client_tps", "duration_ms": "duration_ms",
    "warmup_ms": "warmup_ms",
}



def add_experiment_arguments(parser: argparse.ArgumentParser) -> None:
    """The experiment and the flags that change it, but ``--set`` (:func:`load_experiment`)."""
    parser.add_argument("experiment", nargs="?", metavar="EXPERIMENT",
                        help="experiment file, shipped experiment name or - (standard input) "
                             "(default: default)")
    parser.add_argument("--machine", metavar="NAME|PATH", help="shipped machine or machine file")
    parser.add_argument("--machine-set", action="append", metavar="KEY=VALUE",
                        help="edit a key of the machine file (repeatable; added to the "
                             "experiment's machine_set), e.g. scheduler.run_queues=global")
    parser.add_argument("--algorithms", metavar="A,B,...", help="comma-separated algorithms")
    parser.add_argument("--workload", metavar="NAME", help="workload name")
    parser.add_argument("--clients", metavar="LIST", help="active clients, e.g. 1,48")
    parser.add_argument("--idle-clients", metavar="LIST", help="idle connections, e.g. 0,1000")
    parser.add_argument("--idle-kind", metavar="KIND", help="idle or mostly-idle")
    parser.add_argument("--single-client-tps", type=_tps_value, metavar="TPS",
                        help="the single-client TPS the work scale is found from: a TPS "
                             "measured with the experiment's workload, 'machine' (the machine's "
                             "own measured figure, the default) or 'none' (work scale 1)")
    parser.add_argument("--duration-ms", type=float, metavar="MS", help="simulated time per point")
    parser.add_argument("--warmup-ms", type=float, metavar="MS", help="warm-up before measuring")
    parser.add_argument("--seed", type=int, metavar="N", help="root seed (one replication)")


def _tps_value(text: str) -> float | str:
    """``--single-client-tps``: a number, ``machine`` or ``none`` (the experiment checks it)."""
    if text.strip().lower() in ("none", "null"):
        return "none"
    try:
        return float(text)
    except ValueError:
        return text.strip()


def load_experiment(args: argparse.Namespace) -> tuple[Experiment, dict[str, object], str]:
    """The experiment of the command line: file, flags, ``--set``; checked, not yet run.

    Returns the experiment, its input document (``extends`` merged, overrides applied) and the
    experiment file's path.
    """
    document, source = read_experiment_source(args.experiment or DEFAULT_EXPERIMENT)
    document = apply_overrides(document, [])  # a private copy
    for attribute, key in _FLAG_KEYS.items():
        value = getattr(args, attribute, None)
        if value is not None:
            document[key] = None if value == "none" and key == "single_client_tps" else value
    if args.algorithms is not None:
        document["algorithms"] = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    if args.clients is not None:
        document["clients"] = args.clients  # text, as in a file: the experiment's check judges
    if args.idle_clients is not None:
        document["idle_clients"] = args.idle_clients
    apply_seed_flags(document, args.seed, getattr(args, "seeds", None))
    document = apply_overrides(document, args.set)
    machine_set = getattr(args, "machine_set", None)
    if machine_set:
        previous = document.get("machine_set") or []
        document["machine_set"] = [*(previous if isinstance(previous, list) else [previous]),
                                   *machine_set]
    document.pop("computed", None)
    name = "stdin" if source == STDIN_SOURCE else Path(source).stem
    with blame_file(source, flag_keys(args)):
        experiment = experiment_from_document(document, source, default_name=name)
    return experiment, document, source


def flag_keys(args: argparse.Namespace) -> set[str]:
    """The experiment keys this command line's flags set (their errors are the flags')."""
    keys = {key for attribute, key in _FLAG_KEYS.items()
            if getattr(args, attribute, None) is not None}
    for attribute, key in (("algorithms", "algorithms"), ("clients", "clients"),
                           ("idle_clients", "idle_clients"), ("seed", "seeds"),
                           ("seeds", "seeds"), ("machine_set", "machine_set")):
        if getattr(args, attribute, None) is not None:
            keys.add(key)
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
