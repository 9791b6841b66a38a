"""Adaptation schedules: the ESJD step-size search (the others are exercised by the steps)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_kernel_steps.core import (
    DualAveraging,
    Feedback,
    JumpDistanceStepSize,
    RobbinsMonroScale,
    adaptation_probability,
)


def _noisy_esjd(step_size, rng, best=0.3):
    """A jump distance that peaks at ``best`` (acceptance capped well below 1, as with a
    surrogate gradient), with exponential noise."""
    log_ratio = math.log(step_size / best)
    return math.exp(-(log_ratio**2)) * rng.exponential()


@pytest.mark.parametrize("start", [0.003, 0.3, 30.0])
def test_jump_distance_search_finds_the_peak(start):
    rng = np.random.default_rng(0)
    tuner = JumpDistanceStepSize(start)
    for _ in range(6000):
        step_size, _ = tuner.propose(rng)
        tuner.update(Feedback(1.0, _noisy_esjd(step_size, rng)))
    assert 0.3 / 1.6 < tuner.step_size < 0.3 * 1.6


def test_jump_distance_search_where_dual_averaging_collapses():
    """Acceptance ≈ 0.4 at every step size above 0.01 and → 1 below: dual averaging towards 0.8
    drives ε to the tiny region, the ESJD search does not."""
    rng = np.random.default_rng(1)

    def acceptance(eps):
        return 0.4 if eps > 0.01 else 1.0

    tuner, averaging = JumpDistanceStepSize(0.3), DualAveraging(0.3, target=0.8)
    for _ in range(3000):
        eps = tuner.propose(rng).step_size
        tuner.update(Feedback(acceptance(eps), min(eps, 1.0) ** 2 * rng.exponential()))
        averaging.update(Feedback(acceptance(averaging.propose(rng).step_size)))
    assert averaging.final().step_size < 0.02
    assert tuner.step_size > 0.3


def test_jump_distance_search_ignores_reports_without_a_draw_and_non_finite_jumps():
    rng = np.random.default_rng(2)
    tuner = JumpDistanceStepSize(1.0, window=5)
    tuner.update(Feedback(1.0, 10.0))  # nothing drawn yet: ignored
    assert tuner.value == (1.0, None)
    for _ in range(5):
        tuner.propose(rng)
        tuner.update(Feedback(1.0, math.nan))
    assert math.isfinite(tuner.step_size) and tuner.step_size > 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"initial_step_size": 0.0}, "step_size"),
        ({"initial_step_size": math.inf}, "step_size"),
        ({"initial_step_size": 1.0, "factors": [1.0, -2.0]}, "factors"),
        ({"initial_step_size": 1.0, "factors": []}, "factors"),
        ({"initial_step_size": 1.0, "window": 0}, "window"),
    ],
)
def test_jump_distance_search_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        JumpDistanceStepSize(**kwargs)


def test_adaptation_probability_vanishes_with_divergent_sum():
    probabilities = np.array([adaptation_probability(t) for t in range(200_000)])
    assert probabilities[0] == 1.0 and probabilities[-1] < 0.03
    assert np.all(np.diff(probabilities) <= 0)
    assert probabilities.sum() > 1.8 * probabilities[:50_000].sum()  # grows like √t


def test_robbins_monro_restart_clips_to_the_bounds_and_resets_the_gain():
    scale = RobbinsMonroScale.within(1.0, 10.0)
    for _ in range(50):
        scale.update(Feedback(0.0))
    assert scale.iteration == 50
    scale.restart_at(3.0)
    assert scale.scale == pytest.approx(3.0) and scale.iteration == 0
    scale.restart_at(1e6)
    assert scale.scale == pytest.approx(10.0)
    scale.restart_at(1e-6)
    assert scale.scale == pytest.approx(0.1)

