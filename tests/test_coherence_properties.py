"""Property tests: coherence invariants hold on random machines under random access sequences.

After every operation: at most one owner (M/E/O/F), an M or E owner excludes every other valid
copy, the directory's holders equal the cores whose caches hold the line, L1 ⊆ L2, and every
cost is positive and one of the values configured for the class it was recorded under.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.coherence.codes import AccessClass, Op
from simulator.latency import LatencyTables
from simulator.machine import Machine
from simulator.machine_config import L3Inclusion, MachineConfig, Protocol
from tests.toy_machines import toy_machine


def allowed_latencies(config: MachineConfig) -> dict[AccessClass, set[float]]:
    """Every latency a class can be charged at on this machine (any requester, supplier, home)."""
    tables = LatencyTables.build(config)
    allowed: dict[AccessClass, set[float]] = {klass: set() for klass in AccessClass}
    allowed[AccessClass.L1_HIT] = {tables.l1_ns, max(tables.l1_ns, tables.atomic_local_ns)}
    allowed[AccessClass.L2_HIT] = {tables.l2_ns, max(tables.l2_ns, tables.atomic_local_ns)}
    allowed[AccessClass.L3_HIT] = {tables.l3_ns}
    allowed[AccessClass.SMT_SIBLING] = {tables.smt_sibling_ns}
    for dirty in (0, 1):
        classes = tables.transfer_class[dirty]
        for (req, sup), klass in np.ndenumerate(classes):
            values = tables.transfer_ns[dirty, req, sup]
            allowed[AccessClass(int(klass))].update(float(v) for v in values if not np.isnan(v))
    for (dom, home), klass in np.ndenumerate(tables.dram_class):
        allowed[AccessClass(int(klass))].add(float(tables.dram_ns[dom, home]))
    invalidations = {float(v) for v in tables.transfer_ns[0].ravel() if not np.isnan(v)}
    allowed[AccessClass.UPGRADE] = {tables.upgrade_ns} | invalidations
    return allowed


machines = st.builds(
    toy_machine,
    sockets=st.integers(1, 3),
    domains_per_socket=st.integers(1, 2),
    cores_per_domain=st.integers(1, 3),
    threads_per_core=st.integers(1, 2),
    protocol=st.sampled_from(list(Protocol)),
    inclusion=st.sampled_from(list(L3Inclusion)),
    placement=st.sampled_from(["node", "interleave"]),
)


@settings(max_examples=40, deadline=None)
@given(
    config=machines, seed=st.integers(0, 2**31), backend=st.sampled_from(["compiled", "reference"])
)
def test_invariants_and_costs_under_random_traces(
    config: MachineConfig, seed: int, backend: str
) -> None:
    rng = np.random.default_rng(seed)
    n_lines = 24
    addresses = rng.choice(256, size=n_lines, replace=False) * 64 * 17
    machine = Machine(config, addresses, backend=backend)  # type: ignore[arg-type]
    allowed = allowed_latencies(config)
    invalidation_values = allowed[AccessClass.UPGRADE]
    now = 0.0
    for _ in range(150):
        now += float(rng.integers(0, 100))
        thread = int(rng.integers(0, machine.topology.n_threads))
        roll = rng.random()
        if roll < 0.05:
            machine.pollute(
                int(rng.integers(0, machine.topology.n_cores)),
                int(rng.integers(0, 2048)),
                int(rng.integers(0, 4096)),
            )
        else:
            op = Op(int(rng.integers(0, 3)))
            line = int(rng.integers(0, n_lines))
            result = machine.access(thread, line, op, now=now)
            assert result.latency_ns > 0
            assert result.wait_ns >= 0
            ok = allowed[result.access_class]
            if op != Op.LOAD:  # a fetch for ownership may be dominated by an invalidation
                ok = ok | invalidation_values
            assert result.latency_ns in ok, (result, op)
            if op != Op.LOAD:
                holders = machine.canonical_state()["holders"][line]  # type: ignore[index]
                assert holders == [machine.topology.core_of(thread)]
        machine.check_invariants()
