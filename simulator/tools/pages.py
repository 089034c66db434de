"""Generated documentation pages that know what produced them, and say when they are stale.

A page built from ``snapsim run`` curves (``docs/predictions.md``, ``docs/whatif.md``) keeps,
beside each curve it copies, a *record*: the run's experiment as given (its ``experiment.yaml``:
the file and the flags, before the options are resolved) and the provenance ``snapsim run``
wrote into its ``metadata.yaml`` (:mod:`simulator.study.provenance`: the model's code, the
machine, the resolved options with the cost file, the settings, the single-client figure).
:func:`check_records` prepares each recorded experiment as it would be now, without running
anything, and names what changed; a page's ``--check`` also compares the page with the one its
curves render (an edit by hand, or curves changed without the page). Nothing here runs a
simulation.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from simulator.config.values import expect_mapping
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.study.experiment_file import experiment_from_document
from simulator.study.provenance import (
    changed,
    experiment_provenance,
    read_provenance,
    write_provenance,
)

RECORD_SUFFIX = ".provenance.yaml"
"""A curve's record: ``NAME.csv`` has ``NAME.provenance.yaml`` beside it."""


def record_path(curve: Path) -> Path:
    """The record beside a copied curve."""
    return curve.with_name(curve.stem + RECORD_SUFFIX)


def record_run(run_dir: Path, curve: Path) -> Path:
    """Record what produced ``curve``: the experiment and provenance of the run in ``run_dir``.

    Raises:
        ConfigError: the run wrote no provenance (a run that did not finish).
    """
    metadata = read_yaml(run_dir / "metadata.yaml")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("provenance"), dict):
        raise ConfigError("provenance", "the run recorded none", str(run_dir / "metadata.yaml"))
    experiment = expect_mapping("", read_yaml(run_dir / "experiment.yaml"))
    path = record_path(curve)
    write_provenance(path, {str(k): str(v) for k, v in metadata["provenance"].items()},
                     {"experiment": dict(experiment)})
    return path


def check_records(curves: Iterable[Path]) -> dict[Path, str]:
    """Every curve whose record is missing or stale, with why (what changed since it was made).

    A missing record counts as stale; so does an experiment that no longer prepares.
    """
    stale: dict[Path, str] = {}
    for curve in curves:
        path = record_path(curve)
        if not path.is_file():
            stale[curve] = f"no record of what made it ({path.name})"
            continue
        try:
            recorded, recipe = read_provenance(path)
            document = expect_mapping("recipe.experiment", recipe.get("experiment"))
            experiment = experiment_from_document(document, str(path))
            differences = changed(recorded, experiment_provenance(experiment.prepare(str(path))))
        except ConfigError as exc:
            stale[curve] = f"its experiment no longer prepares: {exc}"
            continue
        if differences:
            stale[curve] = f"changed since it was made: {', '.join(differences)}"
    return stale


def report(page: Path, stale: dict[Path, str], rendered: str | None) -> int:
    """Print a page's check and return its exit code (0 current, 1 stale).

    ``rendered``: the page as its curves render it now (``None``: not compared).
    """
    problems: list[str] = []
    if rendered is not None and (not page.is_file()
                                 or page.read_text(encoding="utf-8") != rendered):
        problems.append(f"{page.name} differs from the page its curves render "
                        "(rewrite it with --markdown-only)")
    problems += [f"{curve.name}: {why}" for curve, why in stale.items()]
    if not problems:
        print(f"{page}: current (every curve made by what is here now)")
        return 0
    print(f"{page}: stale ({len(problems)} problem(s)); regenerate it")
    for line in problems:
        print(f"  {line}")
    return 1
