"""A sweep's progress in a notebook is one output, updated in place (newcomer-4: notebook 01's
bar arrived as about 25 lines of stderr)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

import simulator
from simulator.study import progress

TINY = ("simulator.run(simulator.Experiment(machine='gold5215-2s', algorithms=('post14',), "
        "clients=(1,), idle_clients=(0, 100, 200), duration_ms=0.3, warmup_ms=0.1, "
        "single_client_tps=None, measurements=None), jobs=1, progress=True)")


class _Handle:
    def __init__(self, shown: list[str]) -> None:
        self.shown = shown

    def update(self, obj: Any) -> None:
        self.shown.append(obj.data)


def test_in_a_kernel_the_sweep_updates_one_display(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A stand-in IPython kernel: one display made, its text replaced, nothing on stderr."""
    shown: list[str] = []
    displays: list[str] = []

    class Pretty:
        def __init__(self, data: str) -> None:
            self.data = data

    def display(obj: Pretty, display_id: bool = False) -> _Handle:
        assert display_id
        displays.append(obj.data)
        return _Handle(shown)

    shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setitem(sys.modules, "IPython.display",
                        types.SimpleNamespace(Pretty=Pretty, display=display))
    assert progress.in_notebook()
    simulator.run(simulator.Experiment(
        machine="gold5215-2s", algorithms=("post14",), clients=(1,), idle_clients=(0, 100, 200),
        duration_ms=0.3, warmup_ms=0.1, single_client_tps=None, measurements=None),
        jobs=1, progress=True)  # the notebook's cell below
    assert displays == ["points: 0/3 (0 s)"]
    assert shown[-1].startswith("points: 3/3 (")
    assert capsys.readouterr().err == ""


def test_outside_a_kernel_the_bar_is_tqdm_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "IPython",
                        types.SimpleNamespace(get_ipython=lambda: None))
    assert not progress.in_notebook()


@pytest.mark.slow
def test_a_real_notebook_keeps_one_progress_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # as the notebooks' own test
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    notebook.cells = [nbformat.v4.new_code_cell(  # type: ignore[no-untyped-call]
        f"import simulator\n{TINY};")]
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    outputs = notebook.cells[0].outputs
    assert not [o for o in outputs if o.output_type == "stream" and "points" in o.text]
    displays = [o for o in outputs if o.output_type == "display_data"]
    assert len(displays) == 1
    assert displays[0].data["text/plain"].startswith("points: 3/3 (")
