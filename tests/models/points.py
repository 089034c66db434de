"""Simulated points for the model's tests: a point's spec and options from keyword arguments.

:func:`point` builds what :func:`snapsim_models.point.run_point` takes, the point
(:class:`~simulator.study.workload_model.PointSpec`) and the model's options
(:class:`~snapsim_models.options.PgOptions`, the defaults of :func:`resolve_options` with the
given fields replaced), so a test names only what it varies.
"""

from __future__ import annotations

import dataclasses
import functools

from simulator.config.machine import MachineConfig
from simulator.study.workload_model import PointSpec
from snapsim_models.options import PgOptions, parse_options, resolve_options
from snapsim_models.point import PointResult, run_point


@functools.cache
def default_options() -> PgOptions:
    """The model's options with every default (the shipped cost model)."""
    return parse_options(resolve_options({}))


def point(machine: MachineConfig, algorithm: str, *, workload: str = "select-only",
          clients: int = 1, idle_clients: int = 0, idle_kind: str = "idle",
          duration_ns: float = 20e6, warmup_ns: float = 2e6, seed: int = 0, trace: bool = False,
          precision: float | None = None, max_duration_ns: float | None = None,
          **options: object) -> tuple[PointSpec, PgOptions]:
    """A point and its options; ``options`` are fields of :class:`PgOptions` to replace."""
    spec = PointSpec(machine=machine, algorithm=algorithm, workload=workload, clients=clients,
                     idle_clients=idle_clients, idle_kind=idle_kind, duration_ns=duration_ns,
                     warmup_ns=warmup_ns, seed=seed, trace=trace, precision=precision,
                     max_duration_ns=max_duration_ns)
    return spec, dataclasses.replace(default_options(), **options)  # type: ignore[arg-type]


def simulate(machine: MachineConfig, algorithm: str, **settings: object) -> PointResult:
    """Run :func:`point`'s point (``settings``: its keyword arguments)."""
    return run_point(*point(machine, algorithm, **settings))  # type: ignore[arg-type]
