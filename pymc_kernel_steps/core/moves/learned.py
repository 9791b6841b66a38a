"""``moves="learned"``: a sampler's own move, the random walk, differential evolution, snooker and
an independence proposal from a heavy-tailed envelope of the history in one mixture whose weights
are learned while tuning and frozen at its end (issue 24).

The weights follow :class:`~pymc_kernel_steps.core.JumpRateWeights`: each move's
Rao–Blackwellised squared jump ``α ‖L⁻¹(x* − x)‖²`` per evaluation, in the chain's current
whitening ``L``, with a floor so that no move dies. Differential evolution and snooker draw from
the chain's own history (its most recent half); at the end of tuning the weights and that
population are frozen, so the draws come from one fixed mixture of exact Metropolis–Hastings
kernels. The envelope (t's with the history's mean and covariance: half multivariate, half along
the whitened axes) is what brings a chain back from a tail where the other moves are stuck.
"""

from __future__ import annotations

import numpy as np

from ..history import ChainHistory
from ..move_weights import JumpRateWeights
from ..whitening import Whitening
from .base import Move, Proposal
from .differential_evolution import DifferentialEvolution, Snooker
from .envelope import Envelope
from .mixture import Mixture
from .random_walk import RandomWalk

__all__ = ["LEARNED_INITIAL_WEIGHTS", "LearnedMoves"]

#: initial weights of the step's own move, differential evolution, snooker, the envelope and the
#: random walk (the mixture's order)
LEARNED_INITIAL_WEIGHTS = (0.4, 0.15, 0.15, 0.15, 0.15)
#: smallest weight of any move of the learned mixture
LEARNED_FLOOR = 0.05
#: the weights above the floors are proportional to the measured rates to this power
LEARNED_POWER = 1.0
#: evaluations every move must have spent before the measured rates set the weights
LEARNED_MIN_EVALUATIONS = 20
#: the oldest share of the history left out of the population of DE and snooker
POPULATION_FORGET = 0.5
#: a whitened squared jump counts at most this times the dimension: two independent draws of a
#: whitened posterior are ``2 d`` apart on average, so more means the whitening of the moment
#: underestimates the scale (early in tuning a near-degenerate history gave one DE jump of
#: 10²⁸ on curved6, and the cumulative rate fixed DE's weight at its maximum for the rest of
#: tuning)
JUMP_CAP_PER_DIMENSION = 10.0


class LearnedMoves:
    """The mixture of ``moves="learned"`` and its weight learner.

    Parameters
    ----------
    own : Move
        The step's own move (a surrogate trajectory, a KAM move); it passes its turn on until it
        is ready.
    random_walk : RandomWalk
        The step's random walk (always ready: the mixture's last component).
    history : ChainHistory
        The chain's history: the population of differential evolution and snooker.

    Attributes
    ----------
    mixture : Mixture
        Own move, differential evolution, snooker, envelope and random walk, in this order.
    envelope : Envelope
        The independence proposal; not ready until :meth:`fit_envelope` gives it the history's
        whitening.
    learner : JumpRateWeights
        The rates measured while tuning and the weights they give.
    """

    def __init__(self, own: Move, random_walk: RandomWalk, history: ChainHistory):
        de = DifferentialEvolution.optimal(history, forget=POPULATION_FORGET)
        snooker = Snooker(history, forget=POPULATION_FORGET)
        self.envelope = Envelope()
        self.learner = JumpRateWeights(
            LEARNED_INITIAL_WEIGHTS,
            floor=LEARNED_FLOOR,
            min_evaluations=LEARNED_MIN_EVALUATIONS,
            power=LEARNED_POWER,
        )
        moves = (own, de, snooker, self.envelope, random_walk)
        self.mixture = Mixture(list(zip(moves, LEARNED_INITIAL_WEIGHTS, strict=True)), self.learner)
        #: the names of every move's sample stats, built once (they are reported every iteration)
        self._stat_names = [(f"weight_{m.kind}", f"acceptance_{m.kind}") for m in self.moves]

    @property
    def moves(self) -> list[Move]:
        return self.mixture.moves

    @property
    def frozen(self) -> bool:
        """Whether tuning has ended (the weights, population and moves are fixed)."""
        return not self.mixture.tuning

    @property
    def weights(self) -> dict[str, float]:
        """The mixture's weights by kind of move."""
        return {move.kind: w for move, w in zip(self.moves, self.mixture.weights, strict=True)}

    def stats(self) -> dict[str, float]:
        """Every move's weight, acceptance, expected squared jump (model units) and own figures
        (``"<kind>.<name>"``), and its measured rate (``"<kind>.rate"``: whitened squared jump
        per evaluation while tuning)."""
        out = self.mixture.stats()
        for move, rate in zip(self.moves, self.learner.rates(), strict=True):
            out[f"{move.kind}.rate"] = float(rate)
        return out

    def stats_dtypes_shapes(self) -> dict:
        """The sample stats of :meth:`sample_stats`: ``weight_<kind>`` and
        ``acceptance_<kind>`` for every move of the mixture."""
        return {name: (np.float64, []) for pair in self._stat_names for name in pair}

    def sample_stats(self) -> dict[str, float]:
        """This iteration's sample stats: every move's weight in the mixture (learned while
        tuning, constant after) and its mean acceptance probability over its proposals so far
        (NaN before its first)."""
        out = {}
        for (weight_name, acceptance_name), move, weight in zip(
            self._stat_names, self.moves, self.mixture.weights, strict=True
        ):
            out[weight_name] = float(weight)
            out[acceptance_name] = move.tally.acceptance
        return out

    def record(self, proposal: Proposal, x: np.ndarray, accept_prob: float, metric) -> None:
        """Count a proposal of one of the mixture's moves (others, such as the tuning phase's
        coordinate moves, are not counted) and push the learned weights into the mixture.

        Counted only once the step's own move is ready (its first fit): every move is then
        measured over the same iterations, in a whitening learned from the history, and the
        weights until then are the initial ones. A squared jump counts at most
        :data:`JUMP_CAP_PER_DIMENSION` ``× d``."""
        if self.frozen or not self.moves[0].ready:
            return
        squared_jump = 0.0
        if proposal.evaluated:
            jump = np.asarray(proposal.x) - np.asarray(x)
            if isinstance(metric, Whitening):
                jump = metric.inv_chol @ jump
            squared_jump = min(float(jump @ jump), JUMP_CAP_PER_DIMENSION * jump.size)
        self.mixture.learn(proposal, accept_prob, squared_jump)

    def fit_envelope(self, whitening: Whitening) -> None:
        """The envelope's mean and covariance: a whitening fitted to the history (ignored once
        frozen, like the population)."""
        if not self.frozen:
            self.envelope.metric = whitening

    def freeze(self) -> None:
        """End of tuning: the weights, the population and the moves' adaptation stop."""
        if self.mixture.tuning:
            self.mixture.freeze()
