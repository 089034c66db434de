"""``snapsim report``: one self-contained HTML page of a run, read back structurally and rendered
in a real headless browser."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest

from simulator.cli import main
from simulator.tools.report import report_html

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


class _Page(HTMLParser):
    """The tags, the external references and the header tooltips of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.sources: list[str] = []
        self.tooltips: list[str] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        named = dict(attrs)
        for key in ("src", "href"):
            if named.get(key):
                self.sources.append(str(named[key]))
        if tag == "th" and named.get("title"):
            self.tooltips.append(str(named["title"]))
        self._in_title = tag == "title"

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "run"
    assert main(["-q", "run", "tiny", "--clients", "1,4", "--idle-clients", "0",
                 "--out", str(out), "--no-progress"]) == 0
    return out


def test_the_page_is_self_contained_and_holds_the_run(run_dir: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(run_dir)]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == run_dir / "report.html"
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    assert page.title == "snapsim: tiny"
    assert page.tags.count("img") == 4  # tps, transfers, breakdown, ratio
    assert page.sources
    assert all(source.startswith("data:image/png;base64,") for source in page.sources)
    assert "script" not in page.tags
    assert "link" not in page.tags
    assert page.tags.count("table") >= 3  # metadata, curve, hot lines
    assert "1/s: active clients' transactions per simulated second" in page.tooltips  # tps
    text = path.read_text(encoding="utf-8")
    for expected in ("gold5215-2s", "ProcArrayLock", "snapsim_version", "duration_ms"):
        assert expected in text
    assert "Over the seeds" not in text  # one seed per point: no table over the seeds


def test_several_seeds_add_a_table_of_means_and_half_widths(tmp_path: Path) -> None:
    rows = [{"machine": "m", "algorithm": "pre14", "workload": "w", "clients": 1,
             "idle_clients": 0, "idle_kind": "idle", "seed": root, "root_seed": root,
             "tps": tps, "latency_mean_us": 1e6 / tps, "latency_p99_us": 2e6 / tps, "error": ""}
            for root, tps in enumerate((20_000.0, 22_000.0, 27_000.0))]
    pd.DataFrame(rows).to_csv(tmp_path / "curve.csv", index=False)
    text = report_html(tmp_path)
    assert "<h2>Over the seeds</h2>" in text
    # mean 23,000; sd sqrt((3000^2 + 1000^2 + 4000^2) / 2) = 3605.6; t(2) 4.3027 * sd / sqrt(3)
    assert "<td class=\"text\">23,000 \u00b1 8,957</td>" in text
    assert "<td class=\"text\">44.2 \u00b1 16.3</td>" in text  # latency 1e6 / TPS: 50, 45.5, 37


def test_a_directory_that_is_not_a_run_is_bad_input(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert "curve.csv" in capsys.readouterr().err
    assert not (tmp_path / "report.html").exists()
    assert main(["report", str(tmp_path), "--top", "0"]) == 2


def test_the_page_renders_in_a_headless_browser(run_dir: Path, tmp_path: Path) -> None:
    browser = next((shutil.which(name) for name in BROWSERS if shutil.which(name)), None)
    if browser is None:
        pytest.skip("no headless Chromium here (.ci/run installs Debian's chromium)")
    page = tmp_path / "page.html"
    assert main(["-q", "report", str(run_dir), "--out", str(page)]) == 0
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1280,2000", f"--screenshot={shot}", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    pixels = np.asarray(mpimg.imread(shot))
    assert pixels.shape[:2] == (2000, 1280)
    # a rendered page: text, tables and the embedded plots, not a blank or broken-image page
    assert float(pixels[..., :3].std()) > 0.05
    assert (pixels[..., :3] < 0.5).mean() > 0.005  # dark pixels: text and plot lines
