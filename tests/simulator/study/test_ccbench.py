"""``snapsim ccbench`` reports the configured latency of every class it exercises."""

from __future__ import annotations

import pytest

from simulator.config.machine import HomeRelation
from simulator.config.machine_file import load_machine, shipped_machines
from simulator.study.ccbench import measure


def test_gold_table_matches_the_machine_file() -> None:
    config = load_machine("gold5215-2s")
    rows = {row.scenario: row for row in measure(config)}
    assert rows["load from modified, same L3 domain"].value == config.latency.local_hitm_ns
    assert rows["CAS on line owned by the SMT sibling"].value == 7.4
    assert rows["load from modified, other socket (line homed on node 0)"].value == 115.6
    assert rows["load from modified, other socket (line homed on node 1)"].value == 178.2
    assert rows["load from DRAM, line homed on node 1"].access_class == "dram_remote"
    assert rows["hot line, 4 threads in one L3 domain"].value == pytest.approx(1e3 / 55.6, rel=0.02)


@pytest.mark.parametrize("name", shipped_machines())
def test_every_shipped_machine_reads_back_its_file(name: str) -> None:
    """Each class ccbench exercises is charged the configured latency; a hot line is a queue."""
    config = load_machine(name)
    lat = config.latency
    rows = {row.scenario: row for row in measure(config)}
    assert rows["load from modified, same L3 domain"].value == lat.local_hitm_ns
    assert rows["load from exclusive, same L3 domain"].value == lat.local_hit_ns
    assert rows["load, clean only in the L3"].value == pytest.approx(config.l3.latency_ns)
    assert rows["load from DRAM, line homed on node 0"].value == config.memory.dram_near_ns
    if config.topology.threads_per_core > 1:
        assert rows["CAS on line owned by the SMT sibling"].value == lat.smt_sibling_ns
    if config.topology.domains_per_socket > 1:
        assert lat.cross_domain_hitm is not None
        scenario = rows["load from modified, other L3 domain"]
        assert scenario.value == lat.cross_domain_hitm.get(HomeRelation.BOTH)
    hot = rows["hot line, 4 threads in one L3 domain"].value
    assert hot == pytest.approx(1e3 / lat.local_hitm_ns, rel=0.02)
    if config.topology.sockets > 1:
        assert lat.remote_hitm is not None
        # The line is homed on node 0 (socket 0): handoffs alternate between "home = holder"
        # (socket 1 takes it from socket 0) and "home = requester" (socket 0 takes it back).
        holder = lat.remote_hitm.get(HomeRelation.HOLDER)
        requester = lat.remote_hitm.get(HomeRelation.REQUESTER)
        assert holder is not None
        assert requester is not None
        assert rows["load from modified, other socket (line homed on node 0)"].value == holder
        assert rows["hot line, 2 threads on two sockets"].value == pytest.approx(
            2e3 / (holder + requester), rel=0.02
        )
