"""Proposal math for kernel adaptive Metropolis–Hastings (paper 001) and Gaussian densities
(the proposal itself is :class:`~pymc_kernel_steps.core.moves.KAMMove`)."""

from __future__ import annotations

import math

import numba
import numpy as np

from .kernels import Kernel

__all__ = [
    "cholesky_or_nan",
    "gaussian_logpdf",
    "gaussian_random_walk",
    "kamh_covariance",
    "kamh_feature_covariance",
    "smallest_scale",
]

_LOG_2PI = math.log(2.0 * math.pi)


def kamh_covariance(x, Z, kernel: Kernel, gamma: float, nu2: float) -> np.ndarray:
    """KAMH proposal covariance ``R(x) = γ² I + ν² Mᵀ H M``.

    ``M`` has rows ``2 ∇ₓ k(x, z_i)`` and ``H = I − 11ᵀ/n`` centres them, so
    ``Mᵀ H M = (M − m̄)ᵀ (M − m̄)`` with ``m̄`` the column means.

    Parameters
    ----------
    x : array, shape (d,)
        Current point.
    Z : array, shape (n, d)
        History subsample.
    kernel : Kernel
        Kernel whose feature-space covariance is pulled back to the input space.
    gamma : float
        Isotropic exploration scale ``γ ≥ 0``.
    nu2 : float
        Scale ``ν² ≥ 0`` of the learned part.
    """
    R = nu2 * kamh_feature_covariance(x, Z, kernel)
    R.flat[:: R.shape[0] + 1] += gamma**2
    return R


def kamh_feature_covariance(x, Z, kernel: Kernel) -> np.ndarray:
    """The learned part ``Mᵀ H M`` of the KAMH covariance at ``x`` (see :func:`kamh_covariance`)."""
    M = 2.0 * kernel.grad_x(x, Z)
    centred = M - M.mean(axis=0)
    return centred.T @ centred


def gaussian_logpdf(x, mean, chol) -> float:
    """Log density of ``N(mean, L Lᵀ)`` at ``x`` given the lower Cholesky factor ``L``."""
    diff = np.asarray(x, dtype=float) - np.asarray(mean, dtype=float)
    return _gaussian_logpdf_whitened(_forward_substitution(chol, diff), chol)


def _gaussian_logpdf_whitened(z: np.ndarray, chol: np.ndarray) -> float:
    """Log density given the whitened residual ``z = L⁻¹(x − mean)``."""
    return float(-0.5 * (z @ z) - np.log(chol.diagonal()).sum() - 0.5 * z.shape[0] * _LOG_2PI)


@numba.njit(cache=True)
def _forward_substitution(lower, b):  # pragma: no cover - compiled
    n = b.shape[0]
    out = np.empty(n)
    for i in range(n):
        acc = b[i]
        for j in range(i):
            acc -= lower[i, j] * out[j]
        out[i] = acc / lower[i, i]
    return out


def gaussian_random_walk(rng: np.random.Generator, x, chol_here, chol_there_of=None):
    """Draw ``x* = x + L(x) ξ`` and return ``(x*, log q(x | x*) − log q(x* | x))``.

    ``chol_there_of(x*)`` gives the Cholesky factor of the proposal covariance at ``x*``; when it
    is None the covariance is taken as position-independent and the log ratio is 0. A factor with
    non-finite entries (see :func:`cholesky_or_nan`) gives a log ratio of −inf: a rejection.
    """
    x = np.asarray(x, dtype=float)
    xi = rng.standard_normal(x.shape[0])
    proposal = x + chol_here @ xi
    if chol_there_of is None:
        return proposal, 0.0
    chol_there = chol_there_of(proposal)
    if not np.all(np.isfinite(chol_there)):
        return proposal, -math.inf
    back = _forward_substitution(chol_there, x - proposal)
    log_ratio = _gaussian_logpdf_whitened(back, chol_there) - _gaussian_logpdf_whitened(
        xi, chol_here
    )
    return proposal, log_ratio


def cholesky_or_nan(matrix: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of ``matrix``, or a matrix of NaN if it is not positive definite
    (a proposal built from it is then rejected instead of raising mid-chain)."""
    try:
        return np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return np.full_like(matrix, np.nan, dtype=float)


def smallest_scale(points: np.ndarray) -> float:
    """Square root of the smallest eigenvalue of the points' (biased) covariance; 0 if
    degenerate."""
    cov = np.atleast_2d(np.cov(np.asarray(points, dtype=float).T, bias=True))
    return math.sqrt(max(float(np.linalg.eigvalsh(cov)[0]), 0.0))
