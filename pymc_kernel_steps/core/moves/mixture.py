"""Mixtures and cycles of moves, as data."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..adaptation import Adapter, Feedback
from .base import Move, Proposal

__all__ = ["Cycle", "Mixture"]


class Mixture(Move):
    """A random choice among moves, independent of the state: a mixture of Metropolis–Hastings
    kernels, each exact, is exact.

    Parameters
    ----------
    components : sequence of (Move, float)
        The moves and their probabilities (non-negative, summing to 1). A uniform ``u`` is drawn
        per proposal (none with one component) and the first component whose cumulative
        probability exceeds ``u`` proposes; a component that is not
        :attr:`~.base.Move.ready` passes its turn to the next (the last must always be ready).
    learner : Adapter, optional
        Learns the probabilities while the mixture tunes (e.g.
        :class:`~pymc_kernel_steps.core.JumpRateWeights`): :meth:`learn` feeds it the outcome
        of each component's proposals, :attr:`~.adaptation.Feedback.index` naming the
        component, and the mixture takes its value, normalised, as its probabilities; at
        :meth:`freeze` its :meth:`~.adaptation.Adapter.final` value. None: the probabilities
        change only by :meth:`set_weights`.
    """

    kind = "mixture"

    def __init__(self, components: Sequence[tuple[Move, float]], learner: Adapter | None = None):
        super().__init__()
        if not components:
            raise ValueError("a Mixture needs at least one component.")
        self.moves = [move for move, _ in components]
        self.set_weights([weight for _, weight in components])
        self.learner = learner

    def set_weights(self, weights: Sequence[float]) -> None:
        """New probabilities of the components (in their order), e.g. learned while tuning;
        refused once the mixture is frozen (the draws' kernel must not change)."""
        if not self.tuning:
            raise RuntimeError("a frozen Mixture keeps its weights.")
        weights = [float(w) for w in weights]
        if len(weights) != len(self.moves):
            raise ValueError(f"need {len(self.moves)} weights, got {len(weights)}.")
        if any(not (math.isfinite(w) and w >= 0) for w in weights):
            raise ValueError(f"weights must be finite and non-negative, got {weights}.")
        if abs(sum(weights) - 1.0) > 1e-9:
            raise ValueError(f"weights must sum to 1, got {weights} (sum {sum(weights)}).")
        self.weights = weights
        thresholds, total = [], 0.0
        for weight in weights[:-1]:
            total += weight
            thresholds.append(total)
        self._thresholds = [*thresholds, math.inf]

    def learn(self, proposal: Proposal, accept_prob: float, squared_jump: float) -> None:
        """While tuning, feed :attr:`learner` one proposal of a component (a proposal of another
        move is ignored), its acceptance probability and squared jump, and take the learned
        weights."""
        if self.learner is None or not self.tuning:
            return
        index = next((i for i, move in enumerate(self.moves) if proposal.move is move), None)
        if index is None:
            return
        self.learner.update(Feedback(accept_prob, squared_jump, index=index))
        self._take_weights(self.learner.value)

    def _take_weights(self, weights) -> None:
        weights = np.asarray(weights, dtype=float)
        weights = weights / weights.sum()
        if not np.array_equal(weights, self.weights):
            self.set_weights(weights.tolist())

    def choose(self, rng: np.random.Generator) -> Move:
        """The move that proposes next (a component's own choice if it is a mixture)."""
        if len(self.moves) == 1:
            return self.moves[0].choose(rng)
        u = rng.uniform()
        for move, threshold in zip(self.moves, self._thresholds, strict=True):
            if u < threshold and move.ready:
                return move.choose(rng)
        return self.moves[-1].choose(rng)

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        return self.choose(rng).propose(rng, x)

    def freeze(self) -> None:
        """End of tuning: the learner's final weights, then every component frozen."""
        if self.tuning and self.learner is not None:
            self._take_weights(self.learner.final())
        super().freeze()
        for move in self.moves:
            move.freeze()

    def stats(self) -> dict[str, float]:
        out = {}
        for move, weight in zip(self.moves, self.weights, strict=True):
            out.update({f"{move.kind}.{k}": v for k, v in move.stats().items()})
            out[f"{move.kind}.weight"] = weight
        return out


class Cycle(Move):
    """Moves in a fixed repeating pattern: the ``i``-th proposal since :meth:`restart` comes
    from ``pattern[i % len(pattern)]``, or from ``fallback`` when that move is not ready. Each
    move of a cycle is exact, hence so is their composition.
    """

    kind = "cycle"

    def __init__(self, pattern: Sequence[Move], fallback: Move):
        super().__init__()
        if not pattern:
            raise ValueError("a Cycle needs a non-empty pattern.")
        self.pattern = list(pattern)
        self.fallback = fallback
        self.index = 0

    def restart(self) -> None:
        """The next proposal comes from the pattern's first move."""
        self.index = 0

    def choose(self, rng: np.random.Generator) -> Move:
        """The move of the pattern's next slot (the fallback if it is not ready)."""
        move = self.pattern[self.index % len(self.pattern)]
        self.index += 1
        return (move if move.ready else self.fallback).choose(rng)

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        return self.choose(rng).propose(rng, x)

    def freeze(self) -> None:
        super().freeze()
        for move in {id(m): m for m in [*self.pattern, self.fallback]}.values():
            move.freeze()
