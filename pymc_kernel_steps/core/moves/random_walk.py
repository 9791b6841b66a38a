"""Random walks: the joint one with a Robbins–Monro scale, and the single-coordinate one."""

from __future__ import annotations

import math

import numpy as np

from ..adaptation import CoordinateScales, Feedback, RobbinsMonroScale
from ..whitening import Whitening
from .base import Move, Proposal

__all__ = ["RW_FACTOR", "CoordinateWalk", "RandomWalk", "optimal_scale"]

#: optimal random-walk scale factor for Gaussian targets (Roberts, Gelman & Gilks 1997): the
#: proposal ``N(x, (2.38² / d) Σ)`` is optimal for the Gaussian ``N(·, Σ)`` in ``d`` dimensions
RW_FACTOR = 2.38


def optimal_scale(dim: int) -> float:
    """``2.38 / √d``, the optimal random-walk scale in whitened coordinates."""
    return RW_FACTOR / math.sqrt(dim)


class RandomWalk(Move):
    """``x* = x + s L ξ``, ``ξ ~ N(0, I)``: a symmetric random walk (correction 0) whose scale
    ``s`` is a :class:`~pymc_kernel_steps.core.RobbinsMonroScale` tuned towards its target
    acceptance, and ``L`` the factor of ``metric`` (the identity without one).

    Parameters
    ----------
    scale : RobbinsMonroScale
        The log scale and its adaptation.
    metric : Whitening, optional
        Proposals follow the covariance ``s² L Lᵀ`` of ``metric.chol``; assign a new one at any
        time (the move stays symmetric as long as it is fixed during a proposal).
    """

    kind = "random_walk"

    def __init__(self, scale: RobbinsMonroScale, metric: Whitening | None = None):
        super().__init__()
        self.scale = scale
        self.metric = metric

    @classmethod
    def optimal(cls, dim: int, scale_range: float, target: float = 0.234, metric=None):
        """Start at :func:`optimal_scale` and stay within a factor ``scale_range`` of it."""
        scale = RobbinsMonroScale.within(optimal_scale(dim), scale_range, target=target)
        return cls(scale, metric)

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        step = self.scale.scale * rng.standard_normal(x.shape[0])
        proposal = x + step if self.metric is None else x + self.metric.chol @ step
        return Proposal(proposal, 0.0, self)

    def update(self, proposal: Proposal, x: np.ndarray, accept_prob: float, rng) -> None:
        self.scale.update(Feedback(accept_prob), rng)

    def stats(self) -> dict[str, float]:
        return {**super().stats(), "scale": self.scale.scale}


class CoordinateWalk(Move):
    """A random-walk move of one uniformly chosen coordinate, each coordinate's scale tuned by
    Robbins–Monro towards acceptance 0.44 (see
    :class:`~pymc_kernel_steps.core.CoordinateScales`). Symmetric: correction 0.

    The scales start at ``initial_scale`` (default :func:`optimal_scale`) at the first proposal;
    :meth:`variance_floor` is None until then.
    """

    kind = "coordinate"

    def __init__(self, dim: int, initial_scale: float | None = None):
        super().__init__()
        self.dim = int(dim)
        self.initial_scale = optimal_scale(dim) if initial_scale is None else initial_scale
        self.scales: CoordinateScales | None = None

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        if self.scales is None:
            self.scales = CoordinateScales(self.dim, self.initial_scale)
        coordinate, scale = self.scales.propose(rng)
        proposal = x.copy()
        proposal[coordinate] += scale * rng.standard_normal()
        return Proposal(proposal, 0.0, self, extra=coordinate)

    def update(self, proposal: Proposal, x: np.ndarray, accept_prob: float, rng) -> None:
        self.scales.update(Feedback(accept_prob, index=proposal.extra), rng)

    def variance_floor(self) -> np.ndarray | None:
        """A lower bound of each coordinate's variance from the tuned scales (see
        :meth:`CoordinateScales.variance_floor`), None before the first proposal."""
        return None if self.scales is None else self.scales.variance_floor()
