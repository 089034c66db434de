"""The output directory of a run: tables, plots, and reading them back.

Files (every one written atomically: a temporary file renamed into place):

* ``curve.csv`` / ``curve.parquet``: one row per point and root seed (``Result.curve``);
  byte-identical for the same configuration and seeds (wall-clock times are kept apart);
* ``curve_summary.csv``: one row per point over its root seeds (``Result.curve_summary``,
  :func:`simulator.analysis.summary.curve_summary`): successful and failed seeds, and the mean,
  standard deviation and 95 % interval of the mean of every result column;
* ``lines.csv``: the per-line tables of every point (``snapsim c2c DIR`` reads it);
* ``timings.csv``: wall-clock seconds per point;
* ``usl.csv``: a Universal Scalability Law fit per curve, where a curve has 3 or more points;
* ``tps.png`` (TPS against clients or idle clients, log x, one line per algorithm, measurements
  overlaid; with several seeds the line is their mean and a band its 95 % interval),
  ``transfers.png`` (transfers per transaction by class), ``breakdown.png`` (time per
  transaction by function), ``ratio.png`` (when two algorithms share the grid);
* ``columns.yaml``: the unit and meaning of every column of ``curve.csv``,
  ``curve_summary.csv`` and ``lines.csv`` (:data:`simulator.analysis.columns.COLUMNS`);
* ``config.resolved.yaml`` and ``experiment.yaml`` (written by ``snapsim run`` when it starts),
  ``metadata.yaml`` (written last by ``snapsim run``: versions, git commit, machine hash, times,
  command line; :mod:`simulator.study.metadata`) and ``points/`` (one file per finished point,
  for resuming).

:func:`load` reads a finished directory back into a :class:`~simulator.study.runner.Result`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from simulator.analysis import plotting
from simulator.analysis.usl import usl_table
from simulator.config.files import atomic_path, atomic_write
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError, WriteError
from simulator.measure.manifest import measurements_for
from simulator.study.experiment import overlay_dataset
from simulator.study.experiment_file import dump_yaml, experiment_from_document
from simulator.study.sweep import failed_points
from simulator.study.workload_model import DEFAULT_MODEL, model_columns, workload_model

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from simulator.study.runner import Result

TABLES = ("curve.csv", "curve.parquet", "curve_summary.csv", "lines.csv", "timings.csv",
          "usl.csv")
PLOTS = ("tps.png", "transfers.png", "breakdown.png", "ratio.png")
CONFIGS = ("config.resolved.yaml", "experiment.yaml", "columns.yaml", "metadata.yaml")
POINTS_DIR = "points"
OWNED = (*TABLES, *PLOTS, *CONFIGS, POINTS_DIR)
"""Every name snapsim writes in an output directory (``--overwrite`` removes only these)."""


def write_results(result: Result, directory: Path) -> list[Path]:
    """Write the tables and plots of a result into ``directory``; return the files written.

    Raises:
        WriteError: a file could not be written (a full disk): that file is left as it was, and
            the message says that the stored points are kept for a rerun.
    """
    try:
        return _write_results(result, directory)
    except WriteError as exc:
        exc.hint = (f"the points are kept in {directory / POINTS_DIR}: free some space and run "
                    "the same command again to write the tables")
        raise


def _write_results(result: Result, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    summary = result.curve_summary
    columns = model_columns(workload_model(
        result.experiment.model if result.experiment is not None else DEFAULT_MODEL))
    written = [
        atomic_write(directory / "curve.csv", lambda p: result.curve.to_csv(p, index=False)),
        atomic_write(directory / "curve.parquet",
                     lambda p: result.curve.to_parquet(p, index=False)),
        atomic_write(directory / "curve_summary.csv", lambda p: summary.to_csv(p, index=False)),
        atomic_write(directory / "lines.csv", lambda p: result.lines.to_csv(p, index=False)),
        atomic_write(directory / "timings.csv", lambda p: result.timings.to_csv(p, index=False)),
        atomic_write(directory / "columns.yaml", lambda p: p.write_text(dump_yaml(columns.document(
            {"curve.csv": result.curve.columns, "curve_summary.csv": summary.columns,
             "lines.csv": result.lines.columns})), encoding="utf-8")),
    ]
    usl = usl_summary(result.curve)
    if usl is not None:
        written.append(atomic_write(directory / "usl.csv", lambda p: usl.to_csv(p, index=False)))
    experiment = result.experiment
    window = None if experiment is None else (experiment.duration_ms, experiment.warmup_ms)
    written += write_plots(result.curve, directory, result.measured, window=window)
    return written


def write_metadata(directory: Path, document: Mapping[str, object]) -> Path:
    """Write ``metadata.yaml`` (:func:`simulator.study.metadata.run_metadata`) atomically."""
    return atomic_write(directory / "metadata.yaml",
                  lambda p: p.write_text(dump_yaml(document), encoding="utf-8"))


def usl_summary(curve: pd.DataFrame) -> pd.DataFrame | None:
    """The USL fit of every curve of the result, or ``None`` when nothing can be fitted."""
    ok = _successful(curve)
    if ok.empty:
        return None
    return usl_table(ok)


def write_plots(curve: pd.DataFrame, directory: Path,
                measured: pd.DataFrame | None = None,
                window: tuple[float, float] | None = None) -> list[Path]:
    """Draw the standard plots of a curve into ``directory``; return the files written.

    Every figure's title names the machine(s), the workload(s) and, when ``window`` (measured
    and warm-up milliseconds) is given, the simulated window; an algorithm has the same colour
    in every figure (:func:`algorithm_colours`).
    """
    import matplotlib

    matplotlib.use("Agg")
    ok = _successful(curve)
    if ok.empty:
        return []
    title = plot_title(ok, window)
    colours = algorithm_colours()
    written = [
        _tps_figure(directory / "tps.png", ok, measured, title, colours),
        _transfers_figure(directory / "transfers.png", ok, title),
        _figure(directory / "breakdown.png", title, lambda ax: plotting.plot_breakdown(ok, ax=ax),
                width=_bars_width(ok)),
    ]
    pair = ratio_pair(ok)
    if pair is not None:
        numerator, denominator = pair
        written.append(_figure(directory / "ratio.png", title, lambda ax: plotting.plot_ratio(
            ok, numerator, denominator, ax=ax)))
    return written


def algorithm_colours() -> dict[object, str]:
    """A colour per algorithm of the installed workload model, the same in every plot."""
    return plotting.algorithm_colours(workload_model().algorithms)


def plot_title(curve: pd.DataFrame, window: tuple[float, float] | None = None) -> str:
    """``machine · workload · N ms measured after M ms warm-up`` for a curve's figures."""
    parts = [", ".join(str(v) for v in dict.fromkeys(curve[key]))
             for key in ("machine", "workload") if key in curve.columns]
    if window is not None:
        duration_ms, warmup_ms = window
        parts.append(f"{duration_ms:g} ms measured after {warmup_ms:g} ms warm-up")
    return " \u00b7 ".join(parts)


def _bars_width(curve: pd.DataFrame) -> float:
    """Figure width in inches for one bar per point."""
    return max(8.0, 0.35 * len(curve) + 2.0)


def ratio_pair(curve: pd.DataFrame) -> tuple[str, str] | None:
    """The two algorithms to compare when exactly two share the grid (newer over older)."""
    algorithms = list(dict.fromkeys(curve["algorithm"]))
    if len(algorithms) != 2:
        return None
    grids = [set(map(tuple, curve[curve["algorithm"] == a][["clients", "idle_clients"]].values))
             for a in algorithms]
    if not grids[0] & grids[1]:
        return None
    return algorithms[1], algorithms[0]


def _successful(curve: pd.DataFrame) -> pd.DataFrame:
    curve = curve[~failed_points(curve)]
    return curve[curve["tps"].notna()] if "tps" in curve.columns else curve.iloc[0:0]


def _tps_figure(path: Path, curve: pd.DataFrame, measured: pd.DataFrame | None, title: str,
                colours: Mapping[object, str]) -> Path:
    """TPS plot, one panel per active-client count when idle clients vary."""
    panels = plotting.tps_panels(curve, measured)

    def draw(figure: Figure) -> None:
        figure.suptitle(title)
        for index, (panel, part, measurements) in enumerate(panels, start=1):
            ax = plotting.plot_tps(part, ax=figure.add_subplot(len(panels), 1, index),
                                   measurements=measurements, colours=colours)
            if panel:
                ax.set_title(panel)

    return save_png(path, draw, size=(8, 5 if len(panels) == 1 else 4 * len(panels)))


def _transfers_figure(path: Path, curve: pd.DataFrame, title: str) -> Path:
    """Transfers between caches per transaction, and under them the private-cache hits.

    The hits move no line but carry the time of a scan that stays in the core's caches (one
    client against idle connections), which the transfers alone would not show.
    """
    def draw(figure: Figure) -> None:
        figure.suptitle(title)
        top = figure.add_subplot(2, 1, 1)
        plotting.plot_transfers(curve, ax=top)
        top.set_title("transfers between caches")
        top.tick_params(axis="x", labelbottom=False)
        bottom = figure.add_subplot(2, 1, 2, sharex=top)
        plotting.plot_transfers(curve, ax=bottom, classes=plotting.PRIVATE_HIT_CLASSES,
                                invalidations=False)
        bottom.set_title("hits in the core's own L1 and L2")

    return save_png(path, draw, size=(_bars_width(curve), 9))


def _figure(path: Path, title: str, draw: Callable[[Axes], object],
            width: float = 8.0) -> Path:
    def drawn(figure: Figure) -> None:
        figure.suptitle(title)
        draw(figure.add_subplot())

    return save_png(path, drawn, size=(width, 5))


def save_png(path: Path, draw: Callable[[Figure], object],
             size: tuple[float, float] = (8, 5)) -> Path:
    """A new figure of ``size`` inches, drawn by ``draw``, written atomically as a PNG."""
    import matplotlib.pyplot as plt

    figure: Figure = plt.figure(figsize=size)
    try:
        draw(figure)
        figure.tight_layout()
        with atomic_path(path) as tmp:
            figure.savefig(tmp, format="png", dpi=110)
    finally:
        plt.close(figure)
    return path


def read_curve(directory: Path) -> pd.DataFrame:
    """``DIR/curve.csv``.

    Raises:
        ConfigError: the directory or the file does not exist or cannot be read.
    """
    return _read_table(directory, "curve.csv")


def read_lines(directory: Path) -> pd.DataFrame:
    """``DIR/lines.csv`` (empty ``fields_*`` cells read as empty strings)."""
    lines = _read_table(directory, "lines.csv")
    for column in ("fields_read", "fields_written", "label"):
        if column in lines.columns:
            lines[column] = lines[column].fillna("")
    return lines


def _read_table(directory: Path, name: str) -> pd.DataFrame:
    if not directory.is_dir():
        raise ConfigError("DIR", f"{directory} is not a directory of snapsim results")
    path = directory / name
    if not path.exists():
        raise ConfigError("DIR", f"{path} does not exist (is {directory} a snapsim run's output?)")
    try:
        return pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise ConfigError("DIR", f"cannot read {path}: {exc}") from None


FINISHED = ("config.resolved.yaml", "curve.csv", "lines.csv", "timings.csv")
"""The files a finished run's directory holds (the tables are written after the last point)."""


def check_finished(directory: Path, key: str = "DIR") -> Path:
    """``directory``, after checking it holds a finished run.

    Raises:
        ConfigError: naming ``key``: not a directory, or a file of :data:`FINISHED` is missing
            (an interrupted or running sweep has its configuration but not its tables).
    """
    if not directory.is_dir():
        raise ConfigError(key, f"{directory} is not a directory of snapsim results")
    missing = [name for name in FINISHED if not (directory / name).is_file()]
    if missing and (directory / "config.resolved.yaml").is_file():
        raise ConfigError(key, f"{directory} holds an unfinished run (no {', '.join(missing)}); "
                               "run the same snapsim run command again to finish it")
    if missing:
        raise ConfigError(key, f"{directory} is not the output of a finished snapsim run "
                               f"(no {', '.join(missing)})")
    return directory


def load(directory: str | Path) -> Result:
    """The :class:`~simulator.study.runner.Result` of a finished ``snapsim run`` directory.

    ``curve``, ``lines`` and ``timings`` as written (an empty ``error`` reads as ``""``), the
    measured overlay if the run named measurements, the work scale, and the experiment rebuilt
    from ``config.resolved.yaml`` (its machine by name or path: a machine file since moved
    fails only when the experiment is run again). Nothing is simulated. ``curve_summary`` is
    computed from the curve as ``snapsim run`` computed ``curve_summary.csv`` (so a directory
    written before that file existed has it too).

    Raises:
        ConfigError: the directory is missing or not a finished run, or its files cannot be read.
    """
    from simulator.study.runner import Result

    path = check_finished(Path(directory))
    resolved = read_yaml(path / "config.resolved.yaml")
    if not isinstance(resolved, Mapping):
        raise ConfigError("DIR", f"{path / 'config.resolved.yaml'} is not a mapping")
    document = {k: v for k, v in resolved.items() if k != "computed"}
    experiment = experiment_from_document(document, str(path / "config.resolved.yaml"))
    computed = resolved.get("computed")
    work_scale = 1.0
    if isinstance(computed, Mapping) and computed.get("work_scale") is not None:
        work_scale = float(str(computed["work_scale"]))
    curve = _with_empty_errors(read_curve(path))
    lines = read_lines(path) if (path / "lines.csv").stat().st_size > 1 else pd.DataFrame()
    timings = _with_empty_errors(_read_table(path, "timings.csv"))
    machine = (str(curve["machine"].iloc[0]) if "machine" in curve.columns and len(curve)
               else experiment.machine_name())
    dataset = overlay_dataset(experiment.measurements, machine, experiment.workload,
                              experiment.idle_kind)
    measured = measurements_for(dataset) if dataset is not None else None
    return Result(curve=curve, lines=lines, timings=timings, experiment=experiment,
                  measured=measured, work_scale=work_scale)


def _with_empty_errors(table: pd.DataFrame) -> pd.DataFrame:
    if "error" in table.columns:
        table["error"] = table["error"].astype(object).where(table["error"].notna(), "")
    return table
