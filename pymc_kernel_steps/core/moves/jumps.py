"""The symmetric, state-independent moves that look for and travel between modes (paper 004 and
this package's extensions of it): blind jumps, mode hops, and the cosine-scheduled walk."""

from __future__ import annotations

import math

import numpy as np

from ..history import ChainHistory
from .base import Move, Proposal

__all__ = ["BlindJump", "CosineWalk", "ModeHop"]


class BlindJump(Move):
    """``x* = x + ρ S^{1/2} ξ`` with ``ρ`` log-uniform in ``[min(1, jump_scale), jump_scale]``
    and ``S = chol cholᵀ``: a long symmetric jump that finds modes nothing has visited yet.
    Ready once ``chol`` is set (and ``jump_scale > 0``)."""

    kind = "blind_jump"

    def __init__(self, jump_scale: float, chol: np.ndarray | None = None):
        super().__init__()
        self.jump_scale = float(jump_scale)
        self.chol = chol

    @property
    def ready(self) -> bool:
        return self.chol is not None and self.jump_scale > 0

    def multiplier(self, rng: np.random.Generator) -> float:
        low = min(1.0, self.jump_scale)
        return low * (self.jump_scale / low) ** rng.uniform()

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        rho = self.multiplier(rng)
        xi = rng.standard_normal(x.shape[0])
        return Proposal(x + rho * (self.chol @ xi), 0.0, self, extra=rho)


class ModeHop(Move):
    """``x* = x + (z_a − z_b) + σ ξ`` with ``z_a ≠ z_b`` two uniformly chosen states of
    ``history`` (the differential-evolution move of ter Braak & Vrugt with unit factor):
    symmetric, since ``z_b − z_a`` is as likely as ``z_a − z_b``. Once two modes are in the
    history it moves between them in one step.

    Parameters
    ----------
    history : ChainHistory
    archive_size : int, optional
        Draw from the first ``archive_size`` states only (a frozen archive); default all of
        them, as the history grows.
    """

    kind = "mode_hop"

    def __init__(self, history: ChainHistory, archive_size: int | None = None):
        super().__init__()
        self.history = history
        self.archive_size = archive_size
        self.noise_scale = math.nan

    @property
    def size(self) -> int:
        return len(self.history) if self.archive_size is None else self.archive_size

    @property
    def ready(self) -> bool:
        return self.size >= 2

    def pair(self, rng: np.random.Generator) -> tuple[int, int]:
        """Two distinct indices below :attr:`size`, uniform over the ordered pairs (O(1), where
        ``Generator.choice(n, 2, replace=False)`` permutes all ``n``)."""
        n = self.size
        a = int(rng.integers(n))
        b = int(rng.integers(n - 1))
        return a, b + (b >= a)

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        a, b = self.pair(rng)
        points = self.history.points
        xi = rng.standard_normal(x.shape[0])
        return Proposal(x + (points[a] - points[b]) + self.noise_scale * xi, 0.0, self)


class CosineWalk(Move):
    """``x* = x + ν L ξ``: the sampling phase's random walk of paper 004, whose scale ``ν``
    the schedule sets before each proposal (``L`` the factor of the frozen ``Σ``)."""

    kind = "cosine_walk"

    def __init__(self):
        super().__init__()
        self.scale = math.nan
        self.chol: np.ndarray | None = None

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        xi = rng.standard_normal(x.shape[0])
        return Proposal(x + self.scale * (self.chol @ xi), 0.0, self)
