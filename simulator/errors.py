"""Exceptions raised by snapsim.

Every error the user can cause derives from :class:`SnapsimError`; the CLI turns it into one line
on stderr and exit code 2. :class:`ProtocolError` is different: it means the simulator itself broke
a coherence invariant, which is a bug, not bad input.
"""

from __future__ import annotations


class SnapsimError(Exception):
    """Base class of all snapsim errors."""


class ConfigError(SnapsimError):
    """A configuration file or value is invalid.

    Attributes:
        key: dotted path of the offending key (``"caches.l2.ways"``), or ``""`` for the whole file.
        source: the file the value came from, if any.
    """

    def __init__(self, key: str, message: str, source: str | None = None) -> None:
        self.key = key
        self.source = source
        self.message = message
        where = f"{source}: " if source else ""
        what = f"{key}: " if key else ""
        super().__init__(f"{where}{what}{message}")


class WriteError(SnapsimError, OSError):
    """A result file could not be written (a full disk, a read-only file system).

    Also an :class:`OSError` (same ``errno`` and ``strerror``), so that a caller that words its
    own message from an ``OSError`` still can; uncaught, the CLI prints it as one line naming
    the file and the cause.
    """

    def __init__(self, path: object, cause: OSError, hint: str = "") -> None:
        super().__init__(cause.errno, cause.strerror)
        self.path = path
        self.hint = hint

    def __str__(self) -> str:
        cause = self.strerror or "input/output error"
        return f"cannot write {self.path}: {cause}{'; ' + self.hint if self.hint else ''}"


class ProtocolError(SnapsimError):
    """A coherence invariant was violated (a simulator bug)."""
