"""Differential-evolution and snooker moves on the chain's history, and a mixture whose weights
are learned while tuning (:class:`JumpRateWeights`) and frozen at its end, through the moves'
public interface: a Metropolis–Hastings loop written out here with explicit states."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_kernel_steps.core import ChainHistory, JumpRateWeights
from pymc_kernel_steps.core.moves import Mixture, RandomWalk
from pymc_kernel_steps.core.moves.differential_evolution import DifferentialEvolution, Snooker
from tests.core.test_differential_evolution import TARGET_MEAN, TARGET_VAR, target_logp
from tests.helpers import assert_moments


def test_population_moves_wait_for_their_population_and_freeze_it():
    history = ChainHistory(2)
    de = DifferentialEvolution.optimal(history, min_population=5)
    snooker = Snooker(history, min_population=5)
    history.extend(np.random.default_rng(0).normal(size=(4, 2)))
    assert not de.ready and not snooker.ready
    history.append(np.zeros(2))
    assert de.ready and snooker.ready
    de.freeze()
    history.extend(np.ones((10, 2)))
    assert de.population_size == 5 and de.stats()["population"] == 5.0
    assert snooker.population_size == 15
    assert np.array_equal(de.population(), history.points[:5])


def test_de_starts_at_ter_braaks_scale_and_adapts_only_while_tuning():
    history = ChainHistory(8)
    de = DifferentialEvolution.optimal(history)
    assert de.scale.scale == pytest.approx(2.38 / 4.0)
    history.extend(np.random.default_rng(1).normal(size=(30, 8)))
    proposal = de.propose(np.random.default_rng(2), np.zeros(8))
    assert proposal.kind == "differential_evolution" and proposal.log_correction == 0.0
    before = de.scale.scale
    de.update(proposal, np.zeros(8), 1.0, None)
    assert de.scale.scale > before


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda h: Snooker(h, scale=0.0), "`scale`"),
        (lambda h: Snooker(h, min_population=2), "`min_population`"),
        (lambda h: DifferentialEvolution.optimal(h, min_population=1), "`min_population`"),
    ],
)
def test_bad_arguments_are_named(factory, match):
    with pytest.raises(ValueError, match=match):
        factory(ChainHistory(2))


def run_learned_mixture(seed, tune=3000, draws=12_000):
    """MH with a mixture of a random walk, DE and snooker: the history grows and the weights are
    learned while tuning; both are frozen after."""
    rng = np.random.default_rng(seed)
    history = ChainHistory(3)
    walk = RandomWalk.optimal(3, 100.0)
    moves = [DifferentialEvolution.optimal(history), Snooker(history), walk]  # the last is ready
    weights = JumpRateWeights([1.0, 1.0, 1.0], floor=0.1)
    mixture = Mixture([(move, 1.0 / 3.0) for move in moves], learner=weights)
    x = rng.normal(size=3)
    logp = target_logp(x)
    out = np.empty((draws, 3))
    for i in range(tune + draws):
        tuning = i < tune
        if i == tune:
            mixture.freeze()
        proposal = mixture.propose(rng, x)
        accept_prob = 0.0
        if proposal.evaluated:
            proposal_logp = target_logp(proposal.x)
            accept_prob = math.exp(min(0.0, proposal_logp - logp + proposal.log_correction))
        accepted = rng.uniform() < accept_prob
        proposal.move.record(proposal, x, accepted, accept_prob)
        if tuning:
            proposal.move.update(proposal, x, accept_prob, rng)
            jump = proposal.x - x
            mixture.learn(proposal, accept_prob, float(jump @ jump))
        if accepted:
            x, logp = proposal.x, proposal_logp
        if tuning:
            history.append(x)
        else:
            out[i - tune] = x
    return out, mixture


def test_a_mixture_with_weights_learned_while_tuning_keeps_the_target():
    runs = [run_learned_mixture(seed) for seed in (3, 4, 5, 6)]
    draws = np.stack([run[0] for run in runs])
    assert_moments(draws, TARGET_MEAN, TARGET_VAR)
    stats = runs[0][1].stats()
    assert stats["snooker.weight"] >= 0.1 and stats["random_walk.weight"] >= 0.1
    assert stats["differential_evolution.acceptance"] > 0.1
    with pytest.raises(RuntimeError, match="frozen"):
        runs[0][1].set_weights([0.0, 0.0, 1.0])


def test_population_forgets_the_oldest_share_of_the_history():
    history = ChainHistory(2)
    de = DifferentialEvolution.optimal(history, min_population=5, forget=0.5)
    snooker = Snooker(history, min_population=5, forget=0.5)
    history.extend(np.arange(16.0).reshape(8, 2))
    assert not de.ready  # the recent half of 8 states: 4
    history.append(np.zeros(2))
    assert de.ready and snooker.ready
    np.testing.assert_array_equal(de.population(), history.points[4:9])
    de.freeze()
    history.extend(np.ones((10, 2)))
    np.testing.assert_array_equal(de.population(), history.points[4:9])
    assert de.stats()["population"] == 5.0
    np.testing.assert_array_equal(snooker.population(), history.points[9:19])
    with pytest.raises(ValueError, match="`forget`"):
        Snooker(history, forget=1.0)


def test_a_population_of_copies_of_the_state_proposes_the_state_itself():
    """A chain stuck on one state: DE's jump between two equal states is the state, and so is
    snooker's with its centre at the state: both are null (``stays``; rejected without
    evaluating the model, not degenerate: a proposal of the state itself cannot move the chain,
    and evaluating it cost a pseudo-marginal or simulator model one call for nothing)."""
    history = ChainHistory(2)
    x = np.array([0.5, -1.0])
    history.extend(np.tile(x, (30, 1)))
    rng = np.random.default_rng(0)
    de = DifferentialEvolution.optimal(history).propose(rng, x)
    assert de.stays and de.null and not de.evaluated
    snooker = Snooker(history).propose(rng, x)
    assert snooker.stays and snooker.null and not snooker.evaluated
    assert DifferentialEvolution.optimal(history).propose(rng, x + 1.0).stays  # from anywhere
    spread = ChainHistory(2)
    spread.extend(rng.normal(size=(30, 2)))
    assert not DifferentialEvolution.optimal(spread).propose(rng, x).stays
