"""The protocol every move follows: a proposal with its correction, per-move adaptation and
statistics.

A *move* proposes ``x*`` from the current state ``x`` with the log correction
``log q(x | x*) − log q(x* | x)`` (the Hastings ratio of the proposal densities, or the
kinetic-energy difference of an HMC trajectory), so that the kernel accepts with
``min(1, π(x*)/π(x) · exp(correction))``. While tuning, :meth:`Move.update` adapts the move from
its own outcome; :meth:`Move.freeze` ends its tuning. Every move keeps a :class:`MoveTally` of
its proposals (acceptance and expected squared jump), from which mixtures that learn their weights
can be built (:meth:`Mixture.set_weights <.mixture.Mixture.set_weights>`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

__all__ = ["MOVE_KINDS", "Move", "MoveTally", "Proposal", "move_code"]

#: the ``move`` sample stat is the index in this tuple of the kind of move that proposed
#: (-1: another kind)
MOVE_KINDS = (
    "coordinate",
    "random_walk",
    "surrogate_hmc",
    "kam",
    "differential_evolution",
    "snooker",
    "envelope",
)


@dataclass
class Proposal:
    """One proposal of a move.

    Attributes
    ----------
    x : numpy.ndarray
        The proposed state, in the model's coordinates.
    log_correction : float
        Added to ``log π(x*) − log π(x)`` in the acceptance ratio.
    move : Move
        The move that made it (a mixture names the component it chose).
    extra : object
        What the move needs back in :meth:`Move.record` and :meth:`Move.update` (a coordinate,
        the proposal covariance's factor there, a trajectory's energies...), typed by the move.
    stays : bool
        The proposal is the current state itself (a population move whose states coincide: a
        DE jump between two equal states, a snooker centre at the state), set by the move that
        knows it: it is :attr:`null`.
    """

    x: np.ndarray
    log_correction: float
    move: Move
    extra: Any = None
    stays: bool = False

    @property
    def null(self) -> bool:
        """The proposal is the state itself (:attr:`stays`): it is rejected without evaluating
        the model, and it is not a degenerate proposal. The chain stays at its state whether
        such a proposal is accepted or rejected, so the kernel is the same; rejecting it spares
        an evaluation and does not count a move that did not happen as accepted."""
        return self.stays

    @property
    def kind(self) -> str:
        """The name of the move that made it."""
        return self.move.kind

    @cached_property
    def evaluated(self) -> bool:
        """Whether the model is evaluated at ``x``: a proposal with a non-finite point or
        correction (a degenerate covariance, a diverged trajectory), or a :attr:`null` one, is
        rejected without it. Computed once: a proposal is not changed after it is made, and
        the iteration asks several times."""
        if self.null:
            return False
        return bool(np.all(np.isfinite(self.x))) and math.isfinite(self.log_correction)


@dataclass
class MoveTally:
    """Counts of one move's proposals: how many, their summed acceptance probability and their
    summed Rao–Blackwellised squared jump ``α ‖x* − x‖²`` (Euclidean, in the model's
    coordinates)."""

    proposals: int = 0
    accept_sum: float = 0.0
    squared_jump_sum: float = 0.0
    unevaluated: int = 0

    def add(self, proposal: Proposal, x: np.ndarray, accept_prob: float) -> None:
        self.proposals += 1
        if not proposal.evaluated:
            self.unevaluated += 1
            return
        accept_prob = accept_prob if math.isfinite(accept_prob) else 0.0
        jump = proposal.x - x
        self.accept_sum += accept_prob
        self.squared_jump_sum += accept_prob * float(jump @ jump)

    @property
    def acceptance(self) -> float:
        """Mean acceptance probability (NaN before the first proposal)."""
        return self.accept_sum / self.proposals if self.proposals else math.nan

    @property
    def expected_squared_jump(self) -> float:
        """Mean ``α ‖x* − x‖²`` per proposal (NaN before the first)."""
        return self.squared_jump_sum / self.proposals if self.proposals else math.nan


class Move:
    """Base of the moves: subclasses set :attr:`kind`, call ``super().__init__()`` and implement
    :meth:`propose`, and override :meth:`record` (bookkeeping after every decision) and
    :meth:`update` (adaptation while tuning) where they have something to do."""

    kind: str = "move"
    #: an unevaluated proposal of this move is an aborted trajectory (it diverged or left the
    #: region the chain has seen), not a degenerate proposal
    may_abort: bool = False

    def __init__(self) -> None:
        self.tally = MoveTally()
        self.tuning = True

    @property
    def ready(self) -> bool:
        """Whether the move can propose now (a jump before its covariance is known cannot);
        mixtures and cycles pass an unready move's turn on."""
        return True

    def choose(self, rng: np.random.Generator) -> Move:
        """The move that makes the next proposal: this one (a mixture or cycle chooses one of
        its components, drawing what it needs from ``rng``)."""
        return self

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:  # pragma: no cover
        raise NotImplementedError

    def record(self, proposal: Proposal, x: np.ndarray, accepted: bool, accept_prob) -> None:
        """After the accept/reject decision on ``proposal`` made from ``x``: count it."""
        self.tally.add(proposal, x, accept_prob)

    def update(self, proposal: Proposal, x: np.ndarray, accept_prob: float, rng) -> None:
        """Adapt from the outcome of ``proposal`` (called only while adapting)."""

    def freeze(self) -> None:
        """End of tuning: what :meth:`propose` does no longer changes with :meth:`update`
        unless the step keeps adapting (``adapt_after_tuning``)."""
        self.tuning = False

    def stats(self) -> dict[str, float]:
        """The move's own figures: acceptance and expected squared jump of its proposals."""
        return {
            "acceptance": self.tally.acceptance,
            "expected_squared_jump": self.tally.expected_squared_jump,
        }


def move_code(proposal: Proposal) -> int:
    """The ``move`` sample stat: the index of the proposal's kind in :data:`MOVE_KINDS` (-1:
    another kind)."""
    try:
        return MOVE_KINDS.index(proposal.kind)
    except ValueError:
        return -1
