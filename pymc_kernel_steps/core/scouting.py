"""Scouts: several short random walks from one start; the chain goes on from the best.

A chain started far from the posterior's main mode can fall, within its first few dozen
iterations, into the basin of a minor mode (on the Lotka–Volterra black box about one chain in
three does, to a mode 58 below the main one in log density) and stay there through tuning. Local
samplers rarely leave it, and chains stuck apart give R-hat far above 1. Running a few walks from
the start and continuing from the one at the highest log density lowers that chance to about its
power (a third to the fourth: one chain in a hundred). The walks belong to the tuning phase, so
the draws' kernel is untouched; they cost ``count × length`` of the tuning evaluations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .adaptation import Feedback, RobbinsMonroScale
from .moves import RandomWalk
from .transitions import accept
from .whitening import Whitening

__all__ = ["Scouts"]


@dataclass
class Scouts:
    """Random walks ``N(x, s² D²)`` advanced in turn, one iteration each, with one Robbins–Monro
    scale ``s`` shared by all of them and a fixed diagonal ``D`` of per-coordinate scales.

    Attributes
    ----------
    positions : np.ndarray
        ``(count, dim)`` current state of every walk.
    log_densities : np.ndarray
        ``(count,)`` log density at ``positions`` (−inf where it was NaN).
    scale : RobbinsMonroScale
    length : int
        Iterations of each walk.
    iterations : int
        Iterations done so far (all walks together).
    coordinate_scales : np.ndarray or None
        ``(dim,)`` diagonal of ``D`` (None: the identity).
    walk : RandomWalk
        The move of every walk (its scale is ``scale``, its metric ``D``).
    """

    positions: np.ndarray
    log_densities: np.ndarray
    scale: RobbinsMonroScale
    length: int
    iterations: int = 0
    coordinate_scales: np.ndarray | None = None
    walk: RandomWalk = field(init=False)

    def __post_init__(self):
        metric = None
        if self.coordinate_scales is not None:
            metric = Whitening.diagonal(self.coordinate_scales)
        self.walk = RandomWalk(self.scale, metric)

    @classmethod
    def start(
        cls,
        x,
        log_density: float,
        count: int,
        length: int,
        scale: RobbinsMonroScale,
        coordinate_scales=None,
    ):
        """``count`` walks of ``length`` iterations, all from ``x`` (``coordinate_scales``:
        the diagonal of ``D``, positive; default the identity)."""
        if count < 1 or length < 1:
            raise ValueError(f"need count ≥ 1 and length ≥ 1, got {count} and {length}.")
        x = np.asarray(x, dtype=float)
        if coordinate_scales is not None:
            coordinate_scales = np.asarray(coordinate_scales, dtype=float)
            if coordinate_scales.shape != x.shape or not np.all(
                np.isfinite(coordinate_scales) & (coordinate_scales > 0)
            ):
                raise ValueError(
                    f"`coordinate_scales` must be {x.shape[0]} positive numbers, got "
                    f"{coordinate_scales!r}."
                )
        value = log_density if not math.isnan(log_density) else -math.inf
        return cls(
            positions=np.tile(x, (count, 1)),
            log_densities=np.full(count, value),
            scale=scale,
            length=int(length),
            coordinate_scales=coordinate_scales,
        )

    @property
    def count(self) -> int:
        return self.positions.shape[0]

    @property
    def turn(self) -> int:
        """The walk that moves next."""
        return self.iterations % self.count

    @property
    def done(self) -> bool:
        return self.iterations >= self.count * self.length

    def propose(self, rng: np.random.Generator) -> np.ndarray:
        """A random-walk proposal from the current position of the walk whose turn it is."""
        return self.walk.propose(rng, self.positions[self.turn]).x

    def update(
        self, proposal, log_density: float, rng: np.random.Generator
    ) -> tuple[bool, float, float]:
        """Accept or reject ``proposal`` (log density ``log_density``, NaN meaning −inf) for the
        walk whose turn it is, adapt the scale, and pass the turn on.

        Returns
        -------
        accepted, acceptance probability, log acceptance ratio
        """
        k = self.turn
        if math.isnan(log_density):
            log_density = -math.inf
        current = float(self.log_densities[k])
        # from outside the support (both −inf) no move is accepted until a walk finds it
        log_ratio = log_density - current if log_density > -math.inf else -math.inf
        accepted, accept_prob = accept(rng, log_ratio)
        if accepted:
            self.positions[k] = proposal
            self.log_densities[k] = log_density
        self.scale.update(Feedback(accept_prob), rng)
        self.iterations += 1
        return accepted, accept_prob, log_ratio

    def best(self) -> tuple[np.ndarray, float]:
        """The position with the highest log density and that log density."""
        k = int(np.argmax(self.log_densities))
        return self.positions[k].copy(), float(self.log_densities[k])
