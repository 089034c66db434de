"""Plot functions draw the expected lines, bars and labels on synthetic curves (no simulation)."""

from __future__ import annotations

from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.container import BarContainer
from matplotlib.lines import Line2D

from simulator.analysis.plotting import (
    algorithm_colours,
    plot_breakdown,
    plot_ratio,
    plot_tps,
    plot_transfers,
    tps_panels,
    zero_position,
)
from simulator.hardware.codes import CLASS_NAMES

IDLE = (0, 100, 1000)
CLIENTS = (1, 48)


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def make_curve() -> pd.DataFrame:
    """pre/post x 2 client counts x 3 idle counts; post is twice as fast everywhere."""
    rows = []
    for algorithm, speed in (("pre", 1.0), ("post", 2.0)):
        for clients in CLIENTS:
            for idle in IDLE:
                row: dict[str, object] = {
                    "machine": "m", "algorithm": algorithm, "workload": "w", "clients": clients,
                    "idle_clients": idle, "idle_kind": "idle", "seed": clients * 10_000 + idle,
                    "tps": speed * 1000.0 * clients / (1 + idle / 1000), "transactions": 100}
                row.update(dict.fromkeys(CLASS_NAMES, 0.0))
                row.update(l1_hit=300.0, l2_hit=50.0, local_hitm=2.0, remote_hitm=clients / 10,
                           upgrade=1.0, invalidations=3.0)
                row.update(share_work=0.5, work_us=10.0, share_wait=0.5, wait_us=float(idle),
                           share_never=0.0, never_us=0.0, stray_us=99.0)
                rows.append(row)
    return pd.DataFrame(rows)


def labels(ax: Axes) -> list[str]:
    return ax.get_legend_handles_labels()[1]


def data_lines(ax: Axes) -> list[Line2D]:
    """The lines that carry data (not the axis-break strokes)."""
    return [line for line in ax.lines if not str(line.get_label()).startswith("_axis")]


ZERO = 100 / 10 ** 0.5  # where 0 idle connections sit: half a decade left of 100


# --------------------------------------------------------------------------------- plot_tps


def test_tps_against_idle_connections_by_default() -> None:
    ax = plot_tps(make_curve())
    assert isinstance(ax, Axes)
    assert len(data_lines(ax)) == 4
    assert labels(ax) == ["post, clients=1", "post, clients=48", "pre, clients=1",
                          "pre, clients=48"]
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel() == "idle clients"
    assert "TPS" in ax.get_ylabel()
    assert np.asarray(ax.lines[0].get_xdata()) == pytest.approx([ZERO, 100, 1000])
    colours = {line.get_label(): line.get_color() for line in ax.lines}
    assert colours["pre, clients=1"] == colours["pre, clients=48"]
    assert colours["pre, clients=1"] != colours["post, clients=1"]


def test_the_idle_axis_puts_zero_half_a_decade_left_behind_a_break() -> None:
    ax = plot_tps(make_curve())
    plt.gcf().canvas.draw()
    ticks = [tick.get_text() for tick in ax.get_xticklabels()]
    assert ticks[0] == "0"
    assert "1,000" in ticks
    assert ax.get_xlim()[0] < ZERO < 100
    assert sum(1 for line in ax.lines if str(line.get_label()) == "_axis_break") == 2
    assert zero_position([0, 100, 1000]) == pytest.approx(ZERO)
    assert zero_position([5, 10]) is None
    assert zero_position([0]) == pytest.approx(10 ** -0.5)


def test_an_axis_of_zero_and_one_count_has_no_break_mark() -> None:
    """0 and 100 idle connections: two ticks and nothing to break (newcomer-4: the mark sat in
    the middle of compare.png's and the validation plots' axes)."""
    curve = make_curve()
    ax = plot_tps(curve[curve["idle_clients"] <= 100])
    plt.gcf().canvas.draw()
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["0", "100"]
    assert not [line for line in ax.lines if str(line.get_label()) == "_axis_break"]


def test_given_colours_keep_an_algorithm_s_colour_whatever_the_plot_shows() -> None:
    colours = algorithm_colours(["old", "pre", "post"])
    full = make_curve()
    only_post = full[full["algorithm"] == "post"]
    ax = plot_tps(only_post, colours=colours)
    assert {line.get_color() for line in data_lines(ax)} == {colours["post"]} == {"C2"}
    ax2 = plot_tps(make_curve(), colours=colours)
    assert {line.get_color() for line in data_lines(ax2)} == {"C1", "C2"}


T_2 = 4.302652729749  # Student's t, 97.5 % quantile, 2 degrees of freedom (tables)


def test_several_seeds_draw_the_interval_of_their_mean_as_a_band() -> None:
    curve = make_curve()
    seeds = pd.concat([curve.assign(seed=curve["seed"] + k, tps=curve["tps"] * factor)
                       for k, factor in enumerate((0.9, 1.0, 1.2))])
    ax = plot_tps(seeds)
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == len(ax.collections) == 4  # one band per line
    # the first line and band are post at 1 client: TPS 2000, 1818, 1000 times 0.9, 1 and 1.2
    factors = np.array([0.9, 1.0, 1.2])
    half = T_2 * factors.std(ddof=1) / np.sqrt(3)  # per unit of TPS
    line = data_lines(ax)[0]
    assert line.get_label() == "post, clients=1"
    assert np.asarray(line.get_ydata()) == pytest.approx(
        np.array([2000.0, 2000 / 1.1, 1000.0]) * factors.mean())
    band = np.asarray(bands[0].get_paths()[0].vertices)[:, 1]
    assert band.max() == pytest.approx(2000.0 * (factors.mean() + half), rel=1e-9)
    assert band.min() == pytest.approx(1000.0 * (factors.mean() - half), rel=1e-9)
    legend = ax.get_legend()
    assert legend is not None
    assert [text.get_text() for text in legend.get_texts()][-1] == (
        "shaded: 95% interval of the mean over seeds")


def test_one_seed_per_point_draws_no_band() -> None:
    ax = plot_tps(make_curve())
    assert not ax.collections
    assert len(data_lines(ax)) == 4
    legend = ax.get_legend()
    assert legend is not None
    assert not [t for t in legend.get_texts() if "interval" in t.get_text()]


def test_tps_panels_split_client_counts_when_idle_connections_vary() -> None:
    curve = make_curve()
    measured = pd.DataFrame({"algorithm": ["pre", "pre"], "clients": [1, 1],
                             "idle_clients": [0, 100], "measured_tps": [900.0, 800.0]})
    panels = tps_panels(curve, measured)
    assert [title for title, _, _ in panels] == ["1 active client", "48 active clients"]
    assert [sorted(set(part["clients"])) for _, part, _ in panels] == [[1], [48]]
    first, second = panels[0][2], panels[1][2]
    assert first is not None
    assert list(first["idle_clients"]) == [0, 100]
    assert second is None  # no measurement of 48 clients: nothing to overlay there


def test_tps_panels_keep_one_panel_against_active_clients() -> None:
    curve = make_curve()
    one_idle = curve[curve["idle_clients"] == 0]
    panels = tps_panels(one_idle)
    assert len(panels) == 1
    assert panels[0][0] == ""
    assert len(panels[0][1]) == len(one_idle)


def test_tps_against_clients_is_log_scale() -> None:
    ax = plot_tps(make_curve(), "clients")  # positional x, as Result.plot calls it
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel() == "active clients"
    assert len(data_lines(ax)) == 2 * len(IDLE)


def test_tps_draws_measurements_hollow_dashed_in_the_algorithm_colour() -> None:
    curve = make_curve()
    measured = pd.DataFrame({"algorithm": ["pre"] * 3 + ["post"] * 3, "clients": 48,
                             "idle_clients": list(IDLE) * 2, "series": "paper",
                             "measured_tps": [40_000.0, 30_000.0, 20_000.0] * 2})
    ax = plot_tps(curve, ax=plt.subplots()[1], measurements=measured)
    assert len(data_lines(ax)) == 4 + 2
    extra = [line for line in ax.lines if "measured" in str(line.get_label())]
    assert sorted(str(line.get_label()) for line in extra) == ["post (measured)",
                                                              "pre (measured)"]
    simulated = {line.get_label(): line for line in ax.lines}
    for line in extra:
        assert line.get_linestyle() == "--"
        assert line.get_markerfacecolor() == "none"
        algorithm = str(line.get_label()).split()[0]
        assert line.get_color() == simulated[f"{algorithm}, clients=48"].get_color()
        assert line.get_marker() == simulated[f"{algorithm}, clients=48"].get_marker()


def test_two_measured_series_of_one_algorithm_are_told_apart_by_name() -> None:
    measured = pd.DataFrame({"algorithm": ["pre"] * 4, "clients": 48,
                             "idle_clients": [0, 100] * 2, "series": ["pg13"] * 2 + ["pg12"] * 2,
                             "measured_tps": [40_000.0, 30_000.0, 41_000.0, 29_000.0]})
    ax = plot_tps(make_curve(), measurements=measured)
    assert sorted(label for label in labels(ax) if "measured" in label) == [
        "pre (measured, pg12)", "pre (measured, pg13)"]


def test_tps_rejects_measurements_without_tps() -> None:
    measured = pd.DataFrame({"algorithm": ["pre"], "clients": [1], "idle_clients": [0]})
    with pytest.raises(ValueError, match="measured_tps"):
        plot_tps(make_curve(), measurements=measured)


# --------------------------------------------------------------------------------- bars


def bar_containers(ax: Axes) -> list[BarContainer]:
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def test_transfers_stack_the_nonzero_classes_per_point() -> None:
    curve = make_curve()
    ax = plot_transfers(curve)
    containers = bar_containers(ax)
    assert [c.get_label() for c in containers] == ["local hitm", "remote hitm", "upgrade"]
    assert all(len(c) == len(curve) for c in containers)
    assert len(ax.get_xticklabels()) == len(curve)
    assert ax.get_xticklabels()[0].get_text() == "pre, 1 active, 0 idle"
    assert ax.get_xticklabels()[0].get_rotation() == 90
    assert "invalidations" in labels(ax)
    assert "per transaction" in ax.get_ylabel()
    # Stacked: the last class starts where the first two end.
    top = containers[2][5]
    assert top.get_y() == pytest.approx(2.0 + 48 / 10)
    assert top.get_height() == pytest.approx(1.0)


def test_transfers_can_include_private_hits() -> None:
    ax = plot_transfers(make_curve(), classes=CLASS_NAMES)
    assert [c.get_label() for c in bar_containers(ax)][:2] == ["l1 hit", "l2 hit"]


def test_breakdown_stacks_the_model_categories_in_microseconds() -> None:
    curve = make_curve()
    ax = plot_breakdown(curve)
    containers = bar_containers(ax)
    assert [c.get_label() for c in containers] == ["work", "wait"]  # never: all 0; stray: no share
    assert all(len(c) == len(curve) for c in containers)
    assert "\u00b5s" in ax.get_ylabel()
    totals = [bar.get_y() + bar.get_height() for bar in containers[-1]]
    assert totals == pytest.approx(list(10.0 + curve["idle_clients"]))


# --------------------------------------------------------------------------------- plot_ratio


def test_ratio_draws_one_line_per_client_count_and_parity() -> None:
    ax = plot_ratio(make_curve(), "post", "pre")
    curves = [line for line in ax.lines if line.get_label() in ("clients=1", "clients=48")]
    assert len(curves) == 2
    assert len(data_lines(ax)) == 3  # plus the parity line
    assert np.allclose(np.asarray(curves[0].get_ydata(), dtype=float), 2.0)
    assert np.asarray(curves[0].get_xdata()) == pytest.approx([ZERO, 100, 1000])
    assert ax.get_ylabel() == "TPS ratio post / pre"
    assert ax.get_xscale() == "log"


def test_ratio_of_algorithms_without_common_points_raises() -> None:
    with pytest.raises(ValueError, match="no grid point"):
        plot_ratio(make_curve(), "post", "nonexistent")
