"""Capacity: LRU eviction from private caches and the L3, footprint pollution, inclusion."""

from __future__ import annotations

import pytest

from simulator.config.machine import L3Inclusion
from simulator.config.machine_file import load_machine
from simulator.hardware.codes import AccessClass, Op
from simulator.hardware.machine import Machine
from tests.toy_machines import toy_machine


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_working_set_larger_than_l2_evicts_in_lru_order_and_rescan_pays_l3(
        implementation: str) -> None:
    config = load_machine("gold5215-2s")
    l2_lines = config.l2.size_bytes // 64
    extra = config.l2.sets  # one line more per set than the ways hold
    n = l2_lines + extra
    machine = Machine(config, [i * 64 for i in range(n)], implementation=implementation)  # type: ignore[arg-type]
    t = 0
    for line in range(n):
        machine.access(t, line, Op.LOAD)
    state = machine.canonical_state()
    resident = {x for cache_set in state["l2"][0] for x in cache_set}  # type: ignore[index]
    # Line i goes to set i % sets; each set saw ways + 1 lines: exactly its oldest one left.
    assert resident == set(range(extra, n))
    for line in range(extra):
        result = machine.access(t, line, Op.LOAD)
        assert result.access_class == AccessClass.L3_HIT  # the victims went to the L3
    machine.check_invariants()


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_rescan_of_a_set_larger_than_l2_and_l3_pays_remote_dram(implementation: str) -> None:
    config = toy_machine(l2=(4, 2), l3=(8, 2))  # 8 private lines, 16 in the L3; homes on node 0
    n = 40
    machine = Machine(config, [i * 64 for i in range(n)], implementation=implementation)  # type: ignore[arg-type]
    reader = machine.topology.thread_by_name("s1.d0.c0.t0")  # far from node 0
    first = [machine.access(reader, line, Op.LOAD).access_class for line in range(n)]
    again = [machine.access(reader, line, Op.LOAD).access_class for line in range(n)]
    assert set(first) == set(again) == {AccessClass.DRAM_REMOTE}  # LRU keeps nothing of a cycle
    machine.check_invariants()


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_pollution_evicts_lines_and_a_small_footprint_does_not(implementation: str) -> None:
    machine = Machine(toy_machine(l1=(4, 2), l2=(8, 2)), [0, 64], implementation=implementation)  # type: ignore[arg-type]
    machine.access(0, 0, Op.LOAD)
    machine.pollute(0, private_bytes=64)  # one line into one set: the own line survives
    assert machine.access(0, 0, Op.LOAD).access_class in (AccessClass.L1_HIT, AccessClass.L2_HIT)
    machine.pollute(0, private_bytes=8 * 2 * 64 * 2)  # twice the L2
    assert machine.canonical_state()["holders"][0] == []  # type: ignore[index]
    assert machine.access(0, 0, Op.LOAD).access_class == AccessClass.L3_HIT
    machine.check_invariants()


def test_modified_victim_is_written_back_and_served_dirty_from_l3() -> None:
    machine = Machine(toy_machine(l2=(8, 2)), [0], implementation="compiled")
    machine.access(0, 0, Op.STORE)
    machine.pollute(0, private_bytes=8 * 2 * 64 * 2)
    other_socket = machine.topology.thread_by_name("s1.d0.c0.t0")
    # The dirty line now lives in socket 0's L3: a remote reader gets it as a HITM.
    assert machine.access(other_socket, 0, Op.LOAD).access_class == AccessClass.REMOTE_HITM


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_inclusive_l3_eviction_back_invalidates_private_copies(implementation: str) -> None:
    config = toy_machine(inclusion=L3Inclusion.INCLUSIVE, l3=(8, 4), l2=(8, 4))
    machine = Machine(config, [0], implementation=implementation)  # type: ignore[arg-type]
    machine.access(0, 0, Op.LOAD)
    assert machine.canonical_state()["holders"][0] == [0]  # type: ignore[index]
    machine.pollute(0, private_bytes=0, l3_bytes=8 * 4 * 64 * 2)
    assert machine.canonical_state()["holders"][0] == []  # type: ignore[index]
    assert machine.access(0, 0, Op.LOAD).access_class == AccessClass.DRAM_LOCAL
    machine.check_invariants()


def test_victim_l3_hands_unshared_lines_back_to_the_l2() -> None:
    config = toy_machine(inclusion=L3Inclusion.VICTIM, l2=(8, 2))
    machine = Machine(config, [0], implementation="compiled")
    machine.access(0, 0, Op.LOAD)
    machine.pollute(0, private_bytes=8 * 2 * 64 * 2)
    assert machine.access(0, 0, Op.LOAD).access_class == AccessClass.L3_HIT
    l3 = machine.canonical_state()["l3"][0]  # type: ignore[index]
    assert all(entry[0] != 0 for cache_set in l3 for entry in cache_set)


# -- LRU, not FIFO: a line used again survives where a FIFO would evict it -----------------------
# toy_machine(l1=(4, 2), l2=(8, 2)): line key k lives in L1 set k % 4 and L2 set k % 8, 2 ways each.

KEYS = (0, 4, 8, 12, 16)


def _lru_machine(implementation: str) -> tuple[Machine, dict[int, int]]:
    machine = Machine(toy_machine(l1=(4, 2), l2=(8, 2)), [k * 64 for k in KEYS],
                      implementation=implementation)  # type: ignore[arg-type]
    return machine, {k: i for i, k in enumerate(KEYS)}


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_l1_evicts_the_least_recently_used_line_not_the_oldest(implementation: str) -> None:
    m, line = _lru_machine(implementation)
    for key in (0, 4):  # L1 set 0 holds [0, 4]
        m.access(0, line[key], Op.LOAD)
    assert m.access(0, line[0], Op.LOAD).access_class == AccessClass.L1_HIT  # LRU order [4, 0]
    m.access(0, line[8], Op.LOAD)  # evicts 4 (LRU); a FIFO would evict 0
    assert m.access(0, line[0], Op.LOAD).access_class == AccessClass.L1_HIT
    assert m.access(0, line[4], Op.LOAD).access_class == AccessClass.L2_HIT
    m.check_invariants()


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_l2_evicts_the_least_recently_used_line_not_the_oldest(implementation: str) -> None:
    m, line = _lru_machine(implementation)
    for key in (0, 8):  # L2 set 0 holds [0, 8]
        m.access(0, line[key], Op.LOAD)
    for key in (4, 12):  # push 0 and 8 out of L1 set 0 (they stay in L2 set 0)
        m.access(0, line[key], Op.LOAD)
    assert m.access(0, line[0], Op.LOAD).access_class == AccessClass.L2_HIT  # L2 order [8, 0]
    assert m.access(0, line[16], Op.LOAD).access_class == AccessClass.DRAM_LOCAL  # evicts 8
    l2_set0 = {x for x in m.canonical_state()["l2"][0][0] if x >= 0}  # type: ignore[index]
    assert l2_set0 == {line[0], line[16]}  # a FIFO would have kept 8 and dropped 0
    assert m.access(0, line[0], Op.LOAD).access_class == AccessClass.L1_HIT
    assert m.access(0, line[8], Op.LOAD).access_class == AccessClass.L3_HIT  # the L2 victim
    m.check_invariants()
