"""Synthetic targets: exact moments, the counting black box, the pseudo-marginal model."""

from __future__ import annotations

import pickle
import warnings

import cloudpickle
import numpy as np
import pymc as pm
import pytensor.gradient as tg
import pytest
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import join_nonshared_inputs, reseed_rngs
from scipy import integrate, stats

from pymc_kernel_steps_bench import targets as T


def test_banana_moments_by_integration():
    b, V = 0.03, 100.0
    mean, var = T.banana_moments(2, b, V)
    # integrate the 2-d banana numerically: x1 over ±10 sd, x2 over its conditional ±12 sd
    sd1 = np.sqrt(V)

    def moment(f):
        return integrate.dblquad(
            lambda x2, x1: f(x1, x2) * np.exp(T.banana_logp(np.array([x1, x2]), b, V)),
            -10 * sd1,
            10 * sd1,
            lambda x1: -b * (x1**2 - V) - 12,
            lambda x1: -b * (x1**2 - V) + 12,
            epsabs=1e-9,
        )[0]

    assert moment(lambda x1, x2: 1.0) == pytest.approx(1.0, abs=1e-6)
    assert moment(lambda x1, x2: x2) == pytest.approx(mean[1], abs=1e-5)
    assert moment(lambda x1, x2: x1**2) == pytest.approx(var[0], rel=1e-5)
    assert moment(lambda x1, x2: x2**2) == pytest.approx(var[1], rel=1e-5)
    assert var[1] == pytest.approx(1 + 2 * b**2 * V**2)


def test_banana_exact_sampler_matches_moments_and_density():
    mean, var = T.banana_moments(8)
    x = T.banana_sample(0, 200_000, 8)
    se_mean = np.sqrt(var / x.shape[0])
    assert np.all(np.abs(x.mean(0) - mean) < 5 * se_mean)
    assert np.allclose(x.var(0), var, rtol=0.03)
    # the density transforms correctly: y2 = x2 + b(x1² − V) is standard normal
    y2 = x[:, 1] + 0.03 * (x[:, 0] ** 2 - 100.0)
    assert stats.kstest(y2[:5000], "norm").pvalue > 1e-3
    # log density equals the product of the normal factors
    p = x[0]
    expected = (
        stats.norm.logpdf(p[0], 0, 10) + stats.norm.logpdf(y2[0]) + stats.norm.logpdf(p[2:]).sum()
    )
    assert T.banana_logp(p) == pytest.approx(expected)


def test_bimodal_density_and_moments():
    mean, var = T.bimodal_moments()
    np.testing.assert_allclose(mean, [0.0, 0.0])
    np.testing.assert_allclose(var, [65.25, 1.25])
    x = np.array([0.7, -0.3])
    expected = np.log(
        0.5 * stats.multivariate_normal.pdf(x, [-8, 0], 0.5 * np.eye(2))
        + 0.5 * stats.multivariate_normal.pdf(x, [8, 0], 2 * np.eye(2))
    )
    assert T.bimodal_logp(x) == pytest.approx(expected)


def test_gaussian_logp_matches_scipy():
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    chol = np.linalg.cholesky(cov)
    x = np.array([0.3, -1.2])
    mean = np.array([1.0, 0.0])
    assert T.gaussian_logp(x, mean, chol) == pytest.approx(
        stats.multivariate_normal.logpdf(x, mean, cov)
    )


@pytest.mark.parametrize("name", sorted(n for n, t in T.TARGETS.items() if t.twin))
def test_black_box_counts_and_equals_twin(name):
    target = T.TARGETS[name]
    box = target.build(black_box=True, noise_sd=0.0) if target.noisy else target.build()
    twin = (
        target.build(black_box=False, noise_sd=0.0)
        if target.noisy
        else target.build(black_box=False)
    )
    [op] = T.counting_ops(box)
    assert T.counting_ops(twin) == []
    size = box.initial_point()[target.var_name].size
    point = {target.var_name: np.linspace(-1.5, 2.0, size)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no object-mode warning from numba
        f_box = box.compile_logp()
    f_twin = twin.compile_logp()
    for k in range(3):
        assert f_box(point) == pytest.approx(f_twin(point), rel=1e-10)
        assert op.n_calls == k + 1
    assert op.seconds > 0
    op.reset()
    assert op.n_calls == 0


def test_black_box_value_is_numpy_logp_in_numba_and_cvm():
    model = T.banana_model(4)
    [op] = T.counting_ops(model)
    [logp], x = join_nonshared_inputs(model.initial_point(), [model.logp()], model.value_vars, {})
    point = np.array([3.0, -1.0, 0.5, 0.2])
    for mode in (None, "CVM"):
        fn = pm_compile([x], logp, mode=mode) if mode else pm_compile([x], logp)
        before = op.n_calls
        assert float(fn(point)) == pytest.approx(T.banana_logp(point))
        assert op.n_calls == before + 1


def test_black_box_has_no_gradient():
    model = T.banana_model(3)
    with pytest.raises(tg.NullTypeGradError):
        tg.grad(model.logp(), model.value_vars[0])
    with model:
        with pytest.raises(tg.NullTypeGradError):
            pm.NUTS()
        idata = pm.sample(
            draws=5, tune=5, chains=1, progressbar=False, compute_convergence_checks=False
        )
    # pm.sample assigned a gradient-free step (no NUTS stats)
    assert "n_steps" not in idata.sample_stats
    assert "accepted" in idata.sample_stats


def test_black_box_pickles_with_counter_and_cost():
    op = T.CountingLogp(T.banana_logp, cost=1e-3)
    op.evaluate(np.zeros(2))
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        copy = loads(dumps(op))
        assert copy.n_calls == 1 and copy.cost == 1e-3
        assert copy.evaluate(np.zeros(2)) == T.banana_logp(np.zeros(2))
        assert copy.seconds >= 2e-3  # the busy wait is real
    model = T.banana_model(3)
    loads_model = cloudpickle.loads(cloudpickle.dumps(model))
    assert len(T.counting_ops(loads_model)) == 1


def test_black_box_input_checks():
    with pytest.raises(TypeError):
        T.CountingLogp(3.0)
    with pytest.raises(ValueError):
        T.CountingLogp(T.banana_logp, cost=-1)
    with pytest.raises(ValueError):
        T.CountingLogp(T.banana_logp)(np.zeros((2, 2)))
    with pytest.raises(ValueError):
        T.banana_model(1)
    assert T.CountingLogp(T.banana_logp) != T.CountingLogp(T.banana_logp)


def _noisy_fn(model):
    [logp], x = join_nonshared_inputs(model.initial_point(), [model.logp()], model.value_vars, {})
    fn, updates = pm_compile([x], logp, random_seed=False, return_updates=True)
    return fn, list(updates)


def test_noisy_model_varies_reseeds_and_is_unbiased():
    s = 0.5
    model = T.noisy_gaussian_model(noise_sd=s)
    exact = T.noisy_gaussian_model(noise_sd=0.0)
    fn, rngs = _noisy_fn(model)
    assert len(rngs) == 1
    point = np.array([0.3, -0.2])
    exact_value = float(exact.compile_logp()({"x": point}))
    values = np.array([float(fn(point)) for _ in range(4000)])
    assert len(np.unique(values)) == values.size
    ratio = np.exp(values - exact_value)  # the likelihood estimate over the likelihood
    se = ratio.std() / np.sqrt(ratio.size)
    assert abs(ratio.mean() - 1.0) < 4 * se
    assert (values - exact_value).mean() == pytest.approx(-(s**2) / 2, abs=4 * s / 60)
    reseed_rngs(rngs, 7)
    a = [float(fn(point)) for _ in range(3)]
    reseed_rngs(rngs, 7)
    assert a == [float(fn(point)) for _ in range(3)]


def test_noisy_model_exact_moments_by_conjugacy():
    mean, var = T.noisy_gaussian_moments(n_obs=20, dim=2, sigma=1.0, prior_sd=10.0)
    exact = T.noisy_gaussian_model(noise_sd=0.0, black_box=False)
    f = exact.compile_logp()
    # the log density is quadratic: its mode is the mean and its curvature the precision
    h = 1e-3
    g = [(f({"x": mean + h * e}) - f({"x": mean - h * e})) / (2 * h) for e in np.eye(2)]
    curv = (
        f({"x": mean + h * np.eye(2)[0]}) - 2 * f({"x": mean}) + f({"x": mean - h * np.eye(2)[0]})
    ) / h**2
    np.testing.assert_allclose(g, 0.0, atol=1e-5)
    assert -1 / curv == pytest.approx(var[0], rel=1e-4)


def test_logistic_regression_data_is_fixed():
    X1, y1, w1 = T.logistic_regression_data(50, 3, seed=1)
    X2, y2, w2 = T.logistic_regression_data(50, 3, seed=1)
    np.testing.assert_array_equal(y1, y2)
    assert set(np.unique(y1)) <= {0.0, 1.0}
    assert np.all(X1[:, 0] == 1.0)
