"""The facts of the host a measurement ran on, as far as Linux lets them be read.

CPU model and flags (``/proc/cpuinfo``), topology (``/sys/devices/system/cpu``), kernel
(``uname``), frequency governor, the cpuidle driver and its states (a KVM guest's ``haltpoll``
driver and its ``guest_halt_poll_ns``: 0 means an idle vCPU halts at once), memory and the
process limits. A value that cannot be read is left out, not guessed.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

CPU = Path("/sys/devices/system/cpu")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _cpuinfo() -> dict[str, str]:
    facts: dict[str, str] = {}
    text = _read(Path("/proc/cpuinfo")) or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "flags", "vendor_id") and key not in facts:
            facts[key] = value.strip()
    return facts


def _topology() -> dict[str, int]:
    packages, cores = set(), set()
    logical = 0
    for entry in sorted(CPU.glob("cpu[0-9]*")):
        package = _read(entry / "topology" / "physical_package_id")
        core = _read(entry / "topology" / "core_id")
        if package is None or core is None:
            continue
        logical += 1
        packages.add(package)
        cores.add((package, core))
    if not logical:
        return {"logical_cpus": os.cpu_count() or 0}
    return {"logical_cpus": logical, "sockets": len(packages), "cores": len(cores),
            "threads_per_core": logical // max(len(cores), 1)}


def _idle_states() -> list[dict[str, object]]:
    states: list[dict[str, object]] = []
    for state in sorted((CPU / "cpu0" / "cpuidle").glob("state*")):
        name = _read(state / "name")
        latency = _read(state / "latency")
        if name is not None:
            states.append({"name": name,
                           "exit_latency_us": int(latency) if latency and latency.isdigit()
                           else latency})
    return states


def host_facts() -> dict[str, object]:
    """What is readable about this host, by name."""
    cpuinfo = _cpuinfo()
    flags = cpuinfo.get("flags", "").split()
    uname = platform.uname()
    facts: dict[str, object] = {
        "hostname": uname.node, "kernel": f"{uname.system} {uname.release} {uname.version}",
        "machine": uname.machine, "cpu_model": cpuinfo.get("model name"),
        "cpu_vendor": cpuinfo.get("vendor_id"), "virtualized": "hypervisor" in flags,
        **_topology(),
        "governor": _read(CPU / "cpu0" / "cpufreq" / "scaling_governor"),
        "cpuidle_driver": _read(CPU / "cpuidle" / "current_driver"),
        "cpuidle_governor": _read(CPU / "cpuidle" / "current_governor_ro")
        or _read(CPU / "cpuidle" / "current_governor"),
        "idle_states": _idle_states(),
        "guest_halt_poll_ns": _read(Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")),
        "damon_reclaim_enabled": _read(Path("/sys/module/damon_reclaim/parameters/enabled")),
        "pid_max": _read(Path("/proc/sys/kernel/pid_max")),
    }
    mem_total = _read(Path("/proc/meminfo"))
    if mem_total:
        first = mem_total.splitlines()[0].split()
        facts["memory_gib"] = round(int(first[1]) / 2**20, 1)
    return {key: value for key, value in facts.items() if value not in (None, "", [])}
