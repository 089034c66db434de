"""The notebooks in ``notebooks/``: committed without outputs, and every cell runs (small mode).

Each notebook reads ``SNAPSIM_NOTEBOOK_SMALL=1`` in its first code cell and then uses a small grid
and short simulated runs; executing the four takes about a minute on a 2-core machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from simulator.config.yaml_io import read_yaml
from simulator.study.experiment import experiments_dir
from tests.paths import REPO_ROOT

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
EXPECTED = {"01-quickstart.ipynb", "02-pre-vs-post-14.ipynb", "03-what-if-machines.ipynb",
            "04-cache-line-anatomy.ipynb"}
SMALL_FLAG = 'os.environ.get("SNAPSIM_NOTEBOOK_SMALL") == "1"'
CELL_TIMEOUT_S = 600


def load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def code_cells(path: Path) -> list[dict[str, Any]]:
    return [cell for cell in load(path)["cells"] if cell["cell_type"] == "code"]


def source(cell: dict[str, Any]) -> str:
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def test_the_issue_s_notebooks_are_there() -> None:
    assert {path.name for path in NOTEBOOKS} >= EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_committed_without_outputs(path: Path) -> None:
    for index, cell in enumerate(code_cells(path)):
        assert cell.get("outputs") == [], f"cell {index} of {path.name} has outputs"
        assert cell.get("execution_count") is None, f"cell {index} of {path.name} was executed"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_first_code_cell_chooses_the_small_configuration(path: Path) -> None:
    cells = code_cells(path)
    assert cells, f"{path.name} has no code cell"
    assert f"SMALL = {SMALL_FLAG}" in source(cells[0])
    assert load(path)["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_runs_in_small_mode(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel inherits this environment: small grids, no display needed for figures.
    monkeypatch.setenv("SNAPSIM_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    client = NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS_DIR)}})
    client.execute()  # raises CellExecutionError, naming the cell, on the first failing cell
    errors = [output for cell in notebook.cells if cell.cell_type == "code"
              for output in cell.outputs if output.output_type == "error"]
    assert errors == []


def test_the_quickstart_draws_one_and_48_clients_in_their_own_panels() -> None:
    """On one linear axis the one-client curve would lie flat under the 48-client one."""
    cells = [source(cell) for cell in load(NOTEBOOKS_DIR / "01-quickstart.ipynb")["cells"]
             if cell["cell_type"] == "code"]
    figure = next(cell for cell in cells if "TPS with idle connections" in cell)
    assert "tps_panels(result.curve" in figure
    assert "result.plot()" not in figure


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_full_mode_warms_up_as_long_as_the_default_experiment(path: Path) -> None:
    """A shorter warm-up leaves the idle governors' start in the single-client windows."""
    default = read_yaml(experiments_dir() / "default.yaml")
    assert isinstance(default, dict)
    text = "\n".join(source(cell) for cell in code_cells(path))
    full = [float(value) for value in
            re.findall(r"warmup_ms=[0-9.]+ if SMALL else ([0-9.]+)", text)]
    if "Experiment(" in text:
        assert full, f"{path.name} builds an experiment without a full-mode warm-up"
    assert all(value >= default["warmup_ms"] for value in full), (path.name, full)
