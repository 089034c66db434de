"""Small machines built in code (no YAML) for unit and property tests."""

from __future__ import annotations

from simulator.config.machine import (
    CacheConfig,
    CoherenceProtocol,
    HomeKeyedLatency,
    HomeNodeConfig,
    L3Inclusion,
    LatencyConfig,
    MachineConfig,
    MemoryConfig,
    MlpConfig,
    SchedulerConfig,
    TopologyConfig,
)

KIB = 1024


def toy_machine(
    *,
    sockets: int = 2,
    domains_per_socket: int = 1,
    cores_per_domain: int = 2,
    threads_per_core: int = 2,
    protocol: CoherenceProtocol = CoherenceProtocol.MESIF,
    inclusion: L3Inclusion = L3Inclusion.NON_INCLUSIVE,
    l1: tuple[int, int] = (4, 2),
    l2: tuple[int, int] = (8, 2),
    l3: tuple[int, int] = (16, 4),
    virtualized: bool = False,
    placement: str = "node",
) -> MachineConfig:
    """A tiny machine with distinct, easy-to-recognise latencies.

    ``l1``/``l2``/``l3`` are ``(sets, ways)``. Latencies (ns): L1 1, L2 4, L3 20, SMT 7,
    atomic 6, upgrade 20, local HIT 40 / HITM 45, cross-domain HIT 80 / HITM 85 (+10 when the
    requester is far from home), remote HIT 120 / HITM holder-home 115, requester-home 178,
    neither 200, DRAM near 90 / far 130.
    """

    cross = HomeKeyedLatency(both=80.0, requester=90.0, holder=90.0, neither=100.0)
    cross_m = HomeKeyedLatency(both=85.0, requester=95.0, holder=95.0, neither=105.0)
    return MachineConfig(
        name="toy",
        description="toy machine for tests",
        clock_ghz=2.0,
        virtualized=virtualized,
        topology=TopologyConfig(
            sockets=sockets,
            domains_per_socket=domains_per_socket,
            cores_per_domain=cores_per_domain,
            threads_per_core=threads_per_core,
        ),
        protocol=protocol,
        l3_inclusion=inclusion,
        l1d=CacheConfig(
            size_bytes=64 * l1[0] * l1[1], ways=l1[1], latency_ns=1.0, key="caches.l1d"
        ),
        l2=CacheConfig(size_bytes=64 * l2[0] * l2[1], ways=l2[1], latency_ns=4.0, key="caches.l2"),
        l3=CacheConfig(size_bytes=64 * l3[0] * l3[1], ways=l3[1], latency_ns=20.0, key="caches.l3"),
        memory=MemoryConfig(
            home_nodes=tuple(
                HomeNodeConfig(
                    near_domains=tuple(range(s * domains_per_socket, (s + 1) * domains_per_socket))
                )
                for s in range(sockets)
            ),
            dram_near_ns=90.0,
            dram_far_ns=130.0,
            placement=placement,
            interleave_bytes=4096,
        ),
        latency=LatencyConfig(
            smt_sibling_ns=7.0,
            atomic_local_ns=6.0,
            local_hit_ns=40.0,
            local_hitm_ns=45.0,
            upgrade_ns=20.0,
            invalidation_per_extra_sharer_ns=3.0,
            cross_domain_hit=cross if domains_per_socket > 1 else None,
            cross_domain_hitm=cross_m if domains_per_socket > 1 else None,
            remote_hit=HomeKeyedLatency(holder=120.0, requester=170.0, neither=190.0)
            if sockets > 1
            else None,
            remote_hitm=HomeKeyedLatency(holder=115.0, requester=178.0, neither=200.0)
            if sockets > 1
            else None,
        ),
        mlp=MlpConfig(stream=4.0, indirect=2.0),
        scheduler=SchedulerConfig(
            time_slice_ns=1_000_000.0,
            context_switch_ns=2_000.0,
            wakeup_ns=5_000.0,
            ipi_exit_ns=10_000.0 if virtualized else 0.0,
            smt_throughput=1.25,
        ),
    )
