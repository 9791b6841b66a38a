"""Differential-evolution proposals from a frozen population of past states.

Two proposals that ``DEMetropolisZ`` (ter Braak & Vrugt 2008) and ``emcee`` (``DEMove``,
``DESnookerMove``) draw from a population instead of a covariance:

- the **differential-evolution jump** ``x* = x + γ (z₁ − z₂) + ε``: ``z₁ ≠ z₂`` drawn from the
  population, ``ε ~ N(0, diag(noise²))``; symmetric, so its log correction is 0;
- the **snooker jump**: ``z`` from the population fixes the line through ``x`` and ``z``;
  ``x* = x + γ u uᵀ(z₁ − z₂)`` with ``u = (x − z)/‖x − z‖``; in polar coordinates around ``z`` this
  translates the signed radius, so its log correction is ``(d − 1) log(‖x* − z‖ / ‖x − z‖)``.

Both leave the target invariant under Metropolis–Hastings as long as the population is fixed (a
chain's history frozen at the end of tuning), whatever the population is: it only shapes the
proposal's efficiency.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["de_jump", "de_scale", "snooker_jump", "SNOOKER_SCALE"]

SNOOKER_SCALE = 1.7
"""ter Braak & Vrugt's (2008) snooker scale, also ``emcee.moves.DESnookerMove``'s default."""


def de_scale(dim: int) -> float:
    """The differential-evolution scale ``2.38 / √(2 d)`` (ter Braak 2006): optimal for a
    Gaussian target when the population is distributed like it."""
    if dim < 1:
        raise ValueError(f"`dim` must be at least 1, got {dim}.")
    return 2.38 / math.sqrt(2.0 * dim)


def _distinct_rows(rng: np.random.Generator, population: np.ndarray, count: int) -> np.ndarray:
    """``count`` distinct rows, uniform over ordered choices, in O(count²) draws whatever the
    population's size (``Generator.choice(n, k, replace=False)`` permutes all ``n``)."""
    size = population.shape[0]
    if size < count:
        raise ValueError(
            f"the population holds {size} states; this proposal needs at least {count}."
        )
    chosen: list[int] = []
    for taken in range(count):
        index = int(rng.integers(size - taken))
        for previous in sorted(chosen):
            index += index >= previous
        chosen.append(index)
    return population[chosen]


def de_jump(
    rng: np.random.Generator, x, population: np.ndarray, scale: float, noise=0.0
) -> tuple[np.ndarray, float]:
    """Draw ``x* = x + scale (z₁ − z₂) + ε`` and return ``(x*, 0.0)``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness.
    x : array, shape (d,)
        Current state.
    population : array, shape (n, d), n ≥ 2
        Frozen states to draw ``z₁ ≠ z₂`` from (without replacement).
    scale : float
        The jump's scale ``γ`` (see :func:`de_scale`; 1 jumps between modes of equal shape).
    noise : float or array, shape (d,)
        Standard deviations of the Gaussian jitter ``ε`` that makes the proposal irreducible.
    """
    x = np.asarray(x, dtype=float)
    first, second = _distinct_rows(rng, population, 2)
    jitter = np.asarray(noise, dtype=float) * rng.standard_normal(x.shape[0])
    return x + scale * (first - second) + jitter, 0.0


def snooker_jump(
    rng: np.random.Generator, x, population: np.ndarray, scale: float = SNOOKER_SCALE
) -> tuple[np.ndarray, float]:
    """Draw a snooker jump and return ``(x*, log correction)``.

    ``z``, ``z₁``, ``z₂`` are three distinct states of the population; the proposal moves ``x``
    along the line through ``z`` by ``scale`` times the projection of ``z₁ − z₂`` on it. The log
    correction ``(d − 1) log(‖x* − z‖ / ‖x − z‖)`` is the Jacobian of that move in Cartesian
    coordinates; a move onto ``z`` itself gets ``−inf`` (a rejection).

    Parameters
    ----------
    rng, x, population
        As for :func:`de_jump`; the population holds at least 3 states.
    scale : float
        The jump's scale (default :data:`SNOOKER_SCALE`).
    """
    x = np.asarray(x, dtype=float)
    centre, first, second = _distinct_rows(rng, population, 3)
    offset = x - centre
    radius = math.sqrt(float(offset @ offset))
    if radius == 0.0:
        return x.copy(), -math.inf
    direction = offset / radius
    proposal = x + scale * float(direction @ (first - second)) * direction
    new_radius = math.sqrt(float((proposal - centre) @ (proposal - centre)))
    if new_radius == 0.0:
        return proposal, -math.inf
    return proposal, (x.shape[0] - 1) * (math.log(new_radius) - math.log(radius))
