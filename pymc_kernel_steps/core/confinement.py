"""The geometry a surrogate trajectory runs in: a confining wall and an abort ball.

A surrogate fitted to a chain's history is only trusted near that history: a score-matched one
is flat or periodic far from it, a regression one can steepen without bound. A trajectory on it
therefore feels the surrogate plus the confining term ``−(k/2)(‖u‖ − R)₊²`` (zero inside the
ball of radius ``R``, a restoring force outside), and is rejected without evaluating the model
as soon as a position leaves the larger *abort ball*. Both are fixed potentials and sets, the
same for a trajectory and its reversal, so the move stays exact.

:class:`Confinement` holds the three numbers, built once per surrogate selection from the
training points (:meth:`Confinement.around`) and handed as one argument to
:func:`~pymc_kernel_steps.core.integrators.surrogate_trajectory`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Confinement"]

#: the confining wall stands this many times beyond the farthest training point
WALL_MARGIN = 2.0
#: a trajectory that leaves the ball of this many wall radii (and of at least 10√d units) is
#: rejected without evaluating the model (exact: the rule is the same for its reversal)
ABORT_MARGIN = 2.0
MIN_ABORT_RADIUS_PER_ROOT_DIM = 10.0


@dataclass(frozen=True)
class Confinement:
    """The confining wall ``−(k/2)(‖u‖ − R)₊²`` and the abort radius of surrogate trajectories.

    The default is no confinement: no wall, no abort ball.

    Parameters
    ----------
    radius : float
        Radius ``R > 0`` of the wall (inf: no wall).
    stiffness : float
        Stiffness ``k ≥ 0`` of the wall (0: no wall).
    abort_radius : float
        A trajectory with a position farther than this from the origin ends at once with an
        all-NaN position, so that the caller rejects it without evaluating the target there
        (inf: never). The rule depends only on the set of positions the trajectory visits,
        which its reversal visits too, so the move stays exact (a trajectory cut short and
        *accepted* at its last position would not be).
    """

    radius: float = math.inf
    stiffness: float = 0.0
    abort_radius: float = math.inf

    def __post_init__(self):
        radius, stiffness, abort = (
            float(self.radius),
            float(self.stiffness),
            float(self.abort_radius),
        )
        if not radius > 0:
            raise ValueError(f"`radius` must be positive (or inf), got {self.radius!r}.")
        if not (math.isfinite(stiffness) and stiffness >= 0):
            raise ValueError(f"`stiffness` must be finite and ≥ 0, got {self.stiffness!r}.")
        if not abort > 0:
            raise ValueError(
                f"`abort_radius` must be positive (or inf), got {self.abort_radius!r}."
            )
        object.__setattr__(self, "radius", radius)
        object.__setattr__(self, "stiffness", stiffness)
        object.__setattr__(self, "abort_radius", abort)

    @classmethod
    def around(cls, points, inv_mass) -> Confinement:
        """The confinement of a surrogate fitted to ``points`` (shape ``(n, d)``, in its
        coordinates) with trajectories under the diagonal inverse mass ``inv_mass``: the wall
        ``WALL_MARGIN`` times beyond the farthest point, of stiffness ``1 / mean(inv_mass)``,
        and the abort ball ``ABORT_MARGIN`` times the wall's radius (at least ``10√d``)."""
        points = np.asarray(points, dtype=float)
        if points.ndim != 2 or points.shape[0] == 0:
            raise ValueError(f"`points` must have shape (n, d) with n ≥ 1, got {points.shape}.")
        radius = WALL_MARGIN * float(np.sqrt(np.max(np.sum(points**2, 1))))
        stiffness = 1.0 / float(np.mean(inv_mass))
        return cls(radius, stiffness, _abort_radius(radius, points.shape[1]))

    def enclosing(self, point) -> Confinement:
        """This confinement with the wall moved out, if needed, to ``WALL_MARGIN`` times the
        distance of ``point`` (shape ``(d,)``) from the origin: for a surrogate updated online
        with one more point."""
        point = np.asarray(point, dtype=float)
        radius = max(self.radius, WALL_MARGIN * float(np.sqrt(point @ point)))
        return Confinement(radius, self.stiffness, _abort_radius(radius, point.shape[0]))

    @property
    def far_field_curvature(self) -> float:
        """The curvature the wall adds far from the training points (0 without a wall)."""
        return self.stiffness if math.isfinite(self.radius) else 0.0

    def potential(self, q) -> float:
        """The wall's potential energy ``(k/2)(‖q‖ − R)₊²`` at ``q`` (shape ``(d,)``)."""
        q = np.asarray(q, dtype=float)
        excess = max(0.0, math.sqrt(float(q @ q)) - self.radius)
        return 0.5 * self.stiffness * excess**2


def _abort_radius(radius: float, dim: int) -> float:
    return max(ABORT_MARGIN * radius, MIN_ABORT_RADIUS_PER_ROOT_DIM * math.sqrt(dim))
