"""The kernel adaptive Metropolis proposal of paper 001, as a move."""

from __future__ import annotations

import math

import numpy as np

from ..adaptation import Feedback, RobbinsMonroScale
from ..kernels import Kernel
from ..proposals import (
    cholesky_or_nan,
    gaussian_random_walk,
    kamh_feature_covariance,
    smallest_scale,
)
from ..whitening import Whitening
from .base import Move, Proposal

__all__ = ["KAMMove", "kamh_propose"]


class KAMMove(Move):
    r"""``x* ~ N(x, R(x))`` with ``R(x) = γ² I + ν² Mᵀ H M``, the covariance of a history
    sub-sample ``z`` in the RKHS of ``kernel`` pulled back to the input space at ``x`` (rows of
    ``M`` are ``2 ∇ₓ k(x, z_i)``, ``H`` centres), with the Hastings correction
    ``log N(x; x*, R(x*)) − log N(x*; x, R(x))`` (0 for a kernel whose gradient does not depend
    on ``x``, such as the linear kernel).

    With a ``whitening`` the move works on ``u = whitening.whiten(x)`` (the sub-sample is then
    in those coordinates too) and maps ``u*`` back; the linear map's Jacobian cancels.

    ``MᵀHM`` at the current state is cached: :meth:`propose` computes it once per proposal, at
    ``x*``, and :meth:`record` keeps it when ``x*`` is accepted.

    Attributes
    ----------
    subsample : numpy.ndarray or None
        ``z``, ``(n, d)``; the move is :attr:`ready` once it is set.
    kernel : Kernel or None
    whitening : Whitening or None
    gamma_abs : float
        ``γ`` in the move's coordinates.
    nu2_scale : RobbinsMonroScale or None
        ``log ν²`` and its adaptation towards a target acceptance (:meth:`update`), unless
        ``fixed_nu2`` is given.
    """

    kind = "kam"

    def __init__(self, dim: int, fixed_nu2: float | None = None):
        super().__init__()
        self.dim = int(dim)
        self.fixed_nu2 = fixed_nu2
        self.subsample: np.ndarray | None = None
        self.kernel: Kernel | None = None
        self.whitening: Whitening | None = None
        self.gamma_abs = math.nan
        self.nu2_scale: RobbinsMonroScale | None = None
        self.feature_cov_current: np.ndarray | None = None
        self.feature_cov_point: np.ndarray | None = None

    @property
    def ready(self) -> bool:
        return self.subsample is not None

    @property
    def nu2(self) -> float:
        return self.fixed_nu2 if self.fixed_nu2 is not None else self.nu2_scale.scale

    def white(self, x: np.ndarray) -> np.ndarray:
        """``x`` in the move's coordinates."""
        return x if self.whitening is None else self.whitening.whiten(x)

    def feature_cov(self, u: np.ndarray) -> np.ndarray:
        """``MᵀHM`` at ``u`` (in the move's coordinates)."""
        return kamh_feature_covariance(u, self.subsample, self.kernel)

    def covariance(self, feature_cov: np.ndarray) -> np.ndarray:
        """``R = γ² I + ν² F`` for ``F = MᵀHM``."""
        R = self.nu2 * feature_cov
        R.flat[:: self.dim + 1] += self.gamma_abs**2
        return R

    def cache_at(self, x: np.ndarray) -> None:
        """Compute ``MᵀHM`` at the state ``x`` (model coordinates) and keep it."""
        self.feature_cov_current = self.feature_cov(self.white(x))
        self.feature_cov_point = np.array(x, copy=True)

    def forget_cache(self) -> None:
        self.feature_cov_current = None
        self.feature_cov_point = None

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        u = self.white(x)
        if self.feature_cov_current is None or not np.array_equal(self.feature_cov_point, x):
            self.feature_cov_current = self.feature_cov(u)
            self.feature_cov_point = np.array(x, copy=True)
        chol_here = cholesky_or_nan(self.covariance(self.feature_cov_current))
        computed = {}

        def chol_there_of(proposal):
            computed["feature_cov"] = self.feature_cov(proposal)
            return cholesky_or_nan(self.covariance(computed["feature_cov"]))

        position_dependent = self.kernel.gradient_depends_on_x
        proposal, log_correction = gaussian_random_walk(
            rng, u, chol_here, chol_there_of if position_dependent else None
        )
        if self.whitening is not None:
            proposal = self.whitening.unwhiten(proposal)
        feature_cov_there = computed.get("feature_cov", self.feature_cov_current)
        return Proposal(proposal, log_correction, self, extra=feature_cov_there)

    def record(self, proposal: Proposal, x: np.ndarray, accepted: bool, accept_prob) -> None:
        super().record(proposal, x, accepted, accept_prob)
        if accepted:
            self.feature_cov_current = proposal.extra
            self.feature_cov_point = np.array(proposal.x, copy=True)

    def update(self, proposal: Proposal, x: np.ndarray, accept_prob: float, rng) -> None:
        if self.fixed_nu2 is None:
            self.nu2_scale.update(Feedback(accept_prob), rng)

    def reference_scale(self, subsample: np.ndarray, gamma: float, whitened: bool):
        """The scale ``γ`` is relative to for a new ``subsample``: 1 if it is ``whitened``,
        else the square root of the smallest eigenvalue of its covariance (the previous value
        if that is degenerate; None if there is none yet)."""
        if whitened:
            return 1.0  # the whitened history has unit scale in every direction
        spread = smallest_scale(subsample)
        if np.isfinite(spread) and spread > 0:
            return spread
        return None if self.subsample is None else self.gamma_abs / gamma

    def stats(self) -> dict[str, float]:
        nu2 = self.nu2 if self.fixed_nu2 is not None or self.nu2_scale is not None else math.nan
        return {**super().stats(), "nu2": nu2, "gamma": self.gamma_abs}


def kamh_propose(rng: np.random.Generator, x, Z, kernel: Kernel, gamma: float, nu2: float):
    """Draw ``x* ~ N(x, R(x))`` (see :class:`KAMMove`) and return it with the log proposal
    ratio ``log N(x; x*, R(x*)) − log N(x*; x, R(x))``, the Hastings correction.

    Parameters
    ----------
    rng : numpy.random.Generator
    x : array, shape (d,)
    Z : array, shape (n, d)
        History sub-sample.
    kernel : Kernel
    gamma, nu2 : float
        ``γ`` (absolute) and ``ν²``.
    """
    x = np.asarray(x, dtype=float)
    move = KAMMove(x.shape[0], fixed_nu2=nu2)
    move.subsample = np.asarray(Z, dtype=float)
    move.kernel = kernel
    move.gamma_abs = gamma
    proposal = move.propose(rng, x)
    return proposal.x, proposal.log_correction
