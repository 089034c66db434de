"""The array type aliases shared by every floor (NumPy arrays of a fixed dtype)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
"""Integers: line numbers, counters, state codes."""

Int32Array = npt.NDArray[np.int32]
"""Compact integers: the topology's thread, core, domain and socket indexes."""

FloatArray = npt.NDArray[np.float64]
"""Times and costs in nanoseconds, rates, fitted values."""

SequenceFunction = Callable[[int, IntArray, IntArray, IntArray, float, FloatArray],
                            tuple[float, float]]
"""A coherence engine's unchecked ``sequence``: ``(thread, lines, ops, masks, now, out)`` to
``(total cost, total wait)`` in ns."""
