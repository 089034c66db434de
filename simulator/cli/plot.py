"""``snapsim plot DIR``: draw the plots of a run's output directory again from its tables.

A directory the plots cannot be written into (read-only, no space) is bad input: one line, exit 2,
and the plots already there are left as they were (each is written atomically).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from simulator.cli.common import EXIT_OK, log, writable_directory
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.measure.manifest import measurements_for
from simulator.study.experiment import overlay_dataset
from simulator.study.outputs import read_curve, write_plots


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim plot``."""
    parser.add_argument("directory", metavar="DIR", help="output directory of a snapsim run")


def main(args: argparse.Namespace) -> int:
    """Draw the plots again from ``DIR/curve.csv`` (measurements overlaid if the run named any)."""
    directory = Path(args.directory)
    curve = read_curve(directory)
    writable_directory(directory, "DIR")
    measured = None
    window = None
    config = directory / "config.resolved.yaml"
    if config.exists():
        data = read_yaml(config)
        if isinstance(data, Mapping) and data.get("measurements"):
            measured = _overlay(data, curve)
        if isinstance(data, Mapping) and {"duration_ms", "warmup_ms"} <= set(data):
            window = (float(data["duration_ms"]), float(data["warmup_ms"]))
    try:
        written = write_plots(curve, directory, measured, window=window)
    except OSError as exc:
        raise ConfigError("DIR", f"cannot write the plots into {directory}: "
                          f"{exc.strerror or exc}") from None
    log(f"wrote {', '.join(str(path) for path in written) or 'no plot (no successful point)'}")
    return EXIT_OK


def _overlay(config: Mapping[str, object], curve: pd.DataFrame) -> pd.DataFrame | None:
    """The measured rows a run overlaid, resolved as the run resolved them.

    ``measurements: machine`` (the default experiment's) stands for the manifest's dataset of the
    run's machine, workload and idle kind, as :func:`simulator.study.outputs.load` reads it.
    """
    machine = (str(curve["machine"].iloc[0]) if "machine" in curve.columns and len(curve)
               else str(config.get("machine", "")))
    dataset = overlay_dataset(str(config["measurements"]), machine,
                              str(config.get("workload", "")), str(config.get("idle_kind", "")))
    return measurements_for(dataset) if dataset is not None else None
