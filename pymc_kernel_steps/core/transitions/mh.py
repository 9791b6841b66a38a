"""The Metropolis–Hastings accept: the one place where a proposal is accepted or rejected
(:func:`accept`), and the evaluation that precedes it (:func:`decide`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from ..moves import Proposal

__all__ = ["Decision", "StepInfo", "accept", "decide"]


def accept(rng: np.random.Generator, log_ratio: float) -> tuple[bool, float]:
    """Accept a proposal with probability ``min(1, exp(log_ratio))``.

    ``log_ratio`` is the log acceptance ratio (``log π(x*) − log π(x)`` plus the proposal's log
    correction); NaN counts as −inf (rejected). One uniform is drawn from ``rng`` on every call,
    whatever the ratio, so that the random stream does not depend on the outcome.

    Returns
    -------
    accepted : bool
    accept_prob : float
        ``min(1, exp(log_ratio))``, the acceptance probability (0 for NaN).
    """
    if math.isnan(log_ratio):
        log_ratio = -math.inf
    uniform = rng.uniform()
    accepted = (math.log(uniform) if uniform > 0.0 else -math.inf) < log_ratio
    return accepted, math.exp(min(0.0, log_ratio))


class Decision(NamedTuple):
    """The outcome of :func:`decide`.

    Attributes
    ----------
    accepted : bool
    accept_prob : float
    log_accept_ratio : float
        −inf for a proposal rejected without evaluating (or whose log density is NaN or +inf).
    log_density : float
        The log density at the proposal as evaluated (NaN or +inf included; −inf when not
        evaluated).
    usable_log_density : float
        ``log_density``, with NaN and +inf as −inf: the chain's log density if accepted.
    evaluations : int
        Evaluations of the log density (0 or 1).
    """

    accepted: bool
    accept_prob: float
    log_accept_ratio: float
    log_density: float
    usable_log_density: float
    evaluations: int


def decide(
    rng: np.random.Generator,
    proposal: Proposal,
    current_log_density: float,
    log_density_fn: Callable[[np.ndarray], float],
) -> Decision:
    """Evaluate ``log_density_fn`` at ``proposal.x`` (unless the proposal is rejected without:
    :attr:`~pymc_kernel_steps.core.moves.Proposal.evaluated` False) and :func:`accept` with
    ``log π(x*) − log π(x) + proposal.log_correction``. A NaN or +inf log density is a
    rejection, never an acceptance."""
    if proposal.evaluated:
        log_density = float(log_density_fn(proposal.x))
        evaluations = 1
        usable = -math.inf if math.isnan(log_density) or log_density == math.inf else log_density
        log_ratio = usable - current_log_density + proposal.log_correction
    else:
        log_density = usable = log_ratio = -math.inf
        evaluations = 0
    if math.isnan(log_ratio):
        log_ratio = -math.inf
    accepted, accept_prob = accept(rng, log_ratio)
    return Decision(accepted, accept_prob, log_ratio, log_density, usable, evaluations)


@dataclass(frozen=True)
class StepInfo:
    """What one ``step`` of a transition did: the proposal and the :class:`Decision` on it. A
    transition's own info adds its fields.

    Attributes
    ----------
    proposal : Proposal
        The proposal and the move that made it.
    log_density : float
        The log density at the proposal as evaluated (NaN or +inf included; −inf when not
        evaluated).
    accepted : bool
    accept_prob : float
    log_accept_ratio : float
        −inf for a proposal rejected without evaluating (or whose log density is NaN or +inf).
    evaluations : int
        Evaluations of the log density (0 or 1).
    """

    proposal: Proposal
    log_density: float
    accepted: bool
    accept_prob: float
    log_accept_ratio: float
    evaluations: int

    @classmethod
    def of(cls, proposal: Proposal, decision: Decision, **fields):
        """The info of ``decision`` on ``proposal``, with the transition's own ``fields``."""
        return cls(
            proposal,
            decision.log_density,
            decision.accepted,
            decision.accept_prob,
            decision.log_accept_ratio,
            decision.evaluations,
            **fields,
        )
