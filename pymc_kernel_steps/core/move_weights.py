"""Weights of a mixture of moves, learned while tuning from each move's jumps per evaluation.

A mixture of exact kernels with fixed weights is exact; weights that keep changing from the chain's
own draws are not. So the weights are learned during tuning only and frozen at its end: the draws
then come from one fixed mixture (:class:`~pymc_kernel_steps.core.Mixture` feeds its learner only
while it tunes).

The criterion is the expected squared jump distance per target evaluation, Rao–Blackwellised over
the accept step: a proposal ``x*`` from ``x`` accepted with probability ``α`` contributes
``α ‖x* − x‖²`` (in whitened units, so that every coordinate counts alike), and the move's rate is
its summed contributions over the evaluations it spent. Weights are proportional to a power of
the rates (the rates themselves by default), with a floor so that no move dies: a move that is
poor now (a surrogate not yet fitted, a history too short for differential evolution) may be the
best one later, and the mixture's other moves are what brings a chain back from a region where
the best one is stuck.
"""

from __future__ import annotations

import numpy as np

from .adaptation import Adapter, Feedback

__all__ = ["JumpRateWeights"]


class JumpRateWeights(Adapter):
    """Mixture weights that follow each move's expected squared jump per evaluation.

    An :class:`~.adaptation.Adapter` whose :attr:`value` is the weights; :meth:`update` reads
    :attr:`Feedback.index <.adaptation.Feedback.index>` (the move that proposed),
    :attr:`~.adaptation.Feedback.expected_squared_jump` and
    :attr:`~.adaptation.Feedback.evaluations`.

    Parameters
    ----------
    initial : array-like, shape (k,)
        Weights used until every move has been tried ``min_evaluations`` times (normalised).
    floor : float
        Smallest weight of any move, ``0 ≤ floor ≤ 1/k``.
    min_evaluations : int
        Evaluations every move must have spent before its measured rate is used.
    power : float
        The weights above the floors are proportional to ``rate ** power`` (1: to the rates;
        larger: more of the evaluations to the move that jumps furthest). Positive.
    """

    def __init__(self, initial, floor: float = 0.05, min_evaluations: int = 20, power: float = 1.0):
        initial = np.asarray(initial, dtype=float)
        if initial.ndim != 1 or initial.size == 0:
            raise ValueError("`initial` must be a non-empty 1-d array of weights.")
        if not np.all(np.isfinite(initial)) or np.any(initial < 0) or initial.sum() <= 0:
            raise ValueError(f"`initial` must be non-negative with a positive sum, got {initial}.")
        if not 0.0 <= floor <= 1.0 / initial.size:
            raise ValueError(f"`floor` must lie in [0, 1/{initial.size}], got {floor}.")
        if min_evaluations < 1:
            raise ValueError(f"`min_evaluations` must be at least 1, got {min_evaluations}.")
        if not (np.isfinite(power) and power > 0):
            raise ValueError(f"`power` must be a positive number, got {power!r}.")
        self.power = float(power)
        self.initial = initial / initial.sum()
        self.floor = float(floor)
        self.min_evaluations = int(min_evaluations)
        self.squared_jumps = np.zeros(initial.size)
        self.evaluations = np.zeros(initial.size)
        self._weights = self.initial.copy()

    @property
    def value(self) -> np.ndarray:
        """The current weights; they sum to 1 (a copy)."""
        return self._weights.copy()

    def rates(self) -> np.ndarray:
        """Each move's summed ``α ‖x* − x‖²`` per evaluation so far (NaN for an untried move)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.evaluations > 0, self.squared_jumps / self.evaluations, np.nan)

    def update(self, feedback: Feedback, rng: np.random.Generator | None = None) -> None:
        """Count one proposal of move ``feedback.index``: its Rao–Blackwellised squared jump
        (whitened) and the evaluations it cost."""
        move = feedback.index
        self.squared_jumps[move] += feedback.expected_squared_jump
        self.evaluations[move] += feedback.evaluations
        if np.all(self.evaluations >= self.min_evaluations):
            self._weights = self._weights_from(self.rates())

    def _weights_from(self, rates: np.ndarray) -> np.ndarray:
        powered = rates**self.power
        total = powered.sum()
        if not np.isfinite(total) or total <= 0.0:
            return self.initial.copy()
        share = powered / total
        return self.floor + (1.0 - self.floor * rates.size) * share
