"""The scale of each coordinate at a chain's start, from second differences of the log density.

Every step begins with random-walk moves whose scale ``2.38 / √d`` suits a round posterior of unit
scale. Where the posterior is narrower in some coordinate by orders of magnitude (a parameter of
scale 10⁻⁶), or is a thin ridge (a regression with strongly correlated predictors), almost every
such proposal is rejected, and the Robbins–Monro scale needs hundreds of iterations to shrink;
where it is wider (10⁶), the walk never covers it, and what the samplers learn from their history
is built on a coordinate that did not move.

The second difference of ``log π`` along coordinate ``j`` measures the curvature
``κ_j = −∂²log π/∂x_j²``; for a Gaussian ``1/√κ_j`` is the coordinate's conditional standard
deviation, at any point and for any step. A step far from that scale measures the curvature of
a non-Gaussian density over the wrong range, so the difference is repeated with the step set to
the scale found, until the two agree within a factor ``STEP_TOLERANCE``. Each difference costs
two evaluations, which the caller counts.

The same two probes give the slope ``g_j`` by a central difference, and with it how far the
start lies from where the posterior's mass is: ``z_j = |g_j| / √κ_j``, the slope in units of the
conditional scale. For a Gaussian posterior ``z_j`` is a standard normal at a point drawn from
it, and zero at the mode; a start tens or thousands of conditional scales away from the
coordinate's conditional mode is in a transient, where the local curvature understates how far
the chain must travel (a regression with an uncentred predictor, started at 0, lies
``z ≈ 10⁵`` from the posterior, whose ridge is orders of magnitude longer than the scales at
the start). A start farther than ``FAR_START_Z`` keeps the unit frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["StartScales", "conditional_scales"]

#: the first step of every coordinate (PyMC's unconstrained parameters default to unit scale)
FIRST_STEP = 1.0
#: a second difference is trusted when its step lies within this factor of the scale it implies
STEP_TOLERANCE = 4.0
#: second differences per coordinate at most (two evaluations each)
MAX_ROUNDS = 3
#: factor by which the step shrinks when a probe leaves the support, and grows where the log
#: density does not bend at that step
STEP_CHANGE = 10.0
#: within this factor of the unit scale a coordinate keeps the unit frame. The Robbins–Monro
#: scale of the first random walk corrects a factor 100 in about 100 iterations; a conditional
#: scale measured at the start understates the posterior's scale on a correlated posterior and
#: where the start is far from the mode (on the Lotka–Volterra ODE, scales 0.02-0.06 at the
#: start: with a tolerance of 10 KAMH's chains failed to find the posterior for 5 of 7 seeds,
#: against 2 of 8 with the unit frame)
UNIT_FRAME_TOLERANCE = 100.0
#: a start whose standardised slope ``|g_j| / √κ_j`` exceeds this in some coordinate lies outside
#: the posterior's bulk (P(|z| > 5) = 6·10⁻⁷ for a coordinate of a Gaussian posterior at a draw
#: from it), where the conditional scales measured there are not the posterior's
FAR_START_Z = 5.0


@dataclass(frozen=True)
class StartScales:
    """Per-coordinate scales found at a point.

    Attributes
    ----------
    scales : numpy.ndarray, shape (d,)
        ``1/√κ_j``: the conditional standard deviation of a Gaussian with the measured
        curvature; NaN where no positive curvature was found.
    evaluations : int
        Log-density evaluations spent.
    slopes : numpy.ndarray, shape (d,)
        ``∂log π/∂x_j`` by the central difference of the probes that gave ``scales[j]``; NaN
        where no scale was found.
    """

    scales: np.ndarray
    evaluations: int
    slopes: np.ndarray

    @property
    def standardized_slopes(self) -> np.ndarray:
        """``|g_j| / √κ_j = |g_j| scales[j]``: how many conditional scales the start lies from
        each coordinate's conditional mode (for a Gaussian; NaN where no scale was found)."""
        return np.abs(self.slopes) * self.scales

    @property
    def far_from_posterior(self) -> bool:
        """Whether the start lies outside the posterior's bulk: some standardised slope exceeds
        ``FAR_START_Z``."""
        z = self.standardized_slopes
        return bool(np.any(z[np.isfinite(z)] > FAR_START_Z))

    def relative_to(self, fallback: float = 1.0) -> np.ndarray:
        """The scales with ``fallback`` where none was found."""
        return np.where(np.isfinite(self.scales), self.scales, fallback)

    def frame(self, tolerance: float = UNIT_FRAME_TOLERANCE) -> np.ndarray:
        """The frame of a chain's first moves: 1 for each coordinate whose scale lies within
        ``tolerance`` of 1 (or was not found), the measured scale for the others; 1 everywhere
        when the start lies far from the posterior (:attr:`far_from_posterior`).

        The unit frame suits PyMC's unconstrained parameters; only a coordinate measured
        orders of magnitude away from it (a parameter of scale 10⁻⁶, a thin ridge) needs its
        own scale. A conditional scale is also the smallest the posterior has along that
        coordinate (on a correlated posterior the marginal one is larger), so a frame taken
        from it where the unit frame would do slows the first exploration; and at a start far
        from the posterior it measures the transient, not the posterior.
        """
        if not (math.isfinite(tolerance) and tolerance >= 1):
            raise ValueError(f"`tolerance` must be at least 1, got {tolerance!r}.")
        if self.far_from_posterior:
            return np.ones_like(self.scales)
        scales = self.relative_to(1.0)
        far = (scales < 1.0 / tolerance) | (scales > tolerance)
        return np.where(far, scales, 1.0)


def conditional_scales(
    log_density: Callable[[np.ndarray], float],
    x,
    value: float,
    first_step: float = FIRST_STEP,
    max_rounds: int = MAX_ROUNDS,
) -> StartScales:
    """Each coordinate's conditional scale at ``x`` from second differences of ``log_density``.

    Parameters
    ----------
    log_density : callable
        ``log π`` of a ``(d,)`` array; NaN, −inf (outside the support) and +inf make a probe
        fail, and the step then shrinks.
    x : array_like, shape (d,)
        The point (a chain's start).
    value : float
        ``log π(x)``, finite.
    first_step : float
        The step of each coordinate's first difference (positive).
    max_rounds : int
        Second differences per coordinate at most (≥ 1).

    Returns
    -------
    StartScales
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise ValueError(f"`x` must be a finite vector, got shape {x.shape}.")
    if not math.isfinite(value):
        raise ValueError(f"`value` must be finite, got {value!r}.")
    if not (math.isfinite(first_step) and first_step > 0):
        raise ValueError(f"`first_step` must be positive, got {first_step!r}.")
    if int(max_rounds) != max_rounds or max_rounds < 1:
        raise ValueError(f"`max_rounds` must be a positive integer, got {max_rounds!r}.")
    scales = np.full(x.shape[0], math.nan)
    slopes = np.full(x.shape[0], math.nan)
    evaluations = 0
    for j in range(x.shape[0]):
        step = float(first_step)
        for _ in range(int(max_rounds)):
            probe = x.copy()
            probe[j] = x[j] + step
            plus = float(log_density(probe))
            probe[j] = x[j] - step
            minus = float(log_density(probe))
            evaluations += 2
            if not (math.isfinite(plus) and math.isfinite(minus)):
                step /= STEP_CHANGE
                continue
            curvature = (2.0 * value - plus - minus) / step**2
            if not (math.isfinite(curvature) and curvature > 0):
                step *= STEP_CHANGE  # flat or convex at this step: look wider
                continue
            scales[j] = 1.0 / math.sqrt(curvature)
            slopes[j] = (plus - minus) / (2.0 * step)
            if scales[j] / STEP_TOLERANCE <= step <= scales[j] * STEP_TOLERANCE:
                break
            step = scales[j]
    return StartScales(scales, evaluations, slopes)
