"""A chain's climb from a start far outside the posterior, before tuning.

PyMC starts every chain at the model's initial point (the prior's centre in unconstrained
coordinates), which for a regression with uncentred predictors or a model with many data lies
hundreds or thousands of nats below the posterior. A gradient-free chain climbs from there by
random walk, at a step size the scale of the posterior, for most of a tuning phase of 1000
iterations; the history its proposals learn from is then mostly the climb. With PyMC's default of
four chains on the posteriordb suite, our best sampler fell from 14× the best peer with one long
chain to 0.63× (``benchmarks/posteriordb/four-chains.md``).

:func:`climb` runs L-BFGS-B on finite differences instead (a gradient costs ``d`` evaluations,
which a climb of thousands of nats repays), restarted in the coordinates scaled by its last
inverse-Hessian estimate while that still improves. It does not return the peak: where a draw
lies, ``log π`` is typically ``d/2`` below its maximum (for a Gaussian, ``log π(x*) − log π(x) =
χ²_d / 2``), and the peak of a hierarchical model can sit in a narrow neck. It returns the first
point it evaluated within ``d/2`` of the highest log density it found: the climb's entry into
the posterior's bulk.

Where the start lies in the basin of a minor mode, the climb ends in that mode: it replaces the
random walk's climb, not a search for the main mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Ascent", "Climb", "ascend", "climb", "climb_budget"]

#: the climb's evaluations per parameter plus one (about 60 finite-difference gradients) ...
CLIMB_EVALUATIONS_PER_DIMENSION = 60
#: ... and at most these many
MAX_CLIMB_EVALUATIONS = 600
#: an L-BFGS-B run whose best value improved by less than this (relative) ends the restarts
RELATIVE_IMPROVEMENT = 1e-8
#: what the optimiser sees where the log density is not finite (outside the support)
OUTSIDE = 1e300


def climb_budget(dim: int) -> int:
    """The evaluations a climb in ``dim`` parameters may spend: ``min(60 (d + 1), 600)``."""
    return int(min(CLIMB_EVALUATIONS_PER_DIMENSION * (int(dim) + 1), MAX_CLIMB_EVALUATIONS))


class _BudgetSpent(Exception):
    """Raised inside the objective when the budget of evaluations is spent."""


@dataclass
class Ascent:
    """An L-BFGS-B ascent of a log density (:func:`ascend`).

    Attributes
    ----------
    best : numpy.ndarray, shape (d,)
        The point of the highest finite log density evaluated (the start where none beat it).
    best_value : float
        Its log density.
    evaluations : int
        Log-density evaluations spent.
    unit : numpy.ndarray, shape (d,)
        The scale of each coordinate from the last inverse-Hessian estimate (1 where none).
    points, values : list
        Every point evaluated and its log density, in order (``-inf`` where not finite).
    """

    best: np.ndarray
    best_value: float
    evaluations: int = 0
    unit: np.ndarray = field(default_factory=lambda: np.ones(0))
    points: list = field(default_factory=list)
    values: list = field(default_factory=list)


def ascend(
    log_density: Callable[[np.ndarray], float],
    x0,
    max_evaluations: int,
    *,
    value0: float | None = None,
    reserve: int = 0,
) -> Ascent:
    """Maximise ``log_density`` from ``x0`` by L-BFGS-B on finite differences, restarted from
    its optimum in coordinates scaled by its last inverse Hessian while that still improves
    (with finite differences one run stops early on an ill-conditioned target).

    Parameters
    ----------
    log_density : callable
        ``log π`` of a ``(d,)`` array; NaN, ``±inf`` and an exception count as outside the
        support.
    x0 : array_like, shape (d,)
        The start (finite).
    max_evaluations : int
        Evaluations at most, including the start's unless ``value0`` is given (≥ 1).
    value0 : float, optional
        ``log π(x0)`` if known (then not evaluated again).
    reserve : int
        Evaluations of the budget to leave unspent (for the caller's own after the ascent).

    Returns
    -------
    Ascent
    """
    x0 = np.asarray(x0, dtype=float)
    if x0.ndim != 1 or x0.size == 0 or not np.all(np.isfinite(x0)):
        raise ValueError(f"`x0` must be a finite, non-empty vector, got {x0!r}.")
    if int(max_evaluations) != max_evaluations or max_evaluations < 1:
        raise ValueError(f"`max_evaluations` must be a positive integer, got {max_evaluations!r}.")
    if int(reserve) != reserve or reserve < 0:
        raise ValueError(f"`reserve` must be a non-negative integer, got {reserve!r}.")
    from scipy.optimize import minimize

    limit = int(max_evaluations) - int(reserve)
    ascent = Ascent(x0.copy(), -math.inf, 0, np.ones_like(x0))

    def objective(x: np.ndarray) -> float:
        if ascent.evaluations >= limit:
            raise _BudgetSpent
        ascent.evaluations += 1
        try:
            value = float(log_density(x))
        except Exception:  # noqa: BLE001 - the model failed here: outside its support
            value = -math.inf
        value = value if math.isfinite(value) else -math.inf
        ascent.points.append(np.array(x, dtype=float))
        ascent.values.append(value)
        if value > ascent.best_value:
            ascent.best, ascent.best_value = np.array(x, dtype=float), value
        return -value if math.isfinite(value) else OUTSIDE

    if value0 is None:
        try:
            objective(x0)
        except _BudgetSpent:
            return ascent
    else:
        value0 = float(value0)
        ascent.best_value = value0 if math.isfinite(value0) else -math.inf
        ascent.points.append(x0.copy())
        ascent.values.append(ascent.best_value)
    while ascent.evaluations < limit:
        origin, unit, before = ascent.best, ascent.unit, ascent.best_value
        try:
            result = minimize(
                lambda y, origin=origin, unit=unit: objective(origin + unit * y),
                np.zeros_like(origin),
                method="L-BFGS-B",
                options={"maxfun": max(1, limit - ascent.evaluations), "maxiter": 10_000},
            )
        except _BudgetSpent:
            break
        if ascent.best_value > before:
            variance = unit**2 * np.diag(result.hess_inv.todense())
            usable = np.isfinite(variance) & (variance > 0)
            ascent.unit = np.where(usable, np.sqrt(np.where(usable, variance, 1.0)), unit)
        threshold = RELATIVE_IMPROVEMENT * max(1.0, abs(before)) if math.isfinite(before) else 0
        if not ascent.best_value > before + threshold:
            break
    return ascent


@dataclass(frozen=True)
class Climb:
    """Where a chain begins after :func:`climb`.

    Attributes
    ----------
    point : numpy.ndarray, shape (d,)
        The first point evaluated within ``d/2`` of the highest log density found.
    value : float
        Its log density.
    peak_value : float
        The highest log density found.
    evaluations : int
        Log-density evaluations spent (the start's not included when it was given).
    """

    point: np.ndarray
    value: float
    peak_value: float
    evaluations: int


def climb(
    log_density: Callable[[np.ndarray], float],
    x0,
    value0: float,
    max_evaluations: int | None = None,
) -> Climb:
    """Climb from ``x0`` (log density ``value0``) into the posterior's bulk: :func:`ascend`
    within ``max_evaluations`` (default :func:`climb_budget`), then the first point it
    evaluated whose log density is within ``d/2`` of the highest it found (see the module).

    The start itself is returned where nothing better was found. ``value0`` must be finite."""
    x0 = np.asarray(x0, dtype=float)
    if not math.isfinite(value0):
        raise ValueError(f"`value0` must be finite (the start's log density), got {value0!r}.")
    if max_evaluations is None:
        max_evaluations = climb_budget(x0.size)
    ascent = ascend(log_density, x0, max_evaluations, value0=value0)
    band = ascent.best_value - 0.5 * x0.size
    first = next(i for i, value in enumerate(ascent.values) if value >= band)
    return Climb(
        ascent.points[first].copy(),
        float(ascent.values[first]),
        float(ascent.best_value),
        ascent.evaluations,
    )
