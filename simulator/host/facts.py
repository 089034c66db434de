"""The facts of the host, read once from Linux: one record for a measurement and for the probe.

:func:`host_facts` reads what Linux publishes about the machine it runs on (below a root, ``/``
on a real host, a copied tree in tests):

* ``uname``: host name, kernel and machine;
* ``/proc/cpuinfo``: the CPU model and vendor, whether a hypervisor is present, and ``cpu MHz``;
* ``/sys/devices/system/cpu/cpu*/topology/``: each CPU's package (socket), core and SMT siblings
  (``physical_package_id``, ``core_id``, ``thread_siblings_list``), and the online CPUs;
* ``/sys/devices/system/cpu/cpu*/cache/index*/``: level, type, size, ways and the CPUs that share
  each cache (``shared_cpu_list``); ``/sys/devices/system/node/node*/cpulist``: the NUMA nodes;
* the frequency governor and ``cpuinfo_max_freq``, the cpuidle driver, governor and states (a KVM
  guest's ``haltpoll`` driver and its ``guest_halt_poll_ns``: 0 means an idle vCPU halts at once),
  DAMON_RECLAIM, ``kernel.pid_max`` and the memory (``/proc/meminfo``).

:meth:`HostFacts.as_metadata` is what ``snapsim measure`` records in ``metadata.yaml``: a value
that cannot be read is left out, not guessed. :meth:`HostFacts.layout` is what a machine file is
written from (:mod:`simulator.host.probe`): it needs a regular host (sockets of equal L3 domains
of equal cores, every cache level described, a clock), and says why when the host is not.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path

from simulator.errors import ConfigError
from simulator.host.probe_idle import GuestIdle, guest_idle
from simulator.host.procfs import kernel_text, meminfo_bytes

__all__ = ["Cache", "HostFacts", "HostLayout", "IdleState", "host_facts"]

VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}
"""The vendor family of each ``vendor_id``; an Arm CPU has none (it names a ``CPU implementer``)."""


@dataclass(frozen=True, slots=True)
class Cache:
    """One cache level as sysfs describes it (per instance)."""

    size_bytes: int
    ways: int


@dataclass(frozen=True, slots=True)
class IdleState:
    """One cpuidle state of the first CPU as sysfs names it."""

    name: str
    exit_latency_us: int | str | None
    """Its ``latency`` (µs) as a number when it is one, else the text (``None``: unreadable)."""


@dataclass(frozen=True, slots=True)
class HostLayout:
    """The host as a machine file describes it: its regular layout, caches, nodes and clock."""

    clock_mhz: float
    """``cpufreq/cpuinfo_max_freq``, else ``/proc/cpuinfo``'s ``cpu MHz`` (a guest's nominal)."""
    sockets: int
    domains_per_socket: int
    cores_per_domain: int
    threads_per_core: int
    l1d: Cache
    l2: Cache
    l3: Cache
    node_domains: tuple[tuple[int, ...], ...]
    """Per NUMA node, the L3 domains whose CPUs it holds."""
    guest_idle: GuestIdle | None = None
    """How an idle vCPU waits (the cpuidle driver and its halt polling); None on bare metal."""


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What the host publishes, each fact ``None`` (or empty) when it cannot be read."""

    hostname: str
    kernel: str
    """``uname``'s system, release and version."""
    machine: str
    """``uname``'s machine (``x86_64``)."""
    cpu_model: str | None
    """``/proc/cpuinfo``'s ``model name``."""
    cpu_vendor: str | None
    """``/proc/cpuinfo``'s ``vendor_id`` (``GenuineIntel``)."""
    vendor: str
    """The vendor family: ``intel``, ``amd``, ``arm`` or ``unknown``."""
    virtualized: bool
    """The ``hypervisor`` CPU flag."""
    logical_cpus: int
    sockets: int | None
    cores: int | None
    threads_per_core: int | None
    """The CPUs whose topology sysfs gives, their packages, cores and CPUs per core."""
    governor: str | None
    cpuidle_driver: str | None
    cpuidle_governor: str | None
    idle_states: tuple[IdleState, ...]
    guest_halt_poll_ns: str | None
    damon_reclaim_enabled: str | None
    pid_max: str | None
    memory_gib: float | None
    layout_read: HostLayout | ConfigError
    """The layout, or why it could not be read (:meth:`layout`)."""

    @property
    def model_name(self) -> str:
        """The CPU model, ``unknown CPU`` when Linux does not say."""
        return self.cpu_model or "unknown CPU"

    def layout(self) -> HostLayout:
        """The host's layout for a machine file.

        Raises:
            ConfigError: a file is missing or unreadable, or the topology is not regular
                (sockets with different core counts, an L3 that spans sockets, a cache level
                missing, no clock).
        """
        if isinstance(self.layout_read, ConfigError):
            error = self.layout_read
            raise ConfigError(error.key, error.message, error.source)
        return self.layout_read

    def as_metadata(self) -> dict[str, object]:
        """The facts ``snapsim measure`` records (``metadata.yaml``'s ``host``), by name."""
        topology: dict[str, object] = {"logical_cpus": self.logical_cpus}
        if self.sockets is not None:
            topology.update(sockets=self.sockets, cores=self.cores,
                            threads_per_core=self.threads_per_core)
        facts: dict[str, object] = {
            "hostname": self.hostname, "kernel": self.kernel, "machine": self.machine,
            "cpu_model": self.cpu_model, "cpu_vendor": self.cpu_vendor,
            "virtualized": self.virtualized, **topology,
            "governor": self.governor, "cpuidle_driver": self.cpuidle_driver,
            "cpuidle_governor": self.cpuidle_governor,
            "idle_states": [{"name": state.name, "exit_latency_us": state.exit_latency_us}
                            for state in self.idle_states],
            "guest_halt_poll_ns": self.guest_halt_poll_ns,
            "damon_reclaim_enabled": self.damon_reclaim_enabled, "pid_max": self.pid_max,
            "memory_gib": self.memory_gib,
        }
        return {key: value for key, value in facts.items() if value not in (None, "", [])}


@dataclass(frozen=True, slots=True)
class _CpuInfo:
    """The fields of ``/proc/cpuinfo`` used here."""

    first: dict[str, str]
    """Each field of the first CPU listed that has it."""
    mhz: str | None
    """``cpu MHz`` of the last CPU listed."""


@dataclass(frozen=True, slots=True)
class _Topology:
    """One CPU's ``topology/`` files (``None``: unreadable)."""

    package: str | None
    core_id: str | None
    siblings: str | None


def _cpuinfo(text: str) -> _CpuInfo:
    first: dict[str, str] = {}
    mhz = None
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if not colon:
            continue
        key, value = key.strip(), value.strip()
        first.setdefault(key, value)
        if key == "cpu MHz":
            mhz = value
    return _CpuInfo(first, mhz)


def _cpu_list(text: str) -> list[int]:
    """``0-3,8,10-11`` as a list of CPU numbers."""
    cpus: list[int] = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def _size_bytes(text: str) -> int:
    match = re.fullmatch(r"(\d+)([KMG]?)", text)
    if match is None:
        raise ConfigError("cache size", f"unreadable size {text!r}")
    return int(match.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[match.group(2)]


def _topologies(cpu_dir: Path) -> dict[int, _Topology]:
    """Every CPU directory's topology files, by CPU number."""
    found: dict[int, _Topology] = {}
    for entry in sorted(cpu_dir.glob("cpu[0-9]*")):
        if not entry.name[3:].isdigit():
            continue
        topology = entry / "topology"
        found[int(entry.name[3:])] = _Topology(
            kernel_text(topology / "physical_package_id"), kernel_text(topology / "core_id"),
            kernel_text(topology / "thread_siblings_list"))
    return found


def _counts(cpus: dict[int, _Topology]) -> tuple[int, int | None, int | None, int | None]:
    """Logical CPUs, packages, cores and CPUs per core of the CPUs whose topology is readable."""
    packages, cores = set(), set()
    logical = 0
    for cpu in cpus.values():
        if cpu.package is None or cpu.core_id is None:
            continue
        logical += 1
        packages.add(cpu.package)
        cores.add((cpu.package, cpu.core_id))
    if not logical:
        return os.cpu_count() or 0, None, None, None
    return logical, len(packages), len(cores), logical // max(len(cores), 1)


def _known(text: str | None, path: Path) -> str:
    """A file's text read before, else the error of reading it (read again to say why)."""
    return text if text is not None else kernel_text(path, required=True)


def _layout(root: Path, cpus: dict[int, _Topology], cpuinfo_text: str | None,
            cpuinfo: _CpuInfo, virtualized: bool) -> HostLayout:
    """The regular layout below ``root``, from the topology and cpuinfo already read.

    Raises:
        ConfigError: as :meth:`HostFacts.layout`.
    """
    cpu_dir = root / "sys/devices/system/cpu"
    online = _cpu_list(kernel_text(cpu_dir / "online", required=True))
    package: dict[int, int] = {}
    core: dict[int, tuple[int, int]] = {}
    for cpu in online:
        read = cpus.get(cpu, _Topology(None, None, None))
        topology = cpu_dir / f"cpu{cpu}" / "topology"
        package[cpu] = int(_known(read.package, topology / "physical_package_id"))
        siblings = _cpu_list(_known(read.siblings, topology / "thread_siblings_list"))
        core[cpu] = (package[cpu], min(siblings))
    caches: dict[int, Cache] = {}
    l3_groups: set[tuple[int, ...]] = set()
    first = online[0]
    for index in sorted((cpu_dir / f"cpu{first}" / "cache").glob("index*")):
        kind = kernel_text(index / "type", required=True)
        if kind == "Instruction":
            continue
        level = int(kernel_text(index / "level", required=True))
        caches[level] = Cache(_size_bytes(kernel_text(index / "size", required=True)),
                              int(kernel_text(index / "ways_of_associativity", required=True)))
    for cpu in online:
        for index in (cpu_dir / f"cpu{cpu}" / "cache").glob("index*"):
            if kernel_text(index / "level", required=True) == "3":
                l3_groups.add(tuple(_cpu_list(kernel_text(index / "shared_cpu_list",
                                                          required=True))))
    missing = [f"L{level}" for level in (1, 2, 3) if level not in caches]
    if missing:
        raise ConfigError("caches", f"sysfs describes no {', '.join(missing)} cache for CPU "
                          f"{first}")
    sockets = sorted(set(package.values()))
    cores_of = {s: {c for cpu, c in core.items() if package[cpu] == s} for s in sockets}
    counts = {len(cores) for cores in cores_of.values()}
    if len(counts) != 1:
        raise ConfigError("topology", f"sockets with different core counts: {sorted(counts)}")
    threads = {sum(1 for other in online if core[other] == core[cpu]) for cpu in online}
    if len(threads) != 1:
        raise ConfigError("topology", f"cores with different thread counts: {sorted(threads)}")
    domains = sorted(l3_groups)
    domain_of = {cpu: index for index, group in enumerate(domains) for cpu in group}
    for group in domains:
        if len({package[cpu] for cpu in group if cpu in package}) != 1:
            raise ConfigError("topology", f"an L3 shared by CPUs {list(group)} spans sockets")
    per_socket = len(domains) // len(sockets)
    cores_per_socket = counts.pop()
    if per_socket < 1 or len(domains) % len(sockets) or cores_per_socket % per_socket:
        raise ConfigError("topology", f"{len(domains)} L3 domains do not divide evenly over "
                          f"{len(sockets)} socket(s) of {cores_per_socket} cores")
    nodes: list[tuple[int, ...]] = []
    for node in sorted((root / "sys/devices/system/node").glob("node[0-9]*"),
                       key=lambda path: int(path.name.removeprefix("node"))):
        node_cpus = [cpu for cpu in _cpu_list(kernel_text(node / "cpulist", required=True))
                     if cpu in domain_of]
        if node_cpus:
            nodes.append(tuple(sorted({domain_of[cpu] for cpu in node_cpus})))
    if not nodes:
        nodes = [tuple(range(len(domains)))]
    _known(cpuinfo_text, root / "proc/cpuinfo")
    max_freq = cpu_dir / f"cpu{first}" / "cpufreq" / "cpuinfo_max_freq"
    clock_mhz = (int(kernel_text(max_freq, required=True)) / 1000 if max_freq.exists()
                 else float(cpuinfo.mhz or 0))
    if not clock_mhz > 0:
        raise ConfigError("clock", "neither cpufreq nor /proc/cpuinfo gives a clock")
    return HostLayout(
        clock_mhz=clock_mhz, sockets=len(sockets), domains_per_socket=per_socket,
        cores_per_domain=cores_per_socket // per_socket, threads_per_core=threads.pop(),
        l1d=caches[1], l2=caches[2], l3=caches[3], node_domains=tuple(nodes),
        guest_idle=guest_idle(root, first) if virtualized else None)


def _idle_states(cpuidle: Path) -> tuple[IdleState, ...]:
    states: list[IdleState] = []
    for state in sorted(cpuidle.glob("state*")):
        name = kernel_text(state / "name")
        latency = kernel_text(state / "latency")
        if name is not None:
            states.append(IdleState(name, int(latency) if latency and latency.isdigit()
                                    else latency))
    return tuple(states)


def _memory_gib(proc: Path) -> float | None:
    try:
        total = meminfo_bytes("MemTotal", proc)
    except OSError:
        return None
    return round(total / 2**30, 1) if total else None


def host_facts(root: Path = Path("/")) -> HostFacts:
    """Read the host's facts below ``root`` (``/`` on a real host; a copied tree in tests).

    Never raises for the host's sake: an unreadable fact is ``None``, and a layout that cannot be
    read is kept as its error (:meth:`HostFacts.layout`). ``uname`` is this host's.
    """
    cpu_dir = root / "sys/devices/system/cpu"
    cpuinfo_text = kernel_text(root / "proc/cpuinfo")
    cpuinfo = _cpuinfo(cpuinfo_text or "")
    vendor_id = cpuinfo.first.get("vendor_id")
    vendor = VENDORS.get(vendor_id or "", "arm" if "CPU implementer" in cpuinfo.first else "")
    virtualized = "hypervisor" in cpuinfo.first.get("flags", "").split()
    cpus = _topologies(cpu_dir)
    logical, sockets, cores, threads = _counts(cpus)
    layout: HostLayout | ConfigError
    try:
        layout = _layout(root, cpus, cpuinfo_text, cpuinfo, virtualized)
    except ConfigError as exc:
        layout = exc
    uname = platform.uname()
    cpuidle = cpu_dir / "cpuidle"
    return HostFacts(
        hostname=uname.node, kernel=f"{uname.system} {uname.release} {uname.version}",
        machine=uname.machine, cpu_model=cpuinfo.first.get("model name"), cpu_vendor=vendor_id,
        vendor=vendor or "unknown", virtualized=virtualized, logical_cpus=logical,
        sockets=sockets, cores=cores, threads_per_core=threads,
        governor=kernel_text(cpu_dir / "cpu0" / "cpufreq" / "scaling_governor"),
        cpuidle_driver=kernel_text(cpuidle / "current_driver"),
        cpuidle_governor=kernel_text(cpuidle / "current_governor_ro")
        or kernel_text(cpuidle / "current_governor"),
        idle_states=_idle_states(cpu_dir / "cpu0" / "cpuidle"),
        guest_halt_poll_ns=kernel_text(root / "sys/module/haltpoll/parameters/guest_halt_poll_ns"),
        damon_reclaim_enabled=kernel_text(root / "sys/module/damon_reclaim/parameters/enabled"),
        pid_max=kernel_text(root / "proc/sys/kernel/pid_max"),
        memory_gib=_memory_gib(root / "proc"),
        layout_read=layout)
