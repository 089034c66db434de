"""The README's first screen, its examples and its command-line tour stay true."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import yaml

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
README = (ROOT / "README.md").read_text(encoding="utf-8")
FIRST_COMMAND = ("python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' "
                 "&& snapsim run")


def test_first_screen_has_the_two_commands() -> None:
    first_screen = README.splitlines()[:30]
    commands = "\n".join(first_screen).split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert commands == [FIRST_COMMAND, "pytest"]


def test_first_screen_names_every_output_of_the_default_run() -> None:
    from simulator.study.outputs import OWNED

    first_screen = "\n".join(README.splitlines()[:30])
    for name in OWNED:
        assert f"`{name}" in first_screen, name


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in ci.splitlines() if line and not line.startswith("#")]
    assert commands[-1] == "pytest"


def test_the_command_line_tour_names_every_command() -> None:
    from simulator.cli import COMMANDS

    tour = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
    for name in COMMANDS:
        assert f"| `snapsim {name}" in tour, name


def test_experiment_examples_are_valid(tmp_path: Path) -> None:
    from simulator.cli.check_config import check_experiment, is_experiment

    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", README,
                                                           flags=re.DOTALL)]
    experiments = [block for block in blocks if isinstance(block, dict) and is_experiment(block)]
    assert experiments
    for index, block in enumerate(experiments):
        path = tmp_path / f"example{index}.yaml"
        path.write_text(yaml.safe_dump(block, sort_keys=False), encoding="utf-8")
        assert check_experiment(str(path)).startswith(f"experiment {block['name']}: ")


def test_python_examples_run_and_print_what_they_say() -> None:
    import matplotlib

    matplotlib.use("Agg")
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    assert len(blocks) == 3
    output = io.StringIO()
    namespaces: list[dict[str, object]] = [{} for _ in blocks]
    with contextlib.redirect_stdout(output):
        for block, namespace in zip(blocks, namespaces, strict=True):
            exec(compile(block, "README.md", "exec"), namespace)
    text = output.getvalue()
    for namespace in namespaces[:2]:  # the PostgreSQL and Dask examples: numbers to trust
        curve = namespace["result"].curve  # type: ignore[attr-defined]
        assert curve["window_converged"].all(), curve[["algorithm", "clients", "idle_clients"]]
    assert "share_get_snapshot" in text  # the PostgreSQL example's table
    assert "12 points on the cluster, 0 failed" in text  # the Dask example
    assert "REMOTE_HITM" in text  # the machine example
    assert "latency_ns=115.6" in text
    shown = re.search(r"print\(result\) +# (AccessResult\(.*\))", README)
    assert shown is not None
    assert shown.group(1) in text  # the comment is what it prints
    assert "false_sharing_hitm" in text


def test_the_architecture_tree_lists_every_package_and_only_real_ones() -> None:
    section = README.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    tree = re.findall(r"```\n(.*?)```", section, flags=re.DOTALL)[0]
    listed = {line.split()[0].rstrip("/") for line in tree.splitlines() if line.strip()}
    packages = {path.parent.relative_to(ROOT).name
                for root in ("simulator", "models")
                for path in (ROOT / root).glob("*/__init__.py")}
    assert packages <= listed
    for name in listed:
        found = [p for p in (ROOT, ROOT / "simulator", ROOT / "models") if (p / name).exists()]
        assert found, name


def test_the_first_screen_and_development_give_the_same_test_time() -> None:
    first_screen = " ".join(README.splitlines()[:30])
    development = " ".join(README.split("## Development", 1)[1].split("\n## ", 1)[0].split())
    pattern = r"about (\d+) minutes on an idle 2-core machine"
    assert re.findall(pattern, first_screen) == re.findall(pattern, development) != []


def test_the_readme_says_how_to_read_a_run_s_results() -> None:
    section = README.split("### Reading a run's results", 1)[1].split("\n## ", 1)[0]
    for name in ("curve.csv", "curve_summary.csv", "tps.png", "columns.yaml", "window_converged"):
        assert f"`{name}`" in section, name
    status = README.split("**Status.**", 1)[1].split("\n\n", 1)[0]
    assert len(status.splitlines()) <= 6


def test_the_regression_baseline_is_a_converged_run() -> None:
    import pandas as pd

    from tests.paths import BASELINES_DIR

    curve = pd.read_csv(BASELINES_DIR / "tiny" / "curve.csv")
    assert len(curve) == 8
    assert curve["window_converged"].all(), curve[["algorithm", "clients", "idle_clients"]]
