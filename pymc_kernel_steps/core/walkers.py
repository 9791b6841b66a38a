"""Walkers: copies of one chain that take turns to move while it tunes, so that it explores from
several places rather than one before it goes on alone.

A chain's proposal is learned from its history, and one chain that tunes for ``n`` iterations
explores its posterior as far as its autocorrelation lets it. On a curved target (``curved6``,
issue 24) the history frozen at the end of tuning held about half of the curve's variance along
its axis, and the draws' kernel, learned from that history, reached its ends too rarely: the
second moments came out low in most runs with a within-run MCSE that did not show it. ``count``
walkers from the same start, advanced in turn by the step's own moves for the first part of
tuning, make ``count`` independent explorations at the same cost in evaluations, and the chain
goes on from the one that reached the highest log density. They belong to the tuning phase, so
the draws' kernel is untouched: it is fitted, as without walkers, to the most recent half of the
history, which the chain makes on its own after the walkers stop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["TuningWalkers"]


@dataclass
class TuningWalkers:
    """The states of ``count`` walkers of one chain, advanced in turn until iteration ``end``.

    The chain's own current state is always one walker's (the one whose turn it is): after each
    iteration :meth:`next_turn` stores the chain's state as that walker's and hands over the
    next walker's. No randomness is used, so a chain with walkers draws its proposals from the
    same stream as one without.

    Attributes
    ----------
    positions : np.ndarray
        ``(count, dim)`` state of every walker.
    log_densities : np.ndarray
        ``(count,)`` log density at ``positions``.
    end : int
        The chain's iteration at which the walkers stop and the chain goes on alone.
    turn : int
        The walker that is the chain's current state.
    done : bool
        The walkers have stopped.
    """

    positions: np.ndarray
    log_densities: np.ndarray
    end: int
    turn: int = 0
    done: bool = False

    @classmethod
    def start(cls, x, log_density: float, count: int, end: int) -> TuningWalkers:
        """``count`` walkers at ``x`` (log density ``log_density``), moving until iteration
        ``end`` of the chain."""
        if count < 2:
            raise ValueError(f"`count` must be at least 2 walkers, got {count}.")
        x = np.asarray(x, dtype=float)
        if x.ndim != 1:
            raise ValueError(f"`x` must be one state of shape (dim,), got shape {x.shape}.")
        value = log_density if not math.isnan(log_density) else -math.inf
        return cls(np.tile(x, (count, 1)), np.full(count, float(value)), int(end))

    @property
    def count(self) -> int:
        return self.positions.shape[0]

    def next_turn(
        self, point: np.ndarray, log_density: float, iteration: int
    ) -> tuple[np.ndarray, float]:
        """Store ``point`` (log density ``log_density``) as the state of the walker whose turn
        it was and return the state the chain goes on from at ``iteration``: the next walker's,
        or once ``iteration`` reaches :attr:`end` the one at the highest log density (and the
        walkers are done)."""
        if self.done:
            raise RuntimeError("the walkers have stopped; the chain goes on alone.")
        self.positions[self.turn] = point
        self.log_densities[self.turn] = log_density
        if iteration >= self.end:
            self.done = True
            self.turn = int(np.argmax(self.log_densities))
        else:
            self.turn = (self.turn + 1) % self.count
        return self.positions[self.turn].copy(), float(self.log_densities[self.turn])
