"""Scheduler and machine together: a task that migrates finds a cold private cache."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simulator.config.machine_file import load_machine
from simulator.hardware.codes import AccessClass
from simulator.hardware.machine import Machine, new_counters
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.task import Task


def test_migrated_task_rereads_its_lines_from_the_old_core() -> None:
    gold = load_machine("gold5215-2s")
    # Wake-ups without idle exits; one global run queue, so the woken backend, its LLC full,
    # takes the idle thread left on the other socket at once (per-CPU queues would keep it on
    # its previous thread until its holder's slice ends).
    config = replace(gold, idle=None, scheduler=replace(gold.scheduler, run_queues="global"))
    machine = Machine(config, np.arange(64) * 64)
    env = SimEnvironment(seed=0)
    sched = CpuScheduler.from_machine(env, config)
    backend_task = sched.new_task("backend")
    migrations: list[tuple[int, int]] = []
    sched.on_migrate = lambda _task, old, new: migrations.append((old, new))
    before, after = new_counters(), new_counters()
    lines = np.arange(64)

    def backend() -> ProcessGenerator:
        yield from backend_task.run(1_000)
        machine.scan(backend_task.location()[0], lines, now=env.now, out=before)  # warm its caches
        yield from backend_task.block_until(env.timeout(20_000))
        yield from backend_task.run(1_000)
        machine.scan(backend_task.location()[0], lines, now=env.now, out=after)

    def spinner(task: Task) -> ProcessGenerator:
        yield env.timeout(12_000)  # once the backend sleeps, fill all threads but one
        yield from task.run(1e9)

    env.process(backend())
    for index in range(machine.topology.n_threads - 1):
        env.process(spinner(sched.new_task(f"spinner{index}")))
    env.run(until=60_000)
    assert len(migrations) == 1
    old_core, new_core = migrations[0]
    assert old_core != new_core
    assert before[AccessClass.DRAM_LOCAL] + before[AccessClass.DRAM_REMOTE] == 64
    # On the new core no line is in its own caches: every one comes from the old core's.
    assert after[AccessClass.L1_HIT] + after[AccessClass.L2_HIT] == 0
    assert after[AccessClass.LOCAL_HIT] + after[AccessClass.REMOTE_HIT] == 64
