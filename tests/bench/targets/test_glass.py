"""GP classification of glass: Laplace terms against brute force, unbiasedness, the model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import join_nonshared_inputs, reseed_rngs
from scipy import optimize
from scipy.spatial.distance import cdist
from scipy.special import expit, logsumexp

from pymc_kernel_steps_bench import targets as T
from pymc_kernel_steps_bench.targets.glass import _covariance_cholesky


@pytest.fixture(scope="module")
def glass():
    return T.glass_data()


def _laplace_f_space(theta, X, y, jitter):
    """Rasmussen & Williams' Laplace evidence, computed in f-space with an explicit K⁻¹."""
    K = np.exp(-0.5 * cdist(X / np.exp(0.5 * theta), X / np.exp(0.5 * theta), "sqeuclidean"))
    K += jitter * np.eye(len(y))
    K_inv = np.linalg.inv(K)

    def negative(f):
        return np.sum(np.logaddexp(0.0, -y * f)) + 0.5 * f @ K_inv @ f

    def gradient(f):
        return -(y * expit(-y * f)) + K_inv @ f

    res = optimize.minimize(negative, np.zeros(len(y)), jac=gradient, method="BFGS", tol=1e-10)
    f = res.x
    w = expit(f) * (1 - expit(f))
    B = np.eye(len(y)) + np.sqrt(w)[:, None] * K * np.sqrt(w)[None, :]
    log_z = -negative(f) - 0.5 * np.linalg.slogdet(B)[1]
    return f, log_z


def test_glass_data(glass):
    X, y = glass
    assert X.shape == (214, 9)
    assert (y == 1).sum() == 163 and (y == -1).sum() == 51
    np.testing.assert_allclose(X.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(0, ddof=1), 1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_laplace_terms_match_brute_force(glass, seed):
    X, y = glass
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(y), 60, replace=False)
    theta = rng.normal(0.0, 1.5, 9)
    f_ref, log_z_ref = _laplace_f_space(theta, X[idx], y[idx], 1e-3)
    f_hat, log_z = T.gp_classification_laplace(theta, X[idx], y[idx], 1e-3)
    np.testing.assert_allclose(f_hat, f_ref, atol=1e-4)
    assert log_z == pytest.approx(log_z_ref, abs=1e-6)
    # the estimator with one sample at the mode (z = 0) is the Laplace approximation
    at_mode = T.gp_classification_log_marginal_estimate(theta, np.zeros((60, 1)), X[idx], y[idx])
    assert at_mode == pytest.approx(log_z, abs=1e-9)


def test_extreme_lengthscales_give_their_limits_not_errors(glass):
    """Far outside the prior (a sampler's wild proposal) the estimate is the limit of
    uncorrelated or fully correlated latents, not NaN or an overflow error (θ = −1000 once
    raised from the Cholesky factorisation). Identical rows stay correlated 1 at any
    lengthscale."""
    X, y = glass
    z = np.random.default_rng(0).standard_normal((len(y), 20))
    tiny = [
        T.gp_classification_log_marginal_estimate(np.full(9, t), z, X, y)
        for t in (-1e2, -1e3, -1e9)
    ]
    huge = [
        T.gp_classification_log_marginal_estimate(np.full(9, t), z, X, y) for t in (1e2, 1e3, 1e9)
    ]
    assert np.all(np.isfinite(tiny + huge))
    assert tiny == pytest.approx([tiny[0]] * 3, abs=1e-9)
    assert huge == pytest.approx([huge[0]] * 3, abs=1e-6)
    _, row = np.unique(X, axis=0, return_inverse=True)
    K_limit = (row[:, None] == row[None, :]).astype(float) + 1e-3 * np.eye(len(y))
    L = _covariance_cholesky(np.full(9, -1e3), X, 1e-3)
    np.testing.assert_allclose(L @ L.T, K_limit, atol=1e-12)


def test_estimator_is_unbiased_on_natural_scale(glass):
    X, y = glass
    X, y = X[[0, 80, 150, 200], :2], y[[0, 80, 150, 200]]
    theta = np.array([0.5, -0.3])
    # exact p(y | θ) by Monte Carlo from the prior with 10⁶ draws (relative error ~1e-3)
    Xs = X / np.exp(0.5 * theta)
    K = np.exp(-0.5 * cdist(Xs, Xs, "sqeuclidean")) + 1e-3 * np.eye(4)
    f = np.random.default_rng(1).standard_normal((1_000_000, 4)) @ np.linalg.cholesky(K).T
    log_lik = -np.sum(np.logaddexp(0.0, -y * f), axis=1)
    exact = logsumexp(log_lik) - math.log(f.shape[0])
    rng = np.random.default_rng(2)
    draws = 3000
    ratios = np.exp(
        [
            T.gp_classification_log_marginal_estimate(theta, rng.standard_normal((4, 2)), X, y)
            - exact
            for _ in range(draws)
        ]
    )
    se = ratios.std() / math.sqrt(draws)
    assert abs(ratios.mean() - 1.0) < 4 * se + 3e-3
    assert ratios.std() > 0.01  # the estimate is random: the test has power


def test_model_is_noisy_counted_and_reseedable(glass):
    model = T.glass_model(n_importance=20)
    [op] = T.counting_ops(model)
    assert isinstance(op, T.NoisyCountingLogp)
    [logp], x = join_nonshared_inputs(model.initial_point(), [model.logp()], model.value_vars, {})
    fn, updates = pm_compile([x], logp, random_seed=False, return_updates=True)
    rngs = list(updates)
    assert len(rngs) == 1
    theta = np.linspace(-1, 1, 9)
    reseed_rngs(rngs, 3)
    a = [float(fn(theta)) for _ in range(3)]
    assert len(set(a)) == 3
    assert op.n_calls == 3
    reseed_rngs(rngs, 3)
    assert a == [float(fn(theta)) for _ in range(3)]
    # the potential is the estimator; the prior is N(0, 5 I)
    prior = -0.5 * theta @ theta / 5.0 - 4.5 * math.log(2 * math.pi * 5.0)
    laplace = T.gp_classification_laplace(theta, *glass)[1]
    assert abs(a[0] - prior - laplace) < 1.0


def test_bad_input_is_rejected(glass):
    X, y = glass
    with pytest.raises(ValueError, match="theta"):
        T.gp_classification_log_marginal_estimate(np.zeros(3), np.zeros((214, 5)), X, y)
    with pytest.raises(ValueError, match="z must"):
        T.gp_classification_log_marginal_estimate(np.zeros(9), np.zeros((10, 5)), X, y)
    with pytest.raises(ValueError, match="n_importance"):
        T.glass_model(n_importance=0)
    with pytest.raises(ValueError, match="prior_var"):
        T.glass_model(prior_var=-1.0)
    with pytest.raises(ValueError, match="twin"):
        T.glass_model(black_box=False)
