"""Moves through their public interface, with explicit states: proposals and corrections,
adaptation, mixtures and cycles as data, tallies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pymc_kernel_steps.core import (
    ChainHistory,
    GaussianKernel,
    JumpRateWeights,
    LinearKernel,
    RobbinsMonroScale,
    Whitening,
    gaussian_logpdf,
    kamh_covariance,
)
from pymc_kernel_steps.core.moves import (
    RW_FACTOR,
    BlindJump,
    CoordinateWalk,
    CosineWalk,
    Cycle,
    KAMMove,
    Mixture,
    ModeHop,
    RandomWalk,
    optimal_scale,
)


def _kam_move(rng, whitening=None, kernel=None, nu2=0.7, dim=3):
    move = KAMMove(dim, fixed_nu2=nu2)
    points = rng.normal(size=(40, dim)) * [1.0, 3.0, 0.5][:dim]
    move.whitening = whitening
    move.subsample = points if whitening is None else whitening.whiten(points)
    move.kernel = kernel or GaussianKernel(1.2)
    move.gamma_abs = 0.3
    return move


@pytest.mark.parametrize("whitened", [False, True])
def test_kam_correction_is_the_hastings_ratio_and_antisymmetric(whitened):
    rng = np.random.default_rng(0)
    frame = Whitening.from_points(rng.normal(size=(50, 3)) * [1.0, 3.0, 0.5]) if whitened else None
    move = _kam_move(rng, frame)
    white = (lambda x: x) if frame is None else frame.whiten
    for _ in range(20):
        x = rng.normal(size=3)
        proposal = move.propose(rng, x)
        u, v = white(x), white(proposal.x)

        def log_q(a, b):  # log q(b | a) in the move's coordinates
            chol = np.linalg.cholesky(kamh_covariance(a, move.subsample, move.kernel, 0.3, 0.7))
            return gaussian_logpdf(b, a, chol)

        np.testing.assert_allclose(proposal.log_correction, log_q(v, u) - log_q(u, v), atol=1e-9)
        assert abs(proposal.log_correction) > 1e-8  # a Gaussian kernel's proposal is asymmetric
        assert proposal.kind == "kam" and proposal.evaluated


def test_kam_with_a_linear_kernel_is_symmetric_and_keeps_its_cache_on_acceptance():
    rng = np.random.default_rng(1)
    move = _kam_move(rng, kernel=LinearKernel())
    x = rng.normal(size=3)
    proposal = move.propose(rng, x)
    assert proposal.log_correction == 0.0
    move.record(proposal, x, accepted=True, accept_prob=1.0)
    np.testing.assert_array_equal(move.feature_cov_point, proposal.x)
    np.testing.assert_allclose(move.feature_cov_current, move.feature_cov(proposal.x))


def test_random_walk_is_gaussian_with_its_scale_and_metric_and_adapts():
    rng = np.random.default_rng(2)
    metric = Whitening.from_points(rng.normal(size=(200, 2)) @ [[2.0, 0.0], [1.0, 0.5]])
    walk = RandomWalk.optimal(2, 1e4, metric=metric)
    assert walk.scale.scale == pytest.approx(RW_FACTOR / math.sqrt(2)) == optimal_scale(2)
    x = np.array([0.5, -1.0])
    steps = np.array([walk.propose(rng, x).x - x for _ in range(4000)])
    white = np.linalg.solve(walk.scale.scale * metric.chol, steps.T).T
    for column in white.T:
        assert stats.kstest(column, "norm").pvalue > 1e-3
    before = walk.scale.scale
    proposal = walk.propose(rng, x)
    walk.update(proposal, x, 1.0, rng)  # accepted above the target: the scale grows
    assert walk.scale.scale > before and proposal.log_correction == 0.0


def test_coordinate_walk_moves_one_coordinate_and_tunes_only_it():
    rng = np.random.default_rng(3)
    walk = CoordinateWalk(4)
    assert walk.variance_floor() is None
    x = np.zeros(4)
    proposal = walk.propose(rng, x)
    moved = np.flatnonzero(proposal.x != x)
    assert moved.tolist() == [proposal.extra]
    scales = walk.scales.log_scales.copy()
    walk.update(proposal, x, 0.0, rng)
    changed = np.flatnonzero(walk.scales.log_scales != scales)
    assert changed.tolist() == [proposal.extra]


def test_mode_hop_and_blind_jump_are_symmetric_with_the_stated_shapes():
    rng = np.random.default_rng(4)
    history = ChainHistory(2)
    history.extend([[0.0, 0.0], [10.0, 0.0]])
    hop = ModeHop(history)
    hop.noise_scale = 0.1
    landed = np.array([hop.propose(rng, np.zeros(2)).x for _ in range(400)])
    assert np.all(np.isclose(np.abs(landed[:, 0]), 10.0, atol=1.0))  # ± the difference
    assert 0.4 < np.mean(landed[:, 0] > 0) < 0.6  # both orders: the hop is symmetric
    assert not ModeHop(history, archive_size=1).ready
    jump = BlindJump(16.0)
    assert not jump.ready
    jump.chol = np.eye(2)
    rhos = [jump.propose(rng, np.zeros(2)).extra for _ in range(2000)]
    assert min(rhos) >= 1.0 and max(rhos) <= 16.0
    assert stats.kstest(np.log(rhos) / np.log(16.0), "uniform").pvalue > 1e-3  # log-uniform
    assert not BlindJump(0.0, np.eye(2)).ready


def test_mixture_chooses_with_its_weights_and_passes_an_unready_turn_on():
    rng = np.random.default_rng(5)
    history = ChainHistory(1)
    walk, jump, hop = CosineWalk(), BlindJump(4.0, np.eye(1)), ModeHop(history, archive_size=0)
    walk.scale, walk.chol = 1.0, np.eye(1)
    hop.noise_scale = 1.0
    mixture = Mixture([(hop, 0.2), (jump, 0.3), (walk, 0.5)])
    kinds = [mixture.propose(rng, np.zeros(1)).kind for _ in range(4000)]
    # the hop is not ready (an empty archive): its share goes to the next component, the jump
    assert kinds.count("mode_hop") == 0
    assert abs(kinds.count("blind_jump") / 4000 - 0.5) < 4 * math.sqrt(0.25 / 4000)
    history.extend([[0.0], [1.0]])
    hop.archive_size = 2
    kinds = [mixture.propose(rng, np.zeros(1)).kind for _ in range(4000)]
    for kind, p in (("mode_hop", 0.2), ("blind_jump", 0.3), ("cosine_walk", 0.5)):
        assert abs(kinds.count(kind) / 4000 - p) < 4 * math.sqrt(p * (1 - p) / 4000)
    mixture.set_weights([0.0, 0.0, 1.0])  # e.g. learned while tuning
    assert {mixture.propose(rng, np.zeros(1)).kind for _ in range(100)} == {"cosine_walk"}
    mixture.freeze()
    with pytest.raises(RuntimeError, match="frozen"):
        mixture.set_weights([0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="sum to 1"):
        Mixture([(walk, 0.5)])


def test_a_mixture_takes_the_weights_its_learner_learns_while_tuning_only():
    """The learner is fed each component's proposals (another move's are ignored) while the
    mixture tunes, and the mixture proposes with its weights; frozen, the weights stay."""
    rng = np.random.default_rng(6)
    near, far = RandomWalk(RobbinsMonroScale(-3.0)), RandomWalk(RobbinsMonroScale(0.0))
    learner = JumpRateWeights([0.5, 0.5], floor=0.1, min_evaluations=1)
    mixture = Mixture([(near, 0.5), (far, 0.5)], learner=learner)
    x = np.zeros(2)
    stranger = RandomWalk(RobbinsMonroScale(0.0)).propose(rng, x)
    mixture.learn(stranger, 1.0, 100.0)
    assert learner.evaluations.sum() == 0
    mixture.learn(near.propose(rng, x), 1.0, 1.0)
    mixture.learn(far.propose(rng, x), 1.0, 3.0)
    assert mixture.weights == pytest.approx([0.1 + 0.8 * 0.25, 0.1 + 0.8 * 0.75])
    mixture.freeze()
    frozen = list(mixture.weights)
    mixture.learn(near.propose(rng, x), 1.0, 1000.0)
    assert mixture.weights == frozen and learner.evaluations.sum() == 2


def test_a_one_component_mixture_draws_no_random_number():
    rng = np.random.default_rng(6)
    walk = RandomWalk(RobbinsMonroScale(0.0))
    state = rng.bit_generator.state
    alone = Mixture([(walk, 1.0)]).propose(rng, np.zeros(2))
    rng.bit_generator.state = state
    direct = walk.propose(rng, np.zeros(2))
    np.testing.assert_array_equal(alone.x, direct.x)


def test_cycle_follows_its_pattern_and_falls_back_when_a_move_is_not_ready():
    rng = np.random.default_rng(7)
    walk = RandomWalk(RobbinsMonroScale(0.0))
    jump = BlindJump(4.0)  # not ready until it has a covariance
    cycle = Cycle([walk, jump, jump], fallback=walk)
    assert [cycle.propose(rng, np.zeros(1)).kind for _ in range(3)] == ["random_walk"] * 3
    jump.chol = np.eye(1)
    cycle.restart()
    kinds = [cycle.propose(rng, np.zeros(1)).kind for _ in range(6)]
    assert kinds == ["random_walk", "blind_jump", "blind_jump"] * 2


def test_tallies_count_acceptance_and_squared_jumps_per_move():
    rng = np.random.default_rng(8)
    walk = RandomWalk(RobbinsMonroScale(0.0))
    x = np.zeros(2)
    for accept_prob in (1.0, 0.5, 0.0):
        proposal = walk.propose(rng, x)
        walk.record(proposal, x, accepted=accept_prob == 1.0, accept_prob=accept_prob)
    figures = walk.stats()
    assert walk.tally.proposals == 3
    assert figures["acceptance"] == pytest.approx(0.5)
    assert figures["expected_squared_jump"] > 0 and figures["scale"] == 1.0
