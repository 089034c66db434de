"""The progress of a sweep in a Jupyter notebook: one line of output, updated in place.

A terminal draws tqdm's bar by rewriting one line with carriage returns; a notebook's stderr is
not a terminal, and each redraw there arrives as another line of output (a full-size run of
notebook 01 left about 25). In an IPython kernel the sweep shows this instead: one display
(``IPython.display.display(..., display_id=True)``) whose text is replaced as points finish, at
most every half second and once at the end, so a saved notebook keeps one line, the last.
"""

from __future__ import annotations

import importlib
import sys
import time
from typing import Any

UPDATE_S = 0.5


def in_notebook() -> bool:
    """Whether this runs in an IPython kernel whose stderr is not a terminal (a notebook)."""
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    return not (callable(isatty) and isatty())


class NotebookProgress:
    """The few methods of a tqdm bar that a sweep calls, shown as one updated display."""

    def __init__(self, total: int) -> None:
        shown: Any = importlib.import_module("IPython.display")  # there in an IPython kernel
        self.total = total
        self.done = 0
        self.postfix = ""
        self.started = time.monotonic()
        self._shown = 0.0
        self._pretty: Any = shown.Pretty
        self._handle: Any = shown.display(self._pretty(self._text()), display_id=True)

    def _text(self) -> str:
        elapsed = time.monotonic() - self.started
        left = (f", about {elapsed / self.done * (self.total - self.done):.0f} s left"
                if 0 < self.done < self.total else "")
        postfix = f", {self.postfix}" if self.postfix else ""
        return f"points: {self.done}/{self.total} ({elapsed:.0f} s{left}{postfix})"

    def _show(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._handle is not None and (force or now - self._shown >= UPDATE_S):
            self._handle.update(self._pretty(self._text()))
            self._shown = now

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        """What follows the count (``failed=2``)."""
        self.postfix = text
        if refresh:
            self._show()

    def update(self, n: int = 1) -> None:
        """``n`` more points done."""
        self.done += n
        self._show(force=self.done >= self.total)

    def close(self) -> None:
        """The final state."""
        self._show(force=True)
