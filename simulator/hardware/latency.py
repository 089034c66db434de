"""Latency model: the cost of serving a line, keyed by where it is, its state and its home.

The machine file gives latencies per class and, for transfers between L3 domains or sockets, per
home relation (which parties are near the line's home node). This module expands them into dense
tables indexed by (requester domain, supplier domain, home node), so the coherence code looks a
latency up in O(1) without knowing about the configuration format.

What it leaves out: latency variation within a class (the measured min/median/max spread), queueing
in the interconnect (only per-line serialization is modelled, in the coherence layer), and
bandwidth limits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simulator.config.machine import HomeKeyedLatency, MachineConfig, home_relation
from simulator.hardware.codes import AccessClass
from simulator.hardware.topology import Topology
from simulator.types import FloatArray, IntArray

CLEAN, DIRTY = 0, 1


@dataclass(frozen=True, slots=True)
class LatencyTables:
    """Dense latency and class tables of one machine.

    Attributes:
        transfer_ns: ``[dirty, requester_domain, supplier_domain, home]`` latency of a line
            supplied by another cache (a core's private cache, or another domain's L3 when the
            domains differ). ``dirty`` is 0 for a clean line (HIT), 1 for a modified one (HITM).
            Invalidating a sharer costs the clean entry for its domain.
        transfer_class: ``[dirty, requester_domain, supplier_domain]`` access class codes.
        dram_ns: ``[requester_domain, home]`` DRAM latency; ``dram_class`` its class code.
        near: ``[domain, home]`` whether a domain is near a home node.
        home_rule: whether the line service rule is ``home`` (else ``fifo``).
        owner_window: the fraction of a transfer's service time during which the line's last
            owner still serves its own accesses (``home`` rule).
        service_ns: ``[kind, requester_domain, supplier_domain]`` the least time a miss of that
            kind (read of a modified line, read of a clean one, ownership) occupies the line
            (``home`` rule; 0 = its latency).
        transfer_overlap: the fraction of a transfer's latency that its request spends before
            it reaches the line's home, overlapping the transfers ahead of it (``home`` rule).
        local_batch: the most transfers to one socket in a row that the line's home serves
            ahead of waiting requests from other sockets (``home`` rule; 1 = first come, first
            served).
    """

    l1_ns: float
    l2_ns: float
    l3_ns: float
    smt_sibling_ns: float
    atomic_local_ns: float
    upgrade_ns: float
    per_extra_sharer_ns: float
    transfer_ns: FloatArray
    transfer_class: IntArray
    dram_ns: FloatArray
    dram_class: IntArray
    near: npt.NDArray[np.bool_]
    home_rule: bool
    owner_window: float
    service_ns: FloatArray
    transfer_overlap: float
    local_batch: int = 1

    @classmethod
    def build(cls, machine: MachineConfig, topology: Topology | None = None) -> LatencyTables:
        """Expand a machine's latency configuration into dense tables."""
        topo = topology or Topology.from_config(machine)
        n_dom, n_home = topo.n_domains, len(machine.memory.home_nodes)
        near = np.zeros((n_dom, n_home), dtype=np.bool_)
        for home, node in enumerate(machine.memory.home_nodes):
            near[list(node.near_domains), home] = True
        lat = machine.latency
        transfer_ns = np.full((2, n_dom, n_dom, n_home), np.nan)
        transfer_class = np.zeros((2, n_dom, n_dom), dtype=np.int64)
        for req in range(n_dom):
            for sup in range(n_dom):
                same_socket = topo.socket_of_domain(req) == topo.socket_of_domain(sup)
                if req == sup:
                    keyed = (HomeKeyedLatency.uniform(lat.local_hit_ns),
                             HomeKeyedLatency.uniform(lat.local_hitm_ns))
                    classes = (AccessClass.LOCAL_HIT, AccessClass.LOCAL_HITM)
                elif same_socket:
                    keyed = (_required(lat.cross_domain_hit), _required(lat.cross_domain_hitm))
                    classes = (AccessClass.CROSS_DOMAIN_HIT, AccessClass.CROSS_DOMAIN_HITM)
                else:
                    keyed = (_required(lat.remote_hit), _required(lat.remote_hitm))
                    classes = (AccessClass.REMOTE_HIT, AccessClass.REMOTE_HITM)
                for dirty in (CLEAN, DIRTY):
                    transfer_class[dirty, req, sup] = classes[dirty]
                    for home in range(n_home):
                        relation = home_relation(bool(near[req, home]), bool(near[sup, home]))
                        value = keyed[dirty].get(relation)
                        if value is not None:
                            transfer_ns[dirty, req, sup, home] = value
        service = machine.line_service
        service_ns = np.zeros((len(service.service_ns), n_dom, n_dom))
        for req in range(n_dom):
            for sup in range(n_dom):
                distance = (0 if req == sup else 1 if topo.socket_of_domain(req)
                            == topo.socket_of_domain(sup) else 2)
                for kind, row in enumerate(service.service_ns):
                    service_ns[kind, req, sup] = row[distance]
        dram_ns = np.where(near, machine.memory.dram_near_ns, machine.memory.dram_far_ns)
        dram_class = np.where(near, AccessClass.DRAM_LOCAL, AccessClass.DRAM_REMOTE)
        return cls(
            l1_ns=machine.l1d.latency_ns,
            l2_ns=machine.l2.latency_ns,
            l3_ns=machine.l3.latency_ns,
            smt_sibling_ns=lat.smt_sibling_ns,
            atomic_local_ns=lat.atomic_local_ns,
            upgrade_ns=lat.upgrade_ns,
            per_extra_sharer_ns=lat.invalidation_per_extra_sharer_ns,
            transfer_ns=transfer_ns,
            transfer_class=transfer_class,
            dram_ns=dram_ns.astype(np.float64),
            dram_class=dram_class.astype(np.int64),
            near=near,
            home_rule=service.home,
            owner_window=service.owner_window,
            service_ns=service_ns,
            transfer_overlap=service.transfer_overlap if service.home else 0.0,
            local_batch=service.local_batch if service.home else 1,
        )


def _required(keyed: HomeKeyedLatency | None) -> HomeKeyedLatency:
    if keyed is None:  # MachineConfig guarantees presence where the topology needs it
        raise AssertionError("latency class missing although the topology needs it")
    return keyed
