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
             cores_per_domain: int = 2, batch: int = 1) -> Machine:
    service = ((0.0, 0.0, read_modified_remote), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    config: MachineConfig = dataclasses.replace(
        toy_machine(cores_per_domain=cores_per_domain),
        line_service=LineServiceConfig(rule=rule, owner_window=window, service_ns=service,
                                       transfer_overlap=overlap, local_batch=batch))
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
    for batch in (0, 1.5, True):
        with pytest.raises(ConfigError, match=r"line_service\.local_batch"):
            LineServiceConfig(rule="home", local_batch=batch)  # type: ignore[arg-type]
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


# ------------------------------------------------------------------ local batching
# Three cores per socket; every line homed on socket 0. a, b, d on socket 0, c on socket 1.
# b takes a's line at 0 (local HITM 45 ns, booked 0-45); c asks at 10 (remote HITM from socket
# 0, home on the holder's side: 115 ns, booked 45-160). Then a asks at 20: first come, first
# served puts it behind c (remote HITM from socket 1, home on a's side: 178 ns, booked
# 160-338); with batching it goes ahead of c, which has not started, and takes the line from b.


def _batch_scene(implementation: str, batch: int, *, window: float = 0.0) -> tuple[
        Machine, tuple[int, int, int, int]]:
    machine = _machine(implementation, "home", cores_per_domain=3, batch=batch, window=window,
                       lines=2)
    a, b, d = (machine.topology.thread_by_name(f"s0.d0.c{k}.t0") for k in range(3))
    c = machine.topology.thread_by_name("s1.d0.c0.t0")
    machine.access(a, 0, Op.RMW, now=0.0)  # from DRAM: nobody else held it, no queue
    assert machine.access(b, 0, Op.RMW, now=0.0).wait_ns == 0.0
    queued = machine.access(c, 0, Op.RMW, now=10.0)
    assert (queued.access_class, queued.latency_ns, queued.wait_ns) == (
        AccessClass.REMOTE_HITM, 115.0, 35.0)
    return machine, (a, b, c, d)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_one_request_at_a_time_is_first_come_first_served(implementation: str) -> None:
    machine, (a, _, _, _) = _batch_scene(implementation, 1)
    late = machine.access(a, 0, Op.RMW, now=20.0)
    assert (late.access_class, late.latency_ns, late.wait_ns) == (
        AccessClass.REMOTE_HITM, 178.0, 140.0)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_request_of_the_socket_in_service_goes_ahead_of_a_waiting_remote_one(
        implementation: str) -> None:
    """a is served right after b, from b's copy (local HITM 45 ns): booked 45-90, a wait of 25.
    c's reservation moves back by a's 45 ns (90-205): the line's occupancy is conserved, and
    c's thread, charged when it booked, owes those 45 ns and pays them before its next
    operation (a load of an unshared line: far DRAM, 130 ns)."""
    machine, (a, _, c, _) = _batch_scene(implementation, 2)
    batched = machine.access(a, 0, Op.RMW, now=20.0)
    assert (batched.access_class, batched.latency_ns, batched.wait_ns) == (
        AccessClass.LOCAL_HITM, 45.0, 25.0)
    calendar = machine.canonical_state()["calendar"]
    assert isinstance(calendar, list)
    assert [(start, end) for start, end, _ in calendar[0]] == [(0.0, 45.0), (45.0, 90.0),
                                                               (90.0, 205.0)]
    owed = machine.access(c, 1, Op.LOAD, now=300.0)
    assert (owed.latency_ns, owed.wait_ns) == (130.0, 45.0)
    assert machine.access(c, 1, Op.LOAD, now=600.0).wait_ns == 0.0


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(("batch", "expected"), [
    # b and a make a run of two: d waits behind c and takes c's copy (remote, 178 ns), booked
    # 205-383; the directory (a, the last to ask, on d's socket) would have said local.
    (2, (AccessClass.REMOTE_HITM, 178.0, 175.0)),
    # a run of three is allowed: d follows a (local, 45 ns) at 90-135; c moves to 135-250.
    (3, (AccessClass.LOCAL_HITM, 45.0, 60.0)),
])
def test_the_batch_bounds_the_run_of_one_socket(
        implementation: str, batch: int, expected: tuple[AccessClass, float, float]) -> None:
    machine, (a, _, _, d) = _batch_scene(implementation, batch)
    machine.access(a, 0, Op.RMW, now=20.0)
    result = machine.access(d, 0, Op.RMW, now=30.0)
    assert (result.access_class, result.latency_ns, result.wait_ns) == expected


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_read_and_its_atomic_stay_together_and_invalidate_the_copies_of_their_turn(
        implementation: str) -> None:
    """a reads at 20 (ahead of c, from b's modified copy: local HITM 45 ns, booked 45-90) and
    issues its CAS when the read completes, at 90, when c's transfer would start: the tie goes
    to the socket in service (a run of three allowed). At its turn the line's other copy is
    b's (c has not received it yet, although the directory already lists c): an upgrade that
    invalidates a local copy, the local clean latency 40 ns, booked 90-130; c moves to
    130-245 and owes 85 ns in all."""
    machine, (a, _, c, _) = _batch_scene(implementation, 3)
    read = machine.access(a, 0, Op.LOAD, now=20.0)
    assert (read.access_class, read.latency_ns, read.wait_ns) == (
        AccessClass.LOCAL_HITM, 45.0, 25.0)
    cas = machine.access(a, 0, Op.RMW, now=90.0)
    assert (cas.access_class, cas.latency_ns, cas.wait_ns) == (AccessClass.UPGRADE, 40.0, 0.0)
    calendar = machine.canonical_state()["calendar"]
    assert isinstance(calendar, list)
    assert [(start, end) for start, end, _ in calendar[0]][-2:] == [(90.0, 130.0),
                                                                    (130.0, 245.0)]
    assert machine.canonical_state()["debt_ns"][c] == 85.0  # type: ignore[index]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_run_of_two_leaves_the_atomic_behind_the_remote_request(implementation: str) -> None:
    """As above with runs of two: b and a's read make the run, so the CAS follows c: an
    upgrade that must invalidate c's copy on socket 1 (remote clean, 170 ns), booked
    205-375."""
    machine, (a, _, _, _) = _batch_scene(implementation, 2)
    machine.access(a, 0, Op.LOAD, now=20.0)
    cas = machine.access(a, 0, Op.RMW, now=90.0)
    assert (cas.access_class, cas.latency_ns, cas.wait_ns) == (AccessClass.UPGRADE, 170.0,
                                                               115.0)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_tenures_move_with_the_reservations(implementation: str) -> None:
    """Window 0.5. b's tenure ends when the next transfer's snoop reaches it: c's at
    45 + 0.5 x 115 = 102.5 before a goes ahead, a's at 45 + 0.5 x 45 = 67.5 after. a holds the
    line until c's moved transfer (90-205) reaches it: 90 + 57.5 = 147.5."""
    machine, (a, b, _, _) = _batch_scene(implementation, 2, window=0.5)
    state = machine.canonical_state()
    assert state["tenure_end"][b][0] == 102.5  # type: ignore[index]
    machine.access(a, 0, Op.RMW, now=20.0)
    state = machine.canonical_state()
    assert state["tenure_end"][b][0] == 67.5  # type: ignore[index]
    assert state["tenure_end"][a][0] == 147.5  # type: ignore[index]
    hit = machine.access(a, 0, Op.RMW, now=147.0)
    assert hit.access_class == AccessClass.L1_HIT
