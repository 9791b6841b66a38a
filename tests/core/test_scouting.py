"""Scouts: walks advanced in turn, NaN as −inf, the best walk at the end."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_kernel_steps.core import RobbinsMonroScale, Scouts


def _scouts(count=3, length=4, log_density=0.0):
    return Scouts.start(np.zeros(2), log_density, count, length, RobbinsMonroScale(0.0))


def test_walks_take_turns_and_stop_after_count_times_length():
    scouts = _scouts(count=3, length=4)
    rng = np.random.default_rng(0)
    turns = []
    while not scouts.done:
        turns.append(scouts.turn)
        proposal = scouts.propose(rng)
        scouts.update(proposal, -float(proposal @ proposal), rng)
    assert turns == [0, 1, 2] * 4
    assert scouts.iterations == 12


def test_only_the_walk_whose_turn_it_is_moves():
    scouts = _scouts(count=2, length=5)
    rng = np.random.default_rng(1)
    proposal = scouts.propose(rng)
    accepted, prob, log_ratio = scouts.update(proposal, 1.0, rng)  # uphill: always accepted
    assert accepted and prob == 1.0 and log_ratio == 1.0
    np.testing.assert_array_equal(scouts.positions[0], proposal)
    np.testing.assert_array_equal(scouts.positions[1], np.zeros(2))
    assert scouts.log_densities.tolist() == [1.0, 0.0]


def test_acceptance_follows_metropolis():
    # from log density 0, proposals at log density −1 are accepted with probability e⁻¹
    scouts = _scouts(count=1, length=10_000)
    rng = np.random.default_rng(3)
    accepted = []
    for _ in range(4000):
        scouts.positions[0] = 0.0
        scouts.log_densities[0] = 0.0
        scouts.iterations = 0
        accepted.append(scouts.update(scouts.propose(rng), -1.0, rng)[0])
    rate = np.mean(accepted)
    assert abs(rate - math.exp(-1.0)) < 4 * math.sqrt(math.exp(-1) * (1 - math.exp(-1)) / 4000)


def test_nan_is_a_rejection_and_the_scale_shrinks():
    scouts = _scouts(count=1, length=50)
    rng = np.random.default_rng(4)
    before = scouts.scale.scale
    for _ in range(20):
        accepted, prob, log_ratio = scouts.update(scouts.propose(rng), math.nan, rng)
        assert not accepted and prob == 0.0 and log_ratio == -math.inf
    assert scouts.scale.scale < before
    np.testing.assert_array_equal(scouts.positions[0], np.zeros(2))


def test_a_walk_outside_the_support_stays_until_it_finds_it():
    scouts = _scouts(count=1, length=10, log_density=-math.inf)
    rng = np.random.default_rng(5)
    assert not scouts.update(scouts.propose(rng), -math.inf, rng)[0]
    proposal = scouts.propose(rng)
    assert scouts.update(proposal, -3.0, rng)[0]
    np.testing.assert_array_equal(scouts.positions[0], proposal)


def test_best_is_the_walk_at_the_highest_log_density():
    scouts = _scouts(count=3, length=1)
    scouts.positions[:] = [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    scouts.log_densities[:] = [-5.0, 2.0, -math.inf]
    position, log_density = scouts.best()
    np.testing.assert_array_equal(position, [1.0, 1.0])
    assert log_density == 2.0
    position[0] = 9.0  # a copy
    assert scouts.positions[1, 0] == 1.0


@pytest.mark.parametrize("count, length", [(0, 5), (3, 0)])
def test_bad_sizes(count, length):
    with pytest.raises(ValueError, match="count"):
        Scouts.start(np.zeros(2), 0.0, count, length, RobbinsMonroScale(0.0))
