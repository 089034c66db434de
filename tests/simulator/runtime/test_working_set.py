"""Private working sets: refills on toy machines, the LRU stacks against the coherence kernel."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.config.machine import (
    IdleConfig,
    IdleStateConfig,
    L3Inclusion,
    MachineConfig,
)
from simulator.hardware.codes import Op
from simulator.hardware.machine import Machine
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.working_set import WorkingSets
from tests.toy_machines import toy_machine

US = 1_000.0
# toy_machine: L3 20 ns, local HIT 40, cross-domain HIT 80 (home near both), remote HIT 120
# (home near the holder), DRAM near 90 / far 130, mlp.indirect 2; L2 8 sets x 2 ways = 16
# lines, L3 16 x 4 = 64 lines.
MLP = 2.0


def sets(machine: MachineConfig | None = None, rule: str = "lru") -> WorkingSets:
    """The working sets of a toy machine; the chip LRU unless ``rule`` says otherwise (the tests
    below check the LRU chip's exact evictions; the adaptive rule has its own tests at the end)."""
    return WorkingSets(machine or toy_machine(sockets=2, domains_per_socket=2), rule=rule)


def test_staying_warm_on_a_core_costs_nothing() -> None:
    ws = sets()
    block = ws.new(8)
    assert ws.start(block, 0) == pytest.approx(8 * 90.0 / MLP)  # first run: from memory
    assert ws.start(block, 0) == 0.0
    assert ws.resident(block, 0) == 8


def test_a_migration_refills_every_line_at_the_transfer_latency_between_the_cores() -> None:
    ws = sets()  # 2 sockets x 2 domains x 2 cores: cores 0-1 domain 0, 2-3 domain 1, 4-7 socket 1
    block = ws.new(8)
    ws.start(block, 0)
    assert ws.start(block, 1) == pytest.approx(8 * 40.0 / MLP)  # same domain: local HIT
    assert ws.resident(block, 0) == 0
    assert ws.resident(block, 1) == 8
    assert ws.start(block, 2) == pytest.approx(8 * 80.0 / MLP)  # other domain: cross-domain
    assert ws.start(block, 4) == pytest.approx(8 * 120.0 / MLP)  # other socket: remote HIT
    assert ws.start(block, 4) == 0.0


def test_a_flushed_core_refills_from_the_l3_and_an_evicted_chip_from_dram() -> None:
    ws = sets(toy_machine(sockets=1))
    block = ws.new(8)
    ws.start(block, 0)
    ws.flush(0)
    assert ws.resident(block, 0) == 0
    assert ws.start(block, 0) == pytest.approx(8 * 20.0 / MLP)  # written back to the L3
    # A block the size of the domain's chip (L3 + both L2s, non-inclusive) evicts it from the
    # chip; after a flush of its core, its lines come from DRAM (near: its first domain).
    assert ws.on_chip_lines == 64 + 2 * 16
    other = ws.new(ws.on_chip_lines)
    ws.start(other, 1)
    ws.flush(0)
    assert ws.start(block, 0) == pytest.approx(8 * 90.0 / MLP)


def test_an_inclusive_l3_holds_only_its_own_size_on_chip() -> None:
    ws = sets(toy_machine(sockets=1, inclusion=L3Inclusion.INCLUSIVE))
    assert ws.on_chip_lines == 64


def test_other_blocks_on_the_core_evict_the_least_recent_lines_first() -> None:
    ws = sets(toy_machine(sockets=1))
    first, second = ws.new(10), ws.new(10)
    ws.start(first, 0)
    ws.start(second, 0)
    assert ws.resident(first, 0) == 16 - 10  # LRU: the 16-line L2 keeps the newest 16 lines
    assert ws.resident(second, 0) == 10
    # The 4 lines lost are in the L3.
    assert ws.start(first, 0) == pytest.approx(4 * 20.0 / MLP)
    assert ws.resident(second, 0) == 6


def test_a_working_set_larger_than_the_l2_keeps_what_fits() -> None:
    ws = sets(toy_machine(sockets=1))
    block = ws.new(20)
    ws.start(block, 0)
    assert ws.resident(block, 0) == 16
    assert ws.start(block, 0) == pytest.approx(4 * 20.0 / MLP)


def test_a_working_set_must_have_lines() -> None:
    with pytest.raises(ValueError, match="positive number of lines"):
        sets().new(0)
    with pytest.raises(ValueError, match="non-negative number of lines"):
        sets().new(-1, sets().shared("postgres", 4))


def test_tasks_of_one_program_share_its_code_and_a_migration_moves_only_private_lines() -> None:
    ws = sets(toy_machine(sockets=1))
    code = ws.shared("postgres", 8)
    assert ws.shared("postgres", 8) is code
    first, second = ws.new(4, code), ws.new(4, code)
    assert ws.start(first, 0) == pytest.approx((8 + 4) * 90.0 / MLP)  # all from memory
    assert ws.start(second, 0) == pytest.approx(4 * 90.0 / MLP)  # the code is on the core
    assert ws.start(first, 0) == 0.0  # both blocks still whole on core 0 (16 lines)
    # On core 1 the code comes from the domain's chip; the private lines from core 0's L2.
    assert ws.start(first, 1) == pytest.approx(8 * 20.0 / MLP + 4 * 40.0 / MLP)
    assert ws.resident(code, 0) == 8  # core 0 keeps its copy of the code
    assert ws.start(second, 1) == pytest.approx(4 * 40.0 / MLP)


def test_a_program_has_one_code_size() -> None:
    ws = sets()
    ws.shared("pgbench", 4)
    with pytest.raises(ValueError, match="has 4 lines of code, not 5"):
        ws.shared("pgbench", 5)


# ------------------------------------------------------------------ against the coherence kernel

def kernel_survivors(config: MachineConfig, lines: int, passed: int) -> int:
    """Touch ``lines`` tracked lines on core 0, pass ``passed`` other lines, count those held."""
    machine = Machine(config, [64 * i for i in range(lines)], implementation="reference")
    for line in range(lines):
        machine.access(0, line, Op.LOAD)
    machine.pollute(0, passed * 64)
    return sum(machine.holds(0, line) for line in range(lines))


def analytic_survivors(config: MachineConfig, lines: int, passed: int) -> int:
    ws = WorkingSets(config)
    block, other = ws.new(lines), ws.new(passed)
    ws.start(block, 0)
    ws.start(other, 0)
    return ws.resident(block, 0)


@pytest.mark.parametrize("lines", [32, 100, 256, 400])
@pytest.mark.parametrize("passed", [64, 128, 200, 300, 450, 512])
def test_lru_stack_distance_matches_the_kernel_within_one_line_per_set(lines: int,
                                                                       passed: int) -> None:
    """The stacks' eviction against the kernel's LRU sets (a 64-set, 8-way, 512-line L2).

    Tolerance: 8 lines (1.6 % of the L2; the footprint and the working set cross the sets
    unevenly when their sizes are not multiples of the sets: 2 lines at most on this grid). A
    random-replacement form, ``lines * exp(-passed / 512)``, would miss by up to 150 lines here
    (every line survives a footprint that fits beside it in an LRU cache).
    """
    config = toy_machine(sockets=1, l1=(8, 2), l2=(64, 8), l3=(256, 8))
    kernel = kernel_survivors(config, lines, passed)
    analytic = analytic_survivors(config, lines, passed)
    assert abs(kernel - analytic) <= 8
    if lines % 64 == 0 and passed % 64 == 0:
        assert kernel == analytic


# ------------------------------------------------------------------ in the scheduler

def global_queue(machine: MachineConfig) -> MachineConfig:
    return dataclasses.replace(machine, scheduler=dataclasses.replace(
        machine.scheduler, run_queues="global"))


def test_a_task_moved_to_the_other_socket_pays_its_refill_before_its_work() -> None:
    machine = global_queue(toy_machine(sockets=2, cores_per_domain=1, threads_per_core=1))
    env = SimEnvironment(seed=0)
    sched = CpuScheduler.from_machine(env, machine)
    mover, squatter = sched.new_task("mover"), sched.new_task("squatter")
    mover.set_working_set(8)
    done: list[float] = []

    def move() -> ProcessGenerator:
        yield from mover.run(1 * US)  # core 0 (the lowest idle core)
        yield from mover.block_until(env.timeout(10 * US))
        yield from mover.run(1 * US)  # core 0 is taken: core 1, the other socket
        done.append(env.now)

    def squat() -> ProcessGenerator:
        yield env.timeout(8 * US)
        yield from squatter.run(100 * US)  # wakes on core 0, idle since the mover blocked

    env.process(move())
    env.process(squat())
    env.run(until=200 * US)
    first = 8 * 90.0 / MLP  # the first run: from memory, near
    refill = 8 * 120.0 / MLP  # home near core 0's socket: the holder-home remote HIT
    assert mover.migrations == 1
    assert mover.refills == 2
    assert mover.refill_ns == pytest.approx(first + refill)
    assert sched.stats.refills == 2
    assert sched.stats.refill_ns == pytest.approx(first + refill)
    wakeup = machine.scheduler.wakeup_ns
    # wake-up, first refill, 1 us, blocked until 10 us later + wake-up, the refill and 1 us.
    assert done == [pytest.approx(wakeup + first + 1 * US + 10 * US + wakeup + refill + 1 * US)]
    assert mover.scheduling_ns == pytest.approx(mover.wakeup_ns + first + refill)


def test_a_task_without_a_working_set_never_refills() -> None:
    machine = global_queue(toy_machine(sockets=2, cores_per_domain=1, threads_per_core=1))
    env = SimEnvironment(seed=0)
    sched = CpuScheduler.from_machine(env, machine)
    task = sched.new_task("plain")
    assert task.working_set_lines == 0

    def body() -> ProcessGenerator:
        yield from task.run(1 * US)

    env.process(body())
    env.run()
    assert task.refills == 0
    assert sched.stats.refills == 0


def test_a_core_level_idle_state_flushes_the_working_sets_of_its_core() -> None:
    c6 = IdleStateConfig("C6", 133 * US, 600 * US, 92 * US, core_scope=True)
    machine = dataclasses.replace(toy_machine(sockets=1, cores_per_domain=1, threads_per_core=1),
                                  idle=IdleConfig(wake="mwait", governor="menu", states=(c6,)))
    env = SimEnvironment(seed=0)
    sched = CpuScheduler.from_machine(env, machine)
    task = sched.new_task("sleeper")
    task.set_working_set(8)

    def body() -> ProcessGenerator:
        yield from task.run(1 * US)
        yield from task.block_until(env.timeout(10 * US))  # its core enters C6 meanwhile
        yield from task.run(1 * US)

    env.process(body())
    env.run()
    assert sched.stats.private_flushes >= 1
    assert task.migrations == 0
    # The first run from memory, then, after the flush, from the L3.
    assert task.refill_ns == pytest.approx(8 * 90.0 / MLP + 8 * 20.0 / MLP)


def test_set_working_set_rejects_bad_sizes_and_late_calls() -> None:
    env = SimEnvironment(seed=0)
    sched = CpuScheduler.from_machine(env, toy_machine(sockets=1))
    task = sched.new_task("t")
    with pytest.raises(ValueError, match="non-negative number of lines"):
        task.set_working_set(-1)

    def body() -> ProcessGenerator:
        yield from task.run(1 * US)

    env.process(body())
    env.run()
    with pytest.raises(RuntimeError, match="before it first runs"):
        task.set_working_set(4)


def run_hot_scenario(working_set: bool) -> tuple[CpuScheduler, list[float], int]:
    """H runs on core 0 and sleeps; S takes core 0, X core 1; H wakes into core 0's queue; at
    100 us X leaves core 1 idle. Returns the scheduler, when H ran again, and H's migrations."""
    machine = toy_machine(sockets=1, cores_per_domain=2, threads_per_core=1)
    env = SimEnvironment(seed=0)
    sched = CpuScheduler.from_machine(env, machine)
    hot, spinner, other = (sched.new_task(name) for name in ("hot", "spinner", "other"))
    if working_set:
        hot.set_working_set(4)
    again: list[float] = []

    def run_hot() -> ProcessGenerator:
        yield from hot.run(1 * US)  # core 0
        yield from hot.block_until(env.timeout(10 * US))  # both cores taken when it wakes
        again.append(env.now)
        yield from hot.run(1 * US)

    def spin() -> ProcessGenerator:
        yield env.timeout(7 * US)
        yield from spinner.run(10_000 * US)  # core 0, a 1 ms slice

    def leave_at_100_us() -> ProcessGenerator:
        yield env.timeout(8 * US)
        yield from other.run(87 * US)  # core 1 from 13 us (its wake-up) to 100 us
        other.release()

    for body in (run_hot(), spin(), leave_at_100_us()):
        env.process(body)
    env.run(until=3_000 * US)
    return sched, again, hot.migrations


def test_balancing_leaves_a_cache_hot_task_with_a_working_set_where_it_is() -> None:
    """Linux's ``task_hot``: a queued task that left a CPU less than the migration cost (0.5 ms)
    ago stays in its queue when another thread goes idle; without a working set it moves."""
    sched, again, migrations = run_hot_scenario(working_set=False)
    assert sched.stats.newidle_pulls == 1
    assert migrations == 1
    assert again[0] < 200 * US  # pulled to core 1 when it went idle
    sched, again, migrations = run_hot_scenario(working_set=True)
    assert sched.stats.newidle_pulls == 0
    assert migrations == 0
    assert again[0] > 1_000 * US  # on core 0, when the spinner's slice ended


def test_a_warm_start_pays_nothing_at_first_and_the_same_as_a_cold_one_after() -> None:
    """A busy task that ran before the window starts whole on its first core, code included;
    from then on it refills like any other."""
    ws = sets(toy_machine(sockets=1))
    code = ws.shared("postgres", 8)
    warm, cold = ws.new(4, code, warm_start=True), ws.new(4, code)
    assert ws.start(warm, 0) == 0.0
    assert ws.resident(warm, 0) == 4
    assert ws.resident(code, 0) == 8
    assert ws.start(cold, 0) == pytest.approx(4 * 90.0 / MLP)  # the code is on the core
    assert ws.start(warm, 0) == 0.0  # both blocks still whole on core 0 (16 lines)
    # On core 1 the code comes from the domain's chip; the private lines from core 0's L2.
    assert ws.start(warm, 1) == pytest.approx(8 * 20.0 / MLP + 4 * 40.0 / MLP)


# -- the adaptive (thrash-resistant) chip ---------------------------------------------------------


def test_the_adaptive_chip_keeps_the_capacity_share_of_a_loop_larger_than_itself() -> None:
    """A loop of 4 blocks of 48 lines on one core: the footprint 192 lines exceeds the chip's 96
    (L3 64 + two L2s of 16): LRU refills every block from DRAM, the adaptive rule keeps
    96 / 192 of each block on chip (the L2 of 16 lines holds nothing of a block 3 blocks back)."""
    machine = toy_machine(sockets=1)
    for rule, on_chip in (("lru", 0.0), ("adaptive", 48 * 96 / 192)):
        ws = sets(machine, rule)
        blocks = [ws.new(48) for _ in range(4)]
        for block in blocks:  # first runs
            ws.start(block, 0)
        refill = ws.start(blocks[0], 0)
        assert refill == pytest.approx((on_chip * 20.0 + (48 - on_chip) * 90.0) / MLP), rule


def test_the_adaptive_chip_keeps_a_loop_that_fits_whole() -> None:
    ws = sets(toy_machine(sockets=1), "adaptive")
    blocks = [ws.new(20) for _ in range(4)]  # 80 lines <= 96 on chip; the L2 (16) holds none
    for block in blocks:
        ws.start(block, 0)
    assert ws.start(blocks[0], 0) == pytest.approx(20 * 20.0 / MLP)  # all from the L3


def test_a_streaming_working_set_refills_at_the_stream_overlap() -> None:
    machine = toy_machine(sockets=1)
    ws = sets(machine, "adaptive")
    block = ws.new(8, streaming=True)
    assert ws.start(block, 0) == pytest.approx(8 * 90.0 / machine.mlp.stream)


def test_the_random_chip_keeps_a_share_that_solves_the_steady_state() -> None:
    """Random replacement, a loop of F = 2 C: a block keeps h = exp(-(N - 1) W (1 - h) / C) of
    itself; with 8 blocks of 24 lines on a 96-line chip, h = exp(-1.75 (1 - h)): h = 0.367
    (and the L2 of 16 lines holds nothing of a block 7 blocks back)."""
    import math

    ws = sets(toy_machine(sockets=1), "random")
    blocks = [ws.new(24) for _ in range(8)]
    for _ in range(60):  # to the steady state
        for block in blocks:
            ws.start(block, 0)
    h = 0.5
    for _ in range(200):
        h = math.exp(-1.75 * (1 - h))
    refill = ws.start(blocks[0], 0)
    assert refill == pytest.approx((24 * h * 20.0 + 24 * (1 - h) * 90.0) / MLP, rel=0.02)


def test_an_unknown_refill_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="refill rule"):
        sets(rule="fifo")
