"""``snapsim check-config FILE``: validate a configuration file without running it.

The kind of file is recognised by its content (:data:`CONFIG_KINDS`, tried in order): a machine
file, a measurement manifest or an experiment file, each by a top-level key that only that kind
has (so a misspelt key is then named by the check, not taken for another kind). Each kind is
checked completely (an experiment with its ``extends`` chain, its workload model's options, its
machine and its measurements; a manifest with every file it names and its ratios' names) and
summarised in one line after ``ok:``; a file no kind recognises is offered to the workload
model (the PostgreSQL model recognises its cost file). The file is read once, so ``FILE`` can be
a stream (``/dev/stdin``); ``-`` reads standard input (relative paths in it are taken from the
current directory); a shipped experiment's or machine's name (``tiny``, ``gold5215-2s``) checks
the shipped file, as ``run`` takes it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from simulator.cli.common import EXIT_OK
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import MACHINE_KEYS, machine_from_dict
from simulator.config.values import expect_mapping
from simulator.config.yaml_io import parse_yaml, read_yaml
from simulator.errors import ConfigError
from simulator.measure.manifest import MANIFEST_KEYS, load_manifest
from simulator.study import estimate
from simulator.study.experiment_file import (
    EMPTY_FILE,
    EXPERIMENT_KEYS,
    STDIN,
    STDIN_SOURCE,
    experiment_from_document,
    load_document,
)
from simulator.study.runner import check_estimate
from simulator.tools.check_config import check_model_file, shipped_config_path
from simulator.tools.validate import (
    RUN_DEFAULTS,
    check_ratios,
    check_validation_estimate,
    validation_estimate,
)


@dataclass(frozen=True, slots=True)
class ConfigKind:
    """A kind of configuration file that ``check-config`` recognises by its content.

    ``check(source, data)`` validates the file (raising ``ConfigError``) and returns a one-line
    summary printed after ``ok:``; ``data`` is its parsed contents (``None``: read ``source``).
    ``recognised_by`` completes the sentence "a <name> file has ..." in the error for a file that
    no kind recognises.
    """

    name: str
    recognised_by: str
    matches: Callable[[Mapping[str, object]], bool]
    check: Callable[[str, Mapping[str, object] | None], str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim check-config``."""
    parser.add_argument("file", metavar="FILE",
                        help="machine file, experiment file or measurement manifest (YAML); "
                        "- reads standard input")


def main(args: argparse.Namespace) -> int:
    """Read the file once and check it with the first kind that recognises it."""
    source = str(args.file)
    if source == STDIN:
        source = STDIN_SOURCE
        data = parse_yaml(sys.stdin.read(), source)
    else:
        source = shipped_config_path(source)
        data = read_yaml(Path(source))
    if data is None:
        raise ConfigError("", EMPTY_FILE, source)
    if not isinstance(data, Mapping):
        raise ConfigError("", "the top level must be a mapping", source)
    for kind in CONFIG_KINDS:
        if kind.matches(data):
            print(f"ok: {kind.check(source, data)}")
            return EXIT_OK
    model_summary = check_model_file(data, source)
    if model_summary is not None:
        print(f"ok: {model_summary}")
        return EXIT_OK
    known = "; ".join(f"{_article(kind.name)} {kind.name} file has {kind.recognised_by}"
                      for kind in CONFIG_KINDS)
    raise ConfigError("", f"not a recognised configuration file ({known})", source)


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def _has_any(data: Mapping[str, object], keys: tuple[str, ...]) -> bool:
    return any(key in keys for key in data)


def is_machine(data: Mapping[str, object]) -> bool:
    """Whether a parsed file looks like a machine file (a key only machine files have)."""
    return _has_any(data, MACHINE_KEYS)


def check_machine(source: str, data: Mapping[str, object] | None = None) -> str:
    """Validate a machine file; a one-line summary."""
    document = expect_mapping("", read_yaml(Path(source)) if data is None else data)
    config = machine_from_dict(document, source=source)
    try:  # a machine too large to build is refused here, as by `run`
        estimate.check_machine_memory(config, estimate.available_memory())
    except ConfigError as exc:
        raise ConfigError(exc.key, exc.message, source) from None
    return machine_summary(config)


def machine_summary(config: MachineConfig) -> str:
    """One-line description of a machine: ``name (2 sockets x 1 domain x ..., MESIF, ...)``."""
    topo = config.topology
    shape = " x ".join(
        _count(value, unit)
        for value, unit in (
            (topo.sockets, "socket"),
            (topo.domains_per_socket, "domain"),
            (topo.cores_per_domain, "core"),
            (topo.threads_per_core, "thread"),
        )
    )
    thread = config.kernel_thread
    extra = "" if thread is None else (
        f", kernel thread {thread.name}: {100 * thread.cpu_share:.2g} % of a CPU + "
        f"{100 * thread.cpu_share_per_process:.2g} % per process")
    return (f"{config.name} ({shape}, {config.protocol.value}, "
            f"{config.l3_inclusion.value} L3, {config.clock_ghz:g} GHz{extra})")


def _count(value: int, unit: str) -> str:
    return f"{value} {unit}" if value == 1 else f"{value} {unit}s"


def is_manifest(data: Mapping[str, object]) -> bool:
    """Whether a parsed file looks like a measurement manifest (a key only manifests have)."""
    return _has_any(data, MANIFEST_KEYS)


def check_manifest(source: str, data: Mapping[str, object] | None = None) -> str:
    """Validate a measurement manifest, every file it names and its ratios; a one-line summary."""
    manifest = load_manifest(source, data)
    rows = sum(len(dataset.table()) for dataset in manifest.datasets.values())
    check_ratios(manifest)
    settings = {**RUN_DEFAULTS, **manifest.run}
    try:  # a point that cannot fit in memory even on one worker is refused, as by `validate`
        check_validation_estimate(validation_estimate(
            manifest, duration_ms=float(settings["duration_ms"]),
            warmup_ms=float(settings["warmup_ms"]), seed=int(settings["seed"]), jobs=1))
    except ConfigError as exc:
        if exc.source is not None:
            raise
        raise ConfigError(exc.key, exc.message, str(manifest.path)) from None
    return (f"measurement manifest: {len(manifest.datasets)} datasets, {rows} measured points, "
            f"{len(manifest.ratios)} ratios")


_EXPERIMENT_ONLY_KEYS = tuple(key for key in EXPERIMENT_KEYS if key not in ("name", "description"))


def is_experiment(data: Mapping[str, object]) -> bool:
    """Whether a parsed file looks like an experiment file (a key other than name, description)."""
    return _has_any(data, _EXPERIMENT_ONLY_KEYS)


def check_experiment(source: str, data: Mapping[str, object] | None = None) -> str:
    """Validate an experiment file completely without running it; a one-line summary.

    It is prepared as a run prepares it (:meth:`~simulator.study.experiment.Experiment.prepare`:
    names, options, measurements, the machine), and every point's memory estimate is checked
    against the available memory with one worker
    (:func:`~simulator.study.runner.check_estimate`).
    """
    document, path = load_document(source, data)
    name = "stdin" if path == STDIN_SOURCE else Path(path).stem
    experiment = experiment_from_document(document, path, default_name=name)
    try:
        prepared = experiment.prepare(path)
        # A point that cannot fit in memory even on one worker is refused here, as by `run`.
        check_estimate(prepared, jobs=1)
    except ConfigError as exc:
        if exc.source is not None:
            raise
        raise ConfigError(exc.key, exc.message, path) from None
    points = len(experiment.grid())
    return (f"experiment {experiment.name}: {points} points "
            f"({', '.join(experiment.algorithms)}) on {prepared.machine.name}")


CONFIG_KINDS = (
    ConfigKind(name="machine", recognised_by="machine keys such as 'topology' or 'caches'",
               matches=is_machine, check=check_machine),
    ConfigKind(name="measurement manifest", recognised_by="manifest keys such as 'datasets'",
               matches=is_manifest, check=check_manifest),
    ConfigKind(name="experiment",
               recognised_by="experiment keys such as 'algorithms' or 'extends'",
               matches=is_experiment, check=check_experiment),
)
"""The kinds ``check-config`` tries, in order; the first that matches checks the file."""
