"""What produced a result, as hashes: so that a page or a directory of results can say it is stale.

A result's provenance is a mapping from what went into it to a SHA-256 of that input:

* ``model code``: the source of the workload model's package and of the parts of ``simulator``
  whose code decides a point's result (:func:`simulator.study.code_hash.code_hash`: the
  configuration, the machine, the runtime, and the pipeline's modules that plan and run points);
  the commands, tools, stores, estimates and plots are left out, since they do not move a number;
* ``machine NAME``: the machine's configuration as loaded (its ``sources`` left out);
* ``options``: the workload model's options as resolved, which for PostgreSQL hold the global cost
  file (``configs/postgres-costs.yaml``) and the experiment's own options;
* ``settings``: the experiment's run settings (grid, windows, seeds, precision);
* ``single-client TPS``: the measured figure the work scale is found from;
* any file by its path (a measurement manifest and its datasets).

:func:`changed` names the inputs whose hash differs from a recorded provenance; a generated page
records its provenance beside it and its ``--check`` recomputes it without running anything.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from simulator.config.files import write_text_atomic
from simulator.config.machine import MachineConfig
from simulator.config.values import expect_mapping, expect_str
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.study.code_hash import code_hash
from simulator.study.experiment import Prepared
from simulator.study.store import document_hash

MODEL_CODE = "model code"
PROVENANCE_FILE = "provenance.yaml"
"""A provenance's file name in an output directory (``snapsim run --out``, ``validate --out``)."""

Provenance = dict[str, str]
"""Input name -> SHA-256 (hex) of its content."""


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes (``missing`` if there is no such file)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "missing"


def machine_hash(machine: MachineConfig) -> str:
    """SHA-256 of a machine's configuration, its ``sources`` left out."""
    document = dataclasses.asdict(machine)
    document.pop("sources", None)
    return document_hash(document)


def experiment_provenance(prepared: Prepared) -> Provenance:
    """The provenance of a prepared experiment's results (without running it)."""
    experiment = prepared.experiment
    figure = prepared.single_client
    return {
        MODEL_CODE: code_hash(experiment.model),
        f"machine {prepared.machine.name}": machine_hash(prepared.machine),
        "options": document_hash(dict(prepared.options)),
        "settings": document_hash(experiment.run_settings()),
        "single-client TPS": document_hash(
            {} if figure is None else dataclasses.asdict(figure)),
    }


def files_provenance(paths: Iterable[Path], base: Path) -> Provenance:
    """Each file's hash, named by its path relative to ``base`` (or as given, outside it)."""
    items: Provenance = {}
    for path in paths:
        resolved = path.resolve()
        try:
            name = str(resolved.relative_to(base.resolve()))
        except ValueError:
            name = str(path)
        items[f"file {name}"] = file_hash(resolved)
    return items


def changed(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """The inputs whose hash differs, or that one side lacks, in ``recorded``'s order."""
    names = [*recorded, *(name for name in current if name not in recorded)]
    return [name for name in names if recorded.get(name) != current.get(name)]


def write_provenance(path: Path, provenance: Mapping[str, str],
                     recipe: Mapping[str, object] | None = None) -> None:
    """Write a provenance (and the recipe a check rebuilds it from) as YAML, atomically."""
    document: dict[str, object] = {"provenance": dict(provenance)}
    if recipe is not None:
        document["recipe"] = dict(recipe)
    write_text_atomic(path, yaml.safe_dump(document, sort_keys=False))


def read_provenance(path: Path) -> tuple[Provenance, dict[str, object]]:
    """A written provenance and its recipe (empty if none).

    Raises:
        ConfigError: a missing or malformed file.
    """
    if not path.is_file():
        raise ConfigError("", f"no provenance recorded ({path} is missing): regenerate it",
                          str(path))
    document = expect_mapping("", read_yaml(path))
    items = expect_mapping("provenance", document.get("provenance"))
    provenance = {str(name): expect_str(f"provenance.{name}", value)
                  for name, value in items.items()}
    recipe = dict(expect_mapping("recipe", document.get("recipe") or {}))
    return provenance, recipe
