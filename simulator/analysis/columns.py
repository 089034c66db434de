"""The columns that identify a point: first in every curve row and every per-line row."""

from __future__ import annotations

POINT_KEYS = ("machine", "algorithm", "workload", "clients", "idle_clients", "idle_kind", "seed")
"""Columns that identify a point, first in every curve and per-line row."""
