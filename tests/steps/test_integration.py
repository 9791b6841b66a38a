"""The PyMC step-method contract and exactness, for every step class (see conftest.py)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

from pymc_kernel_steps import KAMH, KMCFinite, KMCLite

from ..helpers import (
    CORRELATED_COV,
    CORRELATED_MEAN,
    NULL_MOVES,
    assert_moments,
    banana_model,
    correlated_gaussian_model,
    posterior_array,
)

QUIET = dict(progressbar=False, compute_convergence_checks=False)


def _sample(model, step_class, **kwargs):
    options = dict(tune=1000, draws=3000, chains=2, cores=1, random_seed=7, **QUIET)
    options.update(kwargs)
    with model:
        return pm.sample(step=step_class(), **options)


def noisy_gaussian_model(noise_sd=0.5):
    """x ~ N(0, 1), y | x ~ N(x, 1), y = 1: posterior N(0.5, 0.5). The likelihood is estimated
    with unbiased multiplicative log-normal noise drawn inside the logp graph (pseudo-marginal)."""
    rng = pytensor.shared(np.random.default_rng(0))
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0)
        noise = pt.random.normal(-0.5 * noise_sd**2, noise_sd, rng=rng)
        pm.Potential("noisy_likelihood", pm.logp(pm.Normal.dist(x, 1.0), 1.0) + noise)
    return model


# ---------------------------------------------------------------- exactness
@pytest.mark.slow
def test_correlated_gaussian_moments(step_class):
    idata = _sample(correlated_gaussian_model(), step_class, draws=4000)
    assert_moments(posterior_array(idata), CORRELATED_MEAN, np.diag(CORRELATED_COV))


@pytest.mark.slow
def test_banana_moments(step_class):
    """The 2-d banana untwisted: x₁ ~ N(0, V) and x₂ + b(x₁² − V) ~ N(0, 1). (The raw moments of
    x₂ are dominated by the rarely visited ends of the arms, so their MCSE from a bulk ESS is not
    trustworthy, for NUTS as for us.)"""
    b, V = 0.03, 100.0
    if step_class in (KMCLite, KMCFinite):
        # On Haario's banana (b = 0.03, V = 100) a KMC surrogate frozen before the chain has
        # seen the far ends of the arms makes visits there sticky: exact (HMC with the true
        # gradient and the same settings shows the same), but the tails of x₁ mix too slowly for
        # a z-test at this budget. Test exactness on a banana with shorter arms (x₁ ~ N(0, 4),
        # twist 0.3 x₁²; benchmarks/ measures the long-armed one).
        b, V = 0.3, 4.0
    # KAMH's x₁ (the long axis) mixes slowest, and how slowly depends on the lengthscale each
    # chain's tuning picks (4 chains × 9000 draws: min bulk ESS 93 to 836 over seeds 7 and 8,
    # with and without the scouts): give it draws enough for an ESS > 100
    draws = 12000 if step_class is KAMH else 6000
    idata = _sample(banana_model(dim=2, b=b, V=V), step_class, tune=3000, draws=draws, chains=4)
    x = posterior_array(idata)
    untwisted = np.stack([x[..., 0], x[..., 1] + b * (x[..., 0] ** 2 - V)], axis=-1)
    assert_moments(untwisted, [0.0, 0.0], [V, 1.0])


@pytest.mark.slow
def test_pseudo_marginal_posterior(step_class):
    idata = _sample(noisy_gaussian_model(), step_class, tune=1000, draws=6000)
    assert_moments(posterior_array(idata), 0.5, 0.5)


def test_pseudo_marginal_one_evaluation_and_reproducible(step_class):
    model = noisy_gaussian_model()
    with model:
        step = step_class()
    assert step.noisy_logp
    kwargs = dict(tune=300, draws=300, chains=1, cores=1, discard_tuned_samples=False, **QUIET)
    with model:
        first = pm.sample(step=step, random_seed=3, **kwargs)
        second = pm.sample(step=step, random_seed=3, **kwargs)
        third = pm.sample(step=step, random_seed=4, **kwargs)

    def stat(name):
        return np.concatenate(
            [
                first.warmup_sample_stats[name].values.ravel(),
                first.sample_stats[name].values.ravel(),
            ]
        )

    evals = stat("logp_evals")
    # the first iteration evaluates the start point too; afterwards only proposals are evaluated:
    # all of them but diverged trajectories and null snooker moves (onto the state itself),
    # each accounted for below. (KMCFinite's learned mixture diverges in about 6 % of these 600
    # short-tuned iterations on this noisy target, the former fixed mixture in under 5 %.)
    assert evals[0] == 2 and np.all(evals[1:] <= 1) and evals[1:].mean() > 0.9
    skipped = evals[1:] == 0
    if skipped.any():
        null = np.isin(stat("move")[1:], NULL_MOVES)
        diverging = stat("diverging")[1:].astype(bool) if "diverging" in first.sample_stats else 0
        assert np.all(~skipped | null | diverging)
    assert "model_logp" not in first.sample_stats  # a noisy estimate is not the model's logp
    np.testing.assert_array_equal(first.posterior.x.values, second.posterior.x.values)
    assert not np.array_equal(first.posterior.x.values, third.posterior.x.values)


# ---------------------------------------------------------------- pm.sample integration
def test_parallel_chains_reproducible_and_distinct(step_class):
    model = correlated_gaussian_model()
    kwargs = dict(tune=200, draws=200, chains=2, cores=2, **QUIET)
    with model:
        a = pm.sample(step=step_class(), random_seed=11, **kwargs)
        b = pm.sample(step=step_class(), random_seed=11, **kwargs)
    np.testing.assert_array_equal(a.posterior.x.values, b.posterior.x.values)
    assert not np.array_equal(a.posterior.x.values[0], a.posterior.x.values[1])


def test_sequential_chains_do_not_leak_state(step_class):
    """Reusing one step object for sequential chains equals fresh steps: no state leaks."""
    model = correlated_gaussian_model()
    kwargs = dict(tune=150, draws=100, cores=1, **QUIET)
    with model:
        step = step_class()
        both = pm.sample(step=step, chains=2, random_seed=5, **kwargs)
        again = pm.sample(step=step_class(), chains=2, random_seed=5, **kwargs)
    np.testing.assert_array_equal(both.posterior.x.values, again.posterior.x.values)
    assert step.chain.iteration == 250  # the state belongs to the last chain only


def test_stats_present_with_declared_dtypes(step_class):
    model = correlated_gaussian_model()
    with model:
        step = step_class()
        trace = pm.sample(
            step=step,
            tune=300,
            draws=100,
            chains=1,
            cores=1,
            return_inferencedata=False,
            discard_tuned_samples=False,
            **QUIET,
        )
    for name, (dtype, _) in step.stats_dtypes_shapes.items():
        values = trace.get_sampler_stats(name)
        if name == "warning":  # objects, None except on a troubled chain's last iteration
            # (300 tuning iterations can be too few for the learned moves to settle: KAMH was
            # told so in 3 of 8 seeds)
            assert values.shape[0] == 400 and all(w is None for w in values.ravel()[:-1])
            continue
        assert values.dtype == np.dtype(dtype), name
        assert values.shape == (400,), name
    np.testing.assert_array_equal(trace.get_sampler_stats("tune"), np.arange(400) < 300)
    accepted = trace.get_sampler_stats("accepted")
    assert set(np.unique(accepted)) <= {0.0, 1.0} and 0 < accepted.mean() < 1


def test_compound_with_nuts_is_correct(step_class):
    """step=[ours([a]), NUTS([b])] on a ~ N(0,1), b ~ N(a, 1), y ~ N(b, 1), y = 1.5."""
    with pm.Model():
        a = pm.Normal("a", 0.0, 1.0)
        b = pm.Normal("b", a, 1.0)
        pm.Normal("y", b, 1.0, observed=1.5)
        steps = [step_class([a]), pm.NUTS([b])]
        idata = pm.sample(
            step=steps, tune=1000, draws=4000, chains=2, cores=1, random_seed=2, **QUIET
        )
    # log p = -a²/2 - (b - a)²/2 - (y - b)²/2: precision [[2, -1], [-1, 2]], linear term (0, y)
    cov = np.linalg.inv(np.array([[2.0, -1.0], [-1.0, 2.0]]))
    mean = cov @ np.array([0.0, 1.5])
    draws = np.stack([idata.posterior.a.values, idata.posterior.b.values], axis=-1)
    assert_moments(draws, mean, np.diag(cov))
    # b changes between our steps, so the cached log density at a is recomputed: 2 evaluations
    assert idata.sample_stats.logp_evals.values.max() == 2


def test_discrete_variable_raises(step_class):
    with pm.Model():
        pm.Poisson("k", 3.0)
        with pytest.raises(ValueError, match="'k' is discrete"):
            step_class()


def test_nan_log_density_is_a_rejection(step_class):
    """A log density that is NaN on half the line: proposals there are rejected, no crash."""
    with pm.Model():
        x = pm.Flat("x")
        pm.Potential("half", pt.switch(x > 0, np.nan, -0.5 * x**2))
        idata = pm.sample(
            step=step_class(),
            tune=300,
            draws=300,
            chains=1,
            cores=1,
            random_seed=1,
            initvals={"x": -1.0},
            **QUIET,
        )
    draws = idata.posterior.x.values
    assert np.all(draws <= 0)
    assert np.unique(draws).size > 20  # it moved
