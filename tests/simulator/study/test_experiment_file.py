"""Experiment files: shipped experiments, ``extends``, ``--set`` overrides, strict validation."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from simulator.errors import ConfigError
from simulator.study.experiment import Experiment
from simulator.study.experiment_file import (
    apply_overrides,
    dump_yaml,
    experiment_from_document,
    list_items,
    load_document,
    resolved_document,
    shipped_experiments,
)
from snapsim_models.options import resolve_options


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_experiments_load_and_validate() -> None:
    assert {"default", "tiny", "mostly-idle"} <= set(shipped_experiments())
    for name in shipped_experiments():
        document, source = load_document(name)
        experiment = experiment_from_document(document, source)
        experiment.check()


def test_default_experiment_is_the_published_idle_study() -> None:
    experiment = experiment_from_document(*load_document("default"))
    assert experiment.machine == "gold5215-2s"
    assert experiment.algorithms == ("pre14", "post14")
    assert experiment.clients == (1, 48)
    assert experiment.idle_clients == (0, 100, 1000, 2500, 5000, 10000)
    assert (experiment.single_client_tps, experiment.measurements) == ("machine", "machine")
    assert experiment.precision == 0.02  # every point grown until its TPS is known to 2 %
    prepared = experiment.prepare()
    assert prepared.measurements == "gold5215_idle"
    assert prepared.single_client is not None
    assert prepared.single_client.tps == 33599


def test_extends_merges_mappings_and_replaces_lists(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", "clients: [1, 2, 3]\nworkload: select1\n"
          "options: {batch: 2, costs: {client: 5000 cycles}}\n")
    child = write(tmp_path, "child.yaml", "extends: base.yaml\nclients: [7]\n"
                  "options: {costs: {backend: {select1: 1000 cycles}}}\n")
    document, _ = load_document(str(child))
    assert document["clients"] == [7]
    assert document["workload"] == "select1"
    assert document["options"] == {"batch": 2, "costs": {"client": "5000 cycles",
                                                         "backend": {"select1": "1000 cycles"}}}


def test_extends_a_shipped_experiment_by_name(tmp_path: Path) -> None:
    child = write(tmp_path, "mine.yaml", "extends: default\nclients: [4]\n")
    experiment = experiment_from_document(*load_document(str(child)))
    assert experiment.clients == (4,)
    assert experiment.idle_clients == (0, 100, 1000, 2500, 5000, 10000)


def test_extends_cycle_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "extends: b.yaml\n")
    write(tmp_path, "b.yaml", "extends: a.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_document(str(tmp_path / "a.yaml"))


def test_relative_machine_path_is_resolved_from_the_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    child = write(tmp_path / "sub", "e.yaml", "machine: ../m.yaml\n")
    document, _ = load_document(str(child))
    assert document["machine"] == str((tmp_path / "m.yaml").resolve())


@pytest.mark.parametrize(("text", "key", "message"), [
    ("clientz: [1]\n", "clientz", "unknown key"),
    ("duration_ms: 5 ms\n", "duration_ms", "expected a number"),
    ("options: 3\n", "options", "expected a mapping"),
    ("algorithms: [pre14, 3]\n", "algorithms[1]", "expected a string"),
])
def test_bad_values_name_the_key(tmp_path: Path, text: str, key: str, message: str) -> None:
    path = write(tmp_path, "e.yaml", text)
    with pytest.raises(ConfigError, match=message) as error:
        experiment_from_document(*load_document(str(path)))
    assert error.value.key == key
    assert error.value.source == str(path)


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "e.yaml", "clients: [1, 2\nidle_clients: [0]\n")
    with pytest.raises(ConfigError, match="malformed YAML at line"):
        load_document(str(path))


def test_missing_experiment_lists_the_shipped_ones() -> None:
    with pytest.raises(ConfigError, match=r"shipped: .*default"):
        load_document("no-such-experiment")


def test_set_overrides_scalars_lists_and_nested_options() -> None:
    document, _ = load_document("tiny")
    document = apply_overrides(document, [
        "duration_ms=2.5", "clients=1,48", "algorithms=pre14", "idle_clients=[0, 10]",
        "options.costs.client=20000 cycles", "options.batch=4"])
    experiment = experiment_from_document(document)
    assert experiment.duration_ms == 2.5
    assert experiment.clients == (1, 48)
    assert experiment.algorithms == ("pre14",)
    assert experiment.idle_clients == (0, 10)
    assert experiment.options == {"costs": {"client": "20000 cycles"}, "batch": 4}


@pytest.mark.parametrize(("item", "key", "message"), [
    ("durationms=3", "durationms", "unknown key"),
    ("duration_ms", "--set", "expected key=value"),
    ("duration_ms=[1", "", "malformed YAML"),
])
def test_bad_set_overrides(item: str, key: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        apply_overrides({}, [item])
    assert error.value.key == key


def test_unknown_option_keys_are_named_with_their_path() -> None:
    with pytest.raises(ConfigError) as error:
        resolve_options({"costs": {"backend": {"select_onlyy": "1 cycles"}}})
    assert error.value.key == "options.costs.backend.select_onlyy"
    with pytest.raises(ConfigError) as error:
        resolve_options({"bacth": 2})
    assert error.value.key == "options.bacth"
    with pytest.raises(ConfigError) as error:
        resolve_options({"costs": {"client": "lots"}})
    assert error.value.key == "options.costs.client"


def test_resolved_document_round_trips(tmp_path: Path) -> None:
    experiment = experiment_from_document(*load_document("tiny"))
    options = resolve_options(experiment.options)
    assert resolve_options(options) == options  # idempotent
    document = resolved_document(experiment, options, work_scale=1.25)
    assert document["computed"]["work_scale"] == 1.25  # type: ignore[index]
    text = dump_yaml(document)
    path = write(tmp_path, "config.resolved.yaml", text)
    reread, _ = load_document(str(path))
    again = experiment_from_document(reread)
    assert again.clients == experiment.clients
    assert again.options == options
    assert yaml.safe_load(text)["options"]["costs"]["version"] == 1
    assert resolved_document(again, resolve_options(again.options)) == {
        k: v for k, v in document.items() if k != "computed"}


def test_machine_set_edits_the_machine_file_and_is_resolved() -> None:
    document, source = load_document("tiny")
    document = apply_overrides(document, ["machine_set=topology.cores_per_domain=[8, 8]"])
    assert document["machine_set"] == ["topology.cores_per_domain=[8, 8]"]  # not comma-split
    document["machine_set"] = ["scheduler.run_queues=global", "idle.governor=shallowest"]
    experiment = experiment_from_document(document, source)
    machine = experiment.machine_config()
    assert machine.name == "gold5215-2s"
    assert machine.scheduler.run_queues == "global"
    resolved = resolved_document(experiment, resolve_options(experiment.options))
    assert resolved["machine_set"] == ["scheduler.run_queues=global", "idle.governor=shallowest"]
    assert list(resolved)[:4] == ["name", "description", "machine", "machine_set"]
    plain = experiment_from_document(*load_document("tiny"))
    assert "machine_set" not in resolved_document(plain, resolve_options(plain.options))
    with pytest.raises(ConfigError, match="machine_set: applies to a machine given by name"):
        replace(experiment, machine=machine).machine_config()


def test_list_items_turns_text_into_items_and_leaves_judging_to_the_check() -> None:
    assert list_items("clients", "1, 48,") == [1, 48]
    assert list_items("clients", 4) == [4]
    assert list_items("clients", "1,x") == [1, "x"]
    assert list_items("algorithms", "pre14, post14") == ["pre14", "post14"]
    assert list_items("machine_set", "a=1,2") == ["a=1,2"]


@pytest.mark.parametrize(("form", "value"), [
    ("file", "clients: [1, x]\n"), ("file text", "clients: 1,x\n"), ("--set", "clients=1,x"),
    ("flag", "1,x"), ("api", None)])
def test_a_bad_count_meets_one_check_whatever_its_form(form: str, value: str | None,
                                                      tmp_path: Path) -> None:
    """--clients, --set clients=, a file's list or text and the Python API: one message."""
    if form == "api":
        experiment = Experiment(clients=(1, "x"))  # type: ignore[arg-type]
    elif form == "--set":
        experiment = experiment_from_document(apply_overrides({}, [value or ""]))
    elif form == "flag":
        experiment = experiment_from_document({"clients": value})
    else:
        path = tmp_path / "e.yaml"
        path.write_text(value or "", encoding="utf-8")
        experiment = experiment_from_document(*load_document(str(path)))
    with pytest.raises(ConfigError, match=r"must be integers >= 1, got 'x'") as error:
        experiment.check()
    assert error.value.key == "clients"
    with pytest.raises(ConfigError, match="lists a value twice"):
        Experiment(seeds=(0, 0)).check()
    with pytest.raises(ConfigError, match="seeds: must be integers >= 0, got -1"):
        Experiment(seeds=(-1,)).check()
