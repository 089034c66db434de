"""The publications' qualitative findings, measured and predicted (docs/validation.md's table).

Usage (from the project root, after ``snapsim validate --out docs/validation``)::

    python docs/findings.py                                  # docs/validation/validation.csv
    python docs/findings.py --validation DIR/validation.csv  # another validate run

Each finding is a statement the publications make about the shape of the curves (pre14 halves
from 0 to 10,000 idle connections with one client, ...), turned into one number computed the same
way from the measured and from the predicted TPS of ``validation.csv``, and a range of that number
within which the statement holds. The script prints the Markdown table: finding, its source, the
measured and predicted numbers, and whether the statement holds for each. Exit code 2 when the
file is missing or lacks the points of a finding, else 0.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

DOCS = Path(__file__).resolve().parent
VALIDATION = DOCS / "validation" / "validation.csv"

Lookup = Callable[[str, str, int, int], float]
"""TPS of (dataset, series, clients, idle connections), measured or predicted."""


@dataclass(frozen=True)
class Finding:
    """A published statement about the curves, as a number and the range where it holds."""

    statement: str
    source: str
    number: Callable[[Lookup], float]
    low: float
    high: float
    unit: str = "ratio"

    def holds(self, value: float) -> bool:
        """Whether the statement holds for ``value``."""
        return self.low <= value <= self.high


def _fall(dataset: str, series: str, clients: int, idle: int) -> Callable[[Lookup], float]:
    """TPS at ``idle`` connections over TPS at none."""
    return lambda tps: tps(dataset, series, clients, idle) / tps(dataset, series, clients, 0)


def _worse(series: str, idle: int) -> Callable[[Lookup], float]:
    """One client's TPS with mostly-idle connections over the same with idle ones."""
    return lambda tps: (tps("gold5215_mostly_idle", series, 1, idle)
                        / tps("gold5215_idle", series, 1, idle))


def _split_over_master(tps: Lookup) -> float:
    """Median of pgxact_split / master over the Platinum's points at 100-1,000 clients."""
    dataset = "platinum8168_master_vs_split"
    ratios = [tps(dataset, "tps_pgxact_split", clients, 0) / tps(dataset, "tps_master", clients, 0)
              for clients in range(100, 1001, 100)]
    return float(pd.Series(ratios).median())  # the clients measured (nan elsewhere, skipped)


FREUND_2020 = ("A. Freund, pgsql-hackers, 2020-03-01 "
               "(message 20200301083601.ews6hz5dduc3w2se@alap3.anarazel.de)")
FREUND_BLOG = ("A. Freund, \"Analyzing the Limits of Connection Scalability in Postgres\", "
               "2020-10")

FINDINGS: tuple[Finding, ...] = (
    Finding("one client, idle connections: pre14 about halves from 0 to 10,000",
            FREUND_2020, _fall("gold5215_idle", "tps_pre14", 1, 10000), 0.40, 0.60),
    Finding("one client, idle connections: post14 stays flat (within 5 %) to 10,000",
            FREUND_BLOG, _fall("gold5215_idle", "tps_post14", 1, 10000), 0.95, 1.05),
    Finding("48 clients, idle connections: pre14 loses about two thirds at 10,000",
            FREUND_2020, _fall("gold5215_idle", "tps_pre14", 48, 10000), 0.25, 0.42),
    Finding("48 clients, idle connections: post14 stays flat (within 10 %) to 10,000",
            FREUND_BLOG, _fall("gold5215_idle", "tps_post14", 48, 10000), 0.90, 1.10),
    Finding("one client, pre14: 5,000 mostly-idle connections cost at least 5 % more than "
            "5,000 idle ones",
            FREUND_BLOG, _worse("tps_pre14", 5000), 0.0, 0.95),
    Finding("one client, post14: 5,000 mostly-idle connections cost at least 5 % more than "
            "5,000 idle ones",
            FREUND_BLOG, _worse("tps_post14", 5000), 0.0, 0.95),
    Finding("Platinum 8168: pgxact_split roughly doubles master at 100-1,000 clients (median)",
            FREUND_BLOG, _split_over_master, 1.6, 2.4),
)


def table(validation: pd.DataFrame, findings: Sequence[Finding] = FINDINGS) -> list[str]:
    """The Markdown table of ``findings`` on a validation table (``validation.csv``).

    A point missing from the table counts as ``nan`` (a median skips it).

    Raises:
        ValueError: a finding's number is undefined (the points it needs are missing).
    """
    columns = ["dataset", "series", "clients", "idle_clients"]
    index = validation.drop_duplicates(columns).set_index(columns)

    def lookup(column: str) -> Lookup:
        values = index[column].to_dict()

        def tps(dataset: str, series: str, clients: int, idle: int) -> float:
            return float(values.get((dataset, series, clients, idle), float("nan")))
        return tps

    lines = ["| finding | source | range where it holds | measured | holds | model | holds |",
             "|---|---|---|---|---|---|---|"]
    for finding in findings:
        measured = finding.number(lookup("measured_tps"))
        predicted = finding.number(lookup("predicted_tps"))
        if pd.isna(measured) or pd.isna(predicted):
            raise ValueError(f"the validation table lacks the points of {finding.statement!r}")
        lines.append(
            f"| {finding.statement} | {finding.source} | {finding.low:g}-{finding.high:g} "
            f"| {measured:.2f} | {_yes(finding.holds(measured))} | {predicted:.2f} "
            f"| {_yes(finding.holds(predicted))} |")
    return lines


def _yes(holds: bool) -> str:
    return "yes" if holds else "**no**"


def main(argv: list[str] | None = None) -> int:
    """Print the findings table of a validation table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--validation", type=Path, default=VALIDATION, metavar="CSV",
                        help="validation.csv of a snapsim validate run")
    args = parser.parse_args(argv)
    try:
        validation = pd.read_csv(args.validation)
        lines = table(validation)
    except FileNotFoundError:
        print(f"--validation: no such file: {args.validation}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"--validation: {exc} ({args.validation})", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
