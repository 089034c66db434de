"""``snapsim machine probe``: a machine file from a host's sysfs, checked on a made-up two-socket
host and on the machine the tests run on."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.machine_file import load_machine
from simulator.config.probe import closest_machine, host_facts, probe_host
from simulator.errors import ConfigError

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
    assert (facts.sockets, facts.domains_per_socket, facts.cores_per_domain,
            facts.threads_per_core) == (2, 2, 2, 2)
    assert (facts.l1d.size_bytes, facts.l1d.ways) == (48 * 1024, 12)  # not the L1i
    assert (facts.l2.size_bytes, facts.l3.size_bytes, facts.l3.ways) == (2 << 20, 16 << 20, 16)
    assert facts.node_domains == ((0, 1), (2, 3))
    assert (facts.vendor, facts.clock_mhz, facts.virtualized) == ("intel", 2100.0, False)


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
    with pytest.raises(ConfigError, match="topology"):
        host_facts(root)
