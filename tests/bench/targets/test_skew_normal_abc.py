"""ABC for the skew-normal: simulator, estimator against numpy, unbiasedness, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import join_nonshared_inputs, reseed_rngs
from scipy import integrate, stats

from pymc_kernel_steps_bench import targets as T


def test_simulator_matches_scipy_skewnorm_and_mean():
    x = T.skew_normal_sample(0, 20_000, np.array([1.5]), np.array([4.0]))[:, 0]
    assert stats.kstest(x, stats.skewnorm(4.0, loc=1.5).cdf).pvalue > 1e-3
    alpha = np.full(10, 10.0)
    draws = T.skew_normal_sample(1, 50_000, np.zeros(10), alpha)
    delta = alpha / math.sqrt(1 + alpha @ alpha)
    np.testing.assert_allclose(draws.mean(0), math.sqrt(2 / math.pi) * delta, atol=0.02)


def test_estimator_matches_numpy():
    y, theta_true, alpha = T.skew_normal_abc_data()
    assert y.shape == (10, 10)
    np.testing.assert_array_equal(theta_true, 10.0)
    s_obs = y.mean(0)
    rng = np.random.default_rng(0)
    theta = theta_true + rng.normal(0, 0.3, 10)
    noise = rng.standard_normal((10, 10, 11))
    values = []
    for k in range(10):
        x = np.empty((10, 10))
        for i in range(10):
            u, t = noise[k, i, :10], noise[k, i, 10]
            x[i] = theta + (u if t <= alpha @ u else -u)
        values.append(stats.multivariate_normal.pdf(s_obs, x.mean(0), 0.55**2 * np.eye(10)))
    expected = math.log(np.mean(values))
    got = T.skew_normal_abc_log_likelihood_estimate(theta, noise, s_obs, alpha, 0.55)
    assert got == pytest.approx(expected, rel=1e-10)


def test_estimator_is_unbiased_against_quadrature():
    theta, alpha, eps, s_obs = np.array([0.3]), np.array([3.0]), 0.55, np.array([1.1])
    exact, _ = integrate.quad(
        lambda x: stats.skewnorm.pdf(x, 3.0, loc=0.3) * stats.norm.pdf(1.1, x, eps), -10, 10
    )
    rng = np.random.default_rng(5)
    draws = 8_000
    ratios = np.exp(
        [
            T.skew_normal_abc_log_likelihood_estimate(
                theta, rng.standard_normal((1, 1, 2)), s_obs, alpha, eps
            )
            - math.log(exact)
            for _ in range(draws)
        ]
    )
    se = ratios.std() / math.sqrt(draws)
    assert abs(ratios.mean() - 1.0) < 4 * se
    assert ratios.std() > 0.1


def test_model_is_noisy_counted_and_reseedable():
    model = T.skew_normal_abc_model()
    [op] = T.counting_ops(model)
    [logp], x = join_nonshared_inputs(model.initial_point(), [model.logp()], model.value_vars, {})
    fn, updates = pm_compile([x], logp, random_seed=False, return_updates=True)
    rngs = list(updates)
    theta = np.full(10, 10.2)
    reseed_rngs(rngs, 11)
    a = [float(fn(theta)) for _ in range(4)]
    assert len(set(a)) == 4 and op.n_calls == 4
    reseed_rngs(rngs, 11)
    assert a == [float(fn(theta)) for _ in range(4)]
    assert np.isfinite(a).all()


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="epsilon"):
        T.skew_normal_abc_model(epsilon=-0.5)
    with pytest.raises(ValueError, match="n_sim"):
        T.skew_normal_abc_model(n_sim=0)
    with pytest.raises(ValueError, match="dim"):
        T.skew_normal_abc_model(dim=0)
    with pytest.raises(ValueError, match="twin"):
        T.skew_normal_abc_model(black_box=False)
    alpha = np.ones(3)
    with pytest.raises(ValueError, match="theta"):
        T.skew_normal_abc_log_likelihood_estimate(np.zeros(2), np.zeros((1, 1, 4)), 0, alpha, 1)
    with pytest.raises(ValueError, match="noise"):
        T.skew_normal_abc_log_likelihood_estimate(np.zeros(3), np.zeros((1, 1, 3)), 0, alpha, 1)
    with pytest.raises(ValueError, match="epsilon"):
        T.skew_normal_abc_log_likelihood_estimate(np.zeros(3), np.zeros((1, 1, 4)), 0, alpha, 0)


@pytest.mark.slow
def test_parallel_pseudo_marginal_sampling_is_reproducible():
    import pymc as pm

    from pymc_kernel_steps import AdaptiveMetropolis

    draws = []
    for _ in range(2):
        with T.skew_normal_abc_model(dim=2, n_obs=2, n_sim=2, skewness=1.0):
            idata = pm.sample(
                step=AdaptiveMetropolis(),
                tune=50,
                draws=50,
                chains=2,
                cores=2,
                random_seed=7,
                progressbar=False,
                compute_convergence_checks=False,
            )
        draws.append(np.asarray(idata.posterior["theta"].values))
    np.testing.assert_array_equal(draws[0], draws[1])
    assert np.unique(draws[0][0, :, 0]).size > 5
