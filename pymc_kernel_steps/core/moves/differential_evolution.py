"""Differential-evolution and snooker moves drawn from the chain's own history.

The population is the chain's history (:class:`~pymc_kernel_steps.core.ChainHistory`): it grows
while tuning and is frozen at :meth:`~.base.Move.freeze` to the states stored by then, so that the
draws come from a fixed Metropolis–Hastings kernel (see
:mod:`pymc_kernel_steps.core.differential_evolution` for why any fixed population is exact).
"""

from __future__ import annotations

import math

import numpy as np

from ..adaptation import Feedback, RobbinsMonroScale
from ..differential_evolution import SNOOKER_SCALE, de_jump, de_scale, snooker_jump
from ..history import ChainHistory
from .base import Move, Proposal

__all__ = ["DifferentialEvolution", "Snooker"]


class _PopulationMove(Move):
    """A move that draws from the first :attr:`population_size` states of ``history``, less the
    oldest share ``forget`` of them (the initial transient, as ``DEMetropolisZ``'s
    ``tune_drop_fraction``)."""

    def __init__(self, history: ChainHistory, min_population: int, forget: float = 0.0):
        super().__init__()
        if min_population < 3:
            raise ValueError(f"`min_population` must be at least 3, got {min_population}.")
        if not 0.0 <= forget < 1.0:
            raise ValueError(f"`forget` must lie in [0, 1), got {forget}.")
        self.history = history
        self.min_population = int(min_population)
        self.forget = float(forget)
        self.frozen_size: int | None = None

    @property
    def population_size(self) -> int:
        return len(self.history) if self.frozen_size is None else self.frozen_size

    @property
    def population_start(self) -> int:
        """Index in the history of the population's first state."""
        return int(self.forget * self.population_size)

    @property
    def ready(self) -> bool:
        return self.population_size - self.population_start >= self.min_population

    def population(self) -> np.ndarray:
        return self.history.points[self.population_start : self.population_size]

    def _proposal(self, x: np.ndarray, point: np.ndarray, correction: float) -> Proposal:
        """The proposal, marked when it is the state itself (two equal states of the
        population, which a chain's rejections put there, or a snooker centre at the state):
        such a proposal is null, rejected without evaluating the model."""
        return Proposal(point, correction, self, stays=bool(np.array_equal(point, x)))

    def freeze(self) -> None:
        """End of tuning: the population is the history stored so far, from now on."""
        super().freeze()
        self.frozen_size = len(self.history)

    def stats(self) -> dict[str, float]:
        return {
            **super().stats(),
            "population": float(self.population_size - self.population_start),
        }


class DifferentialEvolution(_PopulationMove):
    """``x* = x + γ (z₁ − z₂) + ε`` with ``z₁ ≠ z₂`` from the population (``DEMetropolisZ``'s
    move): symmetric, correction 0. ``γ`` is a :class:`~pymc_kernel_steps.core.RobbinsMonroScale`
    tuned towards its target acceptance; ``ε ~ N(0, diag(noise²))`` a small jitter.

    Parameters
    ----------
    history : ChainHistory
        The population's source.
    scale : RobbinsMonroScale
        The scale ``γ`` and its adaptation (see :meth:`optimal`).
    noise : float or array, shape (d,)
        Standard deviations of the jitter (0: none; the mixture's other moves make the chain
        irreducible).
    min_population : int
        States the population must hold before the move proposes.
    forget : float
        Share of the oldest states of the history left out of the population, in [0, 1).
    """

    kind = "differential_evolution"

    def __init__(
        self,
        history: ChainHistory,
        scale: RobbinsMonroScale,
        noise=0.0,
        min_population: int = 20,
        forget: float = 0.0,
    ):
        super().__init__(history, min_population, forget)
        self.scale = scale
        self.noise = noise

    @classmethod
    def optimal(
        cls, history: ChainHistory, scale_range: float = 10.0, target: float = 0.234, **kwargs
    ) -> DifferentialEvolution:
        """Start at ter Braak's ``2.38 / √(2 d)`` and stay within a factor ``scale_range``."""
        scale = RobbinsMonroScale.within(de_scale(history.dim), scale_range, target=target)
        return cls(history, scale, **kwargs)

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        proposal, correction = de_jump(rng, x, self.population(), self.scale.scale, self.noise)
        return self._proposal(x, proposal, correction)

    def update(self, proposal: Proposal, x: np.ndarray, accept_prob: float, rng) -> None:
        if proposal.null:  # a jump of length zero says nothing about the scale
            return
        self.scale.update(Feedback(accept_prob), rng)

    def stats(self) -> dict[str, float]:
        return {**super().stats(), "scale": self.scale.scale}


class Snooker(_PopulationMove):
    """The snooker move of ter Braak & Vrugt (2008) (``emcee.moves.DESnookerMove``): along the
    line through ``x`` and a population state ``z``, by ``scale`` times the projection of
    ``z₁ − z₂``; its correction is the Jacobian ``(d − 1) log(‖x* − z‖ / ‖x − z‖)``.

    Parameters
    ----------
    history : ChainHistory
        The population's source.
    scale : float
        The jump's factor (default 1.7, ter Braak & Vrugt's and emcee's).
    min_population : int
        States the population must hold before the move proposes.
    forget : float
        Share of the oldest states of the history left out of the population, in [0, 1).
    """

    kind = "snooker"

    def __init__(
        self,
        history: ChainHistory,
        scale: float = SNOOKER_SCALE,
        min_population: int = 20,
        forget: float = 0.0,
    ):
        super().__init__(history, min_population, forget)
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"`scale` must be positive and finite, got {scale}.")
        self.scale = float(scale)

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        proposal, correction = snooker_jump(rng, x, self.population(), self.scale)
        return self._proposal(x, proposal, correction)
