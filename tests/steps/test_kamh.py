"""KAMH and AdaptiveMetropolis: exactness, pm.sample integration, bad input."""

from __future__ import annotations

import pickle

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_kernel_steps import KAMH, AdaptiveMetropolis, GaussianKernel
from pymc_kernel_steps.core import gaussian_logpdf, kamh_covariance

from ..helpers import (
    CORRELATED_COV,
    CORRELATED_MEAN,
    correlated_gaussian_model,
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
