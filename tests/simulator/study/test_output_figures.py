"""The figures a run writes: titles that say what ran, one colour per algorithm in every figure,
the transfers figure's two panels (structural checks on the drawn figures, no pixels)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.figure import Figure

import simulator.study.outputs as outputs
from simulator.hardware.codes import CLASS_NAMES
from simulator.study.workload_model import workload_model


def curve() -> pd.DataFrame:
    rows = []
    for algorithm in ("post14", "pre14"):
        for clients in (1, 48):
            for idle in (0, 100, 1000):
                row: dict[str, object] = {
                    "machine": "gold5215-2s", "algorithm": algorithm, "workload": "select-only",
                    "clients": clients, "idle_clients": idle, "idle_kind": "idle", "seed": 0,
                    "tps": 1000.0 * clients, "transactions": 100}
                row.update(dict.fromkeys(CLASS_NAMES, 0.0))
                row.update(l1_hit=300.0, l2_hit=50.0, local_hitm=2.0, invalidations=1.0,
                           share_other=1.0, other_us=10.0)
                rows.append(row)
    return pd.DataFrame(rows)


def capture_figures(monkeypatch: pytest.MonkeyPatch, module: object) -> dict[str, Figure]:
    """Replace ``module.save_png`` so that figures are kept, by file name, not written."""
    drawn: dict[str, Figure] = {}

    def keep(path: Path, draw: Callable[[Figure], object],
             size: tuple[float, float] = (8, 5)) -> Path:
        figure = plt.figure(figsize=size)
        draw(figure)
        drawn[path.name] = figure
        return path

    monkeypatch.setattr(module, "save_png", keep)
    return drawn


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Figure]]:
    """The figures write_plots draws, by file name (nothing is written)."""
    yield capture_figures(monkeypatch, outputs)
    plt.close("all")


def test_every_figure_says_machine_workload_and_window(figures: dict[str, Figure],
                                                       tmp_path: Path) -> None:
    written = outputs.write_plots(curve(), tmp_path, window=(5.0, 2.0))
    assert sorted(path.name for path in written) == ["breakdown.png", "ratio.png", "tps.png",
                                                     "transfers.png"]
    expected = "gold5215-2s \u00b7 select-only \u00b7 5 ms measured after 2 ms warm-up"
    for name, figure in figures.items():
        assert figure.get_suptitle() == expected, name


def test_an_algorithm_has_one_colour_in_every_figure(figures: dict[str, Figure],
                                                     tmp_path: Path) -> None:
    colours = outputs.algorithm_colours()
    assert list(colours) == list(workload_model().algorithms)
    full = curve()
    outputs.write_plots(full[full["algorithm"] == "pre14"], tmp_path)
    pre14 = {line.get_color() for ax in figures["tps.png"].axes for line in ax.lines
             if str(line.get_label()).startswith("pre14")}
    assert pre14 == {colours["pre14"]}


def test_transfers_show_the_private_hits_under_the_transfers(figures: dict[str, Figure],
                                                             tmp_path: Path) -> None:
    outputs.write_plots(curve(), tmp_path)
    top, bottom = figures["transfers.png"].axes
    assert top.get_title() == "transfers between caches"
    assert bottom.get_title() == "hits in the core's own L1 and L2"
    assert [c.get_label() for c in bottom.containers] == ["l1 hit", "l2 hit"]
    assert "invalidations" not in bottom.get_legend_handles_labels()[1]
    assert "invalidations" in top.get_legend_handles_labels()[1]


def test_the_title_without_a_window_names_what_the_curve_holds() -> None:
    two = pd.concat([curve(), curve().assign(machine="graviton3")])
    assert outputs.plot_title(two) == "gold5215-2s, graviton3 \u00b7 select-only"


def test_the_comparison_figure_is_titled_and_keeps_zero_idle_on_its_log_axis(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import simulator.tools.compare as compare

    drawn = capture_figures(monkeypatch, compare)
    curve = pd.DataFrame({"clients": [1, 1], "idle_clients": [0, 500],
                          "tps_a": [38_000.0, 35_000.0], "tps_b": [38_000.0, 38_000.0]})
    curve["ratio"] = curve["tps_b"] / curve["tps_a"]
    comparison = compare.Comparison(directory_a=Path("a"), directory_b=Path("b"), key="tps",
                                    curve=curve, lines=pd.DataFrame(), differ=())
    compare.write_comparison(comparison, tmp_path)
    figure = drawn["compare.png"]
    assert figure.get_suptitle() == "B: b against A: a \u00b7 tps"
    top, bottom = figure.axes
    figure.canvas.draw()
    assert bottom.get_xscale() == "log"
    assert [t.get_text() for t in bottom.get_xticklabels()] == ["0", "500"]
    assert "38,000" in [t.get_text() for t in top.get_yticklabels()]
    plt.close("all")
