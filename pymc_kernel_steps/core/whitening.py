"""Affine whitening of chain states by the history's mean and covariance.

The kernels of KAMH, KMC and cKAM are isotropic: one lengthscale for every direction. A posterior
whose coordinates differ in scale by orders of magnitude, or are strongly correlated, cannot be
represented by such a kernel in the model's coordinates. The samplers therefore work on whitened
states ``u = L⁻¹(x − μ)``, with ``μ`` and ``L Lᵀ = Σ`` the mean and covariance of the chain's
history, and map proposals back with ``x = μ + L u``. The map is linear with a constant Jacobian,
so a Metropolis–Hastings move built in ``u`` is one in ``x`` with the same acceptance ratio, and a
linear change of the model's coordinates leaves the sampler's behaviour unchanged (up to the
rotation that Cholesky factors are not equivariant under, to which the isotropic kernels are
blind).

The covariance is regularised *relative to each coordinate's own scale*: a correlation matrix
``C`` becomes ``(C + ε I) / (1 + ε)`` before the scales are put back, so scales that span many
orders of magnitude are kept, while a history that is (nearly) degenerate in some direction
(a chain that has barely moved) cannot produce a singular map. ``ε`` shrinks with the number of
distinct points, ``ε = d / n_distinct``: a covariance estimated from few, autocorrelated states
underestimates some directions badly (with 20 states in 10 dimensions the smallest eigenvalue
comes out at a few percent of the truth), proposals along them become tiny, the chain stops
exploring them, and the next estimate is no better: a feedback that can keep adaptive
Metropolis from mixing. A
coordinate that has not moved at all takes its variance from ``fallback_variance``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .history import first_visits

__all__ = ["Whitening", "moved_coordinates"]

#: smallest relative ridge ε added to the history's correlation matrix
CORRELATION_RIDGE = 1e-12
#: shrinkage of the correlation matrix towards the identity: ε ≥ SHRINKAGE × d / (distinct points)
SHRINKAGE = 1.0


def moved_coordinates(points) -> np.ndarray:
    """Whether each coordinate of ``points`` (shape ``(n, d)``) takes more than one value.

    A coordinate the points never left has no spread, but its computed variance is a rounding
    error rather than zero (the mean of 52 equal values of 0.6 is not 0.6: variance 1.2e-32), so
    a test of the variance against zero takes it for a tiny spread."""
    points = np.asarray(points, dtype=float)
    return np.any(points != points[:1], axis=0)


@dataclass(frozen=True)
class Whitening:
    """The affine map ``u = L⁻¹(x − μ)`` and its inverse ``x = μ + L u``.

    Attributes
    ----------
    mean : numpy.ndarray, shape (d,)
        ``μ``.
    chol : numpy.ndarray, shape (d, d)
        Lower-triangular ``L`` with ``L Lᵀ = Σ``.
    inv_chol : numpy.ndarray, shape (d, d)
        ``L⁻¹`` (lower triangular).
    """

    mean: np.ndarray
    chol: np.ndarray
    inv_chol: np.ndarray

    @classmethod
    def identity(cls, dim: int) -> Whitening:
        """The identity map on ``ℝ^dim``."""
        eye = np.eye(int(dim))
        return cls(np.zeros(int(dim)), eye, eye.copy())

    @classmethod
    def diagonal(cls, scales) -> Whitening:
        """The map ``u = x / scales`` (coordinate-wise; ``scales`` positive, shape (d,))."""
        scales = np.asarray(scales, dtype=float)
        if scales.ndim != 1 or not np.all(np.isfinite(scales) & (scales > 0)):
            raise ValueError(f"`scales` must be a vector of positive numbers, got {scales!r}.")
        return cls(np.zeros(scales.shape[0]), np.diag(scales), np.diag(1.0 / scales))

    @classmethod
    def from_points(
        cls, points, fallback_variance=1.0, ridge: float | None = None, min_variance=None
    ) -> Whitening:
        """Whitening by the mean and regularised covariance of ``points``.

        Parameters
        ----------
        points : array_like, shape (n, d)
            States (repeats allowed), ``n ≥ 1``.
        fallback_variance : float or array_like, shape (d,)
            Variance used for a coordinate whose points do not vary (positive).
        min_variance : float or array_like, shape (d,), optional
            Lower bound of each coordinate's variance (e.g. from coordinate-wise random-walk
            scales), so that a direction the history has barely explored is not whitened to
            the history's small spread.
        ridge : float, optional
            Relative ridge ``ε ≥ 0`` added to the correlation matrix (raised a hundredfold at a
            time if the matrix is numerically singular). Default
            ``max(1e-12, SHRINKAGE × d / n_distinct)``.

        Returns
        -------
        Whitening
        """
        points = np.asarray(points, dtype=float)
        if points.ndim != 2 or points.shape[0] < 1:
            raise ValueError(f"`points` must have shape (n, d) with n ≥ 1, got {points.shape}.")
        if not np.all(np.isfinite(points)):
            raise ValueError("`points` must be finite.")
        dim = points.shape[1]
        fallback = np.broadcast_to(np.asarray(fallback_variance, dtype=float), (dim,))
        if not np.all(np.isfinite(fallback) & (fallback > 0)):
            raise ValueError(f"`fallback_variance` must be positive, got {fallback_variance!r}.")
        if ridge is None:
            distinct = len(first_visits(points))
            ridge = max(CORRELATION_RIDGE, SHRINKAGE * dim / distinct)
        if not (math.isfinite(ridge) and ridge >= 0):
            raise ValueError(f"`ridge` must be a non-negative number, got {ridge!r}.")
        mean = points.mean(axis=0)
        centred = points - mean
        cov = centred.T @ centred / points.shape[0]
        variance = np.diag(cov).copy()
        moved = moved_coordinates(points) & (variance > 1e-300)
        history_sd = np.sqrt(np.where(moved, variance, fallback))
        correlation = np.where(np.outer(moved, moved), cov / np.outer(history_sd, history_sd), 0.0)
        sd = history_sd
        if min_variance is not None:
            floor = np.broadcast_to(np.asarray(min_variance, dtype=float), (dim,))
            sd = np.sqrt(np.maximum(history_sd**2, np.where(np.isfinite(floor), floor, 0.0)))
        np.fill_diagonal(correlation, 1.0)
        chol_corr = None
        while chol_corr is None:  # a larger ridge where rounding leaves the matrix indefinite
            try:
                chol_corr = np.linalg.cholesky((correlation + ridge * np.eye(dim)) / (1.0 + ridge))
            except np.linalg.LinAlgError:
                ridge = max(100.0 * ridge, 1e-12)
        chol = sd[:, None] * chol_corr
        inv_chol = np.linalg.solve(chol_corr, np.eye(dim)) / sd[None, :]
        inv_chol = np.tril(inv_chol)
        return cls(mean, chol, inv_chol)

    @classmethod
    def from_gaussian(cls, mean, covariance) -> Whitening:
        """The whitening of the Gaussian ``N(mean, covariance)``.

        Parameters
        ----------
        mean : array_like, shape (d,)
        covariance : array_like, shape (d, d)
            Symmetric positive definite.

        Returns
        -------
        Whitening
        """
        mean = np.asarray(mean, dtype=float)
        covariance = np.asarray(covariance, dtype=float)
        if mean.ndim != 1 or covariance.shape != (mean.shape[0], mean.shape[0]):
            raise ValueError(
                f"`mean` must have shape (d,) and `covariance` shape (d, d), got {mean.shape} "
                f"and {covariance.shape}."
            )
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(covariance))):
            raise ValueError("`mean` and `covariance` must be finite.")
        try:
            chol = np.linalg.cholesky(0.5 * (covariance + covariance.T))
        except np.linalg.LinAlgError:
            raise ValueError("`covariance` must be positive definite.") from None
        inv_chol = np.tril(np.linalg.solve(chol, np.eye(mean.shape[0])))
        return cls(mean.copy(), chol, inv_chol)

    @property
    def dim(self) -> int:
        return self.mean.shape[0]

    def whiten(self, x) -> np.ndarray:
        """``u = L⁻¹(x − μ)`` for a state ``(d,)`` or states ``(n, d)``."""
        return (np.asarray(x, dtype=float) - self.mean) @ self.inv_chol.T

    def unwhiten(self, u) -> np.ndarray:
        """``x = μ + L u`` for ``(d,)`` or ``(n, d)``."""
        return self.mean + np.asarray(u, dtype=float) @ self.chol.T

    def log_det(self) -> float:
        """``log |det L|``: the log Jacobian of :meth:`unwhiten`."""
        return float(np.sum(np.log(np.abs(np.diag(self.chol)))))
