"""The host's facts, read once: what a measurement records, what a machine file is made from."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simulator.config import configs_dir
from simulator.errors import ConfigError
from simulator.host.facts import host_facts
from simulator.host.procfs import kernel_text
from tests.simulator.host.test_probe import CPUINFO_INTEL, make_host

SHIPPED_METADATA = configs_dir() / "measurements" / "kvm-epyc-2vcpu" / "metadata.yaml"
UNAME_KEYS = ("hostname", "kernel", "machine")
"""Read from ``uname``, the running host's whatever the root."""


def copy_of_the_shipped_guest(root: Path) -> Path:
    """The sysfs and procfs of the 2-vCPU KVM guest the shipped measurement ran on."""
    cpuinfo = (CPUINFO_INTEL.replace("GenuineIntel", "AuthenticAMD")
               .replace("Intel(R) Xeon(R) Made-Up 1234", "AMD EPYC")
               .replace("flags\t\t: fpu sse2 ht", "flags\t\t: fpu sse2 ht hypervisor"))
    make_host(root, sockets=1, l3_per_socket=1, cores_per_l3=2, threads=1, cpuinfo=cpuinfo)
    cpu_dir = root / "sys/devices/system/cpu"
    for cpu in (0, 1):
        (cpu_dir / f"cpu{cpu}/topology/core_id").write_text(f"{cpu}\n")
    for name, value in (("current_driver", "haltpoll"), ("current_governor_ro", "haltpoll")):
        (cpu_dir / "cpuidle").mkdir(exist_ok=True)
        (cpu_dir / "cpuidle" / name).write_text(f"{value}\n")
    for index, (name, latency) in enumerate((("POLL", 0), ("haltpoll idle", 1))):
        state = cpu_dir / f"cpu0/cpuidle/state{index}"
        state.mkdir(parents=True)
        (state / "name").write_text(f"{name}\n")
        (state / "latency").write_text(f"{latency}\n")
    params = root / "sys/module/haltpoll/parameters"
    params.mkdir(parents=True)
    (params / "guest_halt_poll_ns").write_text("0\n")
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/pid_max").write_text("32768\n")
    (root / "proc/meminfo").write_text(f"MemTotal: {int(23.5 * 2**20)} kB\nMemFree: 1 kB\n")
    return root


def test_the_metadata_of_a_copied_guest_is_the_shipped_measurement_s(tmp_path: Path) -> None:
    """Keys, order and values of ``metadata.yaml``'s ``host`` (uname's are this host's)."""
    shipped = yaml.safe_load(SHIPPED_METADATA.read_text(encoding="utf-8"))["host"]
    metadata = host_facts(copy_of_the_shipped_guest(tmp_path)).as_metadata()
    assert list(metadata) == list(shipped)
    assert {key: value for key, value in metadata.items() if key not in UNAME_KEYS} == {
        key: value for key, value in shipped.items() if key not in UNAME_KEYS}


def test_the_layout_is_read_from_the_same_files(tmp_path: Path) -> None:
    facts = host_facts(copy_of_the_shipped_guest(tmp_path))
    layout = facts.layout()
    assert (layout.sockets, layout.cores_per_domain, layout.threads_per_core) == (
        facts.sockets, facts.cores, facts.threads_per_core) == (1, 2, 1)
    assert layout.guest_idle is not None
    assert (layout.guest_idle.driver, layout.guest_idle.halt_poll_ns) == ("haltpoll", 0)
    assert (facts.vendor, facts.model_name, facts.virtualized) == ("amd", "AMD EPYC", True)


def test_what_cannot_be_read_is_left_out_and_the_layout_says_why(tmp_path: Path) -> None:
    facts = host_facts(tmp_path)  # an empty tree
    metadata = facts.as_metadata()
    assert set(metadata) == {*UNAME_KEYS, "virtualized", "logical_cpus"}
    assert facts.model_name == "unknown CPU"
    with pytest.raises(ConfigError, match="online: cannot read: No such file"):
        facts.layout()


def test_a_kernel_file_is_read_stripped_or_refused(tmp_path: Path) -> None:
    (tmp_path / "value").write_text(" 42\n")
    assert kernel_text(tmp_path / "value") == "42"
    assert kernel_text(tmp_path / "missing") is None
    with pytest.raises(ConfigError, match=r"missing: cannot read: No such file or directory"):
        kernel_text(tmp_path / "missing", required=True)
