"""``snapsim machine probe``: a machine file from a host's sysfs, checked on a made-up two-socket
host and on the machine the tests run on."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.host.facts import host_facts
from simulator.host.probe import closest_machine, epoll_sync_line, probe_host

CPUINFO_INTEL = """\
processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Made-Up 1234
cpu MHz\t\t: 2100.000
flags\t\t: fpu sse2 ht
"""


def make_host(root: Path, *, sockets: int = 2, l3_per_socket: int = 2, cores_per_l3: int = 2,
              threads: int = 2, cpuinfo: str = CPUINFO_INTEL) -> Path:
    """A sysfs tree: CPUs numbered socket by socket, core by core, SMT siblings adjacent."""
    cpu_dir = root / "sys/devices/system/cpu"
    n_cpus = sockets * l3_per_socket * cores_per_l3 * threads
    cpu_dir.mkdir(parents=True)
    (cpu_dir / "online").write_text(f"0-{n_cpus - 1}\n")
    per_socket = n_cpus // sockets
    per_l3 = cores_per_l3 * threads
    for cpu in range(n_cpus):
        socket, core_first = cpu // per_socket, cpu - cpu % threads
        topology = cpu_dir / f"cpu{cpu}/topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{socket}\n")
        (topology / "thread_siblings_list").write_text(f"{core_first}-{core_first + threads - 1}\n")
        l3_first = cpu - cpu % per_l3
        for index, (level, kind, size, ways, shared) in enumerate([
                (1, "Data", "48K", 12, f"{core_first}-{core_first + threads - 1}"),
                (1, "Instruction", "32K", 8, f"{core_first}-{core_first + threads - 1}"),
                (2, "Unified", "2048K", 16, f"{core_first}-{core_first + threads - 1}"),
                (3, "Unified", "16M", 16, f"{l3_first}-{l3_first + per_l3 - 1}")]):
            cache = cpu_dir / f"cpu{cpu}/cache/index{index}"
            cache.mkdir(parents=True)
            for name, value in (("level", level), ("type", kind), ("size", size),
                                ("ways_of_associativity", ways), ("shared_cpu_list", shared)):
                (cache / name).write_text(f"{value}\n")
    for socket in range(sockets):
        node = root / f"sys/devices/system/node/node{socket}"
        node.mkdir(parents=True)
        (node / "cpulist").write_text(f"{socket * per_socket}-{(socket + 1) * per_socket - 1}\n")
    (root / "proc").mkdir()
    (root / "proc/cpuinfo").write_text(cpuinfo)
    return root


def test_the_topology_caches_and_nodes_come_from_sysfs(tmp_path: Path) -> None:
    facts = host_facts(make_host(tmp_path))
    layout = facts.layout()
    assert (layout.sockets, layout.domains_per_socket, layout.cores_per_domain,
            layout.threads_per_core) == (2, 2, 2, 2)
    assert (layout.l1d.size_bytes, layout.l1d.ways) == (48 * 1024, 12)  # not the L1i
    assert (layout.l2.size_bytes, layout.l3.size_bytes, layout.l3.ways) == (2 << 20, 16 << 20, 16)
    assert layout.node_domains == ((0, 1), (2, 3))
    assert (facts.vendor, layout.clock_mhz, facts.virtualized) == ("intel", 2100.0, False)


def test_the_written_file_loads_with_the_host_s_shape(tmp_path: Path) -> None:
    out = tmp_path / "made-up.yaml"
    like = probe_host(out, root=make_host(tmp_path / "host"), name="made-up")
    config = load_machine(out)
    assert config.name == "made-up"
    assert (config.topology.sockets, config.topology.domains_per_socket) == (2, 2)
    assert [node.near_domains for node in config.memory.home_nodes] == [(0, 1), (2, 3)]
    assert config.protocol.value == "MESIF"
    assert config.clock_ghz == pytest.approx(2.1)
    assert like == closest_machine(host_facts(tmp_path / "host"))
    text = out.read_text()
    assert f"from {like} (a shipped machine; not measured on this host)" in text
    # an Intel machine with two L3s per socket: no shipped Intel file has that distance
    assert "ASSUMPTION" in text
    assert "cross_domain_hitm" in text
    # how a contended line serves its misses is hardware too: borrowed with the latencies
    assert config.line_service == load_machine(like).line_service
    assert config.line_service.home


def test_an_amd_host_borrows_from_an_amd_machine(tmp_path: Path) -> None:
    cpuinfo = CPUINFO_INTEL.replace("GenuineIntel", "AuthenticAMD").replace(
        "Intel(R) Xeon(R) Made-Up 1234", "AMD EPYC Made-Up")
    facts = host_facts(make_host(tmp_path, sockets=1, l3_per_socket=8, cores_per_l3=8,
                                 cpuinfo=cpuinfo))
    assert closest_machine(facts) in ("threadripper-3990x", "epyc-9654-2s")


def test_probe_on_this_host_writes_a_file_that_runs(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "host.yaml"
    assert main(["machine", "probe", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert load_machine(out).name == "host"
    code = main(["-q", "run", "tiny", "--machine", str(out), "--clients", "1",
                 "--idle-clients", "0", "--algorithms", "post14", "--out",
                 str(tmp_path / "run"), "--no-progress"])
    assert code == 0
    assert (tmp_path / "run" / "curve.csv").exists()


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "host.yaml"
    out.write_text("mine\n")
    assert main(["machine", "probe", "--out", str(out)]) == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert out.read_text() == "mine\n"  # untouched
    assert main(["machine", "probe", "--out", str(tmp_path / "x.yaml"), "--like", "nosuch"]) == 2
    assert "--like: unknown machine 'nosuch'" in capsys.readouterr().err
    assert main(["machine", "probe", "--out", str(tmp_path / "y.yaml"),
                 "--root", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "online" in err
    assert not (tmp_path / "y.yaml").exists()


def test_an_irregular_topology_is_refused(tmp_path: Path) -> None:
    root = make_host(tmp_path)
    (root / "sys/devices/system/cpu/online").write_text("0-14\n")  # one CPU offline
    facts = host_facts(root)  # the facts a measurement records are read all the same
    assert facts.as_metadata()["cpu_model"] == "Intel(R) Xeon(R) Made-Up 1234"
    with pytest.raises(ConfigError, match="topology"):
        facts.layout()


CPUINFO_KVM = CPUINFO_INTEL.replace("flags\t\t: fpu sse2 ht", "flags\t\t: fpu sse2 ht hypervisor")


def make_guest(root: Path, *, driver: str | None, poll_ns: int | None) -> Path:
    """A KVM guest's sysfs: the cpuidle driver and haltpoll's polling window, when given."""
    make_host(root, sockets=1, l3_per_socket=1, cores_per_l3=2, threads=1, cpuinfo=CPUINFO_KVM)
    if driver is not None:
        cpuidle = root / "sys/devices/system/cpu/cpuidle"
        cpuidle.mkdir(parents=True)
        (cpuidle / "current_driver").write_text(f"{driver}\n")
        state = root / "sys/devices/system/cpu/cpu0/cpuidle/state1"
        state.mkdir(parents=True)
        (state / "latency").write_text("1\n")
    if poll_ns is not None:
        params = root / "sys/module/haltpoll/parameters"
        params.mkdir(parents=True)
        (params / "guest_halt_poll_ns").write_text(f"{poll_ns}\n")
    return root


@pytest.mark.parametrize(("driver", "poll_ns", "governor", "residency_ns"), [
    ("haltpoll", 200_000, "menu", 200_000.0),  # polls for the window, then halts
    ("haltpoll", 0, "shallowest", 0.0),        # the window is off: halts at once
    (None, None, "shallowest", 0.0),           # no cpuidle driver: halts at once
])
def test_a_kvm_guest_s_vcpus_halt_and_pay_the_hypervisor_exit(
        tmp_path: Path, driver: str | None, poll_ns: int | None, governor: str,
        residency_ns: float) -> None:
    out = tmp_path / "guest.yaml"
    probe_host(out, like="epyc-9654-2s", root=make_guest(tmp_path / "host", driver=driver,
                                                         poll_ns=poll_ns))
    config = load_machine(out)
    assert config.virtualized
    assert config.scheduler.ipi_exit_ns == pytest.approx(5000.0)  # not bare metal's 0 us
    assert config.idle is not None
    assert (config.idle.wake, config.idle.governor) == ("hlt", governor)
    assert [state.name for state in config.idle.states] == ["HLT"]  # no MWAIT C-states
    assert config.idle.states[0].target_residency_ns == pytest.approx(residency_ns)
    assert config.idle.states[0].wake_latency_ns == 0.0
    text = out.read_text()
    assert f"cpuidle driver {driver or 'none'}" in text
    assert "ASSUMPTION, range 1.5-15 us" in text


def test_bare_metal_keeps_the_borrowed_idle_states(tmp_path: Path) -> None:
    out = tmp_path / "metal.yaml"
    probe_host(out, like="gold5215-2s", root=make_host(tmp_path / "host", l3_per_socket=1))
    config, borrowed = load_machine(out), load_machine("gold5215-2s")
    assert config.idle == borrowed.idle
    assert config.scheduler.ipi_exit_ns == borrowed.scheduler.ipi_exit_ns


def test_a_measured_clock_replaces_linux_s_and_says_both(tmp_path: Path) -> None:
    out = tmp_path / "clocked.yaml"
    probe_host(out, root=make_host(tmp_path / "host"), clock_ghz=4.4)
    assert load_machine(out).clock_ghz == pytest.approx(4.4)
    line = next(line for line in out.read_text().splitlines() if line.startswith("clock:"))
    assert "--measure-clock" in line
    assert "Linux gives 2.10 GHz" in line


def test_a_non_positive_measured_clock_is_refused_and_nothing_written(tmp_path: Path) -> None:
    out = tmp_path / "clocked.yaml"
    with pytest.raises(ConfigError, match="clock: a measured clock must be positive"):
        probe_host(out, root=make_host(tmp_path / "host"), clock_ghz=0.0)
    assert not out.exists()


def test_machine_probe_measure_clock_writes_the_measurement(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from simulator.host import clock
    from simulator.host.clock import MeasuredClock

    monkeypatch.setattr(clock, "measure_clock",
                        lambda repeats=5: MeasuredClock(ghz=3.7, runs_ghz=(3.6, 3.7), cpu=0))
    out = tmp_path / "host.yaml"
    assert main(["-q", "machine", "probe", "--out", str(out), "--root",
                 str(make_host(tmp_path / "host")), "--measure-clock"]) == 0
    assert load_machine(out).clock_ghz == pytest.approx(3.7)


@pytest.mark.parametrize(("kernel", "value", "says"), [
    ("Linux 6.18.44-fc-v769 #1 SMP PREEMPT_DYNAMIC", "true", "Linux 6.18"),
    ("Linux 6.13.0 #1 SMP", "true", "Linux 6.13"),
    ("Linux 5.4.0-1025-azure #25-Ubuntu SMP", "false", "before 6.13"),
    ("Linux 6.12.6 #1 SMP", "false", "stable backport"),
    ("Darwin 23.1.0 Darwin Kernel", "false", "ASSUMPTION"),
])
def test_the_epoll_wake_up_follows_the_host_s_kernel(kernel: str, value: str, says: str) -> None:
    line = epoll_sync_line(kernel)
    assert line.startswith(f"  epoll_sync_wakeup: {value}   # ")
    assert says in line


def test_the_written_file_says_what_this_host_s_epoll_does(tmp_path: Path) -> None:
    out = tmp_path / "made-up.yaml"
    probe_host(out, root=make_host(tmp_path / "host"), name="made-up")
    expected = epoll_sync_line(host_facts(tmp_path / "host").kernel)
    assert expected in out.read_text().splitlines()
    assert load_machine(out).scheduler.epoll_sync_wakeup is (": true " in expected)
