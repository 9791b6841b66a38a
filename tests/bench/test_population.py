"""SMC's starting population: from the prior, whatever the variables' initvals."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
from scipy import stats

from pymc_kernel_steps_bench.population import prior_population, run_smc


def _truncated_model():
    with pm.Model() as model:
        theta = pm.TruncatedNormal(
            "theta", mu=1.0, sigma=0.5, lower=0.0, shape=2, initval=np.array([1.0, 1.0])
        )
        pm.Normal("y", theta.sum(), 1.0, observed=2.0)
    return model


def test_the_population_comes_from_the_prior_not_the_initval():
    n = 4000
    population = prior_population(_truncated_model(), n, random_seed=0)
    (values,) = population.values()
    assert values.shape == (n, 2)
    theta = np.exp(values)  # the lower-bounded transform is a log
    truth = stats.truncnorm(-2.0, np.inf, loc=1.0, scale=0.5)
    z = (theta.mean(axis=0) - truth.mean()) / (truth.std() / math.sqrt(n))
    assert np.all(np.abs(z) < 4.5), z


def test_an_ordered_variable_gets_only_ordered_draws():
    with pm.Model() as model:
        pm.Normal(
            "mu",
            0.0,
            2.0,
            shape=2,
            transform=pm.distributions.transforms.ordered,
            initval=np.array([-1.0, 1.0]),
        )
    (values,) = prior_population(model, 2000, random_seed=1).values()
    assert np.all(np.isfinite(values))
    mu = model.rvs_to_transforms[model["mu"]].backward(values).eval()
    assert np.all(np.diff(mu, axis=-1) > 0)
    # the lower of two i.i.d. N(0, 2²): mean −2/√π
    assert abs(mu[:, 0].mean() + 2 / math.sqrt(math.pi)) < 4.5 * 2 / math.sqrt(2000)


def test_smc_moves_a_variable_that_has_an_initval():
    out = run_smc(_truncated_model(), 200, random_seed=3)
    theta = np.asarray(out["idata"]["posterior"]["theta"].values).reshape(-1, 2)
    assert np.all(theta.std(axis=0) > 0.1)
