"""Toy machines and task bodies shared by the CPU scheduler's tests."""

from __future__ import annotations

from simulator.config.machine import SchedulerConfig, TopologyConfig
from simulator.hardware.topology import Topology
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.task import Task

MS = 1_000_000.0
US = 1_000.0


def make(
    shape: tuple[int, int, int, int] = (1, 1, 1, 1),
    *,
    time_slice_ns: float = MS,
    context_switch_ns: float = 10 * US,
    wakeup_ns: float = 0.0,
    ipi_exit_ns: float = 0.0,
    smt_throughput: float = 1.0,
    smt_throughput_high_ipc: float | None = None,
    virtualized: bool = False,
    trace: bool = False,
    policy: str = "cfs",
    sleeper_credit_ns: float = 12 * MS,
    run_queues: str = "per_cpu",
    wakeup_granularity_ns: float = 4 * MS,
    migration_cost_ns: float = 0.5 * MS,
    balance_interval_ns: float = 4 * MS,
    first_placement: str = "spread",
) -> tuple[SimEnvironment, CpuScheduler]:
    sockets, domains, cores, threads = shape
    topology = Topology.from_config(
        TopologyConfig(
            sockets=sockets,
            domains_per_socket=domains,
            cores_per_domain=cores,
            threads_per_core=threads,
        )
    )
    config = SchedulerConfig(
        time_slice_ns=time_slice_ns,
        context_switch_ns=context_switch_ns,
        wakeup_ns=wakeup_ns,
        ipi_exit_ns=ipi_exit_ns,
        smt_throughput=smt_throughput,
        smt_throughput_high_ipc=smt_throughput_high_ipc,
        policy=policy,
        sleeper_credit_ns=sleeper_credit_ns,
        run_queues=run_queues,
        wakeup_granularity_ns=wakeup_granularity_ns,
        migration_cost_ns=migration_cost_ns,
        balance_interval_ns=balance_interval_ns,
        first_placement=first_placement,
    )
    env = SimEnvironment(seed=0)
    return env, CpuScheduler(env, topology, config, virtualized, trace=trace)


def spin(task: Task, work_ns: float = 1e15) -> ProcessGenerator:
    while True:
        yield from task.run(work_ns)


def hold(env: SimEnvironment, task: Task, start: float, stop: float) -> ProcessGenerator:
    """Occupy a thread (placed by the scheduler at ``start``) until ``stop``, then release it."""
    yield env.timeout(start)
    yield from task.run(0)
    yield env.timeout(stop - env.now)
    task.release()


def accounted(task: Task) -> float:
    return (task.cpu_ns + task.stall_ns + task.runqueue_wait_ns + task.wakeup_ns
            + task.context_switch_ns + task.refill_ns)

