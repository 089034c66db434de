"""The global PostgreSQL software cost model (``configs/postgres-costs.yaml``).

One set of numbers for every machine, in cycles of the machine's clock: the non-snapshot work of
each statement kind, the pgbench client's work, instructions per scanned procArray entry, the
private memory footprint of a transaction, the private working sets of a backend and of a
pgbench thread (``working_set``), the mostly-idle clients' sleep, the private work of a
connection's start and end (``connection``: the postmaster's fork, the backend's start-up and
exit, the client's connect) and pgbench's own work per pass of a thread's loop over its
connections (``pgbench_loop``). ``connection``, ``working_set`` and ``pgbench_loop`` are
optional in a cost file: an absent section takes the shipped file's values. Loaded strictly:
unknown or missing keys and bad values are :class:`~simulator.errors.ConfigError` naming the key.
Counts of cycles carry their unit (``30000 cycles``); sizes and times may be bare numbers (bytes,
nanoseconds), as everywhere in :mod:`simulator.config.units`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TypeVar

from simulator.config import configs_dir
from simulator.config.units import parse_size_bytes, parse_time_ns
from simulator.config.values import (
    expect_int,
    expect_list,
    expect_mapping,
    expect_number,
    expect_section,
    join_key,
)
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError

DEFAULT_COSTS_FILE = configs_dir() / "postgres-costs.yaml"

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class StatementCosts:
    """Non-snapshot backend cycles per statement kind."""

    select_only: float
    select1: float
    tpcb: float
    statement_in_batch: float


@dataclass(frozen=True, slots=True)
class ScanCosts:
    """Instructions per procArray entry of each kind of scan (cycles)."""

    pg91: float
    pre14: float
    dense: float


@dataclass(frozen=True, slots=True)
class ConnectionCosts:
    """Private CPU work of one connection's start and end (cycles), outside shared memory.

    The shared-memory steps of a connect and a disconnect (``InitProcess``, ``ProcArrayAdd``,
    ``ProcArrayRemove``, ``ProcKill``) are memory operations of the snapshot algorithms; these are
    the rest.
    """

    postmaster: float
    """The postmaster's serial work per connection: accept, fork and, later, reaping the child."""
    backend_startup: float
    """The new backend's work until ReadyForQuery (InitPostgres, caches, authentication)."""
    backend_exit: float
    """The backend's exit work besides the procArray and free-list steps (``proc_exit``)."""
    client: float
    """The client's connect and close (libpq: socket, startup packet, authentication)."""


@dataclass(frozen=True, slots=True)
class ProcessWorkingSet:
    """One kind of process's working set (bytes; 0: none)."""

    private: int
    """Its own data (stack, heap, caches), which no other process touches."""
    code: int
    """The hot code it runs (the program's and the kernel's text), shared read-only by every
    process of the same program."""


@dataclass(frozen=True, slots=True)
class WorkingSetCosts:
    """The working sets of the processes, refilled after they go cold.

    What a process touches on every run: the scheduler refills what its core lost since it last
    ran (:mod:`simulator.runtime.working_set`). The per-transaction ``footprint`` is apart: the
    transaction's own data (buffer pages, executor state) passed through the caches each
    transaction to evict tracked lines, at no time cost.
    """

    backend: ProcessWorkingSet
    """A backend's, on its statement path."""
    client: ProcessWorkingSet
    """A pgbench thread's (an active client's or a background thread's)."""


@dataclass(frozen=True, slots=True)
class PgCosts:
    """The whole cost model."""

    statements: StatementCosts
    client_cycles: float
    scan: ScanCosts
    footprint_private_bytes: int
    footprint_l3_bytes: int
    mostly_idle_sleep_ns: float
    connection: ConnectionCosts
    pgbench_loop_per_connection_cycles: float
    """pgbench's work per connection of a thread per pass of its loop (``threadRun``), cycles."""
    working_set: WorkingSetCosts = WorkingSetCosts(ProcessWorkingSet(0, 0),
                                                   ProcessWorkingSet(0, 0))

    def scaled(self, work_scale: float) -> PgCosts:
        """The same model with the base per-transaction work multiplied by ``work_scale``.

        The base work is the backend's non-snapshot cycles of every statement kind and the
        pgbench client's cycles: what ``--single-client-tps`` rescales so that one client without
        idle connections runs at a machine's measured TPS. Scan cycles per entry, footprints,
        working sets, connection costs, pgbench's per-pass loop and the machine's scheduling
        costs are unchanged.
        """
        if work_scale == 1.0:
            return self
        statements = StatementCosts(*(value * work_scale for value in (
            self.statements.select_only, self.statements.select1, self.statements.tpcb,
            self.statements.statement_in_batch)))
        return replace(self, statements=statements, client_cycles=self.client_cycles * work_scale)


_TOP_KEYS = ("version", "backend", "client", "scan_cycles_per_entry", "footprint",
             "working_set", "mostly_idle_sleep", "connection", "pgbench_loop", "calibration")
_OPTIONAL_TOP_KEYS = ("working_set", "connection", "pgbench_loop", "calibration")
"""Keys a cost file may leave out: they take the shipped file's values (older files predate
them)."""
_STATEMENT_KEYS = tuple(field.name for field in fields(StatementCosts))
_CONNECTION_KEYS = tuple(field.name for field in fields(ConnectionCosts))
_SCAN_KEYS = tuple(field.name for field in fields(ScanCosts))
_FOOTPRINT_KEYS = ("private", "l3")
_PGBENCH_LOOP_KEYS = ("per_connection",)
_WORKING_SET_KEYS = tuple(field.name for field in fields(WorkingSetCosts))
_PROCESS_WORKING_SET_KEYS = tuple(field.name for field in fields(ProcessWorkingSet))
_CALIBRATION_KEYS = ("command", "datasets", "objective", "evaluations", "fitted", "date",
                     "sensitivity")
"""The record of the fit that set the fitted values (``snapsim calibrate``'s ``best.yaml``)."""
_RECORD_ONLY = ("calibration",)
"""Sections that document the file and are no part of the model (left out of its document)."""


def load_costs(path: str | Path = DEFAULT_COSTS_FILE) -> PgCosts:
    """Read and validate a cost-model file."""
    return costs_from_dict(read_yaml(Path(path)), str(path))


def read_costs_document(path: str | Path = DEFAULT_COSTS_FILE) -> dict[str, object]:
    """The parsed cost-model file as plain YAML data (validated), every section present.

    A section of :data:`_OPTIONAL_TOP_KEYS` the file leaves out is the shipped file's.
    """
    data = read_yaml(Path(path))
    costs_from_dict(data, str(path))
    assert isinstance(data, dict)
    for key in _RECORD_ONLY:
        data.pop(key, None)
    missing = [key for key in _OPTIONAL_TOP_KEYS if key not in data and key not in _RECORD_ONLY]
    if missing:
        shipped = read_yaml(DEFAULT_COSTS_FILE)
        assert isinstance(shipped, dict)
        data.update({key: shipped[key] for key in missing})
    return data


def check_costs_file(data: Mapping[str, object], source: str) -> str | None:
    """``check-config`` of a cost-model file: a one-line summary, or ``None`` if it is not one.

    A cost file is recognised by the keys only it has (``backend``, ``scan_cycles_per_entry``);
    it is then checked completely (:func:`costs_from_dict`).

    Raises:
        ConfigError: a recognised cost file with an unknown, missing or ill-typed key.
    """
    if not {"backend", "scan_cycles_per_entry"} & set(data):
        return None
    costs_from_dict(data, source)
    fitted = "calibrated" if "calibration" in data else "not calibrated"
    return (f"PostgreSQL cost model (version {data.get('version')}, {fitted}); an experiment "
            "uses it with options: {costs: FILE}")


def costs_from_dict(data: object, source: str | None = None) -> PgCosts:
    """Validate a parsed cost-model document and build the model.

    Raises:
        ConfigError: an unknown, missing or ill-typed key (``key`` is its dotted path, ``source``
            the file).
    """
    try:
        return _costs(data)
    except ConfigError as exc:
        if exc.source is not None or source is None:
            raise
        raise ConfigError(exc.key, exc.message, source) from None


def _costs(data: object) -> PgCosts:
    top = expect_section(data, "", _TOP_KEYS, optional=_OPTIONAL_TOP_KEYS)
    connection = expect_section(_or_shipped(top, "connection"), "connection", _CONNECTION_KEYS)
    loop = expect_section(_or_shipped(top, "pgbench_loop"), "pgbench_loop", _PGBENCH_LOOP_KEYS)
    working_set = expect_section(_or_shipped(top, "working_set"), "working_set",
                                 _WORKING_SET_KEYS)
    if "calibration" in top:
        _check_calibration(top["calibration"])
    backend = expect_section(top["backend"], "backend", _STATEMENT_KEYS)
    scan = expect_section(top["scan_cycles_per_entry"], "scan_cycles_per_entry", _SCAN_KEYS)
    footprint = expect_section(top["footprint"], "footprint", _FOOTPRINT_KEYS)
    return PgCosts(
        statements=StatementCosts(**{key: _cycles(join_key("backend", key), backend[key])
                                     for key in _STATEMENT_KEYS}),
        client_cycles=_cycles("client", top["client"]),
        scan=ScanCosts(**{key: _non_negative(join_key("scan_cycles_per_entry", key), scan[key])
                          for key in _SCAN_KEYS}),
        footprint_private_bytes=_quantity("footprint.private", footprint["private"],
                                          parse_size_bytes),
        footprint_l3_bytes=_quantity("footprint.l3", footprint["l3"], parse_size_bytes),
        mostly_idle_sleep_ns=_quantity("mostly_idle_sleep", top["mostly_idle_sleep"],
                                       parse_time_ns),
        connection=ConnectionCosts(**{key: _cycles(join_key("connection", key), connection[key])
                                      for key in _CONNECTION_KEYS}),
        pgbench_loop_per_connection_cycles=_cycles("pgbench_loop.per_connection",
                                                   loop["per_connection"]),
        working_set=WorkingSetCosts(**{key: _process_working_set(join_key("working_set", key),
                                                                 working_set[key])
                                       for key in _WORKING_SET_KEYS}),
    )


def _or_shipped(top: Mapping[str, object], key: str) -> object:
    """An optional section of the file, or the shipped file's when the file leaves it out."""
    if key in top:
        return top[key]
    shipped = expect_section(read_yaml(DEFAULT_COSTS_FILE), "", _TOP_KEYS,
                             optional=_OPTIONAL_TOP_KEYS)
    return shipped[key]


def _process_working_set(path: str, value: object) -> ProcessWorkingSet:
    section = expect_section(value, path, _PROCESS_WORKING_SET_KEYS)
    return ProcessWorkingSet(**{key: _quantity(join_key(path, key), section[key],
                                               parse_size_bytes)
                                for key in _PROCESS_WORKING_SET_KEYS})


def _check_calibration(value: object) -> None:
    """The ``calibration`` record: the command, datasets, objective and values of the fit."""
    record = expect_section(value, "calibration", _CALIBRATION_KEYS, optional=("sensitivity",))
    for key in ("command", "date"):
        if not isinstance(record[key], str) or not str(record[key]).strip():
            raise ConfigError(join_key("calibration", key),
                              f"must be a non-empty string, got {record[key]!r}")
    datasets = expect_list("calibration.datasets", record["datasets"])
    if not datasets or not all(isinstance(name, str) for name in datasets):
        raise ConfigError("calibration.datasets",
                          f"must list dataset names, got {record['datasets']!r}")
    _non_negative("calibration.objective", record["objective"])
    if expect_int("calibration.evaluations", record["evaluations"]) < 1:
        raise ConfigError("calibration.evaluations",
                          f"must be at least 1, got {record['evaluations']!r}")
    fitted = expect_mapping("calibration.fitted", record["fitted"])
    if not fitted:
        raise ConfigError("calibration.fitted", "must name at least one fitted key")
    if "sensitivity" in record:
        expect_list("calibration.sensitivity", record["sensitivity"])


def _cycles(path: str, value: object) -> float:
    """A count of cycles with its unit (``30000 cycles``); a bare number is refused."""
    example = "must be a non-negative number of cycles such as '30000 cycles'"
    if not (isinstance(value, str) and value.strip().endswith("cycles")):
        raise ConfigError(path, f"{example}, got {value!r}")
    try:
        # The unit parser counts cycles as time at a clock: at 1 GHz a cycle is a nanosecond.
        return parse_time_ns(value, clock_ghz=1.0)
    except ValueError:
        raise ConfigError(path, f"{example}, got {value!r}") from None


def _non_negative(path: str, value: object) -> float:
    number = expect_number(path, value)
    if not number >= 0:
        raise ConfigError(path, f"must not be negative, got {value!r}")
    return number


def _quantity(path: str, value: object, parser: Callable[[object], _T]) -> _T:
    try:
        return parser(value)
    except ValueError as exc:
        raise ConfigError(path, str(exc)) from None
