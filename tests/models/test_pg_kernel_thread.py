"""A kernel thread's bursts beside one client: the mix of two steady states, on the own machine."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.config import configs_dir
from simulator.config.machine import KernelThreadConfig, TopologyConfig
from simulator.config.machine_file import load_machine
from tests.models.points import simulate

HOST = load_machine(configs_dir() / "measurements" / "kvm-epyc-2vcpu" / "host.yaml")


def _tps(share: float, cores: int = 2) -> float:
    thread = KernelThreadConfig(name="kdamond", period_ns=500e6, cpu_share=share,
                                cpu_share_per_process=0.0)
    topology = TopologyConfig(sockets=1, domains_per_socket=1, cores_per_domain=cores,
                              threads_per_core=1)
    machine = replace(HOST, kernel_thread=thread, topology=topology)
    value = simulate(machine, "post14", duration_ns=40e6, warmup_ns=5e6).row["tps"]
    assert isinstance(value, float)
    return value


def test_one_client_runs_at_one_vcpu_s_speed_for_the_thread_s_share() -> None:
    """While a burst holds one of the two halting vCPUs, the pair's wake-ups find none idle and
    it runs on the other without halting; the rest of the time each round trip wakes a halted
    vCPU. The window's TPS is the two steady states weighted by the share
    (docs/investigations/own-machine.md)."""
    two_halting, one_vcpu = _tps(0.0), _tps(0.0, cores=1)
    assert one_vcpu > 2.5 * two_halting  # a halted vCPU's wake-up costs 20 us a round trip
    for share in (0.25, 0.5):
        mixed = (1.0 - share) * two_halting + share * one_vcpu
        assert _tps(share) == pytest.approx(mixed, rel=0.05)
