"""The generated pages are current: each was made by the model, costs, machines and manifests here.

``python docs/predictions.py --check``, ``python docs/whatif.py --check`` and ``snapsim validate
--check`` recompute what produced each page from its record, without simulating; a change that
moves the model (its code, the cost file, a machine file, a manifest or a dataset) and leaves a
page stale fails here until the page is regenerated.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.study.provenance import read_provenance, write_provenance
from simulator.tools.pages import check_records, record_path, record_run
from tests.paths import REPO_ROOT


@pytest.mark.parametrize("script", ["predictions", "whatif"])
def test_the_docs_pages_are_current(script: str) -> None:
    result = subprocess.run([sys.executable, str(REPO_ROOT / "docs" / f"{script}.py"),
                             "--check"], capture_output=True, text=True, cwd=REPO_ROOT,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("directory", ["docs/validation", "docs/validation/kvm-epyc-2vcpu"])
def test_the_shipped_validation_is_current(directory: str, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO_ROOT)
    code = main(["validate", "--check", "--out", directory])
    assert code == 0, capsys.readouterr().out


def _record_of(tmp_path: Path, costs: Path) -> Path:
    """A curve and its record, made by a run whose options name the cost file ``costs``."""
    out = tmp_path / "run"
    assert main(["run", "tiny", "--clients", "1", "--idle-clients", "0", "--algorithms", "post14",
                 "--duration-ms", "0.5", "--warmup-ms", "0.5", "--set", f"options.costs={costs}",
                 "--out", str(out), "--no-progress", "-q"]) == 0
    curve = tmp_path / "tiny.csv"
    shutil.copyfile(out / "curve.csv", curve)
    record_run(out, curve)
    return curve


def test_a_changed_cost_makes_a_page_stale(tmp_path: Path) -> None:
    costs = tmp_path / "costs.yaml"
    shutil.copyfile(REPO_ROOT / "configs" / "postgres-costs.yaml", costs)
    curve = _record_of(tmp_path, costs)
    assert check_records([curve]) == {}
    document = yaml.safe_load(costs.read_text(encoding="utf-8"))
    document["client"] = "15000 cycles"
    costs.write_text(yaml.safe_dump(document), encoding="utf-8")
    stale = check_records([curve])
    assert stale == {curve: "changed since it was made: options"}


def test_a_record_names_every_changed_input_and_a_missing_record_is_stale(
        tmp_path: Path) -> None:
    costs = tmp_path / "costs.yaml"
    shutil.copyfile(REPO_ROOT / "configs" / "postgres-costs.yaml", costs)
    curve = _record_of(tmp_path, costs)
    recorded, recipe = read_provenance(record_path(curve))
    recorded["model code"] = "0" * 64
    recorded["machine gold5215-2s"] = "1" * 64
    write_provenance(record_path(curve), recorded, recipe)
    assert check_records([curve]) == {
        curve: "changed since it was made: model code, machine gold5215-2s"}
    record_path(curve).unlink()
    assert "no record" in check_records([curve])[curve]


def test_validate_check_names_a_changed_dataset(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from simulator.measure.manifest import load_manifest
    from simulator.tools.scoring import validation_provenance

    shutil.copytree(REPO_ROOT / "configs" / "measurements" / "kvm-epyc-2vcpu", tmp_path / "m")
    out = tmp_path / "out"
    out.mkdir()
    manifest = tmp_path / "m"
    recipe: dict[str, object] = {"manifest": str(manifest), "seeds": 1, "set": [],
                                 "machine_set": [], "dataset": [], "ratio": []}
    loaded = load_manifest(str(manifest))
    write_provenance(out / "provenance.yaml",
                     validation_provenance(loaded, {**recipe, "run": dict(loaded.run)}), recipe)
    assert main(["validate", "--check", "--out", str(out)]) == 0
    capsys.readouterr()
    data = manifest / "kvm-epyc-2vcpu_idle.csv"
    data.write_text(data.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert main(["validate", "--check", "--out", str(out)]) == 1
    assert "file kvm-epyc-2vcpu_idle.csv" in capsys.readouterr().out
