"""The global PostgreSQL software cost model (``configs/postgres-costs.yaml``).

One set of numbers for every machine, in cycles of the machine's clock: the non-snapshot work of
each statement kind, the pgbench client's work, instructions per scanned procArray entry, the
private memory footprint of a transaction and the mostly-idle clients' sleep. Loaded strictly:
unknown or missing keys and bad values are :class:`~simulator.errors.ConfigError` naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from models.procarray import ScanCosts
from models.workloads import StatementCosts
from simulator.config import configs_dir
from simulator.config.units import parse_size_bytes, parse_time_ns
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError

DEFAULT_COSTS_FILE = configs_dir() / "postgres-costs.yaml"


@dataclass(frozen=True, slots=True)
class PgCosts:
    """The whole cost model."""

    statements: StatementCosts
    client_cycles: float
    scan: ScanCosts
    footprint_private_bytes: int
    footprint_l3_bytes: int
    mostly_idle_sleep_ns: float

    def scaled(self, work_scale: float) -> PgCosts:
        """The same model with the base per-transaction work multiplied by ``work_scale``.

        The base work is the backend's non-snapshot cycles of every statement kind and the
        pgbench client's cycles (what ``--single-client-tps`` rescales, SPEC §3); scan cycles
        per entry, footprints and the machine's scheduling costs are unchanged.
        """
        if work_scale == 1.0:
            return self
        statements = StatementCosts(*(value * work_scale for value in (
            self.statements.select_only, self.statements.select1, self.statements.tpcb,
            self.statements.statement_in_batch)))
        return replace(self, statements=statements, client_cycles=self.client_cycles * work_scale)


def load_costs(path: str | Path = DEFAULT_COSTS_FILE) -> PgCosts:
    """Read and validate a cost-model file."""
    return costs_from_dict(read_yaml(Path(path)), str(path))


def read_costs_document(path: str | Path = DEFAULT_COSTS_FILE) -> dict[str, object]:
    """The parsed cost-model file as plain YAML data (validated)."""
    data = read_yaml(Path(path))
    costs_from_dict(data, str(path))
    assert isinstance(data, dict)
    return data


def costs_from_dict(data: object, source: str | None = None) -> PgCosts:
    """Validate a parsed cost-model document and build the model.

    Raises:
        ConfigError: an unknown, missing or ill-typed key (``key`` is its dotted path).
    """
    top = _mapping(data, "", source, {"version", "backend", "client", "scan_cycles_per_entry",
                                      "footprint", "mostly_idle_sleep"})
    backend = _mapping(top["backend"], "backend", source,
                       {"select_only", "select1", "tpcb", "statement_in_batch"})
    scan = _mapping(top["scan_cycles_per_entry"], "scan_cycles_per_entry", source,
                    {"pg91", "pre14", "dense"})
    footprint = _mapping(top["footprint"], "footprint", source, {"private", "l3"})
    try:
        return PgCosts(
            statements=StatementCosts(**{k.replace("-", "_"): _cycles(v, f"backend.{k}", source)
                                         for k, v in backend.items()}),
            client_cycles=_cycles(top["client"], "client", source),
            scan=ScanCosts(**{k: _number(v, f"scan_cycles_per_entry.{k}", source)
                              for k, v in scan.items()}),
            footprint_private_bytes=_size(footprint["private"], "footprint.private", source),
            footprint_l3_bytes=_size(footprint["l3"], "footprint.l3", source),
            mostly_idle_sleep_ns=_time(top["mostly_idle_sleep"], "mostly_idle_sleep", source),
        )
    except ValueError as exc:  # pragma: no cover - every parser raises ConfigError itself
        raise ConfigError("", str(exc), source) from None


def _mapping(value: object, key: str, source: str | None, keys: set[str]) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise ConfigError(key, "must be a mapping", source)
    unknown = sorted(set(value) - keys)
    if unknown:
        raise ConfigError(f"{key}.{unknown[0]}" if key else unknown[0],
                          f"unknown key (expected one of: {', '.join(sorted(keys))})", source)
    missing = sorted(keys - set(value))
    if missing:
        raise ConfigError(f"{key}.{missing[0]}" if key else missing[0], "is required", source)
    return value


def _cycles(value: object, key: str, source: str | None) -> float:
    text = str(value).strip()
    if not text.endswith("cycles"):
        raise ConfigError(key, f"must be a number of cycles such as '30000 cycles', got {value!r}",
                          source)
    return _number(text.removesuffix("cycles").strip(), key, source)


def _number(value: object, key: str, source: str | None) -> float:
    try:
        number = float(str(value))
    except ValueError:
        raise ConfigError(key, f"must be a number, got {value!r}", source) from None
    if not number >= 0:
        raise ConfigError(key, f"must not be negative, got {value!r}", source)
    return number


def _size(value: object, key: str, source: str | None) -> int:
    try:
        return parse_size_bytes(value)
    except ValueError as exc:
        raise ConfigError(key, str(exc), source) from None


def _time(value: object, key: str, source: str | None) -> float:
    try:
        return parse_time_ns(value)
    except ValueError as exc:
        raise ConfigError(key, str(exc), source) from None
