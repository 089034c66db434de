"""A hot line under the ``fifo`` rule is a queue: K threads doing atomic increments reach about
one op per handoff (the ``home`` rule the machine files select is tested in test_line_service)."""

from __future__ import annotations

import itertools

import pytest

from simulator.config.machine_file import load_machine
from simulator.hardware.codes import CALENDAR_SLOTS, Op
from simulator.hardware.machine import Machine
from simulator.runtime.engine import ProcessGenerator, SimEnvironment

DURATION_NS = 200_000.0
NO_OVERLAP = ["line_service.transfer_overlap=0"]
"""The home rule without pipelined transfers: the queue orders below are hand-computed for it
(the overlap's own are in test_line_service)."""


def hot_line(thread_names: list[str]) -> tuple[float, float]:
    """Run the threads' increment loops; return (ops per second, mean wait per op in ns)."""
    machine = Machine(load_machine("gold5215-2s", ["line_service.rule=fifo"]), [0])
    env = SimEnvironment(seed=1)
    ops = [0]
    waits = [0.0]

    def incrementer(thread: int) -> ProcessGenerator:
        while True:
            result = machine.access(thread, 0, Op.RMW, now=env.now)
            yield env.timeout(result.cost_ns)
            if env.now <= DURATION_NS:
                ops[0] += 1
                waits[0] += result.wait_ns

    for name in thread_names:
        env.process(incrementer(machine.topology.thread_by_name(name)))
    env.run(until=DURATION_NS)
    return ops[0] / (DURATION_NS * 1e-9), waits[0] / ops[0]


def test_inside_a_socket_one_op_per_local_handoff() -> None:
    rate, _ = hot_line([f"s0.d0.c{c}.t0" for c in range(4)])
    handoff_ns = load_machine("gold5215-2s").latency.local_hitm_ns
    assert rate == pytest.approx(1e9 / handoff_ns, rel=0.02)
    # One op per handoff: 1 / the CAS ping-pong latency inside a socket of a 2x Xeon Gold 6242
    # (KCORES core-to-core-latency-plus, about 48 ns), about 20 M ops/s.
    assert rate == pytest.approx(20e6, rel=0.15)


def test_alternating_sockets_one_op_per_remote_handoff() -> None:
    rate, _ = hot_line(["s0.d0.c0.t0", "s1.d0.c0.t0"])
    remote = load_machine("gold5215-2s").latency.remote_hitm
    assert remote is not None
    assert remote.holder is not None
    assert remote.requester is not None
    mean_handoff = (remote.holder + remote.requester) / 2  # the home alternates sides
    assert rate == pytest.approx(1e9 / mean_handoff, rel=0.02)
    # 1 / the CAS ping-pong latency across its sockets (same source, about 140 ns): 7 M ops/s.
    assert rate == pytest.approx(7e6, rel=0.1)


def test_queueing_time_grows_with_the_number_of_threads() -> None:
    waits = [hot_line([f"s0.d0.c{c}.t0" for c in range(k)])[1] for k in (2, 4, 8)]
    assert waits[0] < waits[1] < waits[2]
    handoff = load_machine("gold5215-2s").latency.local_hitm_ns
    # Each op waits for the K - 1 handoffs queued ahead of it.
    assert waits == pytest.approx([handoff * (k - 1) for k in (2, 4, 8)], rel=0.05)


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_out_of_order_request_is_served_first_and_charged_the_delay_it_causes(
        implementation: str) -> None:
    """Processes run ahead of the clock by up to a quantum, so a transfer can be processed
    after one booked for a later time. FIFO by time serves it first: with nothing ahead of it
    it waits only for the shift it imposes on the later transfer (total queueing is the same
    as in time order); with no overlap it does not wait at all."""
    machine = Machine(load_machine("gold5215-2s", NO_OVERLAP), [0], implementation=implementation)  # type: ignore[arg-type]
    a, b, c, d = (machine.topology.thread_by_name(f"s0.d0.c{k}.t0") for k in range(4))
    h = load_machine("gold5215-2s").latency.local_hitm_ns
    machine.access(a, 0, Op.RMW, now=0.0)  # a owns the line
    assert machine.access(b, 0, Op.RMW, now=10_000.0).wait_ns == 0.0  # booked at 10 us
    assert machine.access(c, 0, Op.RMW, now=1_000.0).wait_ns == 0.0  # free at 1 us
    # Issued h/4 before the 10 us transfer: served first, that one would wait 3h/4.
    overlapping = machine.access(d, 0, Op.RMW, now=10_000.0 - h / 4)
    assert overlapping.wait_ns == pytest.approx(0.75 * h)
    # In time order it is a plain FIFO: behind both transfers booked around 10 us.
    behind = machine.access(a, 0, Op.RMW, now=10_000.0 + h / 2)
    assert behind.wait_ns == pytest.approx(1.5 * h)


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_in_order_requests_form_a_fifo_queue(implementation: str) -> None:
    machine = Machine(load_machine("gold5215-2s", NO_OVERLAP), [0], implementation=implementation)  # type: ignore[arg-type]
    threads = [machine.topology.thread_by_name(f"s0.d0.c{c}.t0") for c in range(5)]
    h = load_machine("gold5215-2s").latency.local_hitm_ns
    machine.access(threads[0], 0, Op.RMW, now=0.0)
    waits = [machine.access(t, 0, Op.RMW, now=1_000.0 + k).wait_ns
             for k, t in enumerate(threads[1:])]
    assert waits == pytest.approx([0.0, h - 1, 2 * h - 2, 3 * h - 3])


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_a_queue_longer_than_the_calendar_is_kept_whole(implementation: str) -> None:
    """47 requesters arrive in time order, more than the line's calendar has slots: each still
    waits for every transfer ahead of it (the oldest reservations merge, none is forgotten)."""
    config = load_machine("platinum8168-2s-vm", NO_OVERLAP)
    machine = Machine(config, [0], implementation=implementation)  # type: ignore[arg-type]
    sockets = [[machine.topology.thread_by_name(f"s{s}.d0.c{c}.t0") for c in range(24)]
               for s in range(2)]
    h = config.latency.local_hitm_ns
    machine.access(sockets[0][0], 0, Op.RMW, now=0.0)
    waits = [machine.access(t, 0, Op.RMW, now=1_000.0).wait_ns
             for t in sockets[0][1:] + sockets[1]]
    assert len(waits) > CALENDAR_SLOTS
    assert waits[:23] == pytest.approx([k * h for k in range(23)])
    assert all(later > earlier for earlier, later in itertools.pairwise(waits))


@pytest.mark.parametrize("implementation", ["compiled", "reference"])
def test_smt_siblings_take_turns_on_a_line(implementation: str) -> None:
    """Two threads of one core share its L1 but not the locked operation: the second RMW waits
    for the first, at the sibling latency."""
    config = load_machine("gold5215-2s")
    machine = Machine(config, [0], implementation=implementation)  # type: ignore[arg-type]
    t0, t1 = (machine.topology.thread_by_name(f"s0.d0.c0.t{k}") for k in range(2))
    machine.access(t0, 0, Op.RMW, now=0.0)
    first = machine.access(t1, 0, Op.RMW, now=1_000.0)
    second = machine.access(t0, 0, Op.RMW, now=1_000.0)
    assert first.wait_ns == 0.0
    assert second.latency_ns == pytest.approx(config.latency.smt_sibling_ns)
    assert second.wait_ns == pytest.approx(config.latency.smt_sibling_ns)
