"""Positive-definite kernels on R^d with closed-form gradients in the first argument.

Every kernel offers ``gram(X, Y)`` (the matrix ``k(x_i, y_j)``) and ``grad_x(x, Y)`` (the rows
``∇ₓ k(x, y_i)``). The Gaussian kernel is parametrised as ``k(x, y) = exp(-‖x - y‖² / (2ℓ²))``
with ``ℓ = lengthscale`` (paper 002 writes ``σ = 2ℓ²``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy.spatial.distance import cdist, pdist

__all__ = [
    "GaussianKernel",
    "Kernel",
    "LinearKernel",
    "MaternKernel",
    "RationalQuadraticKernel",
    "median_lengthscale",
]


def _check_positive(name: str, value: float) -> float:
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"`{name}` must be a positive finite number, got {value!r}.")
    return value


def _as_points(X, name: str) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2:
        raise ValueError(f"`{name}` must be a 2-d array of points (n, d), got shape {X.shape}.")
    return X


class Kernel:
    """Base class: a kernel ``k(x, y)`` on R^d with a gradient in ``x``."""

    #: whether the kernel has a ``lengthscale`` that the median heuristic can set
    has_lengthscale = False
    #: whether ``grad_x(x, Y)`` depends on ``x`` (if not, the KAMH covariance is constant)
    gradient_depends_on_x = True

    def gram(self, X, Y=None) -> np.ndarray:
        """Matrix ``K[i, j] = k(X[i], Y[j])`` of shape (n, m); ``Y`` defaults to ``X``."""
        X = _as_points(X, "X")
        Y = X if Y is None else _as_points(Y, "Y")
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"X has dimension {X.shape[1]} but Y has {Y.shape[1]}.")
        return self._gram(X, Y)

    def grad_x(self, x, Y) -> np.ndarray:
        """Rows ``∇ₓ k(x, Y[i])`` of shape (n, d) for a single point ``x`` of shape (d,)."""
        x = np.asarray(x, dtype=float)
        Y = _as_points(Y, "Y")
        if x.shape != (Y.shape[1],):
            raise ValueError(f"x must have shape ({Y.shape[1]},), got {x.shape}.")
        return self._grad_x(x, Y)

    def __call__(self, x, y) -> float:
        return float(self.gram(np.atleast_1d(x), np.atleast_1d(y))[0, 0])

    def _gram(self, X, Y):  # pragma: no cover - abstract
        raise NotImplementedError

    def _grad_x(self, x, Y):  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class _LengthscaleKernel(Kernel):
    """A kernel with a lengthscale ``ℓ > 0`` (its first parameter), which the median heuristic
    can set."""

    lengthscale: float = 1.0
    has_lengthscale = True

    def __post_init__(self):
        object.__setattr__(self, "lengthscale", _check_positive("lengthscale", self.lengthscale))

    def with_lengthscale(self, lengthscale: float):
        """The same kernel with lengthscale ``lengthscale``."""
        return dataclasses.replace(self, lengthscale=lengthscale)


@dataclass(frozen=True)
class GaussianKernel(_LengthscaleKernel):
    """Gaussian (squared-exponential) kernel ``exp(-‖x - y‖² / (2 ℓ²))``.

    Parameters
    ----------
    lengthscale : float
        ``ℓ > 0``.
    """

    def _gram(self, X, Y):
        return np.exp(cdist(X, Y, "sqeuclidean") / (-2.0 * self.lengthscale**2))

    def _grad_x(self, x, Y):
        diff = Y - x
        k = np.exp(np.einsum("ij,ij->i", diff, diff) / (-2.0 * self.lengthscale**2))
        return (k / self.lengthscale**2)[:, None] * diff


@dataclass(frozen=True)
class RationalQuadraticKernel(_LengthscaleKernel):
    """Rational quadratic kernel ``(1 + ‖x - y‖² / (2 α ℓ²))^(-α)``.

    Parameters
    ----------
    lengthscale : float
        ``ℓ > 0``.
    alpha : float
        Shape ``α > 0``; ``α → ∞`` recovers the Gaussian kernel.
    """

    alpha: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "alpha", _check_positive("alpha", self.alpha))

    def _base(self, sqdist):
        return 1.0 + sqdist / (2.0 * self.alpha * self.lengthscale**2)

    def _gram(self, X, Y):
        return self._base(cdist(X, Y, "sqeuclidean")) ** (-self.alpha)

    def _grad_x(self, x, Y):
        diff = Y - x
        base = self._base(np.einsum("ij,ij->i", diff, diff))
        return (base ** (-self.alpha - 1.0) / self.lengthscale**2)[:, None] * diff


_MAX_MATERN_NU = 100.0


def _matern_bessel_term(s, nu: float, order: float, limit_at_zero: float) -> np.ndarray:
    """``2^(1-ν)/Γ(ν) s^order K_order(s)`` elementwise, in log space (no overflow of ``Γ(ν)``,
    ``s^order`` or ``K``), with ``limit_at_zero`` where ``K`` overflows (s → 0)."""
    s = np.asarray(s, dtype=float)
    out = np.full(s.shape, float(limit_at_zero))
    positive = s > 0
    sp = s[positive]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        log_term = (
            (1.0 - nu) * math.log(2.0)
            - special.gammaln(nu)
            + order * np.log(sp)
            + np.log(special.kve(order, sp))
            - sp
        )
        value = np.exp(log_term)
    out[positive] = np.where(np.isfinite(value), value, limit_at_zero)
    return out


@dataclass(frozen=True)
class MaternKernel(_LengthscaleKernel):
    """Matérn kernel with smoothness ``ν`` and lengthscale ``ℓ``.

    ``ν = 1/2, 3/2, 5/2`` use closed forms; any other ``ν > 0`` uses the Bessel function
    ``scipy.special.kv``: ``k(r) = 2^(1-ν)/Γ(ν) s^ν K_ν(s)`` with ``s = √(2ν) r / ℓ``.
    For ``ν = 1/2`` the kernel is not differentiable at ``x = y``; ``grad_x`` returns 0 there.

    Parameters
    ----------
    lengthscale : float
        ``ℓ > 0``.
    nu : float
        Smoothness ``ν > 0``.
    """

    nu: float = 1.5

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "nu", _check_positive("nu", self.nu))
        if self.nu > _MAX_MATERN_NU:
            raise ValueError(
                f"`nu` must be at most {_MAX_MATERN_NU:g} (the Bessel form overflows beyond), got "
                f"{self.nu!r}; for large ν the Matérn kernel is the GaussianKernel."
            )

    def _of_distance(self, r):
        ell, nu = self.lengthscale, self.nu
        if nu == 0.5:
            return np.exp(-r / ell)
        if nu == 1.5:
            s = math.sqrt(3.0) * r / ell
            return (1.0 + s) * np.exp(-s)
        if nu == 2.5:
            s = math.sqrt(5.0) * r / ell
            return (1.0 + s + s * s / 3.0) * np.exp(-s)
        s = math.sqrt(2.0 * nu) * r / ell
        return _matern_bessel_term(s, nu, nu, 1.0)

    def _gram(self, X, Y):
        return self._of_distance(cdist(X, Y, "euclidean"))

    def _grad_x(self, x, Y):
        ell, nu = self.lengthscale, self.nu
        diff = Y - x
        r = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        # weight w(r) with ∇ₓ k = w(r) (y - x)
        if nu == 0.5:
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(r > 0, np.exp(-r / ell) / (ell * r), 0.0)
        elif nu == 1.5:
            w = 3.0 / ell**2 * np.exp(-math.sqrt(3.0) * r / ell)
        elif nu == 2.5:
            s = math.sqrt(5.0) * r / ell
            w = 5.0 / (3.0 * ell**2) * (1.0 + s) * np.exp(-s)
        else:
            s = math.sqrt(2.0 * nu) * r / ell
            # w = (2ν/ℓ²) 2^(1-ν)/Γ(ν) s^(ν-1) K_{ν-1}(s); as s → 0 it tends to
            # (2ν/ℓ²) Γ(ν-1)/(2Γ(ν)) = ν/((ν-1)ℓ²) for ν > 1 and diverges for ν ≤ 1
            limit = nu / ((nu - 1.0) * ell**2) if nu > 1.0 else 0.0
            w = (2.0 * nu / ell**2) * _matern_bessel_term(
                s, nu, nu - 1.0, limit / (2.0 * nu / ell**2)
            )
        return w[:, None] * diff


@dataclass(frozen=True)
class LinearKernel(Kernel):
    """Linear kernel ``k(x, y) = xᵀy``; with it KAMH is Haario's adaptive Metropolis."""

    gradient_depends_on_x = False

    def _gram(self, X, Y):
        return X @ Y.T

    def _grad_x(self, x, Y):
        return Y.copy()


def median_lengthscale(Z, max_points: int = 1000) -> float:
    """Median heuristic: ``ℓ² = median_{i<j} ‖z_i − z_j‖² / 2``.

    Parameters
    ----------
    Z : array, shape (n, d)
        Points; at most ``max_points`` evenly spaced rows are used.
    max_points : int
        Cap on the number of points (the cost is quadratic).

    Raises
    ------
    ValueError
        If there are fewer than two points or all pairwise distances' median is zero.
    """
    Z = _as_points(Z, "Z")
    if Z.shape[0] < 2:
        raise ValueError("median_lengthscale needs at least two points.")
    if Z.shape[0] > max_points:
        Z = Z[np.linspace(0, Z.shape[0] - 1, max_points).astype(int)]
    median_sq = float(np.median(pdist(Z, "sqeuclidean")))
    if not np.isfinite(median_sq) or median_sq <= 0:
        raise ValueError(
            "median_lengthscale: the median pairwise distance is zero or not finite "
            "(too many identical points)."
        )
    return math.sqrt(median_sq / 2.0)
