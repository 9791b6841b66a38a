"""The steps' climb before tuning (``warmup=[Climb(), ...]``): when a chain climbs, what it
counts, that a start in the bulk is untouched, and that the draws stay exact."""

from __future__ import annotations

import cloudpickle
import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps import CKAM, KAMH, AdaptiveHMC, AdaptiveMetropolis, KMCFinite, KMCLite
from pymc_kernel_steps.core import climb_budget
from pymc_kernel_steps.options import Climb, Scouts, Walkers
from pymc_kernel_steps_bench._util import sample_quietly
from tests.helpers import assert_moments

CLIMBING = [KMCLite, KMCFinite, KAMH]

#: a Gaussian mean with a known posterior, started 400 posterior sds away
DATA = np.random.default_rng(0).normal(40.0, 2.0, size=(100, 3))
PRIOR_SD = 100.0


def _far_start_model() -> pm.Model:
    with pm.Model() as model:
        pm.Normal("mu", 0.0, PRIOR_SD, shape=3)
        pm.Normal("y", model["mu"], 2.0, observed=DATA)
    return model


def _posterior():
    precision = 1 / PRIOR_SD**2 + len(DATA) / 4.0
    return DATA.sum(axis=0) / 4.0 / precision, np.full(3, 1 / precision)


def _first_iteration(step, model, tune=1000):
    step.setup_chain(np.random.default_rng(1), tune=tune, draws=100)
    start = model.initial_point()
    block = {var.name: start[var.name] for var in step.vars}
    point, [stats] = step.astep(pm.blocking.DictToArrayBijection.map(block))
    return point, stats


@pytest.mark.parametrize("step_class", CLIMBING)
def test_a_far_start_climbs_and_counts_the_climb(step_class):
    model = _far_start_model()
    with model:
        step = step_class(warmup=[Climb()])
    planned = step.start_evaluations(model.initial_point())
    point, stats = _first_iteration(step, model)
    chain = step.chain
    assert 0 < chain.climb_evaluations <= climb_budget(3)
    # the start, the climb, the scales at both ends and the first proposal
    assert stats["logp_evals"] == planned + 1
    assert planned > 1 + chain.climb_evaluations
    # the chain begins in the posterior's bulk, not 400 sds away
    mean, variance = _posterior()
    assert np.all(np.abs(chain.history.points[0] - mean) < 10 * np.sqrt(variance))


@pytest.mark.parametrize("step_class", CLIMBING)
def test_climb_false_keeps_pymc_s_start(step_class):
    model = _far_start_model()
    with model:
        step = step_class(warmup=[])
    planned = step.start_evaluations(model.initial_point())
    _, stats = _first_iteration(step, model)
    assert step.chain.climb_evaluations == 0
    assert stats["logp_evals"] == planned + 1
    assert np.all(np.abs(step.chain.history.points[0]) < 5)


@pytest.mark.parametrize("step_class", CLIMBING)
def test_a_start_in_the_bulk_is_untouched(step_class):
    """Same seed with and without ``climb``: the same draws, since the start is not far."""
    with pm.Model() as model:
        pm.Normal("x", 0.3, 1.0, shape=2)
    with model:
        draws = [
            sample_quietly(model, step_class(warmup=[Climb()] if climb else []), 300, 100, 1, 5)
            .posterior["x"]
            .values
            for climb in (True, False)
        ]
    np.testing.assert_array_equal(draws[0], draws[1])


def test_no_climb_without_tuning():
    model = _far_start_model()
    with model:
        step = KMCLite()
    _first_iteration(step, model, tune=0)
    assert step.chain.start_far_from_posterior
    assert step.chain.climb_evaluations == 0


def test_no_climb_in_compound_sampling():
    """With another step moving the rest of the model, the block keeps PyMC's start."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, PRIOR_SD, shape=3)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu, sigma, observed=DATA)
        step = KMCLite([mu])
    _first_iteration(step, model)
    assert step.chain.start_far_from_posterior
    assert step.chain.climb_evaluations == 0


@pytest.mark.parametrize("step_class", [AdaptiveMetropolis])
def test_the_baselines_keep_pymc_s_start_by_default(step_class):
    model = _far_start_model()
    with model:
        step = step_class()
        assert not step.climb
        assert step_class(warmup=[Climb()]).climb
        assert not CKAM().climb
    _first_iteration(step, model)
    assert step.chain.climb_evaluations == 0


@pytest.mark.parametrize("step_class", [CKAM, AdaptiveHMC])
def test_steps_with_their_own_start_take_no_climb_argument(step_class):
    with _far_start_model():
        with pytest.raises(TypeError, match="climb"):
            step_class(climb=True)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_climb_must_be_a_bool(value):
    with _far_start_model():
        with pytest.raises((TypeError, ValueError), match="climb"):
            KMCLite(climb=value)


def test_the_climb_survives_pickling():
    with _far_start_model():
        step = KAMH(warmup=[Scouts(4), Walkers(4)])
    assert cloudpickle.loads(cloudpickle.dumps(step)).climb is False


@pytest.mark.parametrize("step_class", [KMCLite, KAMH])
def test_draws_after_a_climb_have_the_posterior_s_moments(step_class):
    model = _far_start_model()
    mean, variance = _posterior()
    with model:
        idata = sample_quietly(model, step_class(), 1000, 2000, 2, 11)
    assert_moments(idata.posterior["mu"].values, mean, variance)
