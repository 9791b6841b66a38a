"""The KAMH transition (``core.transitions.kamh``) without PyMC: its proposal's Hastings
correction against brute force with frozen adaptation, the moments of chains on targets with
known answers (MCSE z-tests), and :func:`freeze`.

DESIGN.md: R(x) = γ² I_d + ν² Mᵀ H M, M ∈ ℝ^{n×d} with rows 2∇ₓk(x, z_i), H = I_n − 11ᵀ/n;
x* ~ N(x, R(x)); log r = log π(x*) − log π(x) + log N(x; x*, R(x*)) − log N(x*; x, R(x)).
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from pymc_kernel_steps.core.effective_size import effective_sample_sizes
from pymc_kernel_steps.core.kernels import GaussianKernel, LinearKernel
from pymc_kernel_steps.core.moves import MOVE_KINDS
from pymc_kernel_steps.core.transitions import kamh
from tests.core.chains import assert_moments_over_chains, iterations_with_stats

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_transition_does_not_load_pymc():
    code = (
        "import sys, pymc_kernel_steps.core.transitions.kamh\n"
        "names = ('pymc', 'pytensor', 'pymc_kernel_steps.steps')\n"
        "loaded = [m for m in names if m in sys.modules]\n"
        "assert not loaded, loaded"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------- targets
def gaussian_log_density(covariance):
    precision = np.linalg.inv(covariance)

    def log_density(x):
        return -0.5 * float(x @ precision @ x)

    return log_density


#: the twisted Gaussian of Haario et al. (1999): y ~ N(0, diag(100, 1)), x₁ = y₁,
#: x₂ = y₂ + b (y₁² − 100); E x = 0, Var x₁ = 100, Var x₂ = 1 + 2 · 100² b²
BANANA_B = 0.03


def banana_log_density(x):
    twist = x[1] - BANANA_B * (x[0] ** 2 - 100.0)
    return -(x[0] ** 2) / 200.0 - 0.5 * twist**2


def run(log_density, start, settings, tune, draws, seed):
    """A chain of ``tune`` tuning iterations and ``draws`` frozen ones; its draws."""
    rng = np.random.default_rng(seed)
    start = np.asarray(start, dtype=float)
    state = kamh.init(start, log_density(start), settings, tune_length=tune)
    for _ in range(tune):
        state, _ = kamh.step(rng, state, log_density)
    state = kamh.freeze(state)
    out = np.empty((draws, settings.dim))
    for i in range(draws):
        state, _ = kamh.step(rng, state, log_density)
        out[i] = state.position
    return state, out


def z_scores(draws, truth):
    """|mean − truth| / MCSE for each coordinate (MCSE from the split effective sample size)."""
    ess = effective_sample_sizes(draws)
    mcse = draws.std(axis=0, ddof=1) / np.sqrt(ess)
    return np.abs(draws.mean(axis=0) - truth) / mcse


# --------------------------------------------------------------------------- Hastings correction
def tuned_state(settings, seed=0, tune=600):
    covariance = np.array([[4.0, 1.8], [1.8, 1.0]])
    state, _ = run(gaussian_log_density(covariance), [3.0, -2.0], settings, tune, 0, seed)
    return state


def brute_force_covariance(state, x):
    """R in the model's coordinates at ``x``: L (γ² I + ν² Mᵀ H M) Lᵀ at u = L⁻¹(x − μ), from
    the kernel's gradient by finite differences (no code of the package's proposal)."""
    kam = state.kam
    whitening = kam.whitening
    u = whitening.whiten(x)
    z = kam.subsample
    n, d = z.shape

    def k(a, b):
        return kam.kernel(a, b)

    h = 1e-6
    M = np.empty((n, d))
    for i in range(n):
        for j in range(d):
            step = np.zeros(d)
            step[j] = h
            M[i, j] = 2.0 * (k(u + step, z[i]) - k(u - step, z[i])) / (2.0 * h)
    H = np.eye(n) - np.ones((n, n)) / n
    R = kam.gamma_abs**2 * np.eye(d) + kam.nu2 * M.T @ H @ M
    return whitening.chol @ R @ whitening.chol.T


@pytest.mark.parametrize(
    "kernel", [None, GaussianKernel(1.5), LinearKernel()], ids=["search", "gaussian", "linear"]
)
def test_the_kam_proposal_s_correction_is_its_hastings_ratio(kernel):
    """With adaptation frozen, the log ratio ``step`` accepts with is log π(x*) − log π(x) plus
    log N(x; x*, R(x*)) − log N(x*; x, R(x)), the proposal densities computed by brute force:
    the kernel is in detailed balance with π."""
    settings = kamh.KAMHSettings(dim=2, kernel=kernel, learned_moves=False, subsample_size=60)
    state = kamh.freeze(tuned_state(settings))
    assert state.kam.ready
    log_density = banana_log_density
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(20):
        x = state.position.copy()
        state.log_density = log_density(x)
        state, info = kamh.step(rng, state, log_density)
        assert info.proposal.move is state.kam
        y = info.proposal.x
        forward = stats.multivariate_normal(x, brute_force_covariance(state, x)).logpdf(y)
        backward = stats.multivariate_normal(y, brute_force_covariance(state, y)).logpdf(x)
        expected = log_density(y) - log_density(x) + backward - forward
        assert info.log_accept_ratio == pytest.approx(expected, abs=1e-5)
        # detailed balance: π(x) q(y | x) α(x, y) = π(y) q(x | y) α(y, x)
        there = log_density(x) + forward + min(0.0, info.log_accept_ratio)
        back = log_density(y) + backward + min(0.0, -expected)
        assert there == pytest.approx(back, abs=1e-5)
        assert info.accept_prob == pytest.approx(min(1.0, math.exp(expected)), abs=1e-8)
        checked += 1
    assert checked == 20


def test_the_linear_kernel_is_adaptive_metropolis():
    """With a linear kernel the proposal covariance does not depend on the state: the
    correction is 0 and the proposal is N(x, γ² I + ν² Mᵀ H M) with M = 2 z, i.e.
    γ² I + 4 ν² n Cov(z) (Haario's adaptive Metropolis in whitened coordinates)."""
    settings = kamh.KAMHSettings(
        dim=2, kernel=LinearKernel(), learned_moves=False, subsample_size=60
    )
    state = kamh.freeze(tuned_state(settings))
    rng = np.random.default_rng(1)
    for _ in range(5):
        state, info = kamh.step(rng, state, banana_log_density)
        assert info.proposal.log_correction == 0.0
    z = state.kam.subsample
    n = z.shape[0]
    expected = state.kam.gamma_abs**2 * np.eye(2) + 4.0 * state.kam.nu2 * n * np.cov(z.T, ddof=0)
    np.testing.assert_allclose(state.kam.covariance(state.kam.feature_cov(z[0])), expected)


# --------------------------------------------------------------------------- invariance
def test_a_chain_on_a_correlated_gaussian_has_its_moments():
    covariance = np.array([[4.0, 1.8], [1.8, 1.0]])
    settings = kamh.KAMHSettings(dim=2, subsample_size=200)
    _, draws = run(gaussian_log_density(covariance), [3.0, -2.0], settings, 1500, 4000, seed=11)
    assert np.all(z_scores(draws, np.zeros(2)) < 4.0)
    assert np.all(z_scores(draws**2, np.diag(covariance)) < 4.0)
    np.testing.assert_allclose(np.cov(draws.T), covariance, rtol=0.25, atol=0.25)


@pytest.mark.slow
@pytest.mark.parametrize("learned_moves", [True, False], ids=["learned", "fixed"])
def test_chains_on_the_banana_have_its_moments(learned_moves):
    """On the banana one chain's effective sample size overstates its precision (its tails are
    visited in rare excursions), so the error of the moments is measured over independent
    chains: |mean of the chains' estimates − truth| / (their sd / √chains), a t statistic with
    ``chains − 1`` degrees of freedom."""
    settings = kamh.KAMHSettings(dim=2, subsample_size=200, learned_moves=learned_moves)
    variance_x2 = 1.0 + 2.0 * 100.0**2 * BANANA_B**2
    truth = np.array([0.0, 0.0, 100.0, variance_x2])

    def chain(seed):
        return run(banana_log_density, [0.0, 0.0], settings, 2000, 5000, seed=seed)[1]

    assert_moments_over_chains(chain, range(10), truth)


def test_adaptive_metropolis_on_a_gaussian_has_its_moments():
    covariance = np.array([[4.0, 1.8], [1.8, 1.0]])
    settings = kamh.KAMHSettings(
        dim=2, kernel=LinearKernel(), learned_moves=False, subsample_size=200
    )
    _, draws = run(gaussian_log_density(covariance), [3.0, -2.0], settings, 1500, 4000, seed=2)
    assert np.all(z_scores(draws, np.zeros(2)) < 4.0)
    assert np.all(z_scores(draws**2, np.diag(covariance)) < 4.0)


# --------------------------------------------------------------------------- freeze
def _learned(state):
    kam, search = state.kam, state.lengthscales
    weights = None if state.learned is None else list(state.learned.mixture.weights)
    return (
        kam.nu2,
        kam.gamma_abs,
        kam.subsample.copy(),
        kam.kernel,
        state.whitening.chol.copy(),
        search.candidate,
        search.search.scores.copy(),
        state.random_walk.scale.scale,
        weights,
        state.adaptation_iteration,
    )


def _assert_same(before, after):
    for a, b in zip(before, after, strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b


def test_freeze_keeps_the_best_lengthscale_and_stops_adaptation():
    settings = kamh.KAMHSettings(dim=2, subsample_size=100)
    rng = np.random.default_rng(4)
    start = np.array([3.0, -2.0])
    state = kamh.init(start, banana_log_density(start), settings)
    for _ in range(800):
        state, _ = kamh.step(rng, state, banana_log_density)
    search = state.lengthscales
    tried = search.search.counts > 0
    best = int(np.argmax(np.where(tried, search.search.scores, -np.inf)))
    state = kamh.freeze(state)
    assert not state.tuning and search.frozen and not state.learned.mixture.tuning
    assert search.candidate == best and state.kam.kernel is search.candidates[best]
    assert state.kam.nu2_scale is search.nu2_scales[best]
    before = _learned(state)
    for _ in range(300):
        state, _ = kamh.step(rng, state, banana_log_density)
    _assert_same(before, _learned(state))


def test_without_freeze_the_chain_keeps_adapting():
    settings = kamh.KAMHSettings(dim=2, subsample_size=100)
    rng = np.random.default_rng(4)
    start = np.array([3.0, -2.0])
    state = kamh.init(start, banana_log_density(start), settings)
    for _ in range(800):
        state, _ = kamh.step(rng, state, banana_log_density)
    adapted = state.adaptation_iteration
    nu2 = state.kam.nu2
    for _ in range(50):
        state, _ = kamh.step(rng, state, banana_log_density)
    assert state.adaptation_iteration == adapted + 50
    assert state.kam.nu2 != nu2


def test_a_state_initialised_frozen_never_adapts():
    settings = kamh.KAMHSettings(dim=2, learned_moves=False)
    rng = np.random.default_rng(0)
    start = np.zeros(2)
    state = kamh.init(start, banana_log_density(start), settings, tuning=False)
    scale = state.random_walk.scale.scale
    for _ in range(200):
        state, info = kamh.step(rng, state, banana_log_density)
        assert info.proposal.move is state.random_walk
    assert state.adaptation_iteration == 0 and not state.kam.ready
    assert state.random_walk.scale.scale == scale
    assert len(state.history) == 200


def test_an_unusable_log_density_is_rejected_and_reported():
    settings = kamh.KAMHSettings(dim=2, learned_moves=False)
    rng = np.random.default_rng(0)
    start = np.zeros(2)
    state = kamh.init(start, 0.0, settings)
    for value in (math.nan, math.inf):
        state, info = kamh.step(rng, state, lambda x, value=value: value)
        assert not info.accepted and info.accept_prob == 0.0 and info.evaluations == 1
        assert info.log_accept_ratio == -math.inf
        assert math.isnan(info.log_density) or info.log_density == math.inf
        np.testing.assert_array_equal(state.position, start)
        assert state.log_density == 0.0


# --------------------------------------------------------------------------- sample stats
@pytest.mark.parametrize("learned_moves", [False, True])
def test_the_sample_stats_are_the_declared_ones_and_describe_the_iteration(learned_moves):
    settings = kamh.KAMHSettings(dim=2, learned_moves=learned_moves)
    log_density = gaussian_log_density(np.array([[4.0, 1.8], [1.8, 1.0]]))
    state = kamh.init(np.array([1.0, -1.0]), log_density(np.array([1.0, -1.0])), settings)
    fitted = False
    for i, chain_state, info, iteration_stats in iterations_with_stats(
        kamh, state, log_density, 500, 400, 5
    ):
        assert MOVE_KINDS[iteration_stats["move"]] == info.proposal.kind
        assert iteration_stats["n_history"] == len(chain_state.history) == i + 1
        assert iteration_stats["random_walk"] == (not chain_state.kam.ready)
        if iteration_stats["random_walk"]:  # before the first fit: the random walk's scale
            assert math.isnan(iteration_stats["nu2"])
            assert iteration_stats["gamma"] == chain_state.random_walk.scale.scale
        else:
            fitted = True
            assert (
                iteration_stats["nu2"] == chain_state.kam.nu2
                and iteration_stats["gamma"] == chain_state.kam.gamma_abs
            )
            assert iteration_stats["lengthscale"] == chain_state.kam.kernel.lengthscale
    assert fitted
