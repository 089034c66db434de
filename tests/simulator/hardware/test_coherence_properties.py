"""Property tests: coherence invariants hold on random machines under random access sequences.

After every operation: at most one owner (M/E/O/F), an M or E owner excludes every other valid
copy, the directory's holders equal the cores whose caches hold the line, L1 ⊆ L2, and every
cost is positive and one of the values configured for the class it was recorded under.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.config.machine import CoherenceProtocol, L3Inclusion, MachineConfig
from simulator.errors import ProtocolError
from simulator.hardware.codes import N_CLASSES, AccessClass, LineState, Op, Out
from simulator.hardware.latency import LatencyTables
from simulator.hardware.machine import Machine, check_state, new_counters
from simulator.hardware.topology import Topology
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
    farthest = {float(v) for v in tables.transfer_ns[0].ravel() if not np.isnan(v)}
    n_cores = Topology.from_config(config).n_cores
    invalidations = {v + extra * tables.per_extra_sharer_ns
                     for v in farthest for extra in range(n_cores - 1)}
    allowed[AccessClass.UPGRADE] = {tables.upgrade_ns} | invalidations
    return allowed


machines = st.builds(
    toy_machine,
    sockets=st.integers(1, 3),
    domains_per_socket=st.integers(1, 2),
    cores_per_domain=st.integers(1, 3),
    threads_per_core=st.integers(1, 2),
    protocol=st.sampled_from(list(CoherenceProtocol)),
    inclusion=st.sampled_from(list(L3Inclusion)),
    placement=st.sampled_from(["node", "interleave"]),
)


@settings(max_examples=40, deadline=None)
@given(
    config=machines, seed=st.integers(0, 2**31),
    implementation=st.sampled_from(["compiled", "reference"]),
)
def test_invariants_and_costs_under_random_traces(
    config: MachineConfig, seed: int, implementation: str
) -> None:
    rng = np.random.default_rng(seed)
    n_lines = 24
    addresses = rng.choice(256, size=n_lines, replace=False) * 64 * 17
    machine = Machine(config, addresses, implementation=implementation)  # type: ignore[arg-type]
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


# -- the invariant checker is not vacuous: each broken invariant is caught -----------------------


def _state_with_modified_and_shared_lines() -> tuple[Machine, dict[str, Any]]:
    """Line 0 Modified in core 0; line 1 read by cores 1 and 2 (MESIF: F in core 2, S in 1)."""
    config = toy_machine(sockets=2, cores_per_domain=2, threads_per_core=1)
    machine = Machine(config, [0, 64], implementation="reference")
    machine.access(0, 0, Op.STORE)
    machine.access(1, 1, Op.LOAD)
    machine.access(2, 1, Op.LOAD)
    state = machine.canonical_state()
    assert state["owner"] == [0, 2]
    assert state["ostate"] == [int(LineState.M), int(LineState.F)]
    assert state["holders"] == [[0], [1, 2]]
    return machine, state


def _l2_set(machine: Machine, state: dict[str, Any], core: int, line: int) -> list[int]:
    index = int(machine.line_numbers[line]) % machine.config.l2.sets
    return state["l2"][core][index]  # type: ignore[no-any-return]


def _add_copy_in_core_1(machine: Machine, state: dict[str, Any]) -> None:
    state["holders"][0] = [0, 1]
    _l2_set(machine, state, 1, 0).append(0)


def _drop_from_directory(machine: Machine, state: dict[str, Any]) -> None:
    state["holders"][1] = [2]  # core 1's L2 still has line 1


def _l1_only(machine: Machine, state: dict[str, Any]) -> None:
    _l2_set(machine, state, 0, 0).remove(0)
    state["holders"][0] = []
    state["owner"][0], state["ostate"][0] = -1, 0


def _owner_in_s(machine: Machine, state: dict[str, Any]) -> None:
    state["ostate"][1] = int(LineState.S)


def _state_without_owner(machine: Machine, state: dict[str, Any]) -> None:
    state["owner"][1] = -1


def _owner_without_copy(machine: Machine, state: dict[str, Any]) -> None:
    state["owner"][1] = 3


def _twice_in_a_set(machine: Machine, state: dict[str, Any]) -> None:
    _l2_set(machine, state, 0, 0).append(0)


def _exclusive_with_sharer(machine: Machine, state: dict[str, Any]) -> None:
    state["ostate"][1] = int(LineState.E)


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (_add_copy_in_core_1, "M in core 0 but also held"),
        (_exclusive_with_sharer, "E in core 2 but also held"),
        (_drop_from_directory, "directory holders"),
        (_l1_only, "L1 but not its L2"),
        (_owner_in_s, "owner in state S"),
        (_state_without_owner, "without an owner"),
        (_owner_without_copy, "does not hold it"),
        (_twice_in_a_set, "twice in one L2 set"),
    ],
)
def test_invariant_checker_catches_each_violation(
    corrupt: Callable[[Machine, dict[str, Any]], None], message: str
) -> None:
    machine, state = _state_with_modified_and_shared_lines()
    check_state(state)  # the real state passes
    broken = copy.deepcopy(state)
    corrupt(machine, broken)
    with pytest.raises(ProtocolError, match=message):
        check_state(broken)


# -- every access is recorded under the class it returns, at the cost it returns -----------------


@settings(max_examples=20, deadline=None)
@given(
    config=machines, seed=st.integers(0, 2**31),
    implementation=st.sampled_from(["compiled", "reference"]),
)
def test_each_access_is_recorded_under_its_class(
    config: MachineConfig, seed: int, implementation: str
) -> None:
    """The counter vector gets exactly one count, in the returned class, and the returned latency
    and wait; the line's per-class counter grows by one in that class. A write's latency is the
    class's own value unless it invalidated other copies; a hit never invalidates."""
    rng = np.random.default_rng(seed)
    n_lines = 16
    addresses = rng.choice(128, size=n_lines, replace=False) * 64 * 13
    machine = Machine(config, addresses, implementation=implementation)  # type: ignore[arg-type]
    allowed = allowed_latencies(config)
    now = 0.0
    for _ in range(120):
        now += float(rng.integers(0, 100))
        thread = int(rng.integers(0, machine.topology.n_threads))
        op = Op(int(rng.integers(0, 3)))
        line = int(rng.integers(0, n_lines))
        before = machine.canonical_state()["line_class"][line]  # type: ignore[index]
        out = new_counters()
        result = machine.access(thread, line, op, now=now, out=out)
        klass = result.access_class
        expected_counts = np.zeros(N_CLASSES)
        expected_counts[klass] = 1
        np.testing.assert_array_equal(out[:N_CLASSES], expected_counts)
        assert out[Out.LATENCY_NS] == result.latency_ns > 0
        assert out[Out.WAIT_NS] == result.wait_ns >= 0
        assert out[Out.STALL_NS] == result.latency_ns + result.wait_ns
        after = machine.canonical_state()["line_class"][line]  # type: ignore[index]
        assert [a - b for a, b in zip(after, before, strict=True)] == list(expected_counts)
        if klass in (AccessClass.L1_HIT, AccessClass.L2_HIT, AccessClass.SMT_SIBLING):
            assert out[Out.INVALIDATIONS] == 0
        if out[Out.INVALIDATIONS] == 0:
            assert result.latency_ns in allowed[klass], (result, op)
