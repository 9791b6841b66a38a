"""Annealed GP-UCB: the box, the GP fit, the schedule, and finding maximisers of noisy functions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from pymc_kernel_steps.core.adaptation import Feedback
from pymc_kernel_steps.core.bayesopt import (
    AnnealedUCB,
    SearchBox,
    WindowedTuner,
    _negative_log_likelihood,
    default_hmc_box,
    exploration_probability,
    fit_gp,
    gp_predict,
    ucb_beta,
)


@pytest.fixture(autouse=True)
def one_blas_thread():
    """The fits are small: BLAS threads only slow them down on a loaded machine (as in the steps,
    which run their transitions with one BLAS thread)."""
    with threadpool_limits(1, user_api="blas"):
        yield


HMC_BOX = SearchBox(
    (0.01, 1), (1.0, 50), integer=(False, True), log_scale=(True, True), names=("eps", "L")
)


# ---------------------------------------------------------------- the box
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lower": (1.0,), "upper": (0.5,)}, r"`x0`.*lower ≤ upper"),
        ({"lower": (0.0,), "upper": (math.inf,)}, r"`x0`.*finite"),
        ({"lower": (math.nan,), "upper": (1.0,)}, r"`x0`.*finite"),
        ({"lower": (0.0,), "upper": (1.0,), "log_scale": (True,)}, r"`x0`.*positive"),
        ({"lower": (1.5,), "upper": (3.0,), "integer": (True,)}, r"`x0`.*integers"),
        ({"lower": (1.0, 2.0), "upper": (3.0,)}, "equal length"),
        ({"lower": (1.0,), "upper": (3.0,), "integer": (True, False)}, "`integer`"),
        (
            {"lower": (2.0,), "upper": (1.0,), "names": ("step_size",)},
            r"`step_size`.*lower ≤ upper",
        ),
    ],
)
def test_bad_boxes_raise_naming_the_coordinate(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SearchBox(**kwargs)


def test_unit_cube_round_trip_and_grid():
    points = np.array([[0.01, 1], [0.1, 7], [1.0, 50]], dtype=float)
    unit = HMC_BOX.to_unit(points)
    np.testing.assert_allclose(unit[0], [0, 0])
    np.testing.assert_allclose(unit[2], [1, 1])
    np.testing.assert_allclose(unit[1, 0], 0.5)  # log scale: 0.1 is half-way from 0.01 to 1
    np.testing.assert_allclose(HMC_BOX.from_unit(unit), points)
    grid = HMC_BOX.grid(60)
    np.testing.assert_array_equal(np.unique(grid[:, 1]), np.arange(1, 51))  # every integer
    assert np.unique(grid[:, 0]).size == 60
    coarse = HMC_BOX.grid(20)[:, 1]  # more integers than grid points: a log-spaced subset
    assert np.unique(coarse)[[0, -1]].tolist() == [1, 50] and np.unique(coarse).size <= 20
    assert HMC_BOX.clip((5.0, 7.6)) == (1.0, 8)
    assert isinstance(HMC_BOX.clip((5.0, 7.6))[1], int)
    fixed = SearchBox((0.5, 3), (0.5, 3), integer=(False, True))
    np.testing.assert_array_equal(fixed.to_unit([[0.5, 3]]), [[0.0, 0.0]])
    assert fixed.grid(10).shape == (1, 2)


def test_default_box_and_user_bounds():
    box = default_hmc_box(0.5)
    assert box.lower == pytest.approx((0.05, 1)) and box.upper == pytest.approx((1.0, 13))
    assert default_hmc_box(2.0).upper[1] == 10  # at least 10 steps
    assert default_hmc_box(1e-4).upper[1] == 1000  # at most 1000
    box = default_hmc_box(0.5, step_size_bounds=(0.1, 0.2), n_steps_bounds=(3, 4))
    assert box.lower == (0.1, 3) and box.upper == (0.2, 4)


# ---------------------------------------------------------------- schedule
def test_annealing_and_beta_follow_the_paper():
    assert [exploration_probability(i, 100) for i in (1, 50, 100)] == [1.0, 1.0, 1.0]
    assert exploration_probability(103, 100) == pytest.approx(0.5)
    assert exploration_probability(10, 1) == pytest.approx(10**-0.5)
    assert ucb_beta(5, 2, 0.1) == pytest.approx(2 * math.log(5**3 * math.pi**2 / 0.3))


def test_moves_happen_with_probability_p_i(monkeypatch):
    """After window i the optimiser re-maximises the acquisition with probability p_i: the count
    of re-maximisations over windows 1..400 with k = 5 matches Σ p_i."""
    calls = []

    def fake_maximiser(self, gp=None):
        calls.append(self.windows)
        return (0.1, 3)

    monkeypatch.setattr(AnnealedUCB, "acquisition_maximiser", fake_maximiser)
    rng = np.random.default_rng(0)
    optimizer = AnnealedUCB(HMC_BOX, annealing_offset=5)
    for _ in range(400):
        optimizer.update(Feedback(reward=1.0), rng)
    p = np.array([exploration_probability(i, 5) for i in range(1, 401)])
    assert calls[:5] == [1, 2, 3, 4, 5]  # p_i = 1 up to i = k
    assert abs(len(calls) - p.sum()) < 4 * math.sqrt(np.sum(p * (1 - p)))


def test_rewards_are_rescaled_so_the_largest_is_alpha():
    """Rescaling makes the search invariant to the rewards' units: rewards × 1000 give the same
    sequence of points, and the GP sees the largest mean reward as α."""
    sequences = []
    for factor in (1.0, 1000.0):
        rng, noise = np.random.default_rng(1), np.random.default_rng(2)
        optimizer = AnnealedUCB(HMC_BOX, reward_max=4.0)
        points = []
        for _ in range(15):
            eps, n_steps = optimizer.point
            reward = math.exp(-((math.log(eps / 0.2)) ** 2)) * (1 + 0.1 * noise.normal())
            optimizer.update(Feedback(reward=factor * reward), rng)
            points.append(optimizer.point)
        sequences.append(points)
        _, _, targets, _ = optimizer._data()
        largest = max(s / c for s, c in optimizer.observed.values())
        assert optimizer.scale * largest == pytest.approx(4.0)
        assert targets.max() <= 4.0 + 1e-12
    assert sequences[0] == sequences[1]


# ---------------------------------------------------------------- the Gaussian process
def test_likelihood_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    inputs = rng.uniform(size=(15, 2))
    targets = np.sin(5 * inputs[:, 0]) + inputs[:, 1] + 0.1 * rng.standard_normal(15)
    noise_scale = 1.0 / rng.integers(1, 4, size=15)
    params = np.log([0.3, 0.6, 1.7, 0.05])
    _, gradient = _negative_log_likelihood(params, inputs, targets, noise_scale)
    h = 1e-6
    for j in range(4):
        shift = np.zeros(4)
        shift[j] = h
        plus = _negative_log_likelihood(params + shift, inputs, targets, noise_scale, False)
        minus = _negative_log_likelihood(params - shift, inputs, targets, noise_scale, False)
        assert gradient[j] == pytest.approx((plus - minus) / (2 * h), rel=1e-5)


def test_fit_recovers_lengthscale_and_noise_of_a_gp_draw():
    rng = np.random.default_rng(4)
    inputs = rng.uniform(size=(120, 1))
    kernel = np.exp(-0.5 * (inputs - inputs.T) ** 2 / 0.25**2)
    latent = np.linalg.cholesky(kernel + 1e-9 * np.eye(120)) @ rng.standard_normal(120)
    targets = latent + 0.1 * rng.standard_normal(120)
    gp = fit_gp(inputs, targets)
    assert 0.18 < gp.lengthscales[0] < 0.35
    assert 0.1**2 / 2 < gp.noise_variance < 0.1**2 * 2
    mean, sd = gp_predict(gp, inputs)
    assert np.sqrt(np.mean((mean - latent) ** 2)) < 0.1
    assert np.all(sd < 0.1)
    _, far_sd = gp_predict(gp, [[3.0]])
    # away from the data: the prior standard deviation
    assert far_sd[0] == pytest.approx(math.sqrt(gp.signal_variance), abs=1e-6)
    assert 0.3 < gp.signal_variance < 3


# ---------------------------------------------------------------- finding maximisers
def _run(optimizer, function, windows, seed, noise_sd):
    rng, noise = np.random.default_rng(seed), np.random.default_rng(seed + 100)
    for _ in range(windows):
        value = function(*optimizer.point)
        optimizer.update(Feedback(reward=value + noise_sd * noise.standard_normal()), rng)
    return optimizer.final()


@pytest.mark.parametrize("seed", range(5))
def test_finds_the_maximiser_of_a_noisy_1d_function(seed):
    box = SearchBox((0.0,), (10.0,))

    def bump(x):  # a local maximum at 2 and the global one at 6.3
        return math.exp(-0.5 * (x - 6.3) ** 2) + 0.6 * math.exp(-2 * (x - 2) ** 2)

    (best,) = _run(AnnealedUCB(box), bump, 40, seed, noise_sd=0.1)
    assert abs(best - 6.3) < 0.4


@pytest.mark.parametrize("seed", range(5))
def test_finds_the_maximiser_over_an_integer_coordinate(seed):
    box = SearchBox((1,), (200,), integer=(True,), log_scale=(True,))

    def peak(n):
        return math.exp(-0.5 * (math.log(n / 37) / 0.4) ** 2)

    (best,) = _run(AnnealedUCB(box), peak, 40, seed, noise_sd=0.1)
    assert isinstance(best, int)
    assert abs(math.log(best / 37)) < 0.2


@pytest.mark.parametrize("seed", range(5))
def test_finds_the_maximiser_of_a_noisy_2d_function(seed):
    """A smooth function of (log ε, log L) with multiplicative noise of 20 %, the kind of
    objective ESJD/√L is; 60 windows."""

    def objective(eps, n_steps):
        return math.exp(
            -0.5 * (math.log(eps / 0.2) / 0.5) ** 2 - 0.5 * (math.log(n_steps / 12) / 0.6) ** 2
        )

    rng, noise = np.random.default_rng(seed), np.random.default_rng(seed + 100)
    optimizer = AnnealedUCB(HMC_BOX)
    for _ in range(60):
        reward = objective(*optimizer.point) * (1 + 0.2 * noise.standard_normal())
        optimizer.update(Feedback(reward=reward), rng)
    eps, n_steps = optimizer.final()
    assert abs(math.log(eps / 0.2)) < 0.35
    assert abs(math.log(n_steps / 12)) < 0.4
    assert objective(eps, n_steps) > 0.85


# ---------------------------------------------------------------- the windowed MCMC tuner
def test_windowed_tuner_rewards_mean_jump_over_root_n_steps():
    tuner = WindowedTuner(HMC_BOX, window=4, cost_exponent=0.5, start=(0.1, 9))
    rng = np.random.default_rng(5)
    assert tuner.value == (0.1, 9)
    windows = []
    for jump in (1.0, 2.0, 3.0, math.nan):
        tuner.update(Feedback(1.0, jump), rng)
        windows.append(tuner.windows)
    assert windows == [0, 0, 0, 1]
    assert tuner.optimizer.observed[(0.1, 9)] == [pytest.approx(6.0 / 4 / 3), 1]
    per_evaluation = WindowedTuner(HMC_BOX, window=2, cost_exponent=0.0, start=(0.1, 9))
    per_evaluation.update(Feedback(0.5, 2.0), rng)
    per_evaluation.update(Feedback(1.0, 3.0), rng)
    assert per_evaluation.optimizer.observed[(0.1, 9)] == [pytest.approx(2.0), 1]


def test_windowed_tuner_rejects_a_box_without_integer_coordinate():
    with pytest.raises(ValueError, match="integer"):
        WindowedTuner(SearchBox((0.1, 1.0), (1.0, 2.0)), window=5)
    with pytest.raises(ValueError, match="window"):
        WindowedTuner(HMC_BOX, window=0)
