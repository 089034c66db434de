"""A machine too large to build is refused at once, and the latency-coverage check does not walk
every pair of domains (issue 52: 10,000 sockets hung ``check-config`` and ``run`` silently)."""

from __future__ import annotations

import itertools
import random
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from simulator.cli import main
from simulator.config.machine import (
    MAX_L3_DOMAINS,
    HomeRelation,
    MachineConfig,
    TopologyConfig,
    home_relation,
)
from simulator.config.machine_file import load_machine, machines_dir
from simulator.errors import ConfigError


def _brute_force(sockets: int, dps: int, near: set[int]) -> dict[str, set[HomeRelation]]:
    """The relations of every ordered pair of distinct domains (the check before issue 52)."""
    needed: dict[str, set[HomeRelation]] = {"cross_domain": set(), "remote": set()}
    for requester, holder in itertools.permutations(range(sockets * dps), 2):
        klass = "cross_domain" if requester // dps == holder // dps else "remote"
        needed[klass].add(home_relation(requester in near, holder in near))
    return needed


def test_the_relations_counted_per_socket_are_those_of_every_pair() -> None:
    rng = random.Random(52)
    cases = [(s, d, set(near)) for s in (1, 2, 3) for d in (1, 2, 3)
             for n in range(s * d + 1) for near in itertools.combinations(range(s * d), n)]
    cases += [(s, d, set(rng.sample(range(s * d), rng.randint(0, s * d))))
              for s, d in ((4, 5), (8, 1), (5, 4), (2, 12)) for _ in range(30)]
    for sockets, dps, near in cases:
        fake = SimpleNamespace(topology=SimpleNamespace(sockets=sockets, domains_per_socket=dps))
        needed: dict[str, set[HomeRelation]] = {"cross_domain": set(), "remote": set()}
        MachineConfig._occurring_relations(fake, near, needed)  # type: ignore[arg-type]
        assert needed == _brute_force(sockets, dps, near), (sockets, dps, near)


def test_too_many_l3_domains_are_refused_with_the_key() -> None:
    TopologyConfig(sockets=MAX_L3_DOMAINS, domains_per_socket=1, cores_per_domain=1,
                   threads_per_core=1)
    with pytest.raises(ConfigError, match=r"^topology: 10,000 sockets x 1 L3 domains per socket "
                       r"make 10,000 L3 domains, more than the 256 the simulator builds"):
        TopologyConfig(sockets=10_000, domains_per_socket=1, cores_per_domain=16,
                       threads_per_core=2)


def _gold_with_sockets(tmp_path: Path, sockets: int) -> Path:
    text = (machines_dir() / "gold5215-2s.yaml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^  sockets: .*$", f"  sockets: {sockets}", text)
    path = tmp_path / f"sockets{sockets}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_check_config_of_10000_sockets_is_refused_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _gold_with_sockets(tmp_path, 10_000)
    started = time.monotonic()
    assert main(["check-config", str(path)]) == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"snapsim: error: {path}: topology: 10,000 sockets x 1 L3 domains")


def test_run_with_a_billion_sockets_is_refused_before_the_output_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    started = time.monotonic()
    assert main(["run", "tiny", "--machine-set", "topology.sockets=1000000000",
                 "--out", str(out)]) == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "topology: 1,000,000,000 sockets x 1 L3 domains per socket" in err[0]
    assert not out.exists()


def test_many_home_nodes_on_the_largest_topology_check_quickly(tmp_path: Path) -> None:
    """256 domains, one home node each: the pairwise check took 256**3 steps."""
    path = _gold_with_sockets(tmp_path, MAX_L3_DOMAINS)
    text = path.read_text(encoding="utf-8")
    nodes = "".join(f"    - {{near_domains: [{d}]}}\n" for d in range(MAX_L3_DOMAINS))
    text = re.sub(r"(?ms)^  home_nodes:\n(    .*?\n)+", f"  home_nodes:\n{nodes}", text)
    path.write_text(text, encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"latency\.remote_hit\.neither: is required"):
        load_machine(str(path))  # the Gold 5215 has no transfer between two far sockets
    assert time.monotonic() - started < 5
