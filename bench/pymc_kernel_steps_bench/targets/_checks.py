"""Checks of the target factories' arguments, naming the argument in their error."""

from __future__ import annotations

import math

__all__ = ["require_black_box", "require_count", "require_finite"]


def require_count(name: str, value, minimum: int = 1) -> None:
    """Raise a ValueError unless ``value`` is a whole number ≥ ``minimum``."""
    if int(value) != value or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def require_finite(name: str, value, *, zero: bool = False) -> None:
    """Raise a ValueError unless ``value`` is a finite number > 0 (≥ 0 with ``zero``)."""
    if not ((value >= 0 if zero else value > 0) and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number {'>=' if zero else '>'} 0, got {value!r}")


def require_black_box(black_box: bool, target: str) -> None:
    """Raise a ValueError for ``black_box=False`` on a target with no differentiable twin."""
    if not black_box:
        raise ValueError(f"black_box=False: the {target} target has no differentiable twin")
