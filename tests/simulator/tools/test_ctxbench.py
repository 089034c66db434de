"""lmbench ``lat_ctx`` in the simulator (``simulator/tools/ctxbench.py``) on a hand-computed toy."""

from __future__ import annotations

import pytest

from simulator.tools.ctxbench import lat_ctx, one_cpu
from tests.toy_machines import toy_machine

# toy_machine(sockets=1) on one CPU: L2 16 lines (LRU), L3 64 lines non-inclusive, so 80 lines on
# chip; L3 20 ns, DRAM near 90 ns; mlp.stream 4, mlp.indirect 2; context switch 2 us.
MACHINE = toy_machine(sockets=1)
SWITCH_US = 2.0


def test_one_cpu_keeps_the_caches_and_has_one_thread() -> None:
    machine = one_cpu(toy_machine(sockets=2, domains_per_socket=2))
    topology = machine.topology
    assert (topology.sockets, topology.domains_per_socket, topology.cores_per_domain,
            topology.threads_per_core) == (1, 1, 1, 1)
    assert machine.l3 == MACHINE.l3
    assert machine.l2 == MACHINE.l2


def test_a_ring_that_fits_the_chip_refills_from_the_l3() -> None:
    """4 processes x 8 lines = 32 lines: more than the L2 holds (16 lines, the last 2 arrays), all
    on chip: each switch refills 8 lines from the L3, 8 x 20 ns / 4 = 40 ns (streaming)."""
    row = lat_ctx(MACHINE, 0.5, 4, code_lines=0)
    assert row.refill_us == pytest.approx(0.040)
    assert row.switch_us == pytest.approx(SWITCH_US + 0.040)
    assert row.context_switch_us == SWITCH_US
    indirect = lat_ctx(MACHINE, 0.5, 4, code_lines=0, streaming=False)
    assert indirect.refill_us == pytest.approx(8 * 20.0 / 2 / 1e3)  # mlp.indirect


def test_two_arrays_that_fit_the_l2_refill_nothing() -> None:
    row = lat_ctx(MACHINE, 0.25, 2, code_lines=0)  # 2 x 4 lines in a 16-line L2
    assert row.refill_us == 0.0
    assert row.switch_us == pytest.approx(SWITCH_US)


@pytest.mark.parametrize(("rule", "refill_ns"), [
    # 4 x 32 lines = 128 > 80 on chip. LRU: every array from DRAM, 32 x 90 / 4.
    ("lru", 32 * 90.0 / 4),
    # adaptive: the chip keeps 80 / 128 of each array: 20 lines from the L3, 12 from DRAM.
    ("adaptive", (20 * 20.0 + 12 * 90.0) / 4),
])
def test_a_ring_larger_than_the_chip_refills_by_the_rule(rule: str, refill_ns: float) -> None:
    row = lat_ctx(MACHINE, 2.0, 4, code_lines=0, rule=rule)
    assert row.refill_us == pytest.approx(refill_ns / 1e3)
    assert row.switch_us == pytest.approx(SWITCH_US + refill_ns / 1e3)


def test_bad_rows_are_refused() -> None:
    with pytest.raises(ValueError, match="2 processes"):
        lat_ctx(MACHINE, 1.0, 1)
    with pytest.raises(ValueError, match=">= 0 KiB"):
        lat_ctx(MACHINE, -1.0, 2)
    with pytest.raises(ValueError, match="both are 0"):
        lat_ctx(MACHINE, 0.0, 2, code_lines=0)
