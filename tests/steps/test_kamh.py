"""KAMH and AdaptiveMetropolis: exactness, pm.sample integration, bad input."""

from __future__ import annotations

import pickle

import cloudpickle
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

from pymc_kernel_steps import KAMH, AdaptiveMetropolis, GaussianKernel
from pymc_kernel_steps.core import gaussian_logpdf, kamh_covariance

from ..helpers import (
    CORRELATED_COV,
    CORRELATED_MEAN,
    assert_moments,
    banana_model,
    banana_moments,
    correlated_gaussian_model,
    posterior_array,
)

STEPS = [KAMH, AdaptiveMetropolis]


def _sample(model, step_factory, **kwargs):
    options = dict(
        tune=1000,
        draws=3000,
        chains=2,
        cores=1,
        random_seed=7,
        progressbar=False,
        compute_convergence_checks=False,
    )
    options.update(kwargs)
    with model:
        return pm.sample(step=step_factory(), **options)


# ---------------------------------------------------------------- detailed balance
def _frozen_kamh_log_ratio(logp, x, y, Z, kernel, gamma, nu2):
    """log r(x → y) of the KAMH transition with frozen (Z, kernel, γ, ν²)."""
    chol_x = np.linalg.cholesky(kamh_covariance(x, Z, kernel, gamma, nu2))
    chol_y = np.linalg.cholesky(kamh_covariance(y, Z, kernel, gamma, nu2))
    return logp(y) - logp(x) + gaussian_logpdf(x, y, chol_y) - gaussian_logpdf(y, x, chol_x)


def test_kamh_detailed_balance_with_frozen_adaptation():
    """The step's own ratio equals the frozen KAMH ratio and is antisymmetric for random pairs."""
    rng = np.random.default_rng(0)
    model = correlated_gaussian_model()
    with model:
        step = KAMH(rng=1)
    chain = step.chain
    Z = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=60)
    for _ in range(40):  # put the step in its KAMH phase with a known state
        chain.history.append(rng.normal(size=4))
    step._refresh_subsample(CORRELATED_MEAN, first=True)
    chain.subsample = Z
    chain.kernel = GaussianKernel(1.3)
    chain.feature_cov_current = None
    nu2, gamma = step._nu2(), chain.gamma_abs
    logp = stats.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV).logpdf
    for _ in range(20):
        x = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV)
        y, log_correction, _ = step._propose(x)
        forward = logp(y) - logp(x) + log_correction
        reference = _frozen_kamh_log_ratio(logp, x, y, Z, chain.kernel, gamma, nu2)
        backward = _frozen_kamh_log_ratio(logp, y, x, Z, chain.kernel, gamma, nu2)
        np.testing.assert_allclose(forward, reference, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(forward, -backward, rtol=1e-9, atol=1e-9)
        # the proposal is genuinely asymmetric for a Gaussian kernel
        assert abs(log_correction) > 1e-8


# ---------------------------------------------------------------- exactness
@pytest.mark.slow
@pytest.mark.parametrize("step_class", STEPS)
def test_correlated_gaussian_moments(step_class):
    idata = _sample(correlated_gaussian_model(), step_class, draws=4000)
    assert_moments(posterior_array(idata), CORRELATED_MEAN, np.diag(CORRELATED_COV))


@pytest.mark.slow
@pytest.mark.parametrize("step_class", STEPS)
def test_banana_moments(step_class):
    mean, var = banana_moments(dim=2)
    idata = _sample(banana_model(dim=2), step_class, tune=3000, draws=12000)
    assert_moments(posterior_array(idata), mean, var)


# ---------------------------------------------------------------- pseudo-marginal
def noisy_gaussian_model(noise_sd=0.5):
    """x ~ N(0, 1) prior, y | x ~ N(x, 1) with y = 1: posterior N(0.5, 0.5). The likelihood is
    estimated with unbiased multiplicative log-normal noise drawn inside the logp graph."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0)
        noise = pt.random.normal(-0.5 * noise_sd**2, noise_sd)
        pm.Potential("noisy_likelihood", pm.logp(pm.Normal.dist(x, 1.0), 1.0) + noise)
    return model


def test_pseudo_marginal_one_evaluation_and_reproducible():
    model = noisy_gaussian_model()
    with model:
        step = KAMH()
    assert step.noisy_logp
    kwargs = dict(
        tune=300,
        draws=500,
        chains=1,
        cores=1,
        progressbar=False,
        compute_convergence_checks=False,
        discard_tuned_samples=False,
    )
    with model:
        first = pm.sample(step=step, random_seed=3, **kwargs)
        second = pm.sample(step=step, random_seed=3, **kwargs)
        third = pm.sample(step=step, random_seed=4, **kwargs)
    evals = np.concatenate(
        [
            first.warmup_sample_stats.logp_evals.values.ravel(),
            first.sample_stats.logp_evals.values.ravel(),
        ]
    )
    assert evals[0] == 2 and np.all(evals[1:] == 1)  # one evaluation per iteration
    assert "model_logp" not in first.sample_stats  # a noisy estimate is not the model's logp
    np.testing.assert_array_equal(first.posterior.x.values, second.posterior.x.values)
    assert not np.array_equal(first.posterior.x.values, third.posterior.x.values)


@pytest.mark.slow
@pytest.mark.parametrize("step_class", STEPS)
def test_pseudo_marginal_posterior(step_class):
    idata = _sample(noisy_gaussian_model(), step_class, tune=1000, draws=6000)
    assert_moments(posterior_array(idata), 0.5, 0.5)


# ---------------------------------------------------------------- pm.sample integration
def test_parallel_chains_reproducible_and_distinct():
    model = correlated_gaussian_model()
    kwargs = dict(
        tune=200, draws=200, chains=2, cores=2, progressbar=False, compute_convergence_checks=False
    )
    with model:
        a = pm.sample(step=KAMH(), random_seed=11, **kwargs)
        b = pm.sample(step=KAMH(), random_seed=11, **kwargs)
    np.testing.assert_array_equal(a.posterior.x.values, b.posterior.x.values)
    assert not np.array_equal(a.posterior.x.values[0], a.posterior.x.values[1])


def test_sequential_chains_do_not_leak_state():
    """Chain 2 of a sequential run equals a run whose only chain got the same seed."""
    model = correlated_gaussian_model()
    with model:
        step = KAMH()
        kwargs = dict(
            tune=150, draws=100, cores=1, progressbar=False, compute_convergence_checks=False
        )
        both = pm.sample(step=step, chains=2, random_seed=5, **kwargs)
        # the same step object is reused; a fresh step with the same chain seed must agree
        again = pm.sample(step=KAMH(), chains=2, random_seed=5, **kwargs)
    np.testing.assert_array_equal(both.posterior.x.values, again.posterior.x.values)
    assert step.chain.iteration == 250  # state belongs to the last chain only


def test_stats_present_with_declared_dtypes():
    model = correlated_gaussian_model()
    with model:
        step = KAMH()
        trace = pm.sample(
            step=step,
            tune=100,
            draws=100,
            chains=1,
            cores=1,
            progressbar=False,
            compute_convergence_checks=False,
            return_inferencedata=False,
            discard_tuned_samples=False,
        )
    for name, (dtype, _) in KAMH.stats_dtypes_shapes.items():
        values = trace.get_sampler_stats(name)
        assert values.dtype == np.dtype(dtype), name
    assert trace.get_sampler_stats("random_walk")[:10].all()
    assert not trace.get_sampler_stats("random_walk")[-10:].any()


def test_compound_with_nuts_is_correct():
    """step=[KAMH([a]), NUTS([b])] on a conjugate model: a ~ N(0,1), b ~ N(a, 1), y ~ N(b, 1)."""
    with pm.Model():
        a = pm.Normal("a", 0.0, 1.0)
        b = pm.Normal("b", a, 1.0)
        pm.Normal("y", b, 1.0, observed=1.5)
        steps = [KAMH([a]), pm.NUTS([b])]
        idata = pm.sample(
            step=steps,
            tune=1000,
            draws=4000,
            chains=2,
            cores=1,
            random_seed=2,
            progressbar=False,
            compute_convergence_checks=False,
        )
    # log p = -a²/2 - (b - a)²/2 - (y - b)²/2: precision [[2, -1], [-1, 2]], linear term (0, y)
    precision = np.array([[2.0, -1.0], [-1.0, 2.0]])
    cov = np.linalg.inv(precision)
    mean = cov @ np.array([0.0, 1.5])
    draws = np.stack([idata.posterior.a.values, idata.posterior.b.values], axis=-1)
    assert_moments(draws, mean, np.diag(cov))
    # the KAMH block recomputes its cached logp when b changed: 2 evaluations on most iterations
    evals = idata.sample_stats.logp_evals.values
    assert evals.max() == 2


def test_discrete_variable_raises():
    with pm.Model():
        pm.Poisson("k", 3.0)
        with pytest.raises(ValueError, match="'k' is discrete"):
            KAMH()


def test_competence():
    with pm.Model():
        k = pm.Poisson("k", 3.0)
        x = pm.Normal("x")
    assert KAMH.competence(k, False) == pm.step_methods.compound.Competence.INCOMPATIBLE
    assert KAMH.competence(x, False) == pm.step_methods.compound.Competence.COMPATIBLE


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"subsample_size": 0}, "subsample_size"),
        ({"gamma": -1.0}, "gamma"),
        ({"gamma": float("nan")}, "gamma"),
        ({"nu2": 0.0}, "nu2"),
        ({"target_accept": 1.5}, "target_accept"),
        ({"refresh_interval": 0}, "refresh_interval"),
        ({"min_history": 1}, "min_history"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    with correlated_gaussian_model():
        with pytest.raises(ValueError, match=match):
            KAMH(**kwargs)


def test_nan_proposal_is_rejection_not_crash():
    """A log density that is NaN on half the space: proposals there are rejected."""
    with pm.Model() as model:
        x = pm.Flat("x")
        pm.Potential("half", pt.switch(x > 0, pt.nan, -0.5 * x**2))
        idata = pm.sample(
            step=KAMH(),
            tune=300,
            draws=300,
            chains=1,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
            initvals={"x": -1.0},
        )
    assert np.all(idata.posterior.x.values <= 0)
    assert model is not None


def test_pickle_round_trip_steps_identically():
    """A cloudpickled step (as sent to spawn/forkserver workers) makes the same transitions."""
    model = correlated_gaussian_model()
    with model:
        step = KAMH(min_history=20)
    clone = pickle.loads(cloudpickle.dumps(step))
    point = model.initial_point()
    runs = []
    for candidate in (step, clone):
        candidate.setup_chain(np.random.default_rng(9), tune=100, draws=50)
        current, draws = dict(point), []
        for _ in range(150):
            current, _ = candidate.step(current)
            draws.append(current["x"])
        runs.append(np.array(draws))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert clone.chain.subsample is not None  # the KAMH phase was reached


def test_frozen_after_tuning():
    """By default the kernel is fixed after tuning: ν², γ and the lengthscale stop changing."""
    model = correlated_gaussian_model()
    with model:
        idata = pm.sample(
            step=KAMH(),
            tune=500,
            draws=300,
            chains=1,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    for name in ("nu2", "gamma", "lengthscale"):
        values = idata.sample_stats[name].values
        assert np.all(values == values[0, 0]), name


def test_diminishing_adaptation_keeps_adapting():
    model = correlated_gaussian_model()
    with model:
        idata = pm.sample(
            step=KAMH(adapt_after_tuning=True),
            tune=300,
            draws=300,
            chains=1,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    assert np.unique(idata.sample_stats.nu2.values).size > 10
