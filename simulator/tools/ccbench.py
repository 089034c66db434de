"""Single-line micro-benchmarks of a machine, in the ccbench vocabulary (``snapsim ccbench``).

Each scenario places one line in a chosen state and place, then performs one operation on it
through the simulator and reports the access class and latency it was charged (the method of
``trigonak/ccbench`` and Intel MLC, run on the model instead of the hardware). A hot-line scenario
runs K threads doing atomic increments on one line in SimPy and reports the throughput.

Use it to read a machine file back as numbers, or to check a new machine file: every class the
topology can produce appears once per home relation. The loops of many threads on one line are
:mod:`.contention` (the sweep) and :mod:`.sosp13` (SOSP'13's tests beside their published
figures); what they share, the contention table's columns and the tally of a window, is here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import NamedTuple

from simulator.config.machine import MachineConfig
from simulator.hardware.codes import Op
from simulator.hardware.machine import AccessResult, Machine
from simulator.runtime.engine import ProcessGenerator, SimEnvironment

PAGE = 4096


class Measurement(NamedTuple):
    """One micro-benchmark result."""

    scenario: str
    access_class: str
    value: float
    unit: str


def interleaved(config: MachineConfig) -> MachineConfig:
    """``config``, its memory interleaved by page: line ``i`` is homed on node ``i % n``."""
    memory = dataclasses.replace(config.memory, placement="interleave", interleave_bytes=PAGE)
    return dataclasses.replace(config, memory=memory)


class _Bench:
    """A fresh machine per scenario, one tracked line per page (line i homed on node i % n)."""

    def __init__(self, config: MachineConfig) -> None:
        self.config = interleaved(config)
        self.n_homes = len(config.memory.home_nodes)

    def fresh(self) -> Machine:
        return Machine(self.config, [i * PAGE for i in range(max(2, self.n_homes))])

    def thread(self, machine: Machine, socket: int, domain: int, core: int, smt: int = 0) -> int:
        return machine.topology.thread_by_name(f"s{socket}.d{domain}.c{core}.t{smt}")


def _scenarios(bench: _Bench) -> Iterator[tuple[str, Callable[[Machine], AccessResult]]]:
    topo = bench.config.topology

    def two_ops(
        first: tuple[int, int, int, int],
        op1: Op,
        second: tuple[int, int, int, int],
        op2: Op,
        line: int = 0,
    ) -> Callable[[Machine], AccessResult]:
        def run(m: Machine) -> AccessResult:
            m.access(bench.thread(m, *first), line, op1)
            return m.access(bench.thread(m, *second), line, op2)

        return run

    def cold(reader: tuple[int, int, int, int], line: int) -> Callable[[Machine], AccessResult]:
        return lambda m: m.access(bench.thread(m, *reader), line, Op.LOAD)

    def l1_hit(m: Machine) -> AccessResult:
        m.access(0, 0, Op.LOAD)
        return m.access(0, 0, Op.LOAD)

    def l3_only(m: Machine) -> AccessResult:
        m.access(0, 0, Op.LOAD)
        m.pollute(0, private_bytes=2 * bench.config.l2.size_bytes)
        return m.access(bench.thread(m, 0, 0, 1 % topo.cores_per_domain), 0, Op.LOAD)

    base = (0, 0, 0, 0)
    yield "load, own L1 (hit)", l1_hit
    if topo.cores_per_domain > 1:
        yield "load, clean only in the L3", l3_only
        yield "load from exclusive, same L3 domain", two_ops(base, Op.LOAD, (0, 0, 1, 0), Op.LOAD)
        yield "load from modified, same L3 domain", two_ops(base, Op.STORE, (0, 0, 1, 0), Op.LOAD)
        yield "CAS on modified, same L3 domain", two_ops(base, Op.RMW, (0, 0, 1, 0), Op.RMW)
    if topo.threads_per_core > 1:
        yield "CAS on line owned by the SMT sibling", two_ops(base, Op.RMW, (0, 0, 0, 1), Op.RMW)
    if topo.domains_per_socket > 1:
        yield "load from modified, other L3 domain", two_ops(base, Op.STORE, (0, 1, 0, 0), Op.LOAD)
    for line in range(min(bench.n_homes, 2)):
        if topo.sockets > 1:
            yield (
                f"load from modified, other socket (line homed on node {line})",
                two_ops(base, Op.STORE, (1, 0, 0, 0), Op.LOAD, line),
            )
        yield f"load from DRAM, line homed on node {line}", cold(base, line)


def scenarios(config: MachineConfig) -> list[Measurement]:
    """Run every single-line scenario and the hot-line scenarios on a machine."""
    bench = _Bench(config)
    results = []
    for name, scenario in _scenarios(bench):
        outcome = scenario(bench.fresh())
        results.append(
            Measurement(name, outcome.access_class.name.lower(), outcome.latency_ns, "ns")
        )
    topo = config.topology
    same_domain = [f"s0.d0.c{c}.t0" for c in range(min(4, topo.cores_per_domain))]
    if len(same_domain) > 1:
        results.append(
            Measurement(
                f"hot line, {len(same_domain)} threads in one L3 domain",
                "rmw",
                hot_line_rate(config, same_domain) / 1e6,
                "M ops/s",
            )
        )
    if topo.sockets > 1:
        pair = ["s0.d0.c0.t0", "s1.d0.c0.t0"]
        results.append(
            Measurement(
                "hot line, 2 threads on two sockets",
                "rmw",
                hot_line_rate(config, pair) / 1e6,
                "M ops/s",
            )
        )
    return results


def hot_line_rate(
    config: MachineConfig, thread_names: list[str], duration_ns: float = 100_000.0
) -> float:
    """Atomic increments per second on one line by the named hardware threads."""
    machine = Machine(config, [0])
    env = SimEnvironment(seed=0)
    done = [0]

    def incrementer(thread: int) -> ProcessGenerator:
        while True:
            result = machine.access(thread, 0, Op.RMW, now=env.now)
            yield env.timeout(result.cost_ns)
            if env.now <= duration_ns:
                done[0] += 1

    for name in thread_names:
        env.process(incrementer(machine.topology.thread_by_name(name)))
    env.run(until=duration_ns)
    return done[0] / (duration_ns * 1e-9)



CONTENTION_COLUMNS = (
    "machine", "operation", "placement", "threads", "sockets_used", "domains_used", "cores_used",
    "ops", "ops_per_s", "latency_ns", "wait_ns", "attempts", "failures", "successes",
    "failure_rate", "successes_per_s", "duration_us", "warmup_us",
)
"""Columns of :func:`contention_sweep`, one row per (operation, placement, threads):

- ``sockets_used``, ``domains_used``, ``cores_used``: how far the placed threads spread;
- ``ops``: operations completed in the measured window by all threads together (a successful
  increment for ``cas-loop`` and ``fetch-add``; a load + CAS pair, failed or not, for ``load-cas``);
- ``ops_per_s``: ``ops`` over the window, the line's throughput;
- ``latency_ns``: mean time of one operation as its thread sees it (from its first access to the
  end of its last, retries included), the queueing on the line included;
- ``wait_ns``: the part of ``latency_ns`` spent queueing behind other transfers of the line;
- ``attempts``, ``failures``, ``successes``: the RMWs (a CAS or a fetch-add) of the operations
  counted in ``ops``, those whose CAS failed, and the rest; ``failure_rate`` = failures /
  attempts;
- ``successes_per_s``: value-changing RMWs per second;
- ``duration_us``, ``warmup_us``: the measured window and the time simulated before it.
"""



@dataclasses.dataclass(slots=True)
class Tally:
    """What the measured window saw, summed over threads."""

    ops: int = 0
    latency_ns: float = 0.0
    wait_ns: float = 0.0
    attempts: int = 0
    failures: int = 0


