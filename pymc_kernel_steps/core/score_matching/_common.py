"""Validation and shared helpers of the score-matching estimators."""

from __future__ import annotations

import math

import numpy as np

from ..kernels import GaussianKernel

#: cap on the number of entries of the (chunk, n, d) difference tensors used for evaluation
_CHUNK_ENTRIES = 1 << 21


# ---------------------------------------------------------------------------------------------
# validation helpers


def _positive(name: str, value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a positive finite number, got {value!r}.") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"`{name}` must be a positive finite number, got {value!r}.")
    return value


def _data(Z, name: str, min_points: int = 2, dim: int | None = None) -> np.ndarray:
    Z = np.asarray(Z, dtype=float)
    if Z.ndim != 2:
        raise ValueError(f"`{name}` must be a 2-d array of points (n, d), got shape {Z.shape}.")
    if Z.shape[0] < min_points:
        raise ValueError(f"`{name}` needs at least {min_points} points, got {Z.shape[0]}.")
    if Z.shape[1] < 1:
        raise ValueError(f"`{name}` must have at least one column.")
    if dim is not None and Z.shape[1] != dim:
        raise ValueError(f"`{name}` must have {dim} columns, got {Z.shape[1]}.")
    if not np.all(np.isfinite(Z)):
        raise ValueError(f"`{name}` contains non-finite values.")
    return np.ascontiguousarray(Z)


def _query(X, dim: int, name: str = "X") -> tuple[np.ndarray, bool]:
    """Points to evaluate at: ``(d,)`` → one point (``single=True``) or ``(n, d)``."""
    X = np.asarray(X, dtype=float)
    single = X.ndim == 1
    if single:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != dim:
        raise ValueError(f"`{name}` must have shape ({dim},) or (n, {dim}), got {X.shape}.")
    return X, single


def _gaussian_kernel(kernel) -> GaussianKernel | None:
    if kernel is None or isinstance(kernel, GaussianKernel):
        return kernel
    raise ValueError(
        f"`kernel` must be a GaussianKernel (or None for the median heuristic), got {kernel!r}."
    )
