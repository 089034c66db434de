"""Load machine files (YAML) into :class:`~simulator.config.machine.MachineConfig`.

The loader is strict: it reads YAML with the safe loader, rejects duplicate and unknown keys,
checks the type of every value, converts units (every size, time and frequency must carry its
unit; cycles convert with the file's ``clock``) and names the full dotted key of anything wrong
in the :class:`~simulator.errors.ConfigError` it raises, with the file attached. The semantic
checks (positive sizes, ways that divide a cache, latencies required by the topology, ...) belong
to the dataclasses' ``__post_init__``; the loader only attaches the source file to their errors.
Experiment files and command-line overrides are not handled here.

Schema of a machine file (every key shown is required unless marked optional)::

    name, description, virtualized, clock, sources (optional: mapping str -> str)
    topology: {sockets, domains_per_socket, cores_per_domain, threads_per_core}
    coherence: {protocol, l3_inclusion, l3_replacement (optional: adaptive, lru or random;
                default lru)}
    caches: {l1d, l2, l3}, each {size, ways, latency}
    memory: {home_nodes: [{near_domains: [int, ...]}, ...], dram_latency: {near, far},
             placement: {policy: node, node: int} | {policy: interleave, granularity: size}}
    latency: {smt_sibling, atomic_local, local_hit, local_hitm, upgrade,
              cross_domain_hit, cross_domain_hitm, remote_hit, remote_hitm (these four optional;
              each a time or a mapping with any of both / requester / holder / neither),
              invalidation_per_extra_sharer (optional, default 0 ns)}
    mlp: {stream, indirect}
    scheduler: {time_slice, context_switch, wakeup, ipi_exit, smt_throughput,
                smt_throughput_high_ipc, policy (cfs or fifo),
                sleeper_credit, run_queues (per_cpu or global), wakeup_granularity,
                migration_cost, balance_interval, epoll_sync_wakeup (true or false),
                first_placement (spread, spread_all or lowest; all but the first three optional)}
    idle (optional: no idle states when absent): {wake (mwait or hlt), governor (optional: menu or
          shallowest), timer_horizon (optional), states: [{name, exit_latency, target_residency,
          wake_latency (optional: the exit latency), scope (optional: thread or core)}, ...]}
    line_service (optional: fifo when absent): {rule (fifo or home), owner_window (a fraction),
                  service: {read_modified, read_shared, ownership: {local, cross_domain, remote}},
                  transfer_overlap (a fraction of a transfer's latency, below 1; default 0),
                  local_batch (transfers to one socket in a row while others wait; default 1)
                  (all optional)}
    kernel_thread (optional: none when absent): {name, period (a time), cpu_share,
                   cpu_share_per_process (shares of one CPU)}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from simulator.config import configs_dir
from simulator.config.machine import (
    SERVICE_DISTANCES,
    SERVICE_KINDS,
    CacheConfig,
    CoherenceProtocol,
    HomeKeyedLatency,
    HomeNodeConfig,
    HomeRelation,
    IdleConfig,
    IdleStateConfig,
    KernelThreadConfig,
    L3Inclusion,
    L3Replacement,
    LatencyConfig,
    LineServiceConfig,
    MachineConfig,
    MemoryConfig,
    MlpConfig,
    SchedulerConfig,
    TopologyConfig,
)
from simulator.config.overrides import parse_override, set_dotted
from simulator.config.units import parse_frequency_ghz, parse_size_bytes, parse_time_ns
from simulator.config.values import (
    check_keys,
    describe_kind,
    expect_bool,
    expect_enum,
    expect_int,
    expect_list,
    expect_mapping,
    expect_number,
    expect_section,
    expect_str,
    join_key,
)
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError

__all__ = [
    "MACHINE_KEYS",
    "MACHINE_SET_FLAG",
    "load_machine",
    "machine_from_dict",
    "machines_dir",
    "names_a_file",
    "shipped_machines",
]

_T = TypeVar("_T")
_E = TypeVar("_E", bound=StrEnum)

_TOP_KEYS = ("name", "description", "virtualized", "clock", "sources", "topology", "coherence",
             "caches", "memory", "latency", "mlp", "scheduler", "idle", "line_service",
             "kernel_thread")
MACHINE_KEYS = tuple(key for key in _TOP_KEYS if key not in ("name", "description"))
"""Top-level keys found only in a machine file."""
MACHINE_SET_FLAG = "--machine-set"
"""The command-line flag of machine-file overrides (named in their errors)."""
_TOPOLOGY_KEYS = ("sockets", "domains_per_socket", "cores_per_domain", "threads_per_core")
_CACHE_LEVELS = ("l1d", "l2", "l3")
_CACHE_KEYS = ("size", "ways", "latency")
_SCALAR_LATENCIES = ("smt_sibling", "atomic_local", "local_hit", "local_hitm", "upgrade")
_KEYED_LATENCIES = ("cross_domain_hit", "cross_domain_hitm", "remote_hit", "remote_hitm")
_RELATIONS = tuple(relation.value for relation in HomeRelation)
_SCHEDULER_KEYS = ("time_slice", "context_switch", "wakeup", "ipi_exit", "smt_throughput",
                   "smt_throughput_high_ipc", "policy",
                   "sleeper_credit", "run_queues", "wakeup_granularity", "migration_cost",
                   "balance_interval", "epoll_sync_wakeup", "first_placement")
_IDLE_KEYS = ("wake", "governor", "timer_horizon", "states")
_KERNEL_THREAD_KEYS = ("name", "period", "cpu_share", "cpu_share_per_process")
_IDLE_STATE_KEYS = ("name", "exit_latency", "target_residency", "wake_latency", "scope")
_IDLE_SCOPES = ("thread", "core")
_UNITLESS = re.compile(r"^\s*[-+.\deE]*\s*$")
_PLACEMENT_KEYS = {"node": ("policy", "node"), "interleave": ("policy", "granularity")}


# --------------------------------------------------------------------------------------------
# Locating and reading files
# --------------------------------------------------------------------------------------------


def machines_dir() -> Path:
    """Directory of the shipped machine files (``configs/machines`` of the repository)."""
    return configs_dir() / "machines"


def shipped_machines() -> list[str]:
    """Names of the shipped machines (file stems of ``configs/machines/*.yaml``), sorted."""
    return sorted(path.stem for path in machines_dir().glob("*.yaml"))


def names_a_file(reference: str) -> bool:
    """Whether a machine reference names a file, not a shipped machine.

    It does when it has a ``/`` or a ``.yaml``/``.yml`` suffix (the rule of :func:`load_machine`).
    """
    return "/" in reference or reference.endswith((".yaml", ".yml"))


def load_machine(name_or_path: str | Path, overrides: Sequence[str] = ()) -> MachineConfig:
    """Load a shipped machine by name (``"gold5215-2s"``) or a machine file by path.

    A string without a directory separator and without a ``.yaml``/``.yml`` suffix is looked up
    among the shipped machines first, then as a file. ``overrides`` are ``--machine-set``
    items, ``key=value`` with a dotted key of the file and a YAML value (``scheduler.wakeup=5
    us``, ``idle.states=[]``), applied to the file's contents before they are checked.

    Raises:
        ConfigError: no such machine, the file is not a valid machine file, or an override is
            malformed or names an unknown key.
    """
    path = resolve_machine_path(name_or_path)
    data = read_yaml(path)
    if overrides:
        if not isinstance(data, Mapping):
            raise ConfigError("", f"the top level must be a mapping, got {describe_kind(data)}",
                              str(path))
        for item in overrides:
            parts, value = parse_override(item, MACHINE_SET_FLAG)
            if parts[0] == "name":
                raise ConfigError("name", "a machine's name cannot be overridden",
                                  MACHINE_SET_FLAG)
            data = set_dotted(data, parts, value, MACHINE_SET_FLAG)
        return _machine_from_document(data, f"{path} with {MACHINE_SET_FLAG}")
    return _machine_from_document(data, str(path))


def resolve_machine_path(name_or_path: str | Path) -> Path:
    """The file a shipped machine name or a machine file path stands for (as in load_machine).

    Raises:
        ConfigError: neither a shipped machine nor an existing path.
    """
    candidates: list[Path] = []
    text = str(name_or_path)
    looks_like_name = (
        isinstance(name_or_path, str)
        and "/" not in text
        and "\\" not in text
        and not text.endswith((".yaml", ".yml"))
    )
    if looks_like_name and text:
        candidates.append(machines_dir() / f"{text}.yaml")
    candidates.append(Path(name_or_path))
    for candidate in candidates:
        if candidate.exists():  # a directory is reported by read_yaml
            return candidate
    shipped = ", ".join(shipped_machines()) or "none"
    raise ConfigError("", f"no such machine file or shipped machine {text!r} (shipped: {shipped})")


# --------------------------------------------------------------------------------------------
# Building the dataclasses
# --------------------------------------------------------------------------------------------


def machine_from_dict(data: Mapping[str, object], source: str | None = None) -> MachineConfig:
    """Build a machine from the parsed contents of a machine file.

    Args:
        data: the YAML document as Python objects (see the module docstring for the schema).
        source: the file it came from, attached to every error. If it is a file of the shipped
            machines directory, ``name`` must equal its stem.

    Raises:
        ConfigError: an unknown, missing or ill-typed key, a bad unit, or a value the dataclasses
            reject; ``key`` is the full dotted path and ``source`` the file.
    """
    return _machine_from_document(data, source)


def _machine_from_document(data: object, source: str | None) -> MachineConfig:
    try:
        config = _build_machine(_top_level(data))
        _check_shipped_name(config, source)
    except ConfigError as exc:
        if exc.source is not None or source is None:
            raise
        raise ConfigError(exc.key, exc.message, source) from exc
    return config


def _top_level(data: object) -> Mapping[str, object]:
    if data is None:
        raise ConfigError("", "the document is empty (expected a mapping of machine keys)")
    if not isinstance(data, Mapping):
        raise ConfigError("", f"the top level must be a mapping, got {describe_kind(data)}")
    return data


def _build_machine(data: Mapping[str, object]) -> MachineConfig:
    top = expect_section(data, "", _TOP_KEYS, optional={"sources", "idle", "line_service",
                                                        "kernel_thread"})
    clock = _frequency("clock", top["clock"])
    protocol, inclusion, replacement = _coherence(top["coherence"])
    l1d, l2, l3 = _caches(top["caches"], clock)
    return MachineConfig(
        name=expect_str("name", top["name"]),
        description=expect_str("description", top["description"]),
        clock_ghz=clock,
        virtualized=expect_bool("virtualized", top["virtualized"]),
        topology=_topology(top["topology"]),
        protocol=protocol,
        l3_inclusion=inclusion,
        l3_replacement=replacement,
        l1d=l1d,
        l2=l2,
        l3=l3,
        memory=_memory(top["memory"], clock),
        latency=_latency(top["latency"], clock),
        mlp=_mlp(top["mlp"]),
        scheduler=_scheduler(top["scheduler"], clock),
        idle=_idle(top["idle"], clock) if "idle" in top else None,
        line_service=(_line_service(top["line_service"], clock) if "line_service" in top
                      else LineServiceConfig()),
        kernel_thread=(_kernel_thread(top["kernel_thread"], clock) if "kernel_thread" in top
                       else None),
        sources=_sources(top.get("sources", {})),
    )


def _check_shipped_name(config: MachineConfig, source: str | None) -> None:
    if source is None:
        return
    path = Path(source)
    if path.resolve().parent != machines_dir() or config.name == path.stem:
        return
    raise ConfigError(
        "name", f"must equal the file name {path.stem!r} in a shipped machine, got {config.name!r}"
    )


def _sources(value: object) -> dict[str, str]:
    data = expect_mapping("sources", value)
    return {str(key): expect_str(join_key("sources", str(key)), text) for key, text in data.items()}


def _topology(value: object) -> TopologyConfig:
    data = expect_section(value, "topology", _TOPOLOGY_KEYS)
    counts = {key: expect_int(f"topology.{key}", data[key]) for key in _TOPOLOGY_KEYS}
    return TopologyConfig(**counts)


def _coherence(value: object) -> tuple[CoherenceProtocol, L3Inclusion, L3Replacement]:
    data = expect_section(value, "coherence", ("protocol", "l3_inclusion", "l3_replacement"),
                          optional={"l3_replacement"})
    return (
        expect_enum("coherence.protocol", data["protocol"], CoherenceProtocol),
        expect_enum("coherence.l3_inclusion", data["l3_inclusion"], L3Inclusion),
        expect_enum("coherence.l3_replacement", data.get("l3_replacement", "lru"),
                    L3Replacement),
    )


def _caches(value: object, clock: float) -> tuple[CacheConfig, CacheConfig, CacheConfig]:
    data = expect_section(value, "caches", _CACHE_LEVELS)
    l1d, l2, l3 = (_cache(f"caches.{level}", data[level], clock) for level in _CACHE_LEVELS)
    return l1d, l2, l3


def _cache(path: str, value: object, clock: float) -> CacheConfig:
    data = expect_section(value, path, _CACHE_KEYS)
    return CacheConfig(
        size_bytes=_size(f"{path}.size", data["size"]),
        ways=expect_int(f"{path}.ways", data["ways"]),
        latency_ns=_time(f"{path}.latency", data["latency"], clock),
        key=path,
    )


def _memory(value: object, clock: float) -> MemoryConfig:
    data = expect_section(value, "memory", ("home_nodes", "dram_latency", "placement"))
    dram = expect_section(data["dram_latency"], "memory.dram_latency", ("near", "far"))
    policy, node, granularity = _placement(data["placement"])
    return MemoryConfig(
        home_nodes=_home_nodes(data["home_nodes"]),
        dram_near_ns=_time("memory.dram_latency.near", dram["near"], clock),
        dram_far_ns=_time("memory.dram_latency.far", dram["far"], clock),
        placement=policy,
        placement_node=node,
        interleave_bytes=granularity,
    )


def _home_nodes(value: object) -> tuple[HomeNodeConfig, ...]:
    nodes = []
    for index, item in enumerate(expect_list("memory.home_nodes", value)):
        path = f"memory.home_nodes[{index}]"
        data = expect_section(item, path, ("near_domains",))
        domains = _domains(f"{path}.near_domains", data["near_domains"])
        nodes.append(HomeNodeConfig(near_domains=domains))
    return tuple(nodes)


def _domains(path: str, value: object) -> tuple[int, ...]:
    domains: list[int] = []
    for index, item in enumerate(expect_list(path, value)):
        domain = expect_int(f"{path}[{index}]", item)
        if domain in domains:
            raise ConfigError(f"{path}[{index}]", f"domain {domain} is listed twice")
        domains.append(domain)
    return tuple(domains)


def _placement(value: object) -> tuple[str, int, int]:
    path = "memory.placement"
    data = expect_mapping(path, value)
    if "policy" not in data:
        raise ConfigError(f"{path}.policy", "missing required key")
    policy = expect_str(f"{path}.policy", data["policy"])
    keys = _PLACEMENT_KEYS.get(policy)
    if keys is None:
        choices = ", ".join(_PLACEMENT_KEYS)
        raise ConfigError(f"{path}.policy", f"unknown policy {policy!r} (choose one of: {choices})")
    check_keys(data, path, keys)
    if policy == "node":
        return policy, expect_int(f"{path}.node", data["node"]), 4096
    return policy, 0, _size(f"{path}.granularity", data["granularity"])


def _latency(value: object, clock: float) -> LatencyConfig:
    optional = (*_KEYED_LATENCIES, "invalidation_per_extra_sharer")
    data = expect_section(value, "latency", _SCALAR_LATENCIES + optional, optional=optional)

    def scalar(key: str) -> float:
        return _time(f"latency.{key}", data[key], clock)

    def keyed(key: str) -> HomeKeyedLatency | None:
        return _keyed(f"latency.{key}", data[key], clock) if key in data else None

    return LatencyConfig(
        smt_sibling_ns=scalar("smt_sibling"),
        atomic_local_ns=scalar("atomic_local"),
        local_hit_ns=scalar("local_hit"),
        local_hitm_ns=scalar("local_hitm"),
        upgrade_ns=scalar("upgrade"),
        cross_domain_hit=keyed("cross_domain_hit"),
        cross_domain_hitm=keyed("cross_domain_hitm"),
        remote_hit=keyed("remote_hit"),
        remote_hitm=keyed("remote_hitm"),
        invalidation_per_extra_sharer_ns=(
            _time("latency.invalidation_per_extra_sharer",
                  data["invalidation_per_extra_sharer"], clock)
            if "invalidation_per_extra_sharer" in data else 0.0),
    )


def _line_service(value: object, clock: float) -> LineServiceConfig:
    keys = ("rule", "owner_window", "service", "transfer_overlap", "local_batch")
    data = expect_section(value, "line_service", keys, optional=keys)
    settings: dict[str, Any] = {}
    if "rule" in data:
        settings["rule"] = expect_str("line_service.rule", data["rule"])
    if "owner_window" in data:
        settings["owner_window"] = expect_number("line_service.owner_window",
                                                 data["owner_window"])
    if "transfer_overlap" in data:
        settings["transfer_overlap"] = expect_number("line_service.transfer_overlap",
                                                     data["transfer_overlap"])
    if "local_batch" in data:
        settings["local_batch"] = expect_int("line_service.local_batch", data["local_batch"])
    if "service" in data:
        service = expect_section(data["service"], "line_service.service", SERVICE_KINDS,
                                 optional=SERVICE_KINDS)
        rows = []
        for kind in SERVICE_KINDS:
            path = f"line_service.service.{kind}"
            times = expect_section(service.get(kind, {}), path, SERVICE_DISTANCES,
                                   optional=SERVICE_DISTANCES)
            rows.append(tuple(_time(f"{path}.{distance}", times[distance], clock)
                              if distance in times else 0.0 for distance in SERVICE_DISTANCES))
        settings["service_ns"] = tuple(rows)
    return LineServiceConfig(**settings)


def _keyed(path: str, value: object, clock: float) -> HomeKeyedLatency:
    if not isinstance(value, Mapping):
        return HomeKeyedLatency.uniform(_time(path, value, clock))
    data = expect_section(value, path, _RELATIONS, optional=_RELATIONS)
    if not data:
        raise ConfigError(path, f"empty mapping (give a time or any of: {', '.join(_RELATIONS)})")
    return HomeKeyedLatency(**{key: _time(f"{path}.{key}", data[key], clock) for key in data})


def _mlp(value: object) -> MlpConfig:
    data = expect_section(value, "mlp", ("stream", "indirect"))
    return MlpConfig(
        stream=expect_number("mlp.stream", data["stream"]),
        indirect=expect_number("mlp.indirect", data["indirect"]),
    )


def _scheduler(value: object, clock: float) -> SchedulerConfig:
    data = expect_section(value, "scheduler", _SCHEDULER_KEYS,
                    optional={"ipi_exit", "smt_throughput", "smt_throughput_high_ipc",
                              "policy", "sleeper_credit",
                              "run_queues", "wakeup_granularity", "migration_cost",
                              "balance_interval", "epoll_sync_wakeup", "first_placement"})
    settings: dict[str, Any] = {
        f"{key}_ns": _time(f"scheduler.{key}", data[key], clock)
        for key in ("time_slice", "context_switch", "wakeup", "ipi_exit", "sleeper_credit",
                    "wakeup_granularity", "migration_cost", "balance_interval")
        if key in data}
    for key in ("smt_throughput", "smt_throughput_high_ipc"):
        if key in data:
            settings[key] = expect_number(f"scheduler.{key}", data[key])
    if "epoll_sync_wakeup" in data:
        settings["epoll_sync_wakeup"] = expect_bool("scheduler.epoll_sync_wakeup",
                                                    data["epoll_sync_wakeup"])
    for key in ("policy", "run_queues", "first_placement"):  # checked by SchedulerConfig
        if key in data:
            settings[key] = expect_str(f"scheduler.{key}", data[key])
    return SchedulerConfig(**settings)


def _idle(value: object, clock: float) -> IdleConfig:
    data = expect_section(value, "idle", _IDLE_KEYS, optional={"governor", "timer_horizon"})
    states = []
    for index, item in enumerate(expect_list("idle.states", data["states"])):
        key = f"idle.states[{index}]"
        entry = expect_section(item, key, _IDLE_STATE_KEYS, optional={"wake_latency", "scope"})
        exit_ns = _time(f"{key}.exit_latency", entry["exit_latency"], clock)
        scope = expect_str(f"{key}.scope", entry.get("scope", "thread"))
        if scope not in _IDLE_SCOPES:
            raise ConfigError(f"{key}.scope", f"unknown value {scope!r} (choose one of: "
                                              f"{', '.join(_IDLE_SCOPES)})")
        states.append(IdleStateConfig(
            name=expect_str(f"{key}.name", entry["name"]),
            exit_latency_ns=exit_ns,
            target_residency_ns=_time(f"{key}.target_residency", entry["target_residency"],
                                      clock),
            wake_latency_ns=(_time(f"{key}.wake_latency", entry["wake_latency"], clock)
                             if "wake_latency" in entry else exit_ns),
            core_scope=scope == "core"))
    settings: dict[str, Any] = {"wake": expect_str("idle.wake", data["wake"]),
                                "states": tuple(states)}
    if "governor" in data:
        settings["governor"] = expect_str("idle.governor", data["governor"])
    if "timer_horizon" in data:
        settings["timer_horizon_ns"] = _time("idle.timer_horizon", data["timer_horizon"], clock)
    return IdleConfig(**settings)


def _kernel_thread(value: object, clock: float) -> KernelThreadConfig:
    data = expect_section(value, "kernel_thread", _KERNEL_THREAD_KEYS)
    return KernelThreadConfig(
        name=expect_str("kernel_thread.name", data["name"]),
        period_ns=_time("kernel_thread.period", data["period"], clock),
        cpu_share=expect_number("kernel_thread.cpu_share", data["cpu_share"]),
        cpu_share_per_process=expect_number("kernel_thread.cpu_share_per_process",
                                            data["cpu_share_per_process"]))


# --------------------------------------------------------------------------------------------
# Checked access to values
# --------------------------------------------------------------------------------------------


def _parse(path: str, value: object, parser: Callable[[object], _T], example: str) -> _T:
    """Apply a unit parser to a quantity that must carry its unit (``example``: quoted examples).

    Bare numbers are rejected: ``latency: 14`` could mean nanoseconds or cycles. The parser's
    ``ValueError`` becomes a :class:`ConfigError` at ``path``.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ConfigError(path, f"needs a unit (e.g. {example}), got {describe_kind(value)}")
    if isinstance(value, str) and _UNITLESS.match(value):
        raise ConfigError(path, f"needs a unit (e.g. {example}), got {describe_kind(value)}")
    try:
        return parser(value)
    except ValueError as exc:
        raise ConfigError(path, str(exc)) from exc


def _size(path: str, value: object) -> int:
    return _parse(path, value, parse_size_bytes, "'32 KiB'")


def _frequency(path: str, value: object) -> float:
    return _parse(path, value, parse_frequency_ghz, "'2.5 GHz'")


def _time(path: str, value: object, clock: float) -> float:
    return _parse(path, value, lambda raw: parse_time_ns(raw, clock), "'48 ns' or '14 cycles'")
