"""Helpers the regression surrogate and its trends share."""

from __future__ import annotations

import numpy as np

_WINDOW_QUANTILE = 0.9999
_JITTER = 1e-10


def _points_and_values(U, values) -> tuple[np.ndarray, np.ndarray]:
    U = np.asarray(U, dtype=float)
    values = np.asarray(values, dtype=float)
    if U.ndim != 2 or U.shape[0] < 2:
        raise ValueError(f"`U` must have shape (n, d) with n ≥ 2, got shape {U.shape}.")
    if values.shape != (U.shape[0],):
        raise ValueError(
            f"`values` must have shape ({U.shape[0]},) to match `U`, got {values.shape}."
        )
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(values))):
        raise ValueError("`U` and `values` must be finite.")
    return U, values


def _precisions(precisions, dim: int | None = None) -> np.ndarray:
    precisions = np.asarray(precisions, dtype=float)
    if precisions.ndim != 1 or (dim is not None and precisions.shape != (dim,)):
        expected = "(d,)" if dim is None else f"({dim},)"
        raise ValueError(f"`precisions` must have shape {expected}, got {precisions.shape}.")
    if not (np.all(np.isfinite(precisions)) and np.all(precisions >= 0)):
        raise ValueError(f"`precisions` must be finite and ≥ 0, got {precisions}.")
    return np.ascontiguousarray(precisions)


def _kernel(X, Z, precisions) -> np.ndarray:
    """``k(x_a, z_b) = exp(−½ Σ_j P_j (x_aj − z_bj)²)``, shape (len(X), len(Z))."""
    root = np.sqrt(precisions)
    Xs, Zs = X * root, Z * root
    sq = (Xs**2).sum(1)[:, None] + (Zs**2).sum(1)[None, :] - 2.0 * Xs @ Zs.T
    return np.exp(-0.5 * np.maximum(sq, 0.0))
