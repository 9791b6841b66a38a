"""``moves="learned"`` (issue 24): the step's own move, a random walk, differential evolution,
snooker and the history's envelope, with weights learned while tuning and frozen, with the
population and the envelope, at its end."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps import KAMH, AdaptiveMetropolis, KMCFinite, KMCLite
from pymc_kernel_steps.core.moves import MOVE_KINDS
from pymc_kernel_steps.core.moves.learned import LEARNED_INITIAL_WEIGHTS
from pymc_kernel_steps.options import FixedMoves, KAMProposal, Regression

from ..helpers import CORRELATED_COV, CORRELATED_MEAN, assert_moments, correlated_gaussian_model

LEARNED_STEPS = [KMCLite, KMCFinite, KAMH]
QUIET = dict(progressbar=False, compute_convergence_checks=False)
OWN = {KMCLite: "surrogate_hmc", KMCFinite: "surrogate_hmc", KAMH: "kam"}


@pytest.fixture(params=LEARNED_STEPS, ids=lambda cls: cls.__name__)
def learned_class(request):
    return request.param


def _run(step, start, iterations):
    point = {"x": np.array(start, dtype=float)}
    draws = np.empty((iterations, len(start)))
    stats = []
    for i in range(iterations):
        point, info = step.step(point)
        draws[i] = point["x"]
        stats.append(info[0])
    return draws, stats


def test_weights_and_population_are_learned_while_tuning_then_frozen(learned_class):
    """(a) The weights move while tuning; after it the mixture's weights, the DE and snooker
    population and the learner's rates stay as they were at its end, set_weights is refused,
    and the draws' moves come from the frozen mixture in its proportions."""
    tune, draws = 600, 1500
    with correlated_gaussian_model():
        step = learned_class(moves="learned")
    step.setup_chain(np.random.default_rng(5), tune=tune, draws=draws)
    _, tuning_stats = _run(step, CORRELATED_MEAN, tune)
    learned = step.chain.learned_moves
    assert not np.allclose(learned.mixture.weights, LEARNED_INITIAL_WEIGHTS)
    step.stop_tuning()
    weights = list(learned.mixture.weights)
    de = next(m for m in learned.moves if m.kind == "differential_evolution")
    snooker = next(m for m in learned.moves if m.kind == "snooker")
    population = de.population().copy()
    assert np.array_equal(snooker.population(), population)
    assert len(population) == tune - tune // 2  # the most recent half of the tuning history
    rates = learned.learner.rates()
    envelope_metric = learned.envelope.metric
    assert envelope_metric is not None  # fitted to the history while tuning
    start = step.chain.current_point
    _, draw_stats = _run(step, start, draws)
    assert learned.mixture.weights == weights
    np.testing.assert_array_equal(de.population(), population)
    np.testing.assert_array_equal(snooker.population(), population)
    np.testing.assert_array_equal(learned.learner.rates(), rates)
    assert learned.envelope.metric is envelope_metric
    assert len(step.chain.history) == tune + draws  # the history grew, the population did not
    with pytest.raises(RuntimeError, match="frozen"):
        learned.mixture.set_weights(LEARNED_INITIAL_WEIGHTS)
    # the draws' moves are the mixture's, in its proportions (no coordinate moves)
    codes = np.array([s["move"] for s in draw_stats])
    kinds = [m.kind for m in learned.moves]
    assert set(np.unique(codes)) <= {MOVE_KINDS.index(k) for k in kinds}
    for kind, weight in zip(kinds, weights, strict=True):
        share = np.mean(codes == MOVE_KINDS.index(kind))
        assert abs(share - weight) < 4 * np.sqrt(weight * (1 - weight) / draws), kind
    # while tuning, the coordinate moves appear too
    assert MOVE_KINDS.index("coordinate") in {s["move"] for s in tuning_stats}


def test_weights_and_acceptances_are_sample_stats_of_every_chain(learned_class):
    """Each move's weight and acceptance are sample stats (``weight_<kind>``,
    ``acceptance_<kind>``): in worker processes too, where the parent's step object never sees
    the chains' state. The weights move while tuning, sum to 1, and are constant in the draws;
    the last iteration's are the learner's. ``moves="fixed"`` has no such stats."""
    with correlated_gaussian_model():
        step = learned_class()
        kwargs = dict(tune=400, draws=150, chains=2, random_seed=4, **QUIET)
        idata = pm.sample(step=step, cores=2, discard_tuned_samples=False, **kwargs)
        fixed = pm.sample(step=learned_class(moves="fixed"), cores=1, **kwargs)
    kinds = ["random_walk", "differential_evolution", "snooker", "envelope", OWN[learned_class]]
    warmup, draws = idata.warmup_sample_stats, idata.sample_stats
    weights = np.stack([draws[f"weight_{kind}"].values for kind in kinds])
    np.testing.assert_allclose(weights.sum(axis=0), 1.0)
    assert np.all(np.ptp(weights, axis=2) == 0.0)  # frozen after tuning
    assert not np.allclose(weights[:, 0, 0], weights[:, 1, 0])  # each chain learned its own
    tuning = np.stack([warmup[f"weight_{kind}"].values for kind in kinds])
    assert np.all(np.ptp(tuning, axis=2) > 0.0)  # learned while tuning
    acceptance = np.stack([draws[f"acceptance_{kind}"].values for kind in kinds])
    assert np.all((acceptance >= 0.0) & (acceptance <= 1.0))
    with correlated_gaussian_model():
        step = learned_class()
        last = pm.sample(step=step, cores=1, **{**kwargs, "chains": 1})
    for kind, weight in step.chain.learned_moves.weights.items():
        assert last.sample_stats[f"weight_{kind}"].values[0, -1] == weight
        tally = next(m for m in step.chain.learned_moves.moves if m.kind == kind).tally
        assert last.sample_stats[f"acceptance_{kind}"].values[0, -1] == tally.acceptance
    assert not any(name.startswith("weight_") for name in fixed.sample_stats.data_vars)


def test_moves_option_is_checked_and_learned_is_the_default(learned_class):
    with correlated_gaussian_model():
        with pytest.raises(ValueError, match="`moves` must be one of"):
            learned_class(moves="adaptive")
        step = learned_class()
        fixed = learned_class(moves="fixed")
    assert step.moves == "learned"
    assert step.chain.learned_moves is not None
    assert fixed.chain.learned_moves is None
    with pytest.raises(AttributeError):  # its sample stats were declared with it
        fixed.moves = "learned"


@pytest.mark.parametrize("kmc_class", [KMCLite, KMCFinite])
def test_a_random_walk_share_needs_the_fixed_mixture(kmc_class):
    """random_walk_probability sets the share of moves="fixed": with the learned default it is an
    error that says so, never silently ignored."""
    with correlated_gaussian_model():
        with pytest.raises(ValueError, match="random_walk_probability.*moves='fixed'"):
            kmc_class(random_walk_probability=0.0)  # the old keyword: refused before a warning
        step = kmc_class(moves=FixedMoves(random_walk_probability=0.0))
    assert step.random_walk_probability == 0.0


def test_adaptive_metropolis_keeps_its_single_move():
    with correlated_gaussian_model():
        step = AdaptiveMetropolis()
    assert step.moves == "fixed" and step.chain.learned_moves is None


def test_adaptive_metropolis_has_no_moves_option():
    with correlated_gaussian_model():
        with pytest.raises(TypeError, match="moves"):
            AdaptiveMetropolis(moves="learned")


def test_pure_form_without_random_walk_is_kept():
    """moves="fixed" with random_walk_probability=0: after the first fit every proposal is a
    trajectory (the paper's pure form); only coordinate moves join it while tuning."""
    with correlated_gaussian_model():
        step = KMCLite(
            surrogate=Regression(min_history=60), moves=FixedMoves(random_walk_probability=0.0)
        )
        idata = pm.sample(step=step, tune=300, draws=300, chains=1, random_seed=2, **QUIET)
    codes = idata.sample_stats.move.values.ravel()
    assert np.all(codes == MOVE_KINDS.index("surrogate_hmc"))


@pytest.mark.parametrize(
    ("cls", "kwargs", "winners"),
    [
        # the trajectories on a fitted surrogate of a Gaussian jump much further than the rest,
        # and the envelope, independent draws from the history's Gaussian fit, further than the
        # local moves (measured rates per evaluation on seeds 1-4: trajectory 9-12, envelope
        # 1.2-3.2, DE, snooker and random walk 0.35-1.2)
        (KMCLite, {}, ("surrogate_hmc", "envelope")),
        # without whitening, KAM and the random walk see the scales 1 and 30 and correlation
        # 0.99 in the model's coordinates; DE, snooker and the envelope are affine invariant
        (
            KAMH,
            {"proposal": KAMProposal(whiten=False)},
            ("differential_evolution", "snooker", "envelope"),
        ),
    ],
    ids=["KMCLite-trajectory", "KAMH-unwhitened-DE"],
)
def test_the_learned_weights_go_to_the_move_that_jumps_furthest(cls, kwargs, winners):
    """(c) On a target where some moves are clearly better, their weights rise well above
    their initial ones and the others fall towards the floor: the learning is real."""
    sd = np.array([1.0, 30.0, 1.0, 30.0])
    block = np.array([[1.0, 0.99], [0.99, 1.0]])
    cov = np.diag(sd) @ np.kron(np.eye(2), block) @ np.diag(sd)
    with pm.Model():
        pm.MvNormal("x", mu=np.zeros(4), cov=cov)
        step = cls(moves="learned", **kwargs)
        pm.sample(step=step, tune=1000, draws=10, chains=1, random_seed=1, **QUIET)
    learned = step.chain.learned_moves
    weights = learned.weights
    initial = dict(zip(weights, LEARNED_INITIAL_WEIGHTS, strict=True))
    rates = dict(zip(weights, learned.learner.rates(), strict=True))
    assert sum(weights[k] for k in winners) > sum(initial[k] for k in winners) + 0.15, weights
    for kind in set(weights) - set(winners):
        assert weights[kind] < initial[kind], weights
        assert rates[kind] < min(rates[k] for k in winners), rates
    stats = learned.stats()
    for kind in weights:
        assert stats[f"{kind}.weight"] == weights[kind]
        assert 0 <= stats[f"{kind}.acceptance"] <= 1


@pytest.mark.slow
def test_learned_mixture_samples_the_correlated_gaussian(learned_class):
    """(b) MCSE z-tests of the first two moments with moves="learned"."""
    with correlated_gaussian_model():
        idata = pm.sample(
            step=learned_class(moves="learned"), tune=1000, draws=3000, chains=2, cores=1,
            random_seed=7, **QUIET,
        )  # fmt: skip
    assert_moments(idata.posterior.x.values, CORRELATED_MEAN, np.diag(CORRELATED_COV))
    moves = idata.sample_stats.move.values
    assert (moves == MOVE_KINDS.index("differential_evolution")).any()
    assert (moves == MOVE_KINDS.index("snooker")).any()
    assert (moves == MOVE_KINDS.index(OWN[learned_class])).any()


def test_rates_count_from_the_own_moves_first_fit_with_jumps_capped():
    """A jump far beyond what the whitening allows (a near-degenerate early history) counts as
    10 d at most, and nothing is counted before the step's own move is ready."""
    from pymc_kernel_steps.core import ChainHistory
    from pymc_kernel_steps.core.moves import LearnedMoves, Proposal, RandomWalk
    from pymc_kernel_steps.core.whitening import Whitening

    class Own(RandomWalk):
        kind = "own"
        fitted = False

        @property
        def ready(self):
            return self.fitted

    dim = 3
    own = Own.optimal(dim, 10.0)
    learned = LearnedMoves(own, RandomWalk.optimal(dim, 10.0), ChainHistory(dim))
    de = learned.moves[1]
    x, far = np.zeros(dim), np.full(dim, 1e14)
    learned.record(Proposal(far, 0.0, de), x, 1.0, Whitening.identity(dim))
    assert learned.learner.evaluations.sum() == 0  # the own move is not ready yet
    own.fitted = True
    learned.record(Proposal(far, 0.0, de), x, 0.5, Whitening.identity(dim))
    assert learned.learner.rates()[1] == pytest.approx(0.5 * 10 * dim)
