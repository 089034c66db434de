"""The PostgreSQL workload model as seen by :mod:`simulator` (entry point ``snapsim.models``)."""

from __future__ import annotations

from models.point import IDLE_KINDS, PointConfig, run_point
from models.snapshots import ALGORITHMS
from models.workloads import WORKLOADS
from simulator.plugins import PointOutput, PointSpec


class PostgresModel:
    """PostgreSQL's snapshot algorithms and pgbench workloads."""

    algorithms: tuple[str, ...] = tuple(ALGORITHMS)
    workloads: tuple[str, ...] = WORKLOADS
    idle_kinds: tuple[str, ...] = IDLE_KINDS

    def run_point(self, spec: PointSpec) -> PointOutput:
        """Simulate one point with the global cost model."""
        result = run_point(PointConfig(
            machine=spec.machine, algorithm=spec.algorithm, workload=spec.workload,
            clients=spec.clients, idle_clients=spec.idle_clients, idle_kind=spec.idle_kind,
            duration_ns=spec.duration_ns, warmup_ns=spec.warmup_ns, seed=spec.seed))
        return PointOutput(row=result.row, lines=result.lines)


MODEL = PostgresModel()
