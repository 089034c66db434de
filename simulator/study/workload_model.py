"""Discovery of workload models (the programs that run on the machine).

``simulator`` knows nothing about PostgreSQL: a workload model registers itself under the entry
point group ``snapsim.models`` (see ``pyproject.toml``) with an instance of a subclass of
:class:`WorkloadModelBase`. :func:`workload_model` loads it by name at run time, so the generic
package never imports the model package.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from types import MappingProxyType

import pandas as pd

from simulator.analysis.columns import POINT_KEYS, ColumnMeanings, Columns, columns_for
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
    """The model's options as returned by :meth:`WorkloadModelBase.resolve_options`."""
    work_scale: float = 1.0
    """Multiplier of the model's base per-transaction work (``--single-client-tps``)."""
    trace: bool = False
    """Record the scheduler's and the idle states' traces (``snapsim trace``)."""
    precision: float | None = None
    """Grow the window until the 95 % interval of the TPS is within this fraction of it
    (``None``: the fixed window ``[warmup_ns, warmup_ns + duration_ns)``)."""
    max_duration_ns: float | None = None
    """A growing window's cap (``None``: ``duration_ns``)."""

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
    its ``estimate_coefficients``.
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


class WorkloadModelBase(ABC):
    """A workload model: validates names and options and simulates points.

    A model subclasses it, sets the four names below and implements :meth:`resolve_options` and
    :meth:`run_point`. The rest is optional, with defaults that do nothing: the checks
    :meth:`Experiment.check <simulator.study.experiment.Experiment.check>` calls before any
    point runs, the columns' units and meanings, the estimate's coefficients and the check of a
    file of the model's own.
    """

    algorithms: tuple[str, ...]
    workloads: tuple[str, ...]
    idle_kinds: tuple[str, ...]
    work_scale_idle_kind: str
    """The idle kind of the single-client work scale's point (which has no idle connection, so
    the kind only enters the point's seed); one of :attr:`idle_kinds`."""
    columns: ColumnMeanings = MappingProxyType({})
    """The unit and meaning of each curve column the model adds (:func:`model_columns`; a column
    not here is undocumented in ``columns.yaml``)."""
    column_prefixes: ColumnMeanings = MappingProxyType({})
    """The same for curve columns named by a prefix and a name (``{name}`` in the meaning)."""
    estimate_coefficients: ModelEstimate | None = None
    """The coefficients of the memory and wall-time estimate (``None``:
    :mod:`simulator.study.estimate` uses a generous guess)."""

    @abstractmethod
    def resolve_options(self, options: Mapping[str, object],
                        source: str | None = None) -> dict[str, object]:
        """Validate the experiment's ``options`` and return them with every default filled in.

        The result is plain YAML data (it is saved in ``config.resolved.yaml``) and resolving
        it again returns it unchanged. Errors are :class:`ConfigError` with keys relative to
        ``options``.
        """

    @abstractmethod
    def run_point(self, spec: PointSpec) -> PointOutput:
        """Simulate one point (``spec.options`` resolved, ``spec.work_scale`` applied)."""

    # The hooks below are empty on purpose: a model without them accepts every input.
    def check_workload_options(  # noqa: B027
            self, workload: str, options: Mapping[str, object]) -> None:
        """Check that the options suit the workload (by default any do).

        Raises:
            ConfigError: they do not, naming the option.
        """

    def check_algorithm_options(  # noqa: B027
            self, algorithm: str, options: Mapping[str, object]) -> None:
        """Check that the options suit one of the algorithms run (by default any do).

        Raises:
            ConfigError: they do not, naming the option.
        """

    def check_experiment_options(  # noqa: B027
            self, algorithms: Sequence[str], options: Mapping[str, object]) -> None:
        """Check the options against the algorithms run together (by default any pass).

        Raises:
            ConfigError: they do not, naming the option.
        """

    def check_config_file(self, data: Mapping[str, object], source: str) -> str | None:
        """``snapsim check-config`` of a file that no built-in kind recognises.

        A one-line summary if it is a file of this model's, else ``None`` (the default).

        Raises:
            ConfigError: it is a file of this model's and invalid.
        """
        return None


def model_columns(model: WorkloadModelBase) -> Columns:
    """The generic columns with those ``model`` documents (``columns``, ``column_prefixes``)."""
    return columns_for(model.columns, model.column_prefixes)


def available_models() -> list[str]:
    """Names of the installed workload models."""
    return sorted(ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP))


def workload_model(name: str = DEFAULT_MODEL) -> WorkloadModelBase:
    """Load the workload model registered as ``name``.

    Raises:
        ConfigError: no model of that name is installed, or its entry point's object is no
            :class:`WorkloadModelBase`.
    """
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name == name:
            model = entry_point.load()
            if not isinstance(model, WorkloadModelBase):
                kind = type(model)
                raise ConfigError("model", f"the workload model {name!r} is a "
                                  f"{kind.__module__}.{kind.__qualname__}, not an instance of "
                                  "a subclass of simulator.study.workload_model."
                                  "WorkloadModelBase")
            return model
    installed = ", ".join(available_models()) or "none (is snapsim installed with pip?)"
    raise ConfigError("model", f"no workload model {name!r} is installed (installed: {installed})")
