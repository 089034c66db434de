"""The global PostgreSQL software cost model (``configs/postgres-costs.yaml``).

One set of numbers for every machine, in cycles of the machine's clock: the non-snapshot work of
each statement kind, the pgbench client's work, instructions per scanned procArray entry, the
private memory footprint of a transaction and the mostly-idle clients' sleep. Loaded strictly:
unknown or missing keys and bad values are :class:`~simulator.errors.ConfigError` naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from models.procarray import ScanCosts
from models.workloads import StatementCosts
from simulator.errors import ConfigError
from simulator.machine_loader import read_yaml
from simulator.units import parse_size_bytes, parse_time_ns

DEFAULT_COSTS_FILE = Path(__file__).resolve().parent.parent / "configs" / "postgres-costs.yaml"


@dataclass(frozen=True, slots=True)
class PgCosts:
    """The whole cost model."""

    statements: StatementCosts
    client_cycles: float
    scan: ScanCosts
    footprint_private_bytes: int
    footprint_l3_bytes: int
    mostly_idle_sleep_ns: float


def load_costs(path: str | Path = DEFAULT_COSTS_FILE) -> PgCosts:
    """Read and validate a cost-model file."""
    source = str(path)
    data = read_yaml(Path(path))
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


def _mapping(value: object, key: str, source: str, keys: set[str]) -> Mapping[str, object]:
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


def _cycles(value: object, key: str, source: str) -> float:
    text = str(value).strip()
    if not text.endswith("cycles"):
        raise ConfigError(key, f"must be a number of cycles such as '30000 cycles', got {value!r}",
                          source)
    return _number(text.removesuffix("cycles").strip(), key, source)


def _number(value: object, key: str, source: str) -> float:
    try:
        number = float(str(value))
    except ValueError:
        raise ConfigError(key, f"must be a number, got {value!r}", source) from None
    if not number >= 0:
        raise ConfigError(key, f"must not be negative, got {value!r}", source)
    return number


def _size(value: object, key: str, source: str) -> int:
    try:
        return parse_size_bytes(value)
    except ValueError as exc:
        raise ConfigError(key, str(exc), source) from None


def _time(value: object, key: str, source: str) -> float:
    try:
        return parse_time_ns(value)
    except ValueError as exc:
        raise ConfigError(key, str(exc), source) from None
