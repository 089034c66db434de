"""The PostgreSQL workload model as seen by :mod:`simulator` (entry point ``snapsim.models``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from simulator.errors import ConfigError
from simulator.hardware.layout_edits import parse_layout_edits
from simulator.study.workload_model import (
    ModelEstimate,
    PointOutput,
    PointSpec,
    WorkloadModelBase,
)

from .columns import CURVE_COLUMN_PREFIXES, CURVE_COLUMNS
from .costs import check_costs_file
from .estimate import ESTIMATE_COEFFICIENTS
from .options import churn_requested, parse_options, resolve_options
from .point import IDLE_KINDS, run_point
from .shmem.build import check_layout_edits_apply
from .snapshots import ALGORITHMS
from .workloads import BATCHED, MIX, WORKLOADS


class PostgresModel(WorkloadModelBase):
    """PostgreSQL's snapshot algorithms and pgbench workloads."""

    algorithms: tuple[str, ...] = tuple(ALGORITHMS)
    workloads: tuple[str, ...] = WORKLOADS
    idle_kinds: tuple[str, ...] = IDLE_KINDS
    work_scale_idle_kind: str = "idle"
    columns: Mapping[str, tuple[str, str]] = CURVE_COLUMNS
    column_prefixes: Mapping[str, tuple[str, str]] = CURVE_COLUMN_PREFIXES
    estimate_coefficients: ModelEstimate = ESTIMATE_COEFFICIENTS

    def resolve_options(self, options: Mapping[str, object],
                        source: str | None = None) -> dict[str, object]:
        """Validate the ``options:`` section and fill every default.

        See :mod:`snapsim_models.options`.
        """
        return resolve_options(options, source)

    def check_workload_options(self, workload: str, options: Mapping[str, object]) -> None:
        """Only the ``mix`` workload reads (and needs) ``options.mix``; it and ``batched`` a batch.

        Raises:
            ConfigError: ``options.mix`` is missing or empty for the ``mix`` workload or given
                for another workload, or ``options.batch`` is above 1 for a workload that sends
                one statement per round trip (either would be silently ignored).
        """
        if workload == MIX and not options.get("mix"):
            raise ConfigError("options.mix", "the mix workload needs its scripts and weights, "
                              "e.g. options: {mix: {select-only: 9, tpcb: 1}}")
        if workload != MIX and options.get("mix"):
            raise ConfigError("options.mix", f"scripts and weights apply to the {MIX} workload "
                              f"only, not {workload} (they would change nothing; drop "
                              f"options.mix or run workload: {MIX})")
        batch = options.get("batch", 1)
        if workload not in (BATCHED, MIX) and isinstance(batch, int) and batch > 1:
            raise ConfigError("options.batch", f"{batch} statements per round trip apply to the "
                              f"{BATCHED} and {MIX} workloads only, not {workload}")

    def check_algorithm_options(self, algorithm: str, options: Mapping[str, object]) -> None:
        """Connections that come and go need an algorithm that models them.

        Raises:
            ConfigError: ``options.churn`` with an algorithm that models no connect or
                disconnect (``csn``).
        """
        if churn_requested(options) and not ALGORITHMS[algorithm].supports_churn:
            churning = [name for name, cls in ALGORITHMS.items() if cls.supports_churn]
            raise ConfigError("options.churn", f"the {algorithm} algorithm models no connect "
                              f"or disconnect (churn works with {', '.join(churning)})")

    def check_experiment_options(self, algorithms: Sequence[str],
                                 options: Mapping[str, object]) -> None:
        """Every layout edit changes at least one of the experiment's algorithms.

        Raises:
            ConfigError: an edit of ``options.layout`` that fits only algorithms the experiment
                does not run (it would change nothing simulated).
        """
        check_layout_edits_apply(parse_layout_edits(options.get("layout", []), "options.layout"),
                                 algorithms, tuple(ALGORITHMS.values()))

    def check_config_file(self, data: Mapping[str, object], source: str) -> str | None:
        """``check-config`` of a file of this model (the cost model); ``None``: not one."""
        return check_costs_file(data, source)

    def run_point(self, spec: PointSpec) -> PointOutput:
        """Simulate one point with the global cost model (scaled by ``spec.work_scale``)."""
        result = run_point(spec, parse_options(spec.options).scaled(spec.work_scale))
        return PointOutput(row=result.row, lines=result.lines, traces=result.traces)


MODEL = PostgresModel()
