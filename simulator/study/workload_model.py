"""Discovery of workload models (the programs that run on the machine).

``simulator`` knows nothing about PostgreSQL: a workload model registers itself under the entry
point group ``snapsim.models`` (see ``pyproject.toml``) with an object implementing
:class:`WorkloadModel`. :func:`workload_model` loads it by name at run time, so the generic
package never imports the model package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Protocol

import pandas as pd

from simulator.analysis.columns import POINT_KEYS, Columns, columns_for
from simulator.config.machine import MachineConfig
from simulator.errors import ConfigError

ENTRY_POINT_GROUP = "snapsim.models"
DEFAULT_MODEL = "postgres"


@dataclass(frozen=True, slots=True, kw_only=True)
class PointSpec:
    """One point of an experiment, as handed to a workload model."""

    machine: MachineConfig
    algorithm: str
    workload: str
    clients: int
    idle_clients: int
    idle_kind: str
    duration_ns: float
    warmup_ns: float
    seed: int
    options: Mapping[str, object] = field(default_factory=dict)
    """The model's options as returned by :meth:`WorkloadModel.resolve_options`."""
    work_scale: float = 1.0
    """Multiplier of the model's base per-transaction work (``--single-client-tps``)."""
    trace: bool = False
    """Record the scheduler's and the idle states' traces (``snapsim trace``)."""

    def identity(self) -> dict[str, object]:
        """The point's identifying columns, :data:`~simulator.analysis.columns.POINT_KEYS`.

        The machine by its name; the columns every row of the point starts with.
        """
        return {key: self.machine.name if key == "machine" else getattr(self, key)
                for key in POINT_KEYS}


@dataclass(frozen=True, slots=True)
class ModelEstimate:
    """A workload model's coefficients of the memory and wall-time estimate.

    The formula is :mod:`simulator.study.estimate`'s; a model hands its coefficients to it as
    its optional ``estimate_coefficients``.
    """

    lines_fixed: float
    """Cache lines a point tracks whatever its connections (an upper bound over algorithms)."""
    lines_per_client: float
    lines_per_idle: float
    tps_per_client: float
    """Upper bound of one closed-loop client's TPS."""
    busy_thread_share: float
    """At most this many clients per hardware thread run at once."""
    running_idle_tps: float
    """Transactions per second of a connection of an idle kind other than ``idle``."""
    bytes_per_running: float
    """Per connection that runs (an active client, a mostly-idle connection)."""
    bytes_per_idle: float
    bytes_per_transaction: float
    wall_s_per_running: float
    wall_s_per_idle: float
    wall_s_per_transaction: float


@dataclass(frozen=True, slots=True)
class PointOutput:
    """What a model returns for one point: its curve row's results and its per-line table.

    ``row`` and ``lines`` carry results only: the sweep puts the point's identity
    (:meth:`PointSpec.identity`, and its root seed in the curve row) before them (a column of
    the identity that ``row`` repeats is ignored).

    ``traces`` holds the scheduler's recorder tables by name (``scheduler``, ``idle``; see
    :mod:`simulator.runtime.scheduler_stats`) when the spec asked for them, else nothing.
    """

    row: dict[str, object]
    lines: pd.DataFrame
    traces: Mapping[str, pd.DataFrame] = field(default_factory=dict)


class WorkloadModel(Protocol):
    """A workload model: validates names and options and simulates points.

    Optional hooks, called by :meth:`Experiment.check` before any point runs when the model
    has them, each raising :class:`ConfigError`: ``check_workload_options(workload, options)``,
    ``check_algorithm_options(algorithm, options)`` (per algorithm) and
    ``check_experiment_options(algorithms, options)`` (the algorithms run together).

    Optional attributes: ``columns`` and ``column_prefixes``, the unit and meaning of the curve
    columns the model adds (:func:`model_columns`; without them those columns are undocumented
    in ``columns.yaml``), and ``estimate_coefficients`` (a :class:`ModelEstimate`; without it
    :mod:`simulator.study.estimate` uses a generous guess).
    """

    algorithms: tuple[str, ...]
    workloads: tuple[str, ...]
    idle_kinds: tuple[str, ...]
    work_scale_idle_kind: str
    """The idle kind of the single-client work scale's point (which has no idle connection, so
    the kind only enters the point's seed); one of :attr:`idle_kinds`."""

    def resolve_options(self, options: Mapping[str, object],
                        source: str | None = None) -> dict[str, object]:
        """Validate the experiment's ``options`` and return them with every default filled in.

        The result is plain YAML data (it is saved in ``config.resolved.yaml``) and resolving
        it again returns it unchanged. Errors are :class:`ConfigError` with keys relative to
        ``options``.
        """
        ...

    def run_point(self, spec: PointSpec) -> PointOutput:
        """Simulate one point (``spec.options`` resolved, ``spec.work_scale`` applied)."""
        ...


def model_columns(model: WorkloadModel) -> Columns:
    """The generic columns with those ``model`` documents.

    Its optional ``columns`` and ``column_prefixes`` (see :class:`WorkloadModel`).
    """
    return columns_for(getattr(model, "columns", None), getattr(model, "column_prefixes", None))


def available_models() -> list[str]:
    """Names of the installed workload models."""
    return sorted(ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP))


def workload_model(name: str = DEFAULT_MODEL) -> WorkloadModel:
    """Load the workload model registered as ``name``."""
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name == name:
            model: WorkloadModel = entry_point.load()
            return model
    installed = ", ".join(available_models()) or "none (is snapsim installed with pip?)"
    raise ConfigError("model", f"no workload model {name!r} is installed (installed: {installed})")
