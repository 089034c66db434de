"""Dense numbering, dotted names, siblings and locality classes of the machine tree."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config.machine import TopologyConfig
from simulator.config.machine_file import load_machine
from simulator.hardware.topology import Locality, Topology


@pytest.fixture(scope="module")
def gold() -> Topology:
    return Topology.from_config(load_machine("gold5215-2s"))


@pytest.fixture(scope="module")
def threadripper() -> Topology:
    return Topology.from_config(load_machine("threadripper-3990x"))


def test_gold_counts(gold: Topology) -> None:
    assert (gold.n_sockets, gold.n_domains, gold.n_cores, gold.n_threads) == (2, 2, 20, 40)


def test_threadripper_counts(threadripper: Topology) -> None:
    counts = (threadripper.n_sockets, threadripper.n_domains, threadripper.n_cores,
              threadripper.n_threads)
    assert counts == (1, 16, 64, 128)


def test_lookup_arrays_are_int32_and_hierarchical(threadripper: Topology) -> None:
    for array in (threadripper.thread_core, threadripper.core_domain, threadripper.domain_socket):
        assert array.dtype == np.int32
    assert threadripper.thread_core.tolist()[:6] == [0, 0, 1, 1, 2, 2]
    assert threadripper.core_domain.tolist()[:9] == [0, 0, 0, 0, 1, 1, 1, 1, 2]
    assert set(threadripper.domain_socket.tolist()) == {0}


def test_from_bare_topology_config() -> None:
    topo = Topology.from_config(
        TopologyConfig(sockets=4, domains_per_socket=2, cores_per_domain=3, threads_per_core=1)
    )
    assert (topo.n_sockets, topo.n_domains, topo.n_cores, topo.n_threads) == (4, 8, 24, 24)
    assert topo.siblings(5) == ()
    assert topo.socket_of(23) == 3


@pytest.mark.parametrize("machine", ["gold", "threadripper"])
def test_dotted_names_round_trip(machine: str, request: pytest.FixtureRequest) -> None:
    topo: Topology = request.getfixturevalue(machine)
    names = [topo.thread_name(t) for t in range(topo.n_threads)]
    assert len(set(names)) == topo.n_threads
    assert [topo.thread_by_name(name) for name in names] == list(range(topo.n_threads))


def test_known_names(gold: Topology, threadripper: Topology) -> None:
    assert gold.thread_name(0) == "s0.d0.c0.t0"
    assert gold.thread_name(1) == "s0.d0.c0.t1"
    assert gold.thread_name(20) == "s1.d0.c0.t0"
    assert gold.thread_name(39) == "s1.d0.c9.t1"
    assert threadripper.thread_name(8) == "s0.d1.c0.t0"
    assert threadripper.thread_by_name("s0.d15.c3.t1") == 127


@pytest.mark.parametrize("name", ["s2.d0.c0.t0", "s0.d1.c0.t0", "s0.d0.c10.t0", "s0.d0.c0.t2"])
def test_names_outside_the_machine(gold: Topology, name: str) -> None:
    with pytest.raises(ValueError, match="outside this machine"):
        gold.thread_by_name(name)


@pytest.mark.parametrize("name", ["", "cpu3", "s0.d0.c0", "s0.d0.c0.t0.x", "S0.D0.C0.T0"])
def test_malformed_names(gold: Topology, name: str) -> None:
    with pytest.raises(ValueError, match="malformed"):
        gold.thread_by_name(name)


@pytest.mark.parametrize("thread", [-1, 40])
def test_thread_name_out_of_range(gold: Topology, thread: int) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        gold.thread_name(thread)


def test_siblings(gold: Topology) -> None:
    assert gold.siblings(0) == (1,)
    assert gold.siblings(1) == (0,)
    assert gold.siblings(39) == (38,)
    assert list(gold.threads_of_core(7)) == [14, 15]
    for thread in range(gold.n_threads):
        (sibling,) = gold.siblings(thread)
        assert gold.core_of(sibling) == gold.core_of(thread)
        assert gold.locality(thread, sibling) is Locality.SMT_SIBLING


def test_gold_locality_classes(gold: Topology) -> None:
    assert gold.locality(3, 3) is Locality.SAME_THREAD
    assert gold.locality(0, 1) is Locality.SMT_SIBLING
    assert gold.locality(0, 2) is Locality.SAME_DOMAIN
    assert gold.locality(0, 19) is Locality.SAME_DOMAIN
    assert gold.locality(0, 20) is Locality.REMOTE
    assert gold.locality(39, 0) is Locality.REMOTE
    classes = {gold.locality(a, b) for a in range(40) for b in range(40)}
    assert Locality.SAME_SOCKET not in classes  # one L3 domain per socket


def test_threadripper_locality_classes(threadripper: Topology) -> None:
    assert threadripper.locality(0, 1) is Locality.SMT_SIBLING
    assert threadripper.locality(0, 7) is Locality.SAME_DOMAIN
    assert threadripper.locality(0, 8) is Locality.SAME_SOCKET
    assert threadripper.locality(127, 0) is Locality.SAME_SOCKET
    classes = {threadripper.locality(a, b) for a in range(0, 128, 3) for b in range(128)}
    assert Locality.REMOTE not in classes  # one socket


def test_locality_is_symmetric_and_ordered(threadripper: Topology) -> None:
    for a in range(0, 128, 7):
        for b in range(0, 128, 5):
            assert threadripper.locality(a, b) == threadripper.locality(b, a)
    assert Locality.SAME_THREAD < Locality.SMT_SIBLING < Locality.SAME_DOMAIN
    assert Locality.SAME_DOMAIN < Locality.SAME_SOCKET < Locality.REMOTE
