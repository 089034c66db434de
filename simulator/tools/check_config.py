"""Which file a ``check-config`` argument names, and the workload model's own kinds of file.

A bare name that is no file in the current directory names a shipped experiment or machine, as
``snapsim run NAME`` and ``--machine NAME`` take it. A file that no built-in kind (machine,
manifest, experiment) recognises is offered to the default workload model, whose hook
``check_config_file(data, source)`` returns a one-line summary for a file of its own (the
PostgreSQL model's cost file), or ``None`` (its default).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from simulator.config.machine_file import machines_dir
from simulator.study.experiment import experiments_dir
from simulator.study.workload_model import workload_model

__all__ = ["check_model_file", "shipped_config_path"]


def shipped_config_path(name_or_path: str) -> str:
    """``name_or_path``, or the shipped experiment (else machine) file a bare name stands for.

    A name that is a file here stays that file.
    """
    if Path(name_or_path).exists() or "/" in name_or_path or name_or_path.endswith(
            (".yaml", ".yml")):
        return name_or_path
    for directory in (experiments_dir(), machines_dir()):
        shipped = directory / f"{name_or_path}.yaml"
        if shipped.exists():
            return str(shipped)
    return name_or_path


def check_model_file(data: Mapping[str, object], source: str) -> str | None:
    """The default workload model's check of a file of its own: a summary, or ``None``.

    Raises:
        ConfigError: the model recognised the file and found it invalid.
    """
    summary = workload_model().check_config_file(data, source)
    return None if summary is None else str(summary)
