"""A machine file for the host: topology, caches and NUMA nodes read from Linux, latencies borrowed.

:func:`probe_host` reads what Linux publishes about the machine it runs on
(:func:`simulator.host.facts.host_facts`):

* ``/sys/devices/system/cpu/cpu*/topology/``: each online CPU's package (socket), core and SMT
  siblings (``physical_package_id``, ``core_id``, ``thread_siblings_list``);
* ``/sys/devices/system/cpu/cpu*/cache/index*/``: level, type, size, ways and the CPUs that
  share each cache (``shared_cpu_list``): the L1d, L2 and L3 geometry and the L3 domains;
* ``/sys/devices/system/node/node*/cpulist``: the NUMA nodes (memory home nodes) and the L3
  domains near each;
* ``/proc/cpuinfo``: the vendor, the model name and whether a hypervisor is present;
  ``cpufreq/cpuinfo_max_freq`` (else ``cpu MHz``, a guest's nominal figure) for the clock, unless
  it was measured (:mod:`simulator.host.clock`, ``--measure-clock``);
* ``/sys/devices/system/cpu/cpuidle/current_driver`` and, under KVM's guest halt polling (driver
  ``haltpoll``, Linux ``drivers/cpuidle/cpuidle-haltpoll.c``),
  ``/sys/module/haltpoll/parameters/guest_halt_poll_ns``: how an idle vCPU waits;
* ``uname``: the kernel's version, for whether its epoll passes a waker's synchronous hint on
  (``scheduler.epoll_sync_wakeup``: from Linux 6.13).

Linux publishes no latency. Those (cache hit cycles, cache-to-cache transfers, DRAM, the MLP and
scheduler costs) are taken from the closest shipped machine (same vendor, then the same kinds of
cache-to-cache distance, then the nearest core count), or from a named one; every such number
says so in the written file. A virtual machine's vCPUs are described as halting (see
:mod:`simulator.host.probe_idle`) rather than with a bare-metal machine's idle states. Left out:
turbo, a bare-metal host's own idle states (borrowed), heterogeneous cores (the first CPU's caches
stand for all) and offline CPUs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from simulator.config.files import atomic_path
from simulator.config.machine_file import machines_dir, shipped_machines
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.host.facts import HostFacts, HostLayout, host_facts
from simulator.host.probe_idle import MeasuredWakeup, guest_idle_lines

__all__ = ["closest_machine", "machine_file_text", "probe_host", "require_guest"]

PROTOCOLS = {"intel": "MESIF", "amd": "MOESI", "arm": "MESI"}
"""The coherence protocol family of each vendor (Intel's MESIF, AMD's MOESI); Arm's is
implementation-specific, MESI is the plain case."""


def _section(document: Mapping[str, object], key: str) -> Mapping[str, object]:
    value = document.get(key)
    if not isinstance(value, Mapping):
        raise ConfigError(key, f"a shipped machine file has no {key} section")
    return value


def _vendor_of(document: Mapping[str, object]) -> str:
    text = f"{document.get('name', '')} {document.get('description', '')}".lower()
    if "intel" in text or "xeon" in text:
        return "intel"
    if "amd" in text or "epyc" in text or "threadripper" in text:
        return "amd"
    if "graviton" in text or "neoverse" in text or "arm" in text:
        return "arm"
    return "unknown"


def closest_machine(facts: HostFacts) -> str:
    """The shipped machine whose latencies stand in for the host's.

    Same vendor first; then one that has every distance class the host needs (another L3 domain
    in a socket, another socket); then the nearest core count per socket (in ratio).
    """
    layout = facts.layout()
    best: tuple[float, str] | None = None
    for name in shipped_machines():
        document = read_yaml(machines_dir() / f"{name}.yaml")
        if not isinstance(document, Mapping):
            raise ConfigError(name, "a shipped machine file is not a mapping")
        topology, latency = _section(document, "topology"), _section(document, "latency")
        cost = 0.0 if _vendor_of(document) == facts.vendor else 100.0
        if layout.domains_per_socket > 1 and "cross_domain_hit" not in latency:
            cost += 50.0
        if layout.sockets > 1 and "remote_hit" not in latency:
            cost += 50.0
        cores = int(str(topology["domains_per_socket"])) * int(str(topology["cores_per_domain"]))
        cost += abs(math.log(cores / (layout.domains_per_socket * layout.cores_per_domain)))
        cost += 1.0 if bool(document.get("virtualized")) != facts.virtualized else 0.0
        if best is None or cost < best[0]:
            best = (cost, name)
    assert best is not None
    return best[1]


def _size_text(size_bytes: int) -> str:
    for unit, factor in (("MiB", 1024**2), ("KiB", 1024)):
        if size_bytes % factor == 0:
            return f"{size_bytes // factor} {unit}"
    return f"{size_bytes} B"


def _flow(value: object) -> str:
    """A YAML flow rendering of a small value from a machine file."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {_flow(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    if isinstance(value, str) and (":" in value or value.strip() != value):
        return f'"{value}"'
    return str(value).lower() if isinstance(value, bool) else str(value)


EPOLL_SYNC_SINCE = (6, 13)
"""The first Linux release whose epoll passes a waker's synchronous hint on (commit
900bbaae67e9, "epoll: Add synchronous wakeup support for ep_poll_callback")."""


def epoll_sync_line(kernel: str) -> str:
    """The machine file's ``scheduler.epoll_sync_wakeup`` line for a host's ``uname`` text."""
    match = re.match(r"Linux (\d+)\.(\d+)", kernel)
    if match is None:
        return ("  epoll_sync_wakeup: false   # ASSUMPTION: no Linux version in this host's "
                f"kernel name {_flow(kernel.split(' #')[0])}; true from Linux 6.13")
    version = (int(match[1]), int(match[2]))
    release = f"{version[0]}.{version[1]}"
    if version >= EPOLL_SYNC_SINCE:
        return (f"  epoll_sync_wakeup: true   # measured on this host: Linux {release}, whose "
                "epoll passes the socket's synchronous wake-up hint on (since 6.13)")
    return (f"  epoll_sync_wakeup: false   # measured on this host: Linux {release}, before 6.13, "
            "whose epoll wakes without the synchronous hint (true if this kernel carries the "
            "December 2024 stable backport of commit 900bbaae67e9)")


def machine_file_text(facts: HostFacts, like: str, name: str = "host",
                      wakeup: MeasuredWakeup | None = None,
                      clock_ghz: float | None = None,
                      extra_lines: Sequence[str] = ()) -> str:
    """The machine file of the host, latencies from the shipped machine ``like``, as YAML text.

    A guest's ``scheduler.ipi_exit`` comes from ``wakeup`` when it was measured, the clock from
    ``clock_ghz`` when it was (:mod:`simulator.host.clock`), else from Linux. ``extra_lines``
    end the file (a section measured elsewhere, such as a measurement's ``kernel_thread``).
    """
    layout = facts.layout()
    source = read_yaml(machines_dir() / f"{like}.yaml")
    if not isinstance(source, Mapping):
        raise ConfigError("like", f"{like} is not a machine file")
    caches, latency = _section(source, "caches"), _section(source, "latency")
    memory, mlp = _section(source, "memory"), _section(source, "mlp")
    scheduler, coherence = _section(source, "scheduler"), _section(source, "coherence")
    borrowed = f"from {like} (a shipped machine; not measured on this host)"
    host = "measured on this host"
    lines = [
        f"# Machine file written by `snapsim machine probe` for {facts.model_name}.",
        "# Topology, cache geometry and NUMA nodes are read from Linux (sysfs, /proc/cpuinfo)",
        "# on the host, the clock as its line says; Linux publishes no latency, so every",
        f"# latency, the MLP and the scheduler costs are those of the shipped machine {like},",
        "# said so on each line.",
        "# Replace them with measurements of this host where you have them (for example",
        "# core-to-core CAS ping-pong for local_hitm / remote_hitm, Intel MLC for DRAM).",
        f"name: {name}",
        f'description: "{facts.model_name}, probed ({layout.sockets} socket(s), '
        f'{layout.sockets * layout.domains_per_socket * layout.cores_per_domain} cores)"',
        f"virtualized: {str(facts.virtualized).lower()}   # {host}: the hypervisor cpu flag",
        _clock_line(layout, host, clock_ghz),
        "topology:",
        f"  sockets: {layout.sockets}   # {host}: physical packages",
        f"  domains_per_socket: {layout.domains_per_socket}   # {host}: distinct L3s per socket",
        f"  cores_per_domain: {layout.cores_per_domain}   # {host}",
        f"  threads_per_core: {layout.threads_per_core}   # {host}: SMT siblings",
        "coherence:",
        f"  protocol: {PROTOCOLS.get(facts.vendor, 'MESI')}   # the vendor's protocol family",
        f"  l3_inclusion: {coherence['l3_inclusion']}   # {borrowed}",
        f"  l3_replacement: {coherence.get('l3_replacement', 'lru')}   # {borrowed}",
        "caches:",
    ]
    for key, cache in (("l1d", layout.l1d), ("l2", layout.l2), ("l3", layout.l3)):
        level = _section(caches, key)
        lines.append(f"  {key}: {{size: {_size_text(cache.size_bytes)}, ways: {cache.ways}, "
                     f"latency: {level['latency']}}}   # size and ways {host}; latency "
                     f"{borrowed}")
    lines += ["memory:", "  home_nodes:"]
    for node in layout.node_domains:
        lines.append(f"    - {{near_domains: {_flow(list(node))}}}   # {host}: a NUMA node")
    lines += [
        f"  dram_latency: {_flow(memory['dram_latency'])}   # {borrowed}",
        f"  placement: {_flow(memory['placement'])}   # {borrowed}",
        f"latency:   # {borrowed}",
    ]
    needs = {"cross_domain": layout.domains_per_socket > 1, "remote": layout.sockets > 1}
    stand_ins = {"cross_domain": ("remote", "local"), "remote": ("cross_domain", "local")}
    for key, value in latency.items():
        distance = str(key).rsplit("_", 1)[0]
        if needs.get(distance, True):
            lines.append(f"  {key}: {_flow(value)}")
    for distance, needed in needs.items():
        if not needed or f"{distance}_hit" in latency:
            continue
        other = next(o for o in stand_ins[distance] if f"{o}_hit" in latency)
        for kind in ("hit", "hitm"):
            lines.append(f"  {distance}_{kind}: {_flow(latency[f'{other}_{kind}'])}   "
                         f"# ASSUMPTION: {like} has no such distance; its {other}_{kind}")
    lines.append(f"mlp: {_flow(dict(mlp))}   # {borrowed}")
    guest = layout.guest_idle is not None
    lines.append(f"scheduler:   # {borrowed}, but epoll_sync_wakeup (this host's kernel)"
                 + (" and ipi_exit (this host is a guest)" if guest else ""))
    lines += [f"  {key}: {_flow(value)}" for key, value in scheduler.items()
              if key != "epoll_sync_wakeup" and not (guest and key == "ipi_exit")]
    lines.append(epoll_sync_line(facts.kernel))
    if layout.guest_idle is not None:
        lines += guest_idle_lines(layout.guest_idle, wakeup)
    else:
        if "idle" in source:  # a bare-metal host's own idle states are not read yet
            lines.append(f"idle: {_flow(dict(_section(source, 'idle')))}   # {borrowed}")
    if "line_service" in source:
        lines.append(f"line_service: {_flow(dict(_section(source, 'line_service')))}   "
                     f"# {borrowed}")
    lines += extra_lines
    return "\n".join(lines) + "\n"


def require_guest(facts: HostFacts) -> None:
    """Refuse a wake-up measurement on a host whose idle CPUs do not halt into a hypervisor.

    Raises:
        ConfigError: the host is not a virtual machine (``--measure-wakeup``).
    """
    if facts.layout().guest_idle is None:
        raise ConfigError("--measure-wakeup", "this host is not a virtual machine: its idle "
                          "CPUs do not halt into a hypervisor, and it has no ipi_exit")


def probe_host(out: Path, like: str | None = None, root: Path = Path("/"),
               name: str = "host", wakeup: MeasuredWakeup | None = None,
               clock_ghz: float | None = None, extra_lines: Sequence[str] = ()) -> str:
    """Write the host's machine file to ``out`` and check it loads; return the machine borrowed.

    ``wakeup``: a guest's measured wake-up of an idle vCPU, written as its ``ipi_exit``;
    ``clock_ghz``: the measured clock, written instead of the one Linux gives; ``extra_lines``:
    sections to end the file with (:func:`machine_file_text`).

    Raises:
        ConfigError: the host cannot be read, ``like`` is not a shipped machine, a wake-up was
            measured on a host that is no guest, or the written file does not load (then it is
            removed).
    """
    from simulator.config.machine_file import load_machine

    facts = host_facts(root)
    facts.layout()  # a host that cannot be read is the first error
    if like is not None and like not in shipped_machines():
        raise ConfigError("--like", f"unknown machine {like!r} (choose from "
                          f"{', '.join(shipped_machines())})")
    if wakeup is not None:
        require_guest(facts)
    chosen = like or closest_machine(facts)
    text = machine_file_text(facts, chosen, name, wakeup, clock_ghz, extra_lines)
    try:
        with atomic_path(out) as tmp:
            tmp.write_text(text, encoding="utf-8")
            load_machine(tmp)
    except OSError as exc:  # a WriteError
        raise ConfigError("--out", f"cannot write {out}: {exc.strerror or exc}") from None
    return chosen


def _clock_line(layout: HostLayout, host: str, clock_ghz: float | None) -> str:
    """The machine file's clock: measured, else Linux's figure, said which."""
    linux = f"{layout.clock_mhz / 1000:.2f} GHz"
    if clock_ghz is None:
        return f"clock: {linux}   # {host}: cpufreq maximum, else cpu MHz"
    if not clock_ghz > 0:
        raise ConfigError("clock", f"a measured clock must be positive, got {clock_ghz}")
    return (f"clock: {clock_ghz:.2f} GHz   # {host}: a chain of dependent integer operations "
            f"(snapsim machine probe --measure-clock); Linux gives {linux}")
