"""The line service rules on a toy machine, costs computed by hand.

Toy latencies (tests/toy_machines.py): local HITM 45 ns, remote HITM 115 ns with the home on the
holder's socket, atomic 6 ns, L1 1 ns; every line is homed on node 0 (socket 0). ``fifo`` is
today's queue: ownership transfers and reads of a modified line, each occupying the line for
its latency. ``home`` adds service times, queues reads of shared lines, and lets an owner serve
its own accesses until the next transfer's snoop reaches it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simulator.config.machine import LineServiceConfig, MachineConfig
from simulator.errors import ConfigError
from simulator.hardware.codes import AccessClass, Op
from simulator.hardware.machine import Machine, new_counters
from tests.toy_machines import toy_machine

IMPLEMENTATIONS = ["compiled", "reference"]


def _machine(implementation: str, rule: str, *, window: float = 0.0,
             read_modified_remote: float = 0.0, lines: int = 1, overlap: float = 0.0,
             cores_per_domain: int = 2) -> Machine:
    service = ((0.0, 0.0, read_modified_remote), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    config: MachineConfig = dataclasses.replace(
        toy_machine(cores_per_domain=cores_per_domain),
        line_service=LineServiceConfig(rule=rule, owner_window=window, service_ns=service,
                                       transfer_overlap=overlap))
    return Machine(config, [64 * k for k in range(lines)],
                   implementation=implementation)  # type: ignore[arg-type]


def _threads(machine: Machine) -> tuple[int, int, int, int]:
    """Threads on cores s0.c0, s0.c1, s1.c0, s1.c1."""
    names = ("s0.d0.c0.t0", "s0.d0.c1.t0", "s1.d0.c0.t0", "s1.d0.c1.t0")
    a, b, c, d = (machine.topology.thread_by_name(name) for name in names)
    return a, b, c, d


def test_fifo_is_the_default() -> None:
    assert toy_machine().line_service.rule == "fifo"
    assert not toy_machine().line_service.home


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(("rule", "expected_wait"), [("fifo", 0.0), ("home", 400.0 - 115.0)])
def test_a_read_of_a_remote_modified_line_occupies_its_home_for_its_service_time(
        implementation: str, rule: str, expected_wait: float) -> None:
    """s0 writes; s1 reads (remote HITM, 115 ns) at 0; another s1 core's atomic at 115 waits
    for the read's service time (400 ns) under ``home``, not under ``fifo``."""
    machine = _machine(implementation, rule, read_modified_remote=400.0)
    a, _, c, d = _threads(machine)
    machine.access(a, 0, Op.STORE, now=0.0)
    read = machine.access(c, 0, Op.LOAD, now=0.0)
    assert (read.access_class, read.latency_ns, read.wait_ns) == (AccessClass.REMOTE_HITM,
                                                                  115.0, 0.0)
    rmw = machine.access(d, 0, Op.RMW, now=115.0)
    assert rmw.wait_ns == pytest.approx(expected_wait)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(("rule", "expected_wait"), [("fifo", 0.0), ("home", 45.0 - 10.0)])
def test_a_read_of_a_shared_line_queues_under_home(implementation: str, rule: str,
                                                   expected_wait: float) -> None:
    """b reads a's modified line (local HITM 45 ns, booked 0-45); c's core reads the clean
    copy at 10 ns: it waits for b's transfer only under ``home``."""
    machine = _machine(implementation, rule)
    a, b, c, _ = _threads(machine)
    machine.access(a, 0, Op.STORE, now=0.0)
    assert machine.access(b, 0, Op.LOAD, now=0.0).access_class == AccessClass.LOCAL_HITM
    shared = machine.access(c, 0, Op.LOAD, now=10.0)
    assert shared.access_class == AccessClass.REMOTE_HIT
    assert shared.wait_ns == pytest.approx(expected_wait)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_an_owner_serves_its_own_accesses_until_the_next_snoop_arrives(
        implementation: str) -> None:
    """b takes the line from a (booked 0-45); a asks for it back at 10 (booked 45-90): b's
    tenure ends when a's snoop reaches it, 45 + 0.5 x 45 = 67.5 ns, so b hits at 50 and at 67,
    not at 68."""
    machine = _machine(implementation, "home", window=0.5)
    a, b, _, _ = _threads(machine)
    machine.access(a, 0, Op.RMW, now=0.0)  # from DRAM: nobody else held it, no queue
    assert machine.access(b, 0, Op.RMW, now=0.0).latency_ns == 45.0
    taken = machine.access(a, 0, Op.RMW, now=10.0)
    assert (taken.latency_ns, taken.wait_ns) == (45.0, 35.0)  # booked 45-90
    for now in (50.0, 67.0):
        hit = machine.access(b, 0, Op.RMW, now=now)
        assert (hit.access_class, hit.latency_ns, hit.wait_ns) == (AccessClass.L1_HIT, 6.0, 0.0)
    late = machine.access(b, 0, Op.RMW, now=68.0)
    assert late.access_class == AccessClass.LOCAL_HITM
    assert late.wait_ns == pytest.approx(90.0 - 68.0)  # behind a's transfer


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_without_the_home_rule_the_owner_queues(implementation: str) -> None:
    machine = _machine(implementation, "fifo", window=0.5)
    a, b, _, _ = _threads(machine)
    machine.access(a, 0, Op.RMW, now=0.0)
    machine.access(b, 0, Op.RMW, now=0.0)
    machine.access(a, 0, Op.RMW, now=10.0)
    queued = machine.access(b, 0, Op.RMW, now=50.0)
    assert queued.access_class == AccessClass.LOCAL_HITM
    assert queued.wait_ns == pytest.approx(40.0)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_read_tenure_serves_loads_but_not_stores(implementation: str) -> None:
    """b's tenure came from a read (booked 0-45); a's RMW at 10 takes the line (booked 45-90):
    b's load at 50 hits in the window, its store does not."""
    machine = _machine(implementation, "home", window=0.5)
    a, b, _, _ = _threads(machine)
    machine.access(a, 0, Op.STORE, now=0.0)
    machine.access(b, 0, Op.LOAD, now=0.0)
    machine.access(a, 0, Op.RMW, now=10.0)
    assert machine.access(b, 0, Op.LOAD, now=50.0).access_class == AccessClass.L1_HIT
    assert machine.access(b, 0, Op.STORE, now=51.0).access_class == AccessClass.LOCAL_HITM


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_scan_chunk_queues_on_each_line(implementation: str) -> None:
    """Two lines written by a and read by s1 (400 ns of service each, booked from 0): a scan
    of both by another s1 core at 0 waits on each line's own queue, 400 ns per line."""
    machine = _machine(implementation, "home", read_modified_remote=400.0, lines=2)
    a, _, c, d = _threads(machine)
    for line in (0, 1):
        machine.access(a, line, Op.STORE, now=0.0)
        machine.access(c, line, Op.LOAD, now=0.0)
    out = new_counters()
    stall = machine.scan(d, np.array([0, 1], dtype=np.int64), now=0.0, out=out)
    # Each read of c's clean copy: local HIT 40 ns after 400 ns of queueing; stream MLP 4.
    assert stall == pytest.approx(2 * 400.0 + 2 * 40.0 / 4)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(("overlap", "completions"), [
    (0.0, (145.0, 190.0, 235.0)),  # each transfer occupies the line for its 45 ns
    (0.4, (145.0, 172.0, 199.0)),  # 18 ns of each overlaps the one ahead; 27 ns serial
])
def test_queued_transfers_overlap_their_request_legs(
        implementation: str, overlap: float, completions: tuple[float, float, float]) -> None:
    """Three cores of one socket (local HITM 45 ns). a owns the line; b, c and a again ask for
    it at 100 ns, in that order. With ``transfer_overlap`` 0.4 each request reaches the home
    18 ns after its issue and then occupies it for 27 ns: b is booked 118-145, c 145-172, a
    172-199. Each still pays its full 45 ns of latency after its wait (c: 27, a: 54); without
    overlap the line serves them 45 ns apart (145, 190, 235)."""
    machine = _machine(implementation, "home", overlap=overlap, cores_per_domain=3)
    a, b, c = (machine.topology.thread_by_name(f"s0.d0.c{k}.t0") for k in range(3))
    machine.access(a, 0, Op.RMW, now=0.0)  # from DRAM: nobody else held it, no queue
    for thread, done in zip((b, c, a), completions, strict=True):
        result = machine.access(thread, 0, Op.RMW, now=100.0)
        assert result.access_class == AccessClass.LOCAL_HITM
        assert result.latency_ns == 45.0
        assert 100.0 + result.wait_ns + result.latency_ns == pytest.approx(done)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_owner_window_is_a_fraction_of_the_next_transfers_serial_part(
        implementation: str) -> None:
    """As above with overlap 0.4 and window 0.5: c's transfer is booked 145-172, so b, which
    received the line at 145, keeps serving its atomics until 145 + 0.5 x 27 = 158.5 ns."""
    machine = _machine(implementation, "home", overlap=0.4, window=0.5, cores_per_domain=3)
    a, b, c = (machine.topology.thread_by_name(f"s0.d0.c{k}.t0") for k in range(3))
    machine.access(a, 0, Op.RMW, now=0.0)
    machine.access(b, 0, Op.RMW, now=100.0)
    machine.access(c, 0, Op.RMW, now=100.0)
    hit = machine.access(b, 0, Op.RMW, now=158.0)
    assert (hit.access_class, hit.latency_ns, hit.wait_ns) == (AccessClass.L1_HIT, 6.0, 0.0)
    late = machine.access(b, 0, Op.RMW, now=159.0)
    assert late.access_class == AccessClass.LOCAL_HITM
    assert late.wait_ns == 0.0  # its request reaches the home at 177, after c's booking


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_lone_transfer_pays_its_latency_with_any_overlap(implementation: str) -> None:
    """Nothing queued: a remote read and a later remote RMW cost their latencies, no wait."""
    machine = _machine(implementation, "home", overlap=0.6)
    a, _, c, _ = _threads(machine)
    machine.access(a, 0, Op.STORE, now=0.0)
    read = machine.access(c, 0, Op.LOAD, now=1_000.0)
    assert (read.access_class, read.latency_ns, read.wait_ns) == (AccessClass.REMOTE_HITM,
                                                                  115.0, 0.0)
    taken = machine.access(a, 0, Op.RMW, now=2_000.0)
    assert taken.wait_ns == 0.0


def test_the_overlap_does_not_apply_under_fifo() -> None:
    machine = _machine("reference", "fifo", overlap=0.4, cores_per_domain=3)
    a, b, c = (machine.topology.thread_by_name(f"s0.d0.c{k}.t0") for k in range(3))
    machine.access(a, 0, Op.RMW, now=0.0)
    machine.access(b, 0, Op.RMW, now=100.0)
    queued = machine.access(c, 0, Op.RMW, now=100.0)
    assert queued.wait_ns == pytest.approx(45.0)


def test_a_bad_rule_or_window_names_its_key() -> None:
    with pytest.raises(ConfigError, match=r"line_service\.rule"):
        LineServiceConfig(rule="lifo")
    with pytest.raises(ConfigError, match=r"line_service\.owner_window"):
        LineServiceConfig(rule="home", owner_window=1.5)
    for overlap in (-0.1, 1.0):
        with pytest.raises(ConfigError, match=r"line_service\.transfer_overlap"):
            LineServiceConfig(rule="home", transfer_overlap=overlap)
    with pytest.raises(ConfigError, match=r"line_service\.service\.ownership\.remote"):
        LineServiceConfig(service_ns=((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, -1.0)))


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("rule", ["fifo", "home"])
def test_smt_siblings_take_turns_at_the_core_under_home(implementation: str, rule: str) -> None:
    """The two threads of a core alternate atomics on a line the core holds: each waits for the
    other's turn (7 ns) under both rules; under home the turns are kept at the core, so the
    line's queue at its home gets no reservation for them."""
    machine = _machine(implementation, rule)
    t0, t1 = (machine.topology.thread_by_name(f"s0.d0.c0.t{k}") for k in range(2))
    machine.access(t0, 0, Op.RMW, now=0.0)
    first = machine.access(t1, 0, Op.RMW, now=1_000.0)
    second = machine.access(t0, 0, Op.RMW, now=1_000.0)
    assert (first.access_class, first.wait_ns) == (AccessClass.SMT_SIBLING, 0.0)
    assert (second.latency_ns, second.wait_ns) == (7.0, 7.0)
    booked = machine.canonical_state()["calendar"]
    assert isinstance(booked, list)
    assert len(booked[0]) == (0 if rule == "home" else 2)
