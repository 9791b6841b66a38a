"""Tuning policy the steps share."""

from __future__ import annotations

__all__ = ["SCALE_RANGE", "min_accepted_moves"]

#: adapted scales stay within this factor of where they started (never collapse to zero)
SCALE_RANGE = 1e4


def min_accepted_moves(dim: int) -> int:
    """Accepted random-walk moves needed before a history can teach a kernel anything."""
    return max(20, 2 * dim)
