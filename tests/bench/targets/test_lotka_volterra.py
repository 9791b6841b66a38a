"""The Lotka-Volterra black box: likelihood against an independent solve, robustness, bad input."""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy import integrate, stats

from pymc_kernel_steps_bench import targets as T


def _independent_loglik(theta, y):
    a, b, c, d, s = theta

    def rhs(z, t):
        return [a * z[0] - b * z[0] * z[1], -c * z[1] + d * z[0] * z[1]]

    states = integrate.odeint(rhs, [30.0, 4.0], np.arange(0.0, 21.0), rtol=1e-10, atol=1e-10)[1:]
    return stats.lognorm.logpdf(y, s, scale=states).sum()


@pytest.mark.parametrize("scale", [1.0, 1.05, 0.9])
def test_loglik_matches_independent_solve(scale):
    times, y = T.lotka_volterra_data()
    np.testing.assert_array_equal(times, np.arange(1.0, 21.0))
    assert y.shape == (20, 2) and np.all(y > 0)
    theta = T.LOTKA_VOLTERRA_TRUE * np.array([scale, 1.0, 1 / scale, 1.0, scale])
    expected = _independent_loglik(theta, y)
    assert T.lotka_volterra_loglik(theta, y) == pytest.approx(expected, abs=0.05)


def test_model_logp_is_prior_plus_loglik():
    model = T.lotka_volterra_model()
    [op] = T.counting_ops(model)
    _, y = T.lotka_volterra_data()
    logp = model.compile_logp(jacobian=False)
    theta = T.LOTKA_VOLTERRA_TRUE
    prior = stats.lognorm.logpdf(
        theta,
        T.lotka_volterra.LOTKA_VOLTERRA_PRIOR_LOG_SD,
        scale=T.lotka_volterra.LOTKA_VOLTERRA_PRIOR_MEDIAN,
    ).sum()
    value = logp({"theta_log__": np.log(theta)})
    assert value == pytest.approx(prior + T.lotka_volterra_loglik(theta, y), rel=1e-10)
    assert op.n_calls == 1
    # the true parameters are far more likely than the prior medians
    medians = T.lotka_volterra.LOTKA_VOLTERRA_PRIOR_MEDIAN
    assert value > logp({"theta_log__": np.log(medians)}) + 100


@pytest.mark.parametrize(
    "theta",
    [
        [1e6, 1e-6, 1e-6, 1e6, 1.0],
        [50.0, 1e-5, 1e-5, 50.0, 1.0],
        [1e-8, 10.0, 10.0, 1e-8, 1.0],
        [1e3, 1e3, 1e3, 1e3, 1.0],
        [0.5, -0.1, 0.8, 0.03, 0.2],
        [np.inf, 0.1, 0.8, 0.03, 0.2],
    ],
)
def test_absurd_parameters_give_minus_inf_quickly(theta):
    _, y = T.lotka_volterra_data()
    start = time.perf_counter()
    assert T.lotka_volterra_loglik(np.array(theta), y) == -np.inf
    assert time.perf_counter() - start < 2.0


def test_bad_input_is_rejected():
    _, y = T.lotka_volterra_data()
    with pytest.raises(ValueError, match="theta"):
        T.lotka_volterra_loglik(np.ones(4), y)
    with pytest.raises(ValueError, match="max_rhs_evals"):
        T.lotka_volterra_model(max_rhs_evals=0)
    with pytest.raises(ValueError, match="twin"):
        T.lotka_volterra_model(black_box=False)
