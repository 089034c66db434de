"""The compiled kernel and the plain-Python reference agree exactly on random traces."""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.config.machine import (
    CoherenceProtocol,
    L3Inclusion,
    LineServiceConfig,
    MachineConfig,
)
from simulator.config.machine_file import load_machine, shipped_machines
from simulator.hardware.codes import OUT_SIZE, Op
from simulator.hardware.coherence.compiled import CompiledCoherence
from simulator.hardware.coherence.reference import ReferenceCoherence
from tests.toy_machines import toy_machine

PROTOCOLS = list(CoherenceProtocol)
INCLUSIONS = list(L3Inclusion)


def _pair(
    machine: MachineConfig, n_lines: int, seed: int
) -> tuple[ReferenceCoherence, CompiledCoherence]:
    rng = np.random.default_rng(seed)
    keys = rng.choice(4 * n_lines + 64, size=n_lines, replace=False).astype(np.int64)
    homes = rng.integers(0, len(machine.memory.home_nodes), size=n_lines)
    return ReferenceCoherence(machine, keys, homes), CompiledCoherence(machine, keys, homes)


def _random_accesses(ref: ReferenceCoherence, comp: CompiledCoherence,
                     rng: np.random.Generator, count: int, n_threads: int, n_lines: int,
                     out_ref: npt.NDArray[np.float64], out_comp: npt.NDArray[np.float64]) -> None:
    """``count`` random accesses by threads ``0..n_threads-1``, the same on both; they agree."""
    for _ in range(count):
        thread = int(rng.integers(0, n_threads))
        line, op = int(rng.integers(0, n_lines)), int(rng.integers(0, 3))
        assert (ref.access(thread, line, op, 1, 0.0, out_ref)
                == comp.access(thread, line, op, 1, 0.0, out_comp))


def _run_trace(machine: MachineConfig, n_lines: int, steps: int, seed: int) -> None:
    ref, comp = _pair(machine, n_lines, seed)
    rng = np.random.default_rng(seed + 1)
    n_threads, n_cores = ref.topology.n_threads, ref.topology.n_cores
    out_ref = np.zeros(OUT_SIZE)
    out_comp = np.zeros(OUT_SIZE)
    now = 0.0
    clock = 0.0
    for step in range(steps):
        clock += float(rng.integers(0, 200))
        # Processes run ahead of the clock by up to a quantum: request times are out of order.
        now = clock + float(rng.integers(0, 600))
        kind = rng.random()
        thread = int(rng.integers(0, n_threads))
        if kind < 0.05:
            core = int(rng.integers(0, n_cores))
            private, l3 = int(rng.integers(0, 40)), int(rng.integers(0, 80))
            ref.pollute(core, private, l3)
            comp.pollute(core, private, l3)
        elif kind < 0.15:
            lines = rng.integers(0, n_lines, size=int(rng.integers(1, 30))).astype(np.int64)
            masks = rng.integers(1, 2**63, size=len(lines)).astype(np.int64)
            op = int(rng.integers(0, 3))
            a = ref.scan(thread, lines, [int(m) for m in masks], op, 3.0, now, out_ref)
            b = comp.scan(thread, lines, masks, op, 3.0, now, out_comp)
            assert a == b, f"scan stall differs at step {step}"
        elif kind < 0.25:
            size = int(rng.integers(1, 6))
            lines = rng.integers(0, n_lines, size=size).astype(np.int64)
            ops = rng.integers(0, 3, size=size).astype(np.int64)
            masks = rng.integers(-2**63, 2**63 - 1, size=size, dtype=np.int64)  # any bit
            got_ref_seq = ref.sequence(thread, lines, ops, masks, now, out_ref)
            got_comp_seq = comp.sequence(thread, lines, ops, masks, now, out_comp)
            assert got_ref_seq == got_comp_seq, f"sequence differs at step {step}"
        else:
            line = int(rng.integers(0, n_lines))
            op = int(rng.integers(0, 3))
            mask = int(rng.integers(1, 2**64, dtype=np.uint64))
            got_ref = ref.access(thread, line, op, mask, now, out_ref)
            got_comp = comp.access(thread, line, op, mask, now, out_comp)
            assert got_ref == got_comp, f"access differs at step {step}: {got_ref} vs {got_comp}"
    np.testing.assert_array_equal(out_ref, out_comp)
    state_ref, state_comp = ref.canonical_state(), comp.canonical_state()
    for key, value in state_ref.items():
        assert value == state_comp[key], f"state '{key}' differs"


@settings(max_examples=25, deadline=None)
@given(
    protocol=st.sampled_from(PROTOCOLS),
    inclusion=st.sampled_from(INCLUSIONS),
    sockets=st.integers(1, 3),
    domains=st.integers(1, 2),
    cores=st.integers(1, 3),
    threads=st.integers(1, 2),
    seed=st.integers(0, 2**31),
    home=st.booleans(),
)
def test_random_machines_and_traces_agree(
    protocol: CoherenceProtocol,
    inclusion: L3Inclusion,
    sockets: int,
    domains: int,
    cores: int,
    threads: int,
    seed: int,
    home: bool,
) -> None:
    machine = toy_machine(
        sockets=sockets,
        domains_per_socket=domains,
        cores_per_domain=cores,
        threads_per_core=threads,
        protocol=protocol,
        inclusion=inclusion,
    )
    if home:
        machine = _home_rule(machine, seed)
    _run_trace(machine, n_lines=48, steps=400, seed=seed)


def _home_rule(machine: MachineConfig, seed: int) -> MachineConfig:
    """The machine under the ``home`` line service rule with random service times, window,
    transfer overlap and arbitration.

    Some service times are below the latencies (the latency then applies), some far above.
    """
    rng = np.random.default_rng(seed)
    choices = [0.0, 30.0, 150.0, 400.0]
    service = tuple((float(rng.choice(choices)), float(rng.choice(choices)),
                     float(rng.choice(choices))) for _ in range(3))
    rule = LineServiceConfig(rule="home", owner_window=float(rng.choice([0.0, 0.3, 1.0])),
                             service_ns=service,
                             transfer_overlap=float(rng.choice([0.0, 0.0, 0.35, 0.9])),
                             local_batch=int(rng.choice([1, 1, 2, 4])))
    return dataclasses.replace(machine, line_service=rule)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_home_rule_on_a_few_hot_lines_agrees(seed: int) -> None:
    """Few lines and many accesses: the calendars fill, merge and the owner window is met."""
    machine = _home_rule(toy_machine(sockets=2, cores_per_domain=3), seed)
    _run_trace(machine, n_lines=3, steps=600, seed=seed)


@pytest.mark.parametrize("name", shipped_machines())
def test_shipped_machines_agree(name: str) -> None:
    _run_trace(load_machine(name), n_lines=300, steps=3000, seed=7)


@pytest.mark.parametrize("name", ["gold5215-2s", "threadripper-3990x"])
@pytest.mark.parametrize("overlap", ["0", "0.3"])
def test_shipped_machines_agree_under_the_home_rule(name: str, overlap: str) -> None:
    config = load_machine(name, ["line_service.rule=home",
                                 f"line_service.transfer_overlap={overlap}"])
    assert config.line_service.home
    assert config.line_service.transfer_overlap == float(overlap)
    _run_trace(config, n_lines=40, steps=3000, seed=9)


@pytest.mark.parametrize("name", ["platinum8168-2s-vm", "opteron-6172-4s"])
@pytest.mark.parametrize("batch", ["2", "6"])
def test_shipped_machines_agree_under_local_batching(name: str, batch: str) -> None:
    """Socket-local batching on few hot lines, many sockets (MESIF and MOESI)."""
    config = load_machine(name, [f"line_service.local_batch={batch}"])
    assert config.line_service.home
    assert config.line_service.local_batch == int(batch)
    _run_trace(config, n_lines=6, steps=3000, seed=13)


@pytest.mark.parametrize("overlap", ["0", "0.3"])
def test_local_batching_in_time_order_agrees(overlap: str) -> None:
    """Requests in time order on two hot lines from every thread of a 4-socket machine: requests
    go ahead of other sockets' (threads owe delays) and both implementations agree."""
    machine = toy_machine(sockets=4, cores_per_domain=3, protocol=CoherenceProtocol.MESIF)
    config = dataclasses.replace(machine, line_service=LineServiceConfig(
        rule="home", owner_window=0.2, transfer_overlap=float(overlap), local_batch=3,
        service_ns=((0.0, 0.0, 150.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))))
    keys = np.arange(2, dtype=np.int64)
    homes = np.zeros(2, dtype=np.int64)
    ref, comp = ReferenceCoherence(config, keys, homes), CompiledCoherence(config, keys, homes)
    rng = np.random.default_rng(17)
    out_ref, out_comp = np.zeros(OUT_SIZE), np.zeros(OUT_SIZE)
    now = 0.0
    owed = 0
    for step in range(4000):
        now += float(rng.integers(0, 25))
        thread, line = int(rng.integers(0, ref.topology.n_threads)), int(rng.integers(0, 2))
        op = int(rng.choice([int(Op.LOAD), int(Op.RMW), int(Op.RMW)]))
        got = ref.access(thread, line, op, 1, now, out_ref)
        assert got == comp.access(thread, line, op, 1, now, out_comp), f"step {step}"
        owed += any(debt > 0.0 for debt in ref.debt_ns)
    assert owed > 100
    np.testing.assert_array_equal(out_ref, out_comp)
    assert ref.canonical_state() == comp.canonical_state()


@pytest.mark.parametrize("private_lines", [511, 512, 1024, 1500])
def test_footprints_around_the_whole_l1_agree_after_each_pollution(private_lines: int) -> None:
    """The kernel writes a whole-L1 footprint's end state directly; the reference replays it.

    gold5215-2s has 64 L1 sets of 8 ways (512 lines): 511 lines take the replayed path, the
    others the direct one. Tracked lines (some modified) sit in the L1s and L2s of two cores
    before every pollution.
    """
    machine = load_machine("gold5215-2s")
    ref, comp = _pair(machine, n_lines=2000, seed=3)
    rng = np.random.default_rng(11)
    out_ref, out_comp = np.zeros(OUT_SIZE), np.zeros(OUT_SIZE)
    for round_ in range(4):
        # threads of two cores, so the footprint meets their lines
        _random_accesses(ref, comp, rng, 600, 4, 2000, out_ref, out_comp)
        core = round_ % 2
        ref.pollute(core, private_lines, 300)
        comp.pollute(core, private_lines, 300)
        assert ref.canonical_state() == comp.canonical_state(), f"round {round_}"
    np.testing.assert_array_equal(out_ref, out_comp)


@pytest.mark.parametrize("inclusion", INCLUSIONS)
def test_a_whole_l1_footprint_that_evicts_tracked_l2_lines_agrees(inclusion: L3Inclusion) -> None:
    """Tracked L2 victims (their spill to the L3 ticks the LRU clock) inside a direct L1 write.

    The toy core's L2 (8 sets of 2 ways) is full of tracked lines, half of them modified, when
    a footprint of 12 lines (more than the 4 x 2 L1) passes: 12 L2 victims in the middle of it,
    then 16 untracked lines through the L3, whose LRU order against the victims' spills shows
    the clock.
    """
    machine = toy_machine(inclusion=inclusion)
    keys = np.arange(24, dtype=np.int64)
    homes = np.zeros(24, dtype=np.int64)
    ref, comp = ReferenceCoherence(machine, keys, homes), CompiledCoherence(machine, keys, homes)
    out_ref, out_comp = np.zeros(OUT_SIZE), np.zeros(OUT_SIZE)
    for line in range(16):
        op = int(Op.STORE) if line % 2 else int(Op.LOAD)
        assert (ref.access(0, line, op, 1, 0.0, out_ref)
                == comp.access(0, line, op, 1, 0.0, out_comp))
    def lines_held_by_core_0() -> int:
        holders = comp.canonical_state()["holders"]
        return sum(1 for cores in holders if 0 in cores)

    assert lines_held_by_core_0() == 16
    ref.pollute(0, 12, 16)  # and one untracked line through every L3 set after them
    comp.pollute(0, 12, 16)
    assert ref.canonical_state() == comp.canonical_state()
    assert lines_held_by_core_0() == 4  # 12 tracked L2 victims: sets 0-3 twice, 4-7 once
    for line in range(24):  # later accesses see the same caches
        assert (ref.access(1, line, int(Op.LOAD), 1, 0.0, out_ref)
                == comp.access(1, line, int(Op.LOAD), 1, 0.0, out_comp))
    np.testing.assert_array_equal(out_ref, out_comp)


@pytest.mark.parametrize("inclusion", INCLUSIONS)
@pytest.mark.parametrize("private_lines", [15, 16, 17, 40])
def test_whole_l2_footprints_agree(inclusion: L3Inclusion, private_lines: int) -> None:
    """The kernel evicts a whole-L2 footprint's tracked victims in the replay's order directly.

    The toy L2 holds 8 sets of 2 ways (16 lines): 15 lines take the replayed path, the others
    the direct one. Both cores' L2s hold tracked lines of every LRU rank (some modified, some
    shared with the other core) and the footprint starts mid-way through the sets, so the
    victims' spills to the L3 come in an order that neither the sets' nor the ranks' order gives
    alone; 8 untracked L3 lines after them show the LRU clock. The L3 has 6 sets, so victims of
    different L2 sets meet in one L3 set and the order of their spills shows.
    """
    machine = toy_machine(inclusion=inclusion, l3=(6, 4))
    keys = np.arange(40, dtype=np.int64)
    homes = np.zeros(40, dtype=np.int64)
    ref, comp = ReferenceCoherence(machine, keys, homes), CompiledCoherence(machine, keys, homes)
    out_ref, out_comp = np.zeros(OUT_SIZE), np.zeros(OUT_SIZE)
    rng = np.random.default_rng(private_lines)
    for round_ in range(3):
        _random_accesses(ref, comp, rng, 60, 4, 40, out_ref, out_comp)
        ref.pollute(round_ % 2, 5, 0)  # moves the footprint's starting set
        comp.pollute(round_ % 2, 5, 0)
        ref.pollute(round_ % 2, private_lines, 8)
        comp.pollute(round_ % 2, private_lines, 8)
        assert ref.canonical_state() == comp.canonical_state(), f"round {round_}"
    for line in range(40):  # later accesses see the same caches
        assert (ref.access(2, line, int(Op.LOAD), 1, 0.0, out_ref)
                == comp.access(2, line, int(Op.LOAD), 1, 0.0, out_comp))
    np.testing.assert_array_equal(out_ref, out_comp)


def test_a_deep_idle_flush_agrees_on_a_shipped_machine() -> None:
    """``flush_private``'s footprint (the L2's size) on gold5215-2s: 1024 sets of 16 ways."""
    machine = load_machine("gold5215-2s")
    ref, comp = _pair(machine, n_lines=3000, seed=5)
    rng = np.random.default_rng(5)
    out_ref, out_comp = np.zeros(OUT_SIZE), np.zeros(OUT_SIZE)
    l2_lines = machine.l2.size_bytes // 64
    for round_ in range(2):
        _random_accesses(ref, comp, rng, 2500, 4, 3000, out_ref, out_comp)
        held = sum(1 for cores in comp.canonical_state()["holders"] if round_ % 2 in cores)
        assert held > 500
        ref.pollute(round_ % 2, l2_lines, 0)
        comp.pollute(round_ % 2, l2_lines, 0)
        assert ref.canonical_state() == comp.canonical_state(), f"round {round_}"
        assert not any(round_ % 2 in cores for cores in comp.canonical_state()["holders"])
    np.testing.assert_array_equal(out_ref, out_comp)
