"""lmbench ``lat_ctx`` on a machine file: the model's context switch with a working set.

``lat_ctx -s SIZE N`` (L. McVoy, C. Staelin, "lmbench: Portable tools for performance analysis",
USENIX 1996; the ``lat_ctx(8)`` manual page) passes a token around a ring of ``N`` processes
connected by pipes; each process, on receiving it, sums its private array of ``SIZE`` KiB (an
unrolled loop of about 2.7 thousand instructions, the same text in every process) and passes the
token on. It reports the time per hand-off minus the same work done with hot caches (its
``ovr``): the context switch plus the refill of the caches the other processes' arrays evicted.
Run pinned to one CPU (``taskset -c 0``), that is a refill through one core's L2 and the L3.

:func:`lat_ctx` runs the same ring in the simulator's own scheduler (:mod:`simulator.runtime`)
on a one-CPU copy of a machine, its cache sizes and latencies unchanged (one core can fill
the whole L3 of its socket), each process a task with a private working set of ``SIZE`` KiB,
walked in address order (``streaming``: refilled at ``mlp.stream``), and the loop's code as one
block shared by every task. The work itself is subtracted (taken as 0), so the result is the
machine's ``scheduler.context_switch`` plus the mean refill per switch
(:mod:`simulator.runtime.working_set`); :attr:`CtxResult.refill_us` alone compares with the
published difference between a row of ``SIZE`` KiB and the row of 0 KiB at the same ``N``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import simpy

from simulator.config.machine import (
    LINE_BYTES,
    HomeNodeConfig,
    MachineConfig,
    TopologyConfig,
)
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.working_set import DEFAULT_REFILL_RULE

__all__ = ["LOOP_CODE_LINES", "CtxResult", "lat_ctx", "one_cpu"]

LOOP_CODE_LINES = 160
"""Lines of ``lat_ctx``'s summing loop, shared by the processes: about 2.7 thousand
instructions (``lat_ctx(8)``) at about 4 bytes each, ~10 KiB."""


@dataclass(frozen=True, slots=True)
class CtxResult:
    """One ``lat_ctx`` row on a machine: ``processes`` in the ring, ``size_kib`` each."""

    size_kib: float
    processes: int
    switch_us: float
    """Time per hand-off less the hot work: what ``lat_ctx`` prints (us)."""
    refill_us: float
    """The mean refill per hand-off (us): ``switch_us`` less the machine's context switch."""
    context_switch_us: float
    """The machine's ``scheduler.context_switch`` (us), the 0 KiB row's figure."""


def one_cpu(machine: MachineConfig) -> MachineConfig:
    """``machine`` reduced to one core of one socket with one hardware thread (``taskset -c 0``).

    The caches, latencies and scheduler costs stay; the core keeps its whole L3 (a non-inclusive
    L3 then holds one L2's victims beside it); one memory node, near; no idle states (the ring
    never idles) and no kernel thread.
    """
    memory = dataclasses.replace(
        machine.memory, home_nodes=(HomeNodeConfig(near_domains=(0,)),), placement="node",
        placement_node=0)
    return dataclasses.replace(
        machine,
        topology=TopologyConfig(sockets=1, domains_per_socket=1, cores_per_domain=1,
                                threads_per_core=1),
        memory=memory, idle=None, kernel_thread=None)


def lat_ctx(machine: MachineConfig, size_kib: float, processes: int, *,
            rule: str = DEFAULT_REFILL_RULE, streaming: bool = True, passes: int = 20,
            warmup_passes: int = 3, code_lines: int = LOOP_CODE_LINES) -> CtxResult:
    """The ``lat_ctx -s size_kib processes`` row of ``machine``, pinned to one CPU.

    Args:
        machine: the machine (its caches, ``mlp``, DRAM and ``scheduler.context_switch``).
        size_kib: each process's array (KiB, >= 0).
        processes: processes in the ring (>= 2).
        rule: the chip's replacement rule (:data:`simulator.runtime.working_set.REFILL_RULES`).
        streaming: the arrays refill at ``mlp.stream`` (lmbench sums them in order); ``False``:
            at ``mlp.indirect``, as a working set reached through pointers.
        passes: measured trips of the token around the ring.
        warmup_passes: trips before the measurement (the first one's cold starts).
        code_lines: the summing loop's code, one block shared by the processes (0: none).

    Raises:
        ValueError: fewer than 2 processes, a negative size, or no measured pass.
    """
    if processes < 2:
        raise ValueError(f"lat_ctx needs at least 2 processes, got {processes}")
    if not size_kib >= 0:
        raise ValueError(f"the array size must be >= 0 KiB, got {size_kib!r}")
    lines = round(size_kib * 1024 / LINE_BYTES)
    if lines == 0 and code_lines == 0:
        raise ValueError("lat_ctx needs an array or the loop's code: both are 0")
    if passes < 1 or warmup_passes < 0:
        raise ValueError("lat_ctx needs at least one measured pass (and no negative warm-up)")
    env = SimEnvironment(seed=0)
    sched = CpuScheduler.from_machine(env, one_cpu(machine), refill_rule=rule)
    tasks = [sched.new_task(f"lat_ctx-{i}") for i in range(processes)]
    for task in tasks:
        task.set_working_set(lines, program="lat_ctx", code_lines=code_lines,
                             warm_start=True, streaming=streaming)
    inboxes: list[simpy.Event] = [env.event() for _ in range(processes)]
    start_hop = warmup_passes * processes
    end_hop = start_hop + passes * processes
    hops = 0
    marks: dict[str, float] = {}
    done = env.event()

    def body(index: int) -> ProcessGenerator:
        nonlocal hops
        task = tasks[index]
        following = tasks[(index + 1) % processes]
        if index == 0:
            yield from task.run(0.0)  # holds the token first
        else:
            yield from task.block_until(inboxes[index])
            inboxes[index] = env.event()
        while True:
            yield from task.run(0.0)  # the sum, subtracted as lat_ctx subtracts its ovr
            if hops == start_hop:
                marks["start"] = env.now
                marks["refill"] = sched.stats.refill_ns
            hops += 1
            if hops == end_hop + 1:
                marks["end"] = env.now
                marks["refill_end"] = sched.stats.refill_ns
                done.succeed()
                return
            task.wakes(following)
            inboxes[(index + 1) % processes].succeed()
            yield from task.block_until(inboxes[index])
            inboxes[index] = env.event()

    bodies = [body(i) for i in range(processes)]
    running = [(env.process(generator), generator) for generator in bodies]
    env.run(until=done)
    env.close(running)
    switches = end_hop - start_hop
    per_switch_ns = (marks["end"] - marks["start"]) / switches
    refill_ns = (marks["refill_end"] - marks["refill"]) / switches
    return CtxResult(size_kib=size_kib, processes=processes, switch_us=per_switch_ns / 1e3,
                     refill_us=refill_ns / 1e3,
                     context_switch_us=machine.scheduler.context_switch_ns / 1e3)
