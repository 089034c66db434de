"""Published measurements: the manifest that maps measurement CSVs to simulated points.

This module reads a manifest (:func:`load_manifest`) and writes one (:func:`manifest_document`,
the manifest of a ``snapsim measure``), both from the same key tuples. A manifest (YAML, format
in the README and in ``configs/measurements/manifest.yaml``) lists datasets. Each names a CSV
file (relative to the manifest), the machine and workload it ran, its idle kind, the columns (or
constants) that give the active and idle clients, and which TPS column is which algorithm.
:meth:`Dataset.table` turns a dataset into tidy rows ``dataset, series, algorithm, machine,
workload, idle_kind, clients, idle_clients, measured_tps``. A manifest may also fix, per machine,
the measured point that gives its single-client TPS (the one optional per-machine fit: its work
scale), and error thresholds.

A series is ``column: algorithm`` or, to mark a known gap of the model, ``column: {algorithm:
pre14, expected: fail, reason: "..."}``: ``snapsim validate`` reports such a series as an
expected failure (not failing its exit code) while it fails, and as an unexpected pass (failing
the exit code, so that the mark is removed) once it passes.

Every measured value is checked when a dataset is read: a TPS that is blank, not a number or not
positive, a client count that is not an integer >= 1 (idle: >= 0), and a point measured twice in
one series are errors naming the file, the CSV line and the column.

A manifest may also list ``ratios``: published speed-ups of one algorithm (or setting) over
another at one configuration (:class:`Ratio`): the machine that stands in for the publication's,
the workload, the clients, the two sides (an algorithm, optionally with ``set:`` overrides of the
experiment's ``options``), the published ratio, its relative tolerance and the source; a ratio
can be marked ``expected: fail`` like a series.

Nothing here knows what the algorithms mean; names are checked by whoever runs the points
(:func:`simulator.tools.validate.check_ratios` for the ratios). The writer uses the model's words
for what ``snapsim measure`` runs (:data:`MEASURED_WORKLOAD`, :data:`BACKGROUND_THREADS`); a test
checks them against the workload model, which this floor may not import.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from simulator.config import configs_dir
from simulator.config.machine_file import names_a_file
from simulator.config.values import (
    check_keys,
    expect_int,
    expect_mapping,
    expect_number,
    expect_str,
    join_key,
)
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError

MEASURED_COLUMNS = ("dataset", "series", "algorithm", "machine", "workload", "idle_kind",
                    "clients", "idle_clients", "measured_tps")
MANIFEST_FILE = "manifest.yaml"
"""The manifest's name in a measurement's directory (``snapsim measure --out``)."""
_TOP_KEYS = ("version", "thresholds", "machines", "run", "datasets", "ratios")
MANIFEST_KEYS = ("thresholds", "machines", "run", "datasets", "ratios")
"""Top-level keys found only in a manifest (``version`` is not one: other files may have it)."""
MANIFEST_VERSION = 1
"""The ``version`` a written manifest says (the reader accepts a manifest without one)."""
_PRECISION_KEYS = ("precision", "max_duration_ms")
"""Run keys of a precision-stopped window (the experiment's keys of the same names)."""
_RUN_KEYS = ("duration_ms", "warmup_ms", "seed", *_PRECISION_KEYS)
_DATASET_KEYS = ("file", "description", "machine", "workload", "idle_kind", "clients",
                 "idle_clients", "series", "run", "set")
_DATASET_RUN_KEYS = ("duration_ms", "warmup_ms", *_PRECISION_KEYS, "min_clients", "max_clients")
_CLIENT_BOUNDS = ("min_clients", "max_clients")
_RATIO_RUN_KEYS = ("duration_ms", "warmup_ms", *_PRECISION_KEYS)
_THRESHOLD_KEYS = ("median_abs_rel_error", "max_abs_rel_error")
_MACHINE_KEYS = ("single_client_tps",)
_WORK_SCALE_POINT_KEYS = ("dataset", "series", "clients", "idle_clients")
_SERIES_KEYS = ("algorithm", "expected", "reason")
_RATIO_KEYS = ("machine", "stand_in", "workload", "batch", "clients", "idle_clients", "idle_kind",
               "numerator", "denominator", "published", "tolerance", "source", "expected",
               "reason", "run")
_RATIO_OPTIONAL = ("stand_in", "batch", "idle_clients", "idle_kind", "expected", "reason", "run")
_SIDE_KEYS = ("algorithm", "set")
SET_PREFIX = "options"
"""The experiment key a dataset's or a ratio side's ``set:`` may change (and nothing else: the
machine, workload and counts are the dataset's or the ratio's own)."""
EXPECTED = ("pass", "fail")
"""Values of a series' or a ratio's ``expected``: ``fail`` marks a known gap of the model."""
MACHINE_FILE = "host.yaml"
"""The machine file of a measurement's host (``snapsim machine probe``), beside its manifest."""
MEASURED_WORKLOAD = "select-only"
"""The model's workload that ``pgbench -M prepared -S`` runs."""
BACKGROUND_THREADS = f"{SET_PREFIX}.background_threads"
"""The model's option a mostly idle dataset's ``set:`` gives: the pgbench threads that drove
its mostly idle connections."""
PRECISION_RUN: Mapping[str, float] = {"precision": 0.02, "max_duration_ms": 400}
"""The run a written manifest gives every point: its window grows until the 95 % interval of
its TPS is within 2 % of it, up to 400 ms."""
MOSTLY_IDLE_RUN: Mapping[str, float] = {"duration_ms": 100, "max_duration_ms": 1600}
"""The window of every point among mostly idle connections: one sleep period, in which each
connection sends one query, grown up to sixteen. Shorter windows hold too few background queries
for a steady load (two clients among 1,000 connections in 5 ms: 50 queries); the background's
load repeats with its sleep period, so batch means stay correlated until a window holds several
periods (one client among 2,500 or 5,000 mostly idle connections on gold5215-2s did not meet 2 %
within four periods, and did within 1,600 ms). A manifest can add ``max_clients`` to keep the
long window for its small points only, as the published Gold 5215 files do (their 48-client
points run 5 ms, for time)."""


def shipped_manifest_path() -> Path:
    """The manifest of the shipped reference measurements."""
    return configs_dir() / "measurements" / "manifest.yaml"


@dataclass(frozen=True, slots=True)
class Dataset:
    """One measurement file and how its columns map to points."""

    name: str
    path: Path
    description: str
    machine: str
    workload: str
    idle_kind: str
    clients: str | int
    idle_clients: str | int
    series: Mapping[str, str]
    """TPS column → algorithm."""
    known_gaps: Mapping[str, str] = field(default_factory=dict)
    """TPS column → why the model is expected to fail it (``expected: fail``)."""
    run: Mapping[str, float] = field(default_factory=dict)
    """The dataset's own ``duration_ms`` / ``warmup_ms``, over the manifest's ``run``, for its
    points of at least ``min_clients`` and at most ``max_clients`` active clients (every point
    without them)."""
    sets: tuple[tuple[str, object], ...] = ()
    """The dataset's ``set:``: ``(options.KEY, value)`` pairs of how it was measured (e.g. the
    threads of the pgbench that drove its mostly idle connections), over ``--set``."""

    def window_applies(self, clients: int) -> bool:
        """Whether the dataset's own ``run`` sets the window of a point of ``clients``."""
        return (self.run.get("min_clients", 1.0) <= clients
                <= self.run.get("max_clients", float("inf")))

    def table(self) -> pd.DataFrame:
        """Tidy measured rows (:data:`MEASURED_COLUMNS`), one per CSV row and series.

        Raises:
            ConfigError: the file is missing, unreadable or empty, lacks a column the manifest
                names, or holds a bad value or a point measured twice (naming line and column).
        """
        try:
            raw = pd.read_csv(self.path, dtype=str, keep_default_na=False)
        except FileNotFoundError:
            raise ConfigError(f"datasets.{self.name}.file", f"no such file: {self.path}") from None
        except pd.errors.EmptyDataError:
            raise ConfigError("", "is empty", str(self.path)) from None
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"datasets.{self.name}.file",
                              f"cannot read {self.path}: {message}") from None
        if raw.empty:
            raise ConfigError("", "has no measurements", str(self.path))
        clients = self._counts(raw, self.clients, "clients", minimum=1)
        idle_clients = self._counts(raw, self.idle_clients, "idle_clients", minimum=0)
        frames = []
        for column, algorithm in self.series.items():
            frame = pd.DataFrame({
                "dataset": self.name, "series": column, "algorithm": algorithm,
                "machine": self.machine, "workload": self.workload, "idle_kind": self.idle_kind,
                "clients": clients, "idle_clients": idle_clients,
                "measured_tps": self._tps(raw, column),
            })
            self._reject_duplicates(frame, column)
            frames.append(frame)
        table = pd.concat(frames, ignore_index=True)
        return table[list(MEASURED_COLUMNS)]

    def _counts(self, raw: pd.DataFrame, spec: str | int, key: str, minimum: int) -> pd.Series:
        if isinstance(spec, int):
            return pd.Series([spec] * len(raw), dtype="int64")
        texts = self._column(raw, spec, key)
        numbers = pd.to_numeric(texts.str.strip(), errors="coerce")
        bad = ~(numbers >= minimum) | (numbers != numbers.round())
        self._reject(bad, texts, spec, f"expected an integer >= {minimum}")
        return numbers.astype("int64")

    def _tps(self, raw: pd.DataFrame, column: str) -> pd.Series:
        texts = self._column(raw, column, "series")
        numbers = pd.to_numeric(texts.str.strip(), errors="coerce")
        self._reject(~(numbers > 0) | ~numbers.abs().lt(float("inf")), texts, column,
                     "expected a positive number of transactions per second")
        return numbers.astype(float)

    def _reject(self, bad: pd.Series, texts: pd.Series, column: str, expected: str) -> None:
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            value = texts.iloc[row]
            got = repr(value) if value.strip() else "a blank cell"
            raise ConfigError("", f"line {row + 2}, column {column}: {expected}, got {got}",
                              str(self.path))

    def _reject_duplicates(self, frame: pd.DataFrame, column: str) -> None:
        duplicated = frame.duplicated(["clients", "idle_clients"], keep=False)
        if duplicated.any():
            rows = duplicated.to_numpy().nonzero()[0]
            first = frame.iloc[rows[0]]
            same = rows[(frame["clients"].iloc[rows] == first["clients"]).to_numpy()
                        & (frame["idle_clients"].iloc[rows] == first["idle_clients"]).to_numpy()]
            values = ", ".join(f"{frame['measured_tps'].iloc[r]:g} (line {r + 2})" for r in same)
            raise ConfigError("", f"column {column}: the point of {first['clients']} clients and "
                              f"{first['idle_clients']} idle clients is measured more than "
                              f"once: {values}", str(self.path))

    def _column(self, raw: pd.DataFrame, column: str, key: str) -> pd.Series:
        if column not in raw.columns:
            raise ConfigError(f"datasets.{self.name}.{key}",
                              f"column {column!r} is not in {self.path.name} "
                              f"(columns: {', '.join(map(str, raw.columns))})")
        return raw[column]


@dataclass(frozen=True, slots=True)
class WorkScalePoint:
    """The measured point whose TPS is a machine's single-client TPS."""

    dataset: str
    series: str
    clients: int
    idle_clients: int


@dataclass(frozen=True, slots=True)
class SingleClientFigure:
    """A machine's measured single-client TPS and what it was measured with.

    The work scale found from it applies to every workload the machine then runs; the search
    simulates the point the TPS was measured at (its algorithm, workload and idle kind).
    """

    tps: float
    algorithm: str
    workload: str
    idle_kind: str
    dataset: str
    """The manifest's dataset it comes from."""


@dataclass(frozen=True, slots=True)
class RatioSide:
    """One side of a ratio: an algorithm and the ``options`` overrides it runs with."""

    algorithm: str
    sets: tuple[tuple[str, object], ...] = ()
    """``(dotted key, value)`` pairs, e.g. ``("options.layout", [...])``, applied in order."""

    def label(self) -> str:
        """``algorithm``, or ``algorithm with key=value, ...`` (values as JSON)."""
        if not self.sets:
            return self.algorithm
        shown = ", ".join(f"{key}={json.dumps(value, separators=(',', ':'))}"
                          for key, value in self.sets)
        return f"{self.algorithm} with {shown}"


@dataclass(frozen=True, slots=True)
class Ratio:
    """A published speed-up of ``numerator`` over ``denominator`` at one configuration."""

    name: str
    machine: str
    workload: str
    clients: int
    numerator: RatioSide
    denominator: RatioSide
    published: float
    """The published ratio (numerator TPS / denominator TPS)."""
    tolerance: float
    """Relative: the prediction passes within ``published * (1 ± tolerance)``."""
    source: str
    stand_in: str = ""
    """Why ``machine`` stands in for the publication's machine."""
    batch: int | None = None
    """``options.batch`` of both points (statements per round trip of the batched workload)."""
    idle_clients: int = 0
    idle_kind: str = "idle"
    known_gap: str = ""
    """Why the model is expected to miss it (``expected: fail``), else empty."""
    run: Mapping[str, float] = field(default_factory=dict)
    """The ratio's own ``duration_ms`` / ``warmup_ms``, over the manifest's ``run``."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """A parsed manifest."""

    path: Path
    datasets: Mapping[str, Dataset]
    median_abs_rel_error: float
    max_abs_rel_error: float
    work_scale_points: Mapping[str, WorkScalePoint]
    """Machine name → the point giving its single-client TPS."""
    run: Mapping[str, float]
    """Simulation settings of ``snapsim validate`` (``duration_ms``, ``warmup_ms``, ``seed``)."""
    ratios: Mapping[str, Ratio] = field(default_factory=dict)
    """Published ratios by name."""

    def dataset(self, name: str) -> Dataset:
        """The dataset called ``name``.

        Raises:
            ConfigError: no such dataset (the message lists them).
        """
        if name not in self.datasets:
            raise ConfigError("measurements", f"no dataset {name!r} in {self.path} "
                              f"(datasets: {', '.join(self.datasets)})")
        return self.datasets[name]

    def ratio(self, name: str) -> Ratio:
        """The ratio called ``name``.

        Raises:
            ConfigError: no such ratio (the message lists them).
        """
        if name not in self.ratios:
            listed = ", ".join(self.ratios) or "none"
            raise ConfigError("measurements", f"no ratio {name!r} in {self.path} "
                              f"(ratios: {listed})")
        return self.ratios[name]

    def single_client(self, machine: str) -> SingleClientFigure | None:
        """The machine's measured single-client TPS and its point, if the manifest gives one."""
        tps = self.single_client_tps(machine)
        if tps is None:
            return None
        point = self.work_scale_points[machine]
        dataset = self.dataset(point.dataset)
        return SingleClientFigure(tps=tps, algorithm=dataset.series[point.series],
                                  workload=dataset.workload, idle_kind=dataset.idle_kind,
                                  dataset=point.dataset)

    def dataset_of(self, machine: str, workload: str, idle_kind: str) -> str | None:
        """The first dataset measured on ``machine`` with ``workload`` and ``idle_kind``."""
        for name, dataset in self.datasets.items():
            if (dataset.machine, dataset.workload, dataset.idle_kind) == (machine, workload,
                                                                          idle_kind):
                return name
        return None

    def single_client_tps(self, machine: str) -> float | None:
        """The machine's measured single-client TPS, if the manifest gives one."""
        point = self.work_scale_points.get(machine)
        if point is None:
            return None
        table = self.dataset(point.dataset).table()
        match = table[(table["series"] == point.series) & (table["clients"] == point.clients)
                      & (table["idle_clients"] == point.idle_clients)]
        if len(match) != 1:
            raise ConfigError(f"machines.{machine}.single_client_tps",
                              f"expected exactly one measured point, found {len(match)}",
                              str(self.path))
        return float(match["measured_tps"].iloc[0])


def load_manifest(path: str | Path | None = None, data: object = None) -> Manifest:
    """Read and validate a manifest (default: the shipped one; a directory: its manifest.yaml).

    A dataset's ``machine`` that is a file path (``host.yaml``) is relative to the manifest.

    ``data``: the file's contents already parsed (a stream, read once); ``path`` then only names
    it and is the base of its relative paths.

    Raises:
        ConfigError: malformed YAML, an unknown or missing key, a bad value.
    """
    manifest_path = Path(path) if path is not None else shipped_manifest_path()
    if manifest_path.is_dir():  # a measurement's directory (snapsim measure --out)
        manifest_path = manifest_path / MANIFEST_FILE
    source = str(manifest_path)
    try:
        return _build(read_yaml(manifest_path) if data is None else data, manifest_path)
    except ConfigError as exc:
        if exc.source is not None:
            raise
        raise ConfigError(exc.key, exc.message, source) from None


def _build(data: object, path: Path) -> Manifest:
    top = expect_mapping("", data)
    check_keys(top, "", _TOP_KEYS,
               optional=("version", "thresholds", "machines", "run", "ratios"))
    run_section = expect_mapping("run", top.get("run") or {})
    check_keys(run_section, "run", _RUN_KEYS, optional=_RUN_KEYS)
    run = {key: (float(expect_int("run.seed", value)) if key == "seed"
                 else _fraction(f"run.{key}", value) if key in ("duration_ms", "max_duration_ms")
                 else expect_number(f"run.{key}", value))
           for key, value in run_section.items()}
    if run.get("warmup_ms", 0.0) < 0:
        raise ConfigError("run.warmup_ms", f"must not be negative, got {run['warmup_ms']}")
    _check_precision("run", run)
    thresholds = expect_mapping("thresholds", top.get("thresholds", {}))
    check_keys(thresholds, "thresholds", _THRESHOLD_KEYS, optional=_THRESHOLD_KEYS)
    limits = {key: _fraction(f"thresholds.{key}", thresholds.get(key, default))
              for key, default in zip(_THRESHOLD_KEYS, (0.10, 0.25), strict=True)}
    datasets = {}
    for name, value in expect_mapping("datasets", top["datasets"]).items():
        datasets[str(name)] = _dataset(str(name), value, path.parent)
    if not datasets:
        raise ConfigError("datasets", "must list at least one dataset")
    work_scale_points = {}
    for machine, value in expect_mapping("machines", top.get("machines") or {}).items():
        key = f"machines.{machine}"
        entry = expect_mapping(key, value)
        check_keys(entry, key, _MACHINE_KEYS)
        point = expect_mapping(f"{key}.single_client_tps", entry[_MACHINE_KEYS[0]])
        check_keys(point, f"{key}.single_client_tps", _WORK_SCALE_POINT_KEYS)
        dataset = expect_str(f"{key}.single_client_tps.dataset", point["dataset"])
        if dataset not in datasets:
            raise ConfigError(f"{key}.single_client_tps.dataset",
                              f"no dataset {dataset!r} (datasets: {', '.join(datasets)})")
        work_scale_points[str(machine)] = WorkScalePoint(
            dataset=dataset, series=expect_str(f"{key}.single_client_tps.series", point["series"]),
            clients=expect_int(f"{key}.single_client_tps.clients", point["clients"]),
            idle_clients=expect_int(f"{key}.single_client_tps.idle_clients",
                                    point["idle_clients"]))
    ratios = {str(name): _ratio(str(name), value)
              for name, value in expect_mapping("ratios", top.get("ratios") or {}).items()}
    return Manifest(path=path, datasets=datasets, median_abs_rel_error=limits[_THRESHOLD_KEYS[0]],
                    max_abs_rel_error=limits[_THRESHOLD_KEYS[1]],
                    work_scale_points=work_scale_points, run=run, ratios=ratios)


def _run_window(key: str, value: object, keys: tuple[str, ...]) -> dict[str, float]:
    """A dataset's or a ratio's own ``run:``, checked against ``keys``.

    ``duration_ms`` > 0, ``warmup_ms`` >= 0; a dataset's ``min_clients`` and ``max_clients``
    integers >= 1, the first not above the second, with a window.
    """
    run_section = expect_mapping(key, value or {})
    check_keys(run_section, key, keys, optional=keys)
    run = {name: (_fraction(f"{key}.{name}", item) if name in ("duration_ms", "max_duration_ms")
                  else float(expect_int(f"{key}.{name}", item)) if name in _CLIENT_BOUNDS
                  else expect_number(f"{key}.{name}", item))
           for name, item in run_section.items()}
    if run.get("warmup_ms", 0.0) < 0:
        raise ConfigError(f"{key}.warmup_ms", f"must not be negative, got {run['warmup_ms']}")
    _check_precision(key, run)
    for bound in _CLIENT_BOUNDS:
        if run.get(bound, 1.0) < 1:
            raise ConfigError(f"{key}.{bound}", f"must be at least 1, got {int(run[bound])}")
    bounds = [bound for bound in _CLIENT_BOUNDS if bound in run]
    if bounds and len(run) == len(bounds):
        raise ConfigError(f"{key}.{bounds[0]}", "limits a window the run does not set "
                          "(give duration_ms or warmup_ms)")
    if run.get("min_clients", 1.0) > run.get("max_clients", float("inf")):
        raise ConfigError(f"{key}.min_clients",
                          f"must not exceed max_clients ({int(run['max_clients'])}), "
                          f"got {int(run['min_clients'])}")
    return run


def _known_gap(key: str, data: Mapping[str, object], what: str) -> str:
    """The ``reason`` of ``expected: fail``, or ``""`` when the entry is expected to pass."""
    expected = expect_str(f"{key}.expected", data.get("expected", "pass"))
    if expected not in EXPECTED:
        raise ConfigError(f"{key}.expected",
                          f"unknown value {expected!r} (choose one of: {', '.join(EXPECTED)})")
    reason = expect_str(f"{key}.reason", data.get("reason", "")).strip()
    if expected == "fail" and not reason:
        raise ConfigError(f"{key}.reason",
                          "required with expected: fail (why the model misses it)")
    if expected == "pass" and reason:
        raise ConfigError(f"{key}.reason", f"only a {what} with expected: fail has one")
    return reason


def _dataset(name: str, value: object, base: Path) -> Dataset:
    key = f"datasets.{name}"
    data = expect_mapping(key, value)
    check_keys(data, key, _DATASET_KEYS, optional=("description", "run", "set"))
    run = _run_window(f"{key}.run", data.get("run"), _DATASET_RUN_KEYS)
    series = {}
    known_gaps = {}
    for column, value in expect_mapping(f"{key}.series", data["series"]).items():
        entry_key = join_key(f"{key}.series", str(column))
        if not isinstance(value, Mapping):
            series[str(column)] = expect_str(entry_key, value)
            continue
        check_keys(value, entry_key, _SERIES_KEYS, optional=("expected", "reason"))
        series[str(column)] = expect_str(f"{entry_key}.algorithm", value["algorithm"])
        reason = _known_gap(entry_key, value, "series")
        if reason:
            known_gaps[str(column)] = reason
    if not series:
        raise ConfigError(f"{key}.series", "must map at least one TPS column to an algorithm")
    return Dataset(
        name=name, path=base / expect_str(f"{key}.file", data["file"]),
        description=expect_str(f"{key}.description", data.get("description", "")),
        machine=_machine_reference(expect_str(f"{key}.machine", data["machine"]), base),
        workload=expect_str(f"{key}.workload", data["workload"]),
        idle_kind=expect_str(f"{key}.idle_kind", data["idle_kind"]),
        clients=_column_or_count(f"{key}.clients", data["clients"]),
        idle_clients=_column_or_count(f"{key}.idle_clients", data["idle_clients"]),
        series=series,
        known_gaps=known_gaps,
        run=run,
        sets=_option_sets(f"{key}.set", data.get("set"), "the machine, workload and counts are "
                          "the dataset's own"),
    )


def _ratio(name: str, value: object) -> Ratio:
    """The entry ``ratios.NAME``, every key checked (names are the runner's to check)."""
    key = join_key("ratios", name)
    data = expect_mapping(key, value)
    check_keys(data, key, _RATIO_KEYS, optional=_RATIO_OPTIONAL)
    published = expect_number(f"{key}.published", data["published"])
    if not (published > 0 and math.isfinite(published)):
        raise ConfigError(f"{key}.published", f"must be a positive ratio, got {published}")
    tolerance = expect_number(f"{key}.tolerance", data["tolerance"])
    if not (tolerance >= 0 and math.isfinite(tolerance)):
        raise ConfigError(f"{key}.tolerance",
                          f"must be a non-negative fraction (0.1: within 10 %), got {tolerance}")
    batch = None
    if "batch" in data:
        batch = expect_int(f"{key}.batch", data["batch"])
        if batch < 1:
            raise ConfigError(f"{key}.batch", f"must be at least 1, got {batch}")
    clients = expect_int(f"{key}.clients", data["clients"])
    if clients < 1:
        raise ConfigError(f"{key}.clients", f"must be at least 1, got {clients}")
    idle_clients = expect_int(f"{key}.idle_clients", data.get("idle_clients", 0))
    if idle_clients < 0:
        raise ConfigError(f"{key}.idle_clients", f"must not be negative, got {idle_clients}")
    texts = {}
    for item in ("machine", "workload", "idle_kind", "source", "stand_in"):
        text = expect_str(f"{key}.{item}", data.get(item, "idle" if item == "idle_kind" else ""))
        if not text.strip() and item != "stand_in":
            raise ConfigError(f"{key}.{item}", "must not be empty")
        texts[item] = text.strip()
    return Ratio(
        name=name, machine=texts["machine"], workload=texts["workload"], clients=clients,
        numerator=_ratio_side(f"{key}.numerator", data["numerator"]),
        denominator=_ratio_side(f"{key}.denominator", data["denominator"]),
        published=published, tolerance=tolerance, source=texts["source"],
        stand_in=texts["stand_in"], batch=batch, idle_clients=idle_clients,
        idle_kind=texts["idle_kind"], known_gap=_known_gap(key, data, "ratio"),
        run=_run_window(f"{key}.run", data.get("run"), _RATIO_RUN_KEYS))


def _ratio_side(key: str, value: object) -> RatioSide:
    """``algorithm`` or ``{algorithm: ..., set: {options.KEY: VALUE, ...}}``."""
    if not isinstance(value, Mapping):
        algorithm = expect_str(key, value).strip()
        if not algorithm:
            raise ConfigError(key, "must name an algorithm")
        return RatioSide(algorithm)
    check_keys(value, key, _SIDE_KEYS, optional=("set",))
    algorithm = expect_str(f"{key}.algorithm", value["algorithm"]).strip()
    if not algorithm:
        raise ConfigError(f"{key}.algorithm", "must name an algorithm")
    sets = _option_sets(f"{key}.set", value.get("set"),
                        "the machine, workload and clients are the ratio's own")
    return RatioSide(algorithm, sets)


def _option_sets(key: str, value: object, whose: str) -> tuple[tuple[str, object], ...]:
    """A ``set:`` mapping of ``options.KEY: VALUE`` overrides, in order (none if absent)."""
    sets = []
    for dotted, item in expect_mapping(key, value or {}).items():
        parts = str(dotted).split(".")
        if len(parts) < 2 or parts[0] != SET_PREFIX or not all(parts):
            raise ConfigError(join_key(key, str(dotted)),
                              f"expected a key of the experiment's {SET_PREFIX} "
                              f"(such as {SET_PREFIX}.layout); {whose}")
        sets.append((str(dotted), item))
    return tuple(sets)


def _machine_reference(machine: str, base: Path) -> str:
    """A shipped machine's name as is; a machine file's relative path from the manifest's folder.

    A name with a ``/`` or a ``.yaml``/``.yml`` suffix is a file (:func:`names_a_file`).
    """
    if names_a_file(machine) and not Path(machine).is_absolute():
        return str(base / machine)
    return machine


def _column_or_count(key: str, value: object) -> str | int:
    if isinstance(value, str):
        return value
    count = expect_int(key, value)
    if count < 0:
        raise ConfigError(key, f"must not be negative, got {count}")
    return count


def _check_precision(key: str, run: Mapping[str, float]) -> None:
    """A run's ``precision`` is a fraction between 0 and 1."""
    if "precision" in run and not 0.0 < run["precision"] < 1.0:
        raise ConfigError(f"{key}.precision", "expected a fraction between 0 and 1 (e.g. 0.02), "
                          f"got {run['precision']}")


def _fraction(key: str, value: object) -> float:
    number = expect_number(key, value)
    if not number > 0:
        raise ConfigError(key, f"must be positive, got {number}")
    return number


def manifest_document(name: str, datasets: Mapping[str, tuple[str, Sequence[str]]],
                      work_scale_point: tuple[str, str] | None,
                      descriptions: Mapping[str, str],
                      background_threads: int = 1) -> dict[str, object]:
    """The manifest of a measurement's datasets, as :func:`load_manifest` reads it.

    ``datasets`` maps a dataset to its idle kind and series (``tps_pre14``: the TPS of the
    algorithm after ``tps_``); ``work_scale_point`` is the dataset and series of the
    single-client point, if measured; ``background_threads``: the pgbench threads that drove the
    mostly idle connections at the largest count, which the mostly idle dataset's ``set:`` gives
    the model (:data:`BACKGROUND_THREADS`). Every key is the reader's, in its order.
    """
    entries: dict[str, object] = {}
    for dataset, (idle_kind, series) in datasets.items():
        mostly_idle = idle_kind == "mostly-idle"
        entries[dataset] = _entry(
            _DATASET_KEYS, file=f"{dataset}.csv", description=descriptions[dataset],
            machine=MACHINE_FILE, workload=MEASURED_WORKLOAD, idle_kind=idle_kind,
            clients="active_connections", idle_clients="idle_connections",
            series={label: label.removeprefix("tps_") for label in series},
            run=_entry(_DATASET_RUN_KEYS, **MOSTLY_IDLE_RUN) if mostly_idle else None,
            set={BACKGROUND_THREADS: background_threads} if mostly_idle else None)
    machines = None
    if work_scale_point is not None:
        point = _entry(_WORK_SCALE_POINT_KEYS, dataset=work_scale_point[0],
                       series=work_scale_point[1], clients=1, idle_clients=0)
        machines = {name: _entry(_MACHINE_KEYS, single_client_tps=point)}
    return _entry(_TOP_KEYS, version=MANIFEST_VERSION, machines=machines,
                  run=_entry(_RUN_KEYS, **PRECISION_RUN), datasets=entries)


def _entry(keys: tuple[str, ...], **values: object) -> dict[str, object]:
    """``values`` that are not ``None`` under the reader's ``keys``, in their order.

    Raises:
        ValueError: a key the reader does not know (a bug of the writer).
    """
    unknown = sorted(set(values) - set(keys))
    if unknown:
        raise ValueError(f"not a manifest key here: {', '.join(unknown)} (keys: {keys})")
    return {key: values[key] for key in keys if values.get(key) is not None}


def dataset_for(reference: str, source: str | None = None) -> Dataset:
    """The dataset named by an experiment's ``measurements`` value.

    ``reference`` is a dataset of the shipped manifest (``gold5215_idle``) or
    ``PATH:DATASET`` for a dataset of another manifest (PATH relative to ``source``'s folder).
    """
    manifest_path: Path | None = None
    name = reference
    if ":" in reference:
        file, name = reference.rsplit(":", 1)
        manifest_path = Path(file)
        if not manifest_path.is_absolute() and source is not None:
            manifest_path = Path(source).resolve().parent / manifest_path
    return load_manifest(manifest_path).dataset(name)


def measurements_for(reference: str, source: str | None = None) -> pd.DataFrame:
    """Measured rows named by an experiment's ``measurements`` value (:func:`dataset_for`)."""
    return dataset_for(reference, source).table()
