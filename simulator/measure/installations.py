"""PostgreSQL installations to measure: a bin directory each, its version and its label.

An installation is given as ``LABEL=BINDIR``; the label is the algorithm of the model it stands
for: ``pre14`` for PostgreSQL 9.2 to 13 (``PGXACT`` and the snapshot scan of every connection),
``post14`` for 14 and later (the dense arrays and the snapshot cache). The version is read from
the server binary itself (``postgres --version``), and a label that contradicts it is bad input.
pgbench must be 13 or later (the form of its report parsed here; it drives older servers too).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from simulator.errors import ConfigError

LABELS = ("pre14", "post14")
SERVER_PROGRAMS = ("postgres", "initdb")
MIN_PGBENCH_MAJOR = 13
_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, slots=True)
class Installation:
    """One PostgreSQL server installation."""

    label: str
    bindir: Path
    version: str
    """The full version line of ``postgres --version``."""
    major: float
    """Major version: 13, 15; 9.6 for the 9.x series."""

    def program(self, name: str) -> Path:
        """A program of the bin directory."""
        return self.bindir / name


def parse_install(text: str) -> tuple[str, Path]:
    """``LABEL=BINDIR`` as a label and a path.

    Raises:
        ConfigError: no ``=``, an unknown label or an empty directory.
    """
    label, sep, directory = text.partition("=")
    if not sep or not directory.strip():
        raise ConfigError("--install", f"expected LABEL=BINDIR (LABEL one of "
                          f"{', '.join(LABELS)}), got {text!r}")
    label = label.strip()
    if label not in LABELS:
        raise ConfigError("--install", f"unknown label {label!r} in {text!r} "
                          f"(choose from {', '.join(LABELS)}: pre14 for PostgreSQL 9.2-13, "
                          "post14 for 14 and later)")
    return label, Path(directory.strip()).expanduser()


def major_of(version_line: str) -> float | None:
    """The major version in a ``--version`` line (``9.6`` for 9.x, else the first number)."""
    match = _VERSION.search(version_line)
    if match is None:
        return None
    first = int(match.group(1))
    if first < 10 and match.group(2) is not None:
        return first + int(match.group(2)) / 10
    return float(first)


def label_for(major: float) -> str:
    """The label a major version stands for."""
    return "pre14" if major < 14 else "post14"


def version_line(program: Path, flag: str) -> str:
    """``program --version``'s output.

    Raises:
        ConfigError: naming ``flag``: the program is missing, cannot run or says no version.
    """
    if not program.is_file():
        raise ConfigError(flag, f"no such program: {program}")
    try:
        done = subprocess.run([str(program), "--version"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(flag, f"cannot run {program}: {exc}") from None
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0 or major_of(output) is None:
        first = output.splitlines()[0] if output else f"exit code {done.returncode}"
        raise ConfigError(flag, f"{program} --version did not give a PostgreSQL version: "
                          f"{first}")
    return output.splitlines()[0]


def installation(label: str, bindir: Path) -> Installation:
    """Check a bin directory and its label against the server's own version.

    Raises:
        ConfigError: a missing directory or program, a version that cannot be read, or a label
            that contradicts the version.
    """
    if not bindir.is_dir():
        raise ConfigError("--install", f"{label}: no such directory: {bindir}")
    for name in SERVER_PROGRAMS:
        if not (bindir / name).is_file():
            raise ConfigError("--install", f"{label}: no {name} in {bindir}")
    line = version_line(bindir / "postgres", "--install")
    major = major_of(line)
    assert major is not None
    if major < 9.2:
        raise ConfigError("--install", f"{label}: {line} is older than 9.2, which no model "
                          "algorithm stands for")
    if label_for(major) != label:
        raise ConfigError("--install", f"{bindir} holds {line}, which is "
                          f"{label_for(major)}, not {label} (pre14: 9.2-13, post14: 14 and "
                          "later)")
    return Installation(label=label, bindir=bindir, version=line, major=major)


def installations(texts: list[str]) -> list[Installation]:
    """Every ``--install``, checked; at most one per label.

    Raises:
        ConfigError: none given, a label given twice, or a bad installation.
    """
    if not texts:
        raise ConfigError("--install", "give at least one LABEL=BINDIR (e.g. post14="
                          "$(pg_config --bindir))")
    parsed = [parse_install(text) for text in texts]
    labels = [label for label, _ in parsed]
    for label in LABELS:
        if labels.count(label) > 1:
            raise ConfigError("--install", f"label {label} given {labels.count(label)} times "
                              "(one installation per label)")
    return [installation(label, bindir) for label, bindir in parsed]


def find_pgbench(given: str | None, found: list[Installation]) -> tuple[Path, str]:
    """The pgbench to use and its version line: ``given``, else on PATH, else beside a server.

    Raises:
        ConfigError: naming ``--pgbench``: none found, or older than 13.
    """
    if given is not None:
        path = Path(given).expanduser()
    else:
        candidates = [shutil.which("pgbench"),
                      *(str(inst.program("pgbench")) for inst in found)]
        existing = [c for c in candidates if c and Path(c).is_file()]
        if not existing:
            raise ConfigError("--pgbench", "no pgbench on PATH nor in an installation's bin "
                              "directory (Debian/Ubuntu: it is in the postgresql-NN package)")
        path = Path(existing[0])
    line = version_line(path, "--pgbench")
    if not line.startswith("pgbench "):  # postgres --version names a version too
        raise ConfigError("--pgbench", f"{path} is not pgbench: its --version says {line!r}")
    major = major_of(line)
    if major is None or major < MIN_PGBENCH_MAJOR:
        raise ConfigError("--pgbench", f"{path} is {line}; pgbench {MIN_PGBENCH_MAJOR} or "
                          "later is needed")
    return path, line
