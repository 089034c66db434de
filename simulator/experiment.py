"""Experiments: a grid of points, run through a workload model, gathered into DataFrames.

An :class:`Experiment` is buildable in code (no YAML needed): a machine, the algorithms to compare,
a workload, grids of active and idle clients, the idle kind, the simulated duration and warm-up,
and one root seed. :func:`run` simulates every point of the grid and returns a :class:`Result`
whose ``.curve`` has one row per point and ``.lines`` the per-line tables, both tidy, with the
point's parameters as columns.

Every point has its own seed, derived from the root seed and the point's identity (not its
position in the grid), so a point's result does not depend on which other points are run or in
which order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from simulator.errors import ConfigError
from simulator.machine_config import MachineConfig
from simulator.machine_loader import load_machine
from simulator.plugins import DEFAULT_MODEL, PointSpec, workload_model

if TYPE_CHECKING:
    from matplotlib.axes import Axes

POINT_KEYS = ("machine", "algorithm", "workload", "clients", "idle_clients", "idle_kind", "seed")


@dataclass(frozen=True, slots=True, kw_only=True)
class Experiment:
    """A grid of points to simulate."""

    machine: MachineConfig | str = "gold5215-2s"
    algorithms: tuple[str, ...] = ("pre14", "post14")
    workload: str = "select-only"
    clients: tuple[int, ...] = (1,)
    idle_clients: tuple[int, ...] = (0,)
    idle_kind: str = "idle"
    duration_ms: float = 20.0
    warmup_ms: float = 2.0
    seed: int = 0
    model: str = DEFAULT_MODEL

    def machine_config(self) -> MachineConfig:
        """The machine, loaded if it was given by name or path."""
        if isinstance(self.machine, MachineConfig):
            return self.machine
        return load_machine(self.machine)

    def points(self) -> list[tuple[str, int, int]]:
        """``(algorithm, clients, idle_clients)`` of every point, in grid order."""
        return [(a, c, i) for a in self.algorithms for c in self.clients for i in self.idle_clients]

    def validate(self) -> None:
        """Check names and ranges against the workload model; raise :class:`ConfigError`."""
        model = workload_model(self.model)
        for algorithm in self.algorithms:
            if algorithm not in model.algorithms:
                raise ConfigError("algorithms", f"unknown algorithm {algorithm!r} "
                                  f"(choose from {', '.join(model.algorithms)})")
        if not self.algorithms:
            raise ConfigError("algorithms", "must name at least one algorithm")
        if self.workload not in model.workloads:
            raise ConfigError("workload", f"unknown workload {self.workload!r} "
                              f"(choose from {', '.join(model.workloads)})")
        if self.idle_kind not in model.idle_kinds:
            raise ConfigError("idle_kind", f"unknown idle kind {self.idle_kind!r} "
                              f"(choose from {', '.join(model.idle_kinds)})")
        if not self.clients or any(c < 1 for c in self.clients):
            raise ConfigError("clients", "must be a non-empty list of integers >= 1")
        if not self.idle_clients or any(i < 0 for i in self.idle_clients):
            raise ConfigError("idle_clients", "must be a non-empty list of integers >= 0")
        if not self.duration_ms > 0:
            raise ConfigError("duration_ms", f"must be positive, got {self.duration_ms}")
        if self.warmup_ms < 0:
            raise ConfigError("warmup_ms", f"must not be negative, got {self.warmup_ms}")


def point_seed(root: int, machine: str, algorithm: str, workload: str, clients: int,
               idle_clients: int, idle_kind: str) -> int:
    """A point's seed: a stable function of the root seed and the point's identity."""
    key = f"{root}|{machine}|{algorithm}|{workload}|{clients}|{idle_clients}|{idle_kind}"
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


@dataclass(slots=True)
class Result:
    """The outcome of an experiment."""

    curve: pd.DataFrame
    """One row per point: the point's parameters, ``tps``, latencies, transfers per transaction
    by class, the time breakdown (``share_*``) and more (see the README's column reference)."""
    lines: pd.DataFrame
    """The per-line tables of every point, with the point's parameters as leading columns."""
    experiment: Experiment | None = field(default=None)

    def plot(self, x: str | None = None, ax: Axes | None = None) -> Axes:
        """TPS against idle or active clients (log x), one line per algorithm and client count."""
        from simulator.plotting import plot_tps

        return plot_tps(self.curve, x=x, ax=ax)


def run(experiment: Experiment,
        progress: Callable[[int, int], None] | None = None) -> Result:
    """Simulate every point of an experiment, in grid order, in this process."""
    experiment.validate()
    machine = experiment.machine_config()
    model = workload_model(experiment.model)
    rows: list[dict[str, object]] = []
    line_tables: list[pd.DataFrame] = []
    points = experiment.points()
    for done, (algorithm, clients, idle) in enumerate(points):
        seed = point_seed(experiment.seed, machine.name, algorithm, experiment.workload, clients,
                          idle, experiment.idle_kind)
        spec = PointSpec(machine=machine, algorithm=algorithm, workload=experiment.workload,
                         clients=clients, idle_clients=idle, idle_kind=experiment.idle_kind,
                         duration_ns=experiment.duration_ms * 1e6,
                         warmup_ns=experiment.warmup_ms * 1e6, seed=seed)
        output = model.run_point(spec)
        row = dict(output.row)
        row["seed"] = seed
        rows.append(row)
        lines = output.lines.copy()
        for position, key in enumerate(POINT_KEYS):
            lines.insert(position, key, row[key])  # type: ignore[arg-type]
        line_tables.append(lines)
        if progress is not None:
            progress(done + 1, len(points))
    curve = pd.DataFrame(rows)
    return Result(curve=curve, lines=pd.concat(line_tables, ignore_index=True),
                  experiment=experiment)


def ratio_curve(curve: pd.DataFrame, numerator: str, denominator: str,
                on: Sequence[str] = ("clients", "idle_clients")) -> pd.DataFrame:
    """TPS of one algorithm over another on the same grid."""
    keys = list(on)
    top = curve[curve["algorithm"] == numerator].set_index(keys)["tps"]
    bottom = curve[curve["algorithm"] == denominator].set_index(keys)["tps"]
    ratio = (top / bottom).rename(f"{numerator}/{denominator}")
    return ratio.reset_index().replace([np.inf, -np.inf], np.nan)
