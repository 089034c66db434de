"""The columns that identify a point: first in every curve row and every per-line row."""

from __future__ import annotations

POINT_KEYS = ("machine", "algorithm", "workload", "clients", "idle_clients", "idle_kind", "seed")
"""Columns that identify a point, first in every curve and per-line row."""

TRANSACTIONS_PER_CLIENT = "transactions_per_client"
"""Curve column: the measured window's transactions per active client."""
WINDOW_CONVERGED = "window_converged"
"""Curve column: whether the point's warm-up and window are long enough to trust its TPS (the
workload model's rule); ``False`` marks a point of too few transactions."""
