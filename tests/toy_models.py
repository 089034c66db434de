"""A minimal workload model built in code, as a user's own would be."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from simulator.study.workload_model import PointOutput, PointSpec, WorkloadModelBase


class MinimalModel(WorkloadModelBase):
    """A user's workload model: its names, options and points, and no optional hook.

    Every optional hook is the base class's default: no option check, no column documented,
    no estimate's coefficients (the estimate's fallback), no file of its own.
    """

    algorithms = ("spin",)
    workloads = ("loop",)
    idle_kinds = ("idle",)
    work_scale_idle_kind = "idle"

    def resolve_options(self, options: Mapping[str, object],
                        source: str | None = None) -> dict[str, object]:
        """No options of its own."""
        return dict(options)

    def run_point(self, spec: PointSpec) -> PointOutput:
        """1,000 transactions per second per client."""
        return PointOutput(row={"tps": 1000.0 * spec.clients}, lines=pd.DataFrame())
