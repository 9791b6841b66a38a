"""Mixture weights learned from each move's expected squared jump per evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_kernel_steps.core.adaptation import Feedback
from pymc_kernel_steps.core.move_weights import JumpRateWeights


def test_initial_weights_until_every_move_was_tried_enough():
    weights = JumpRateWeights([3.0, 1.0], min_evaluations=5)
    assert np.allclose(weights.value, [0.75, 0.25])
    for _ in range(10):
        weights.update(Feedback(1.0, 1.0, index=0))
    assert np.allclose(weights.value, [0.75, 0.25])


def test_weights_follow_the_jump_rate_per_evaluation_with_a_floor():
    weights = JumpRateWeights([0.5, 0.5, 0.0], floor=0.1, min_evaluations=1)
    weights.update(Feedback(0.5, 4.0, index=0))  # rate 2
    weights.update(Feedback(1.0, 6.0, index=1, evaluations=3))  # rate 2
    weights.update(Feedback(0.0, 9.0, index=2))  # rate 0
    assert np.allclose(weights.rates(), [2.0, 2.0, 0.0])
    assert np.allclose(weights.value, [0.1 + 0.7 * 0.5, 0.1 + 0.7 * 0.5, 0.1])
    assert weights.value.sum() == pytest.approx(1.0)


def test_a_power_of_the_rates_sharpens_the_weights():
    weights = JumpRateWeights([0.5, 0.5], floor=0.1, min_evaluations=1, power=2.0)
    weights.update(Feedback(1.0, 3.0, index=0))  # rate 3
    weights.update(Feedback(1.0, 1.0, index=1))  # rate 1
    assert np.allclose(weights.value, [0.1 + 0.8 * 0.9, 0.1 + 0.8 * 0.1])


def test_a_non_finite_jump_counts_as_nothing():
    weights = JumpRateWeights([1.0, 1.0], floor=0.0, min_evaluations=1)
    weights.update(Feedback(0.0, np.inf, index=0))
    weights.update(Feedback(1.0, 1.0, index=1))
    assert np.allclose(weights.value, [0.0, 1.0])
    assert np.array_equal(weights.final(), weights.value)


def test_no_jump_at_all_keeps_the_initial_weights():
    weights = JumpRateWeights([1.0, 3.0], min_evaluations=1)
    weights.update(Feedback(0.0, 1.0, index=0))
    weights.update(Feedback(0.0, 1.0, index=1))
    assert np.allclose(weights.value, [0.25, 0.75])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"initial": []}, "`initial`"),
        ({"initial": [1.0, -1.0]}, "`initial`"),
        ({"initial": [1.0, 1.0], "floor": 0.6}, "`floor`"),
        ({"initial": [1.0], "min_evaluations": 0}, "`min_evaluations`"),
        ({"initial": [1.0], "power": 0.0}, "`power`"),
        ({"initial": [1.0], "power": np.nan}, "`power`"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        JumpRateWeights(**kwargs)
