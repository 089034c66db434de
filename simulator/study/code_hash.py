"""The hash of the code that decides a point's result, for provenances and stored points.

A point stored by a run (``snapsim run --out``) and a generated page's provenance both carry it,
so results of other code are recomputed, not resumed or called current. It covers the workload
model's package and the parts of ``simulator`` listed in :data:`RESULT_CODE`; the commands,
tools, stores, estimates and plots are left out, since they do not move a number.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from simulator.study.workload_model import DEFAULT_MODEL, workload_model

__all__ = ["RESULT_CODE", "code_hash"]

RESULT_CODE = ("config", "hardware", "runtime", "study/experiment.py", "study/experiment_file.py",
               "study/workload_model.py", "study/work_scale.py", "study/sweep.py")
"""The parts of ``simulator`` (subpackages and modules) whose code decides a point's result."""


def code_hash(model: str = DEFAULT_MODEL) -> str:
    """SHA-256 of the Python source of the model's package and of :data:`RESULT_CODE`."""
    simulator_root = Path(__file__).resolve().parents[1]
    module = type(workload_model(model)).__module__.split(".")[0]
    model_root = Path(__import__(module).__file__ or "").resolve().parent
    digest = hashlib.sha256()
    for root, parts in ((simulator_root, RESULT_CODE), (model_root, ("",))):
        for part in parts:
            target = root / part
            paths = [target] if target.suffix == ".py" else sorted(target.rglob("*.py"))
            for path in paths:
                digest.update(str(path.relative_to(root)).encode("utf-8") + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
