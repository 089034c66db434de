"""A point builds its machine's topology and latency tables once and hands them down.

:func:`snapsim_models.point.run_point` builds the :class:`Topology` and the
:class:`LatencyTables` of its machine, and the scheduler, its working sets, the machine and its
coherence engine all take them instead of building their own (each was built two or three times
per point before).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from simulator.config import configs_dir
from simulator.config.machine import KernelThreadConfig, MachineConfig, TopologyConfig
from simulator.config.machine_file import load_machine
from simulator.hardware.latency import LatencyTables
from simulator.hardware.topology import Topology
from tests.models.points import simulate


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts of ``Topology.from_config`` and ``LatencyTables.build`` calls from now on."""
    counts: Counter[str] = Counter()
    topology, tables = Topology.from_config, LatencyTables.build

    def count_topology(config: TopologyConfig | MachineConfig) -> Topology:
        counts["Topology"] += 1
        return topology(config)

    def count_tables(machine: MachineConfig, given: Topology | None = None) -> LatencyTables:
        counts["LatencyTables"] += 1
        return tables(machine, given)

    monkeypatch.setattr(Topology, "from_config", count_topology)
    monkeypatch.setattr(LatencyTables, "build", count_tables)
    return counts


@pytest.mark.parametrize("algorithm", ["pre14", "post14"])
def test_a_point_builds_its_topology_and_latency_tables_once(
        builds: Counter[str], algorithm: str) -> None:
    machine = load_machine("gold5215-2s")  # idle states and working sets: every user of them
    simulate(machine, algorithm, clients=2, idle_clients=3, idle_kind="mostly-idle",
             duration_ns=1e6, warmup_ns=5e5)
    assert builds == {"Topology": 1, "LatencyTables": 1}


def test_a_point_with_a_kernel_thread_builds_them_once(builds: Counter[str]) -> None:
    thread = KernelThreadConfig(name="kdamond", period_ns=1e5, cpu_share=0.25,
                                cpu_share_per_process=0.0)
    machine = replace(load_machine(configs_dir() / "measurements" / "kvm-epyc-2vcpu" / "host.yaml"),
                      kernel_thread=thread)
    simulate(machine, "pre14", idle_clients=2, duration_ns=1e6, warmup_ns=5e5)
    assert builds == {"Topology": 1, "LatencyTables": 1}
