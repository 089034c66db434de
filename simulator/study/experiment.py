"""Experiments: a grid of points, prepared once and planned as point tasks.

An :class:`Experiment` is buildable in code: a machine, the algorithms to compare, a workload,
grids of active and idle clients, the idle kind, the simulated duration and warm-up, root seeds,
the model's options and, optionally, the machine's measured single-client TPS and a measurement
dataset to compare with. The machine, algorithms, workload and idle kind it does not name are
those of the shipped default experiment (``configs/experiments/default.yaml``), so this module
names no workload model's vocabulary.

:meth:`Experiment.prepare` checks it against its workload model, resolves the model's options
and loads the machine, once, into a :class:`Prepared` experiment; :func:`plan` turns that into
the point tasks and :func:`experiment_hash` binds stored points to it. Running the tasks is
:mod:`simulator.study.runner`'s, the single-client work scale :mod:`simulator.study.work_scale`'s.

Every point has its own seed, derived from a root seed and the point's identity (not its
position in the grid), so a point's result does not depend on which other points are run, in
which order, or where.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from simulator.config import configs_dir
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine, names_a_file
from simulator.config.overrides import set_dotted
from simulator.config.units import parse_size_bytes, parse_time_ns
from simulator.config.values import expect_list, expect_mapping, expect_number, expect_str
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.measure.manifest import (
    SingleClientFigure,
    dataset_for,
    load_manifest,
    measurements_for,
)
from simulator.study.code_hash import code_hash
from simulator.study.store import document_hash
from simulator.study.sweep import PointTask
from simulator.study.workload_model import (
    DEFAULT_MODEL,
    PointSpec,
    WorkloadModelBase,
    workload_model,
)
from simulator.version import __version__

__all__ = ["FLAGS", "GRID_KEYS", "KEYS", "Experiment", "Flag", "Key", "Prepared",
           "experiment_hash", "plan", "point_key", "point_seed", "settings_hash"]

DEFAULT_EXPERIMENT = "default"
"""The shipped experiment whose machine, algorithms, workload, idle kind and windows are the
defaults."""
MACHINE = "machine"
"""The value of ``single_client_tps`` and ``measurements`` that means "this machine's own"."""
MAX_SEED = 2**63 - 1
"""The largest root seed: ``curve.parquet`` stores it as a signed 64-bit integer (a point's own
seed, derived from it by hashing, is below it too, and NumPy takes any non-negative integer)."""
DEFAULT_MAX_WINDOWS = 20.0
"""A precise window's default cap, in ``duration_ms``."""


def experiments_dir() -> Path:
    """Directory of the shipped experiment files (``configs/experiments``)."""
    return configs_dir() / "experiments"


@functools.cache
def _default_document() -> Mapping[str, object]:
    path = experiments_dir() / f"{DEFAULT_EXPERIMENT}.yaml"
    return expect_mapping("", read_yaml(path))


def _default(key: str) -> object:
    """A key of the shipped default experiment file (a name, read as it is written)."""
    source = str(experiments_dir() / f"{DEFAULT_EXPERIMENT}.yaml")
    document = _default_document()
    if key not in document:
        raise ConfigError(key, "missing: the default experiment must name it", source)
    return document[key]


def _default_str(key: str) -> str:
    return expect_str(key, _default(key))


def _default_ms(key: str) -> float:
    return float(expect_number(key, _default(key)))


def _default_algorithms() -> tuple[str, ...]:
    items = expect_list("algorithms", _default("algorithms"))
    return tuple(expect_str(f"algorithms[{i}]", item) for i, item in enumerate(items))


Reader = Callable[[str, object], object]
"""A file's value of a key (and the key, for errors) to the field's value, its type checked."""


@dataclass(frozen=True, slots=True)
class Flag:
    """A key's flag on the command line of ``snapsim run`` and ``snapsim trace``.

    The flag is ``--KEY`` with ``_`` written ``-``; its value goes into the experiment's
    document as a file's value would (:mod:`simulator.cli.experiment_args`).
    """

    metavar: str
    help: str
    parse: Callable[[str], object] | None = None
    """The flag's text to its value (argparse's ``type``; ``None``: the text)."""
    null_words: tuple[str, ...] = ()
    """Values (in any case) that stand for YAML's ``null``."""
    repeatable: bool = False
    """Given once per item; the items are added to the document's list after ``--set``."""
    window: bool = False
    """A flag of the simulated window: listed after the others (what runs, then how long)."""


@dataclass(frozen=True, slots=True)
class Key:
    """What a field of :class:`Experiment` is as a key of an experiment file (its metadata).

    Every reader of the keys (the file, ``--set``, the flags, :meth:`Experiment.run_settings`,
    :data:`GRID_KEYS`) derives what it needs from these, so a new key is one new field.
    """

    list_of: type[int] | type[str] | None = None
    """A list key's items: ``int`` (counts: text items are read as integers) or ``str``
    (names); the list is stored as a tuple."""
    whole_items: bool = False
    """A list key whose text is one item, not split at commas (a YAML value may hold them)."""
    minimum: int | None = None
    """A list of counts: the least count :meth:`Experiment.check` accepts."""
    number: bool = False
    """A number, stored and written as a float."""
    read: Reader | None = None
    """How a file's value is read (``None``: a list, a number or a string, by the above)."""
    grid: bool = False
    """Lists the grid's points (:data:`GRID_KEYS`)."""
    setting: bool = False
    """Decides the points and their windows (:meth:`Experiment.run_settings`)."""
    flag: Flag | None = None
    """Its command-line flag, if it has one."""

    def plain(self, value: object) -> object:
        """The field's value as plain YAML data (tuples as lists, counts as ``int``)."""
        if self.list_of is not None:
            assert isinstance(value, Sequence)
            return [int(item) for item in value] if self.list_of is int else list(value)
        if self.number:
            assert isinstance(value, int | float)
            return float(value)
        return value

    def metadata(self) -> dict[str, Key]:
        """A field's metadata saying that it is this kind of key (:data:`KEYS` reads it)."""
        return {"key": self}


def _read_tps(key: str, value: object) -> object:
    """``single_client_tps``: a number, a name (``machine``) or null (the cost model as is)."""
    return value if value is None or isinstance(value, str) else expect_number(key, value)


def _read_optional_str(key: str, value: object) -> object:
    """A string, or null."""
    return None if value is None else expect_str(key, value)


def _read_optional_number(key: str, value: object) -> object:
    """A number, or null."""
    return None if value is None else expect_number(key, value)


def _read_options(key: str, value: object) -> object:
    """The model's options: a mapping (empty: none)."""
    return dict(expect_mapping(key, value or {}))


def _number_or_text(text: str) -> float | str:
    """A flag's number, or its text stripped (a name; the experiment checks it)."""
    try:
        return float(text)
    except ValueError:
        return text.strip()


@dataclass(frozen=True, slots=True, kw_only=True)
class Experiment:
    """A grid of points to simulate (lists are accepted and stored as tuples).

    Each field is a key of an experiment file; its metadata says what kind (:class:`Key`).
    """

    name: str = "experiment"
    description: str = ""
    machine: MachineConfig | str = field(
        default_factory=lambda: _default_str("machine"),
        metadata=Key(flag=Flag("NAME|PATH", "shipped machine or machine file")).metadata())
    """A machine, or a shipped machine's name or a machine file's path."""
    machine_set: tuple[str, ...] = field(default=(), metadata=Key(
        list_of=str, whole_items=True,
        flag=Flag("KEY=VALUE", "edit a key of the machine file (repeatable; added to the "
                  "experiment's machine_set), e.g. scheduler.run_queues=global",
                  repeatable=True)).metadata())
    """Edits of the machine file, ``key=value`` with a dotted key and a YAML value
    (``scheduler.run_queues=global``), applied before it is checked: the machine of a what-if."""
    algorithms: tuple[str, ...] = field(default_factory=_default_algorithms, metadata=Key(
        list_of=str, grid=True, setting=True,
        flag=Flag("A,B,...", "comma-separated algorithms")).metadata())
    workload: str = field(default_factory=lambda: _default_str("workload"), metadata=Key(
        setting=True, flag=Flag("NAME", "workload name")).metadata())
    clients: tuple[int, ...] = field(default=(1,), metadata=Key(
        list_of=int, minimum=1, grid=True, setting=True,
        flag=Flag("LIST", "active clients, e.g. 1,48")).metadata())
    idle_clients: tuple[int, ...] = field(default=(0,), metadata=Key(
        list_of=int, minimum=0, grid=True, setting=True,
        flag=Flag("LIST", "idle connections, e.g. 0,1000")).metadata())
    idle_kind: str = field(default_factory=lambda: _default_str("idle_kind"), metadata=Key(
        setting=True, flag=Flag("KIND", "idle or mostly-idle")).metadata())
    duration_ms: float = field(default_factory=lambda: _default_ms("duration_ms"), metadata=Key(
        number=True, setting=True,
        flag=Flag("MS", "simulated time per point", parse=float, window=True)).metadata())
    """Simulated time measured per point (the default experiment's, 5 ms)."""
    warmup_ms: float = field(default_factory=lambda: _default_ms("warmup_ms"), metadata=Key(
        number=True, setting=True,
        flag=Flag("MS", "warm-up before measuring", parse=float, window=True)).metadata())
    """Unmeasured warm-up before it (the default experiment's, 5 ms: long enough for every
    hardware thread's idle governor to learn a single client's short idle periods)."""
    precision: float | None = field(default=None, metadata=Key(
        read=_read_optional_number, setting=True,
        flag=Flag("REL", "grow each point's window until the 95 %% interval of its TPS is within "
                  "this fraction of it (e.g. 0.02; default: the fixed window)",
                  parse=_number_or_text, null_words=("none", "null"), window=True)).metadata())
    """Stop each point when the half-width of the 95 % interval of its TPS, relative to it, is
    at most this (``None``: the fixed window): the point runs ``duration_ms`` after its warm-up,
    then grows by whole ``duration_ms`` until the interval is precise enough or the window
    reaches ``max_duration_ms``; the warm-up is the floor, and MSER-5 may move the window's
    start later (:mod:`simulator.runtime.precision`)."""
    max_duration_ms: float | None = field(default=None, metadata=Key(
        read=_read_optional_number, setting=True,
        flag=Flag("MS", "with --precision, the longest window a point may grow to (default: "
                  f"{DEFAULT_MAX_WINDOWS:g} x --duration-ms)", parse=_number_or_text,
                  null_words=("none", "null"), window=True)).metadata())
    """A precise window's cap (``None``: :data:`DEFAULT_MAX_WINDOWS` times ``duration_ms``)."""
    seeds: tuple[int, ...] = field(default=(0,), metadata=Key(
        list_of=int, minimum=0, grid=True, setting=True).metadata())
    """Root seeds: every point runs once per root seed (replications)."""
    single_client_tps: float | str | None = field(default=MACHINE, metadata=Key(
        read=_read_tps, setting=True,
        flag=Flag("TPS", "the single-client TPS the work scale is found from: a TPS measured "
                  "with the experiment's workload, 'machine' (the machine's own measured "
                  "figure, the default) or 'none' (work scale 1)",
                  parse=_number_or_text, null_words=("none", "null"))).metadata())
    """The measured single-client TPS the work scale is found from: ``"machine"`` (the
    machine's own figure from the measurement manifest, if it has one: the work scale is found
    on the point it was measured at and applies to every workload), a TPS measured with this
    experiment's first algorithm and workload, or ``None`` for the global cost model as is."""
    measurements: str | None = field(default=MACHINE,
                                     metadata=Key(read=_read_optional_str).metadata())
    """A measurement dataset to compare with
    (:func:`simulator.measure.manifest.measurements_for`), ``"machine"`` for the manifest's
    dataset of this machine, workload and idle kind if there is one, or ``None``. A dataset
    measured on another machine is refused."""
    model: str = DEFAULT_MODEL
    options: Mapping[str, object] = field(default_factory=dict,
                                          metadata=Key(read=_read_options).metadata())
    """The workload model's options (for example ``costs``, ``batch``, ``think_time``)."""

    def __post_init__(self) -> None:
        for name, key in KEYS.items():
            value = getattr(self, name)
            if key.list_of is not None and isinstance(value, list):
                object.__setattr__(self, name, tuple(value))

    def machine_config(self) -> MachineConfig:
        """The machine, loaded (with :attr:`machine_set`) if it was given by name or path.

        Raises:
            ConfigError: no such machine, an invalid machine file or edit, or ``machine_set``
                with a machine given as a :class:`MachineConfig` (edit that object instead).
        """
        if isinstance(self.machine, MachineConfig):
            if self.machine_set:
                raise ConfigError("machine_set", "applies to a machine given by name or path, "
                                  "not to a MachineConfig object")
            return self.machine
        return load_machine(self.machine, self.machine_set)

    def machine_name(self) -> str:
        """The machine's name without loading it when it is a shipped name."""
        if isinstance(self.machine, MachineConfig):
            return self.machine.name
        return self.machine_config().name

    def run_settings(self) -> dict[str, object]:
        """The keys that decide the points and their windows, as plain values, in file order.

        From ``algorithms`` to ``single_client_tps``: what ``config.resolved.yaml`` lists between
        the machine and the measurement overlay, and what a stored point's hash covers.
        """
        return {name: key.plain(getattr(self, name)) for name, key in KEYS.items() if key.setting}

    def max_window_ms(self) -> float:
        """The longest window a point may run: ``duration_ms`` if fixed, else the cap."""
        if self.precision is None:
            return self.duration_ms
        if self.max_duration_ms is None:
            return DEFAULT_MAX_WINDOWS * self.duration_ms
        return self.max_duration_ms

    def grid(self) -> list[tuple[str, int, int, int]]:
        """``(algorithm, clients, idle_clients, root_seed)`` of every point, in grid order."""
        return [(a, c, i, s) for a in self.algorithms for c in self.clients
                for i in self.idle_clients for s in self.seeds]

    def prepare(self, source: str | None = None) -> Prepared:
        """Check the experiment, resolve its options and load its machine, once.

        ``source`` is the experiment file: named in errors and the base of relative paths in
        the options.

        Raises:
            ConfigError: naming the offending key (see :meth:`check`, the model's
                ``resolve_options`` and :meth:`machine_config`).
        """
        model = self.check()
        options = model.resolve_options(self.options, source)
        machine = self.machine_config()
        return Prepared(experiment=self, model=model, options=options, machine=machine,
                        source=source, single_client=self._single_client(model, machine),
                        measurements=self._measurements(machine, source))

    def _single_client(self, model: WorkloadModelBase,
                       machine: MachineConfig) -> SingleClientFigure | None:
        """The single-client figure the work scale is found from (``None``: work scale 1)."""
        if self.single_client_tps is None:
            return None
        if self.single_client_tps == MACHINE:
            return load_manifest().single_client(machine.name)
        return SingleClientFigure(tps=float(self.single_client_tps),
                                  algorithm=self.algorithms[0], workload=self.workload,
                                  idle_kind=model.work_scale_idle_kind, dataset="")

    def _measurements(self, machine: MachineConfig, source: str | None) -> str | None:
        """The dataset overlaid on the results (:func:`overlay_dataset`)."""
        return overlay_dataset(self.measurements, machine.name, self.workload, self.idle_kind,
                               source)

    def check(self) -> WorkloadModelBase:
        """Check names and ranges against the workload model; return the model.

        Raises:
            ConfigError: naming the offending key (and the valid names for a name).
        """
        model = workload_model(self.model)
        if not self.algorithms:
            raise ConfigError("algorithms", "must name at least one algorithm")
        for algorithm in self.algorithms:
            if algorithm not in model.algorithms:
                raise ConfigError("algorithms", f"unknown algorithm {algorithm!r} "
                                  f"(choose from {', '.join(model.algorithms)})")
        if len(set(self.algorithms)) != len(self.algorithms):
            raise ConfigError("algorithms", "lists an algorithm twice")
        if self.workload not in model.workloads:
            raise ConfigError("workload", f"unknown workload {self.workload!r} "
                              f"(choose from {', '.join(model.workloads)})")
        if self.idle_kind not in model.idle_kinds:
            raise ConfigError("idle_kind", f"unknown idle kind {self.idle_kind!r} "
                              f"(choose from {', '.join(model.idle_kinds)})")
        for name, key in KEYS.items():
            if key.minimum is not None:
                _check_counts(name, getattr(self, name), minimum=key.minimum,
                              maximum=MAX_SEED if name == "seeds" else None)
        if not (self.duration_ms > 0 and math.isfinite(self.duration_ms)):
            raise ConfigError("duration_ms", f"must be positive, got {self.duration_ms}")
        if not (self.warmup_ms >= 0 and math.isfinite(self.warmup_ms)):
            raise ConfigError("warmup_ms", f"must not be negative, got {self.warmup_ms}")
        precision: object = self.precision
        if precision is not None and not (_is_number(precision) and 0.0 < precision < 1.0):
            raise ConfigError("precision", "expected a fraction between 0 and 1 (e.g. 0.02) or "
                              f"null, got {precision!r}")
        cap: object = self.max_duration_ms
        if cap is not None:
            if precision is None:
                raise ConfigError("max_duration_ms", "applies only with precision (a fixed "
                                  "window runs duration_ms)")
            if not (_is_number(cap) and math.isfinite(cap) and cap >= self.duration_ms):
                raise ConfigError("max_duration_ms", "expected a number of ms at least "
                                  f"duration_ms ({self.duration_ms:g}), got {cap!r}")
        tps = self.single_client_tps
        if isinstance(tps, str) and tps != MACHINE:
            raise ConfigError("single_client_tps", f"expected a TPS, {MACHINE!r} or null, got "
                              f"{tps!r}")
        if (not isinstance(tps, str) and tps is not None
                and not (tps > 0 and math.isfinite(tps))):
            raise ConfigError("single_client_tps", f"must be positive, got {tps}")
        if self.measurements not in (None, MACHINE):  # a misspelt dataset is found before any work
            measurements_for(str(self.measurements))
        # The model's own checks that the options suit the workload, each algorithm and the
        # algorithms run together (hooks that by default do nothing).
        model.check_workload_options(self.workload, self.options)
        for algorithm in self.algorithms:
            model.check_algorithm_options(algorithm, self.options)
        model.check_experiment_options(self.algorithms, self.options)
        return model


KEYS: Mapping[str, Key] = {item.name: item.metadata.get("key", Key())
                           for item in dataclasses.fields(Experiment)}
"""Every key of an experiment (the fields of :class:`Experiment`, in file order) and what it is."""
FLAGS: tuple[tuple[str, Flag], ...] = tuple(sorted(
    ((name, key.flag) for name, key in KEYS.items() if key.flag is not None),
    key=lambda item: item[1].window))
"""The keys that have a command-line flag, in ``--help``'s order (the window's last)."""


def _is_number(value: object) -> TypeGuard[float]:
    """A real number (an int or a float, not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_counts(key: str, values: Sequence[object], minimum: int,
                  maximum: int | None = None) -> None:
    """The one check of a list of counts (clients, idle connections, root seeds)."""
    if not values:
        raise ConfigError(key, "must be a non-empty list of integers")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
            raise ConfigError(key, f"must be integers >= {minimum}, got {value!r}")
        if maximum is not None and value > maximum:
            raise ConfigError(key, f"must be integers from {minimum} to {maximum} (2**63 - 1, "
                              f"the 64-bit integer the tables store), got {value!r}")
    if len(set(values)) != len(values):
        raise ConfigError(key, "lists a value twice")


def point_seed(root: int, machine: str, algorithm: str, workload: str, clients: int,
               idle_clients: int, idle_kind: str) -> int:
    """A point's seed: a stable function of the root seed and the point's identity."""
    key = f"{root}|{machine}|{algorithm}|{workload}|{clients}|{idle_clients}|{idle_kind}"
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def point_key(algorithm: str, clients: int, idle_clients: int, root_seed: int) -> str:
    """A point's stable, file-name-safe key within an experiment."""
    return f"{algorithm}-c{clients}-i{idle_clients}-r{root_seed}"


def overlay_dataset(measurements: str | None, machine: str, workload: str, idle_kind: str,
                    source: str | None = None) -> str | None:
    """The dataset an experiment's ``measurements`` overlays: named, the machine's own, or none.

    ``"machine"`` is the shipped manifest's first dataset of ``machine``, ``workload`` and
    ``idle_kind`` (``None`` if it has none).

    Raises:
        ConfigError: the named dataset was measured on another machine.
    """
    if measurements is None:
        return None
    if measurements == MACHINE:
        return load_manifest().dataset_of(machine, workload, idle_kind)
    measured_on = dataset_for(measurements, source).machine
    if names_a_file(measured_on):  # a machine file: the name it gives its machine
        measured_on = load_machine(measured_on).name
    if measured_on != machine:
        raise ConfigError("measurements", f"{measurements} was measured on {measured_on}, "
                          f"not {machine}: name a dataset of this machine, {MACHINE!r} or null")
    return measurements


@dataclass(frozen=True, slots=True)
class Prepared:
    """An experiment checked once, with its workload model, resolved options and machine.

    Built by :meth:`Experiment.prepare`; everything downstream (planning, hashing, the
    estimate, the work scale, running) takes it instead of preparing the experiment again.
    """

    experiment: Experiment
    model: WorkloadModelBase
    options: dict[str, object]
    """The model's options, resolved (every default filled in; plain YAML data)."""
    machine: MachineConfig
    source: str | None = None
    """The experiment file, if any (errors name it; relative option paths start there)."""
    single_client: SingleClientFigure | None = None
    """The measured single-client TPS the work scale is found from (``None``: work scale 1)."""
    measurements: str | None = None
    """The dataset overlaid on the results, resolved (``None``: none)."""

    def overlay_differences(self) -> list[tuple[str, object, object]]:
        """The keys of the overlaid dataset's ``set:`` that this run resolves otherwise.

        ``(key, the dataset's value, this run's value)`` for each ``options.KEY`` the dataset
        was measured under (its manifest's ``set:``, which ``snapsim validate`` applies) whose
        resolved value differs here; empty with no overlay or none differing.
        """
        if self.measurements is None:
            return []
        differences: list[tuple[str, object, object]] = []
        for dotted, value in dataset_for(self.measurements, self.source).sets:
            parts = dotted.split(".")
            measured_as = set_dotted({parts[0]: dict(self.experiment.options)}, parts, value,
                                     "set")[parts[0]]
            assert isinstance(measured_as, Mapping)
            theirs = _resolved_at(self.model.resolve_options(measured_as, self.source), parts[1:])
            mine = _resolved_at(self.options, parts[1:])
            if not _same_setting(mine, theirs):
                differences.append((dotted, value, mine))
        return differences

    def work_scale_note(self, work_scale: float) -> str:
        """One line: the run's work scale and where it comes from."""
        figure = self.single_client
        if figure is not None:
            where = f"{figure.dataset}'s" if figure.dataset else "the given"
            return (f"work scale {work_scale:.4f}: {self.machine.name} simulates {where} "
                    f"single-client TPS, {figure.tps:,.0f} ({figure.algorithm}, "
                    f"{figure.workload}, 1 client)")
        if self.experiment.single_client_tps == MACHINE:
            return (f"work scale 1: {self.machine.name} has no measured single-client TPS in "
                    "the measurement manifest (the global cost model as is)")
        return "work scale 1: single_client_tps is null (the global cost model as is)"

    def replace(self, **changes: Any) -> Prepared:
        """The same preparation of an experiment changed in keys that need no new check.

        Meant for the grid, the window and the seeds (the work scale's single-client point); the
        machine, the model and the options stay as prepared.
        """
        return dataclasses.replace(self, experiment=dataclasses.replace(self.experiment,
                                                                        **changes))


def plan(prepared: Prepared, work_scale: float = 1.0) -> list[PointTask]:
    """The tasks of every point of the grid, in grid order."""
    experiment, machine, options = prepared.experiment, prepared.machine, prepared.options
    tasks = []
    for index, (algorithm, clients, idle, root) in enumerate(experiment.grid()):
        seed = point_seed(root, machine.name, algorithm, experiment.workload, clients, idle,
                          experiment.idle_kind)
        spec = PointSpec(machine=machine, algorithm=algorithm, workload=experiment.workload,
                         clients=clients, idle_clients=idle, idle_kind=experiment.idle_kind,
                         duration_ns=experiment.duration_ms * 1e6,
                         warmup_ns=experiment.warmup_ms * 1e6, seed=seed, options=options,
                         work_scale=work_scale, precision=experiment.precision,
                         max_duration_ns=experiment.max_window_ms() * 1e6)
        tasks.append(PointTask(key=point_key(algorithm, clients, idle, root), index=index,
                               model=experiment.model, spec=spec, root_seed=root))
    return tasks


GRID_KEYS = tuple(name for name, key in KEYS.items() if key.grid)
"""The run settings that list the grid's points: a point's result does not depend on them (its
own algorithm, counts and root seed are in its key), so a grid changed in these alone keeps the
points it shares (:func:`settings_hash`)."""


def _hashed_document(prepared: Prepared, work_scale: float) -> dict[str, object]:
    experiment = prepared.experiment
    machine_document = dataclasses.asdict(prepared.machine)
    machine_document.pop("sources", None)
    return {
        "machine": machine_document,
        **experiment.run_settings(),
        "model": experiment.model,
        "options": dict(prepared.options),
        "work_scale": float(work_scale),
        "snapsim_version": __version__,
        "model_code": code_hash(experiment.model),
    }


def experiment_hash(prepared: Prepared, work_scale: float) -> str:
    """The hash that binds a stored point to the experiment that produced it.

    SHA-256 of what ``config.resolved.yaml`` holds minus what does not change results (the
    name, the description, the measurement overlay; the jobs and the scheduler are not in it):
    the machine's full configuration (not only its name or path, whose file may change), the
    grid, the simulated times, the model and its resolved options, the work scale, the
    snapsim version and the hash of the code that decides a result
    (:func:`~simulator.study.code_hash.code_hash`), so a point of other code is recomputed.
    """
    return document_hash(_hashed_document(prepared, work_scale))


def settings_hash(prepared: Prepared, work_scale: float) -> str:
    """:func:`experiment_hash` without the grid (:data:`GRID_KEYS`).

    Two experiments with the same settings hash compute the same result for every point they
    share, so a stored point carries it too and a run of another grid reuses it.
    """
    document = _hashed_document(prepared, work_scale)
    for key in GRID_KEYS:
        document.pop(key)
    return document_hash(document)


def _resolved_at(options: Mapping[str, object], parts: Sequence[str]) -> object:
    """The resolved option at a dotted path below ``options`` (``None`` where there is none)."""
    value: object = options
    for part in parts:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _same_setting(mine: object, theirs: object) -> bool:
    """Whether two resolved option values mean the same: equal, or one quantity in two units."""
    if mine == theirs:
        return True
    if not (isinstance(mine, str) and isinstance(theirs, str)):
        return False
    for parse in (parse_time_ns, parse_size_bytes):
        try:
            return parse(mine) == parse(theirs)
        except ValueError:
            continue
    return False
