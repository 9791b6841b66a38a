"""pseudo_marginal_potential: exactness, reuse of the current estimate, reproducibility, errors.

The statistical tests sample posteriors whose marginal likelihood is known in closed form while
the sampler only sees a noisy unbiased estimate of it:

- a latent-variable model ``y_ij | z_ij ~ N(z_ij, 1)``, ``z_ij | θ_i ~ N(θ_i, 1)`` whose
  likelihood is estimated by importance sampling from the latent prior (marginally
  ``y_ij | θ_i ~ N(θ_i, 2)``);
- a Gaussian likelihood multiplied by mean-one log-normal noise,
  ``log L̂ = log L(θ) + σ Z − σ²/2``, ``Z ~ N(0, 1)``.

Both posteriors are Gaussian with known moments (MCSE z-tests).
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import warnings

import numpy as np
import pymc as pm
import pytensor
import pytest
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import reseed_rngs
from scipy.special import logsumexp

import pymc_kernel_steps
from pymc_kernel_steps import (
    KAMH,
    AdaptiveMetropolis,
    KMCLite,
    LogDensityError,
    pseudo_marginal_potential,
)
from pymc_kernel_steps.pseudo_marginal import LogLikelihoodEstimateOp, PseudoMarginalGradientError

from .helpers import assert_moments

# ---------------------------------------------------------------- models with a known posterior
PRIOR_SD = 3.0
Y = np.array(  # 2 parameters × 6 observations, fixed
    [[0.8, 1.9, -0.4, 1.1, 2.6, 0.3], [-1.7, -0.2, -2.4, -0.9, -1.1, -3.0]]
)


def latent_loglike_estimate(theta, rng, n_imp=4):
    """Importance-sampling estimate of ``Π_ij N(y_ij; θ_i, 2)`` with latent draws from the prior
    ``z ~ N(θ_i, 1)``: unbiased for each observation, so the product is unbiased."""
    z = theta[:, None, None] + rng.standard_normal((Y.shape[0], Y.shape[1], n_imp))
    log_p = -0.5 * (Y[..., None] - z) ** 2 - 0.5 * math.log(2 * math.pi)
    return float(np.sum(logsumexp(log_p, axis=-1) - math.log(n_imp)))


def latent_posterior():
    """Exact posterior mean and variance of each θ_i (prior N(0, PRIOR_SD²), y_ij ~ N(θ_i, 2))."""
    precision = 1.0 / PRIOR_SD**2 + Y.shape[1] / 2.0
    return (Y.sum(axis=1) / 2.0) / precision, np.full(Y.shape[0], 1.0 / precision)


def latent_model(**kwargs) -> pm.Model:
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, PRIOR_SD, shape=Y.shape[0])
        pseudo_marginal_potential("loglik", latent_loglike_estimate, theta, **kwargs)
    return model


LN_MEAN = np.array([1.0, -2.0])
LN_SD = np.array([0.5, 2.0])


def lognormal_noise_estimate(theta, rng, sigma):
    """``log N(LN_MEAN; θ, diag(LN_SD²)) + σ Z − σ²/2``: exp of it is unbiased."""
    exact = -0.5 * np.sum(((theta - LN_MEAN) / LN_SD) ** 2)
    return float(exact + sigma * rng.standard_normal() - 0.5 * sigma**2)


def lognormal_model(sigma) -> pm.Model:
    """Flat prior, so the posterior is N(LN_MEAN, diag(LN_SD²))."""
    with pm.Model() as model:
        theta = pm.Flat("theta", shape=2)
        pseudo_marginal_potential(
            "loglik", functools.partial(lognormal_noise_estimate, sigma=sigma), theta
        )
    return model


def sample(model, step_class, seed=1, tune=1000, draws=1000, chains=2, cores=1, **kwargs):
    logging.getLogger("pymc").setLevel(logging.ERROR)
    with model:
        return pm.sample(
            step=step_class(),
            tune=tune,
            draws=draws,
            chains=chains,
            cores=cores,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )


# ---------------------------------------------------------------- exactness
@pytest.mark.slow
@pytest.mark.parametrize("step_class", [AdaptiveMetropolis, KAMH], ids=lambda c: c.__name__)
def test_latent_variable_model_exact_posterior(step_class):
    idata = sample(latent_model(), step_class, seed=3, tune=1500, draws=3000)
    mean, var = latent_posterior()
    assert_moments(idata.posterior["theta"].values, mean, var)


@pytest.mark.slow
@pytest.mark.parametrize("step_class", [AdaptiveMetropolis, KMCLite], ids=lambda c: c.__name__)
def test_lognormal_noise_exact_posterior(step_class):
    # σ = 1.2: every accepted proposal carries its noise; re-estimating the current point (or
    # averaging the log estimates) would change the stationary distribution.
    idata = sample(lognormal_model(1.2), step_class, seed=5, tune=1500, draws=4000)
    assert_moments(idata.posterior["theta"].values, LN_MEAN, LN_SD**2)


def test_latent_estimator_is_unbiased_and_noisy():
    """The test estimator is what the exactness test needs: unbiased on the natural scale, and
    noisy enough (sd of the log estimate ≈ 1.2) that mishandling the noise would show."""
    rng = np.random.default_rng(0)
    theta = latent_posterior()[0]
    values = [latent_loglike_estimate(theta, rng) for _ in range(2000)]
    assert 0.3 < np.std(values) < 3.0
    exact = np.sum(-0.5 * (Y - theta[:, None]) ** 2 / 2.0 - 0.5 * math.log(4 * math.pi))
    # unbiased on the natural scale: log of the mean of the estimates ≈ the exact value
    log_mean = logsumexp(values) - math.log(len(values))
    assert abs(log_mean - exact) < 0.1
    assert np.mean(values) < exact  # Jensen: the mean of the logs is below


# ---------------------------------------------------------------- the graph and the steps
def _logp_function(model):
    from pymc.pytensorf import join_nonshared_inputs, make_shared_replacements

    point = model.initial_point()
    shared = make_shared_replacements(point, model.value_vars, model)
    [logp], x = join_nonshared_inputs(
        point=point, outputs=[model.logp()], inputs=model.value_vars, shared_inputs=shared
    )
    return pm_compile([x], logp, random_seed=False, return_updates=True)


def test_fresh_estimate_at_every_call_and_reseeding_reproduces():
    model = latent_model(seed=0)
    fn, updates = _logp_function(model)
    assert len(updates) == 1  # the estimator's generator, updated by the Op
    x = np.array([0.5, -1.0])
    first = [float(fn(x)) for _ in range(3)]
    assert len(set(first)) == 3
    reseed_rngs(list(updates), 42)
    again = [float(fn(x)) for _ in range(3)]
    reseed_rngs(list(updates), 42)
    assert [float(fn(x)) for _ in range(3)] == again
    assert np.array_equal(x, [0.5, -1.0])


def test_cvm_and_numba_modes_agree():
    x = np.array([0.5, -1.0])
    values = []
    for mode in (None, "CVM"):
        model = latent_model(seed=0)
        from pymc.pytensorf import join_nonshared_inputs, make_shared_replacements

        point = model.initial_point()
        shared = make_shared_replacements(point, model.value_vars, model)
        [logp], inp = join_nonshared_inputs(
            point=point, outputs=[model.logp()], inputs=model.value_vars, shared_inputs=shared
        )
        kwargs = {} if mode is None else {"mode": mode}
        fn, updates = pm_compile([inp], logp, random_seed=False, return_updates=True, **kwargs)
        reseed_rngs(list(updates), 7)
        values.append([float(fn(x)) for _ in range(3)])
    assert values[0] == values[1]


def test_steps_see_a_noisy_log_density():
    model = latent_model()
    with model:
        step = AdaptiveMetropolis()
    assert step.noisy_logp
    assert "model_logp" not in step.stats_dtypes_shapes


def _op(model) -> LogLikelihoodEstimateOp:
    from pytensor.graph.traversal import ancestors

    ops = {
        var.owner.op
        for var in ancestors([model.logp()])
        if var.owner is not None and isinstance(var.owner.op, LogLikelihoodEstimateOp)
    }
    assert len(ops) == 1
    return ops.pop()


def test_one_estimate_per_iteration_the_current_one_is_kept():
    model = latent_model()
    op = _op(model)
    with model:
        step = AdaptiveMetropolis()
    start = model.initial_point()["theta"]
    step.setup_chain(np.random.default_rng(0), tune=50, draws=50)
    from pymc.blocking import DictToArrayBijection

    q = DictToArrayBijection.map({"theta": start})
    op.reset()
    accepted = 0
    for _ in range(100):
        q, [stats] = step.astep(q)
        accepted += stats["accepted"]
    assert 0 < accepted < 100  # some rejections: a re-estimate of the current point would show
    assert op.n_calls == 100 + 1  # one per iteration, plus the first current point


def test_one_estimate_per_iteration_through_pm_sample():
    calls = []

    def counted(theta, rng):
        calls.append(theta.copy())
        return latent_loglike_estimate(theta, rng)

    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, PRIOR_SD, shape=2)
        pseudo_marginal_potential("loglik", counted, theta)
    assert len(calls) == 1  # the check call
    extra = []
    for draws in (60, 150):
        calls.clear()
        idata = sample(
            model, AdaptiveMetropolis, tune=100, draws=draws, chains=1, discard_tuned_samples=False
        )
        evaluations = int(idata.sample_stats["logp_evals"].sum()) + int(
            idata.warmup_sample_stats["logp_evals"].sum()
        )
        assert evaluations == 100 + draws + 1  # one per iteration, plus the first current point
        extra.append(len(calls) - evaluations)
    # PyMC's own checks of the initial point: a fixed number of calls, whatever the draws
    assert extra[0] == extra[1] <= 2


# ---------------------------------------------------------------- reproducibility
def _draws(seed, cores, step_class=AdaptiveMetropolis):
    idata = sample(latent_model(), step_class, seed=seed, tune=150, draws=100, cores=cores)
    return idata.posterior["theta"].values


@pytest.mark.parametrize("cores", [1, 2])
def test_random_seed_reproduces_the_draws(cores):
    first = _draws(11, cores)
    assert np.array_equal(first, _draws(11, cores))
    assert not np.array_equal(first, _draws(12, cores))
    assert not np.array_equal(first[0], first[1])  # the chains' estimators are seeded apart


def test_same_draws_with_one_and_two_cores():
    assert np.array_equal(_draws(11, 1, KAMH), _draws(11, 2, KAMH))


# ---------------------------------------------------------------- NaN and -inf estimates
class BadAbove:
    """Returns ``bad`` where θ₀ > 1 (and a valid estimate elsewhere); counts those calls."""

    def __init__(self, bad):
        self.bad = bad
        self.bad_calls = 0

    def __call__(self, theta, rng):
        if theta[0] > 1.0:
            self.bad_calls += 1
            return self.bad
        return lognormal_noise_estimate(theta, rng, sigma=0.5)


@pytest.mark.parametrize("bad", [math.nan, -math.inf], ids=["nan", "-inf"])
def test_nan_and_minus_inf_estimates_are_rejections(bad):
    estimator = BadAbove(bad)
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 1.0, shape=2)
        pseudo_marginal_potential("loglik", estimator, theta)
    idata = sample(model, AdaptiveMetropolis, tune=300, draws=300, discard_tuned_samples=False)
    assert estimator.bad_calls > 10
    nan_stats = int(idata.sample_stats["logp_nan"].sum()) + int(
        idata.warmup_sample_stats["logp_nan"].sum()
    )
    if math.isnan(bad):
        assert nan_stats == estimator.bad_calls  # every NaN estimate counted, nothing else
    else:
        assert nan_stats == 0  # -inf is an ordinary rejection
    for group in (idata.posterior, idata.warmup_posterior):
        assert np.all(group["theta"].values[..., 0] <= 1.0)


# ---------------------------------------------------------------- a forgotten step=
def test_plain_pm_sample_refuses_a_pseudo_marginal_model():
    """Without ``step=`` PyMC would assign ``Slice``, which re-estimates the current point and
    silently samples a wrong posterior: a clear error names the potential and our steps."""
    model = latent_model()
    with model, pytest.raises(PseudoMarginalGradientError) as info:
        pm.sample(tune=10, draws=10, chains=1, progressbar=False)
    message = str(info.value)
    assert "'loglik'" in message and "step=KMCLite()" in message
    with pytest.raises(PseudoMarginalGradientError):  # and find_MAP, ADVI, NUTS
        pytensor.grad(model.logp(), model.value_vars[0])


def test_other_variables_still_get_pymcs_steps():
    """A variable the estimate does not depend on is assigned by PyMC (NUTS) as before, with a
    warning: NUTS draws a fresh estimate at every evaluation, and ours re-estimates its current
    point when NUTS moves, so the run is not exact. (A few iterations: NUTS's Hamiltonian
    includes the noisy estimate, so its trees run to their maximum depth, about 600 estimates
    an iteration.)"""
    with latent_model():
        pm.Normal("other")
        with pytest.warns(UserWarning, match=r"not sample \['other'\]"):
            step = KMCLite([pm.modelcontext(None)["theta"]])
        idata = pm.sample(
            step=step,
            tune=10,
            draws=10,
            chains=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    assert "other" in idata.posterior and "diverging" in idata.sample_stats


def test_a_step_that_does_not_sample_every_variable_of_a_noisy_model_is_warned():
    """In a compound step neither half is exact: ours re-estimates its current point when the
    others move, and theirs draw a fresh estimate at every evaluation (docs/usage.md). Only a
    step that samples every variable is not warned."""
    with pm.Model():
        mu = pm.Normal("mu", shape=2)
        s = pm.HalfNormal("s")
        pm.Normal("other")
        pseudo_marginal_potential("loglik", good_estimate, [mu, s])
        with pytest.warns(UserWarning, match=r"^KAMH: .*not sample \['other', 's_log__'\]"):
            KAMH([mu])
        with pytest.warns(UserWarning, match=r"^AdaptiveMetropolis: .*not sample \['other'\]"):
            AdaptiveMetropolis([mu, s])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            KAMH()


def test_the_warning_with_a_discrete_variable_says_to_marginalise_it():
    with pm.Model():
        mu = pm.Normal("mu", shape=2)
        pm.Bernoulli("z", 0.5)
        pseudo_marginal_potential("loglik", good_estimate, mu)
        with pytest.warns(UserWarning, match=r"not sample \['z'\].*discrete \['z'\].*marginal"):
            KAMH()
    # the warning points at the user's line, not at the package
    with pm.Model():
        mu = pm.Normal("mu", shape=2)
        pm.Bernoulli("z", 0.5)
        pseudo_marginal_potential("loglik", good_estimate, mu)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warning_line = inspect.currentframe().f_lineno + 1
            KAMH()
    [record] = [w for w in caught if "pseudo-marginal" in str(w.message)]
    assert record.filename == __file__ and record.lineno == warning_line


# ---------------------------------------------------------------- bad input
def good_estimate(theta, rng):
    return float(-0.5 * theta @ theta + 0.1 * rng.standard_normal())


def test_exported():
    assert pymc_kernel_steps.pseudo_marginal_potential is pseudo_marginal_potential
    assert "pseudo_marginal_potential" in pymc_kernel_steps.__all__


@pytest.mark.parametrize("estimator", [None, 3.0, "loglik"])
def test_not_callable(estimator):
    with pm.Model():
        x = pm.Normal("x")
        with pytest.raises(TypeError, match="`loglike_estimate` must be a callable"):
            pseudo_marginal_potential("loglik", estimator, x)


def test_callable_of_the_wrong_arity():
    with pm.Model():
        x = pm.Normal("x")
        with pytest.raises(TypeError, match=r"two positional arguments \(theta, rng\)"):
            pseudo_marginal_potential("loglik", lambda theta: 0.0, x)


def test_name_must_be_a_string():
    with pm.Model():
        x = pm.Normal("x")
        with pytest.raises(TypeError, match="`name`"):
            pseudo_marginal_potential(good_estimate, good_estimate, x)


def test_check_must_be_a_bool():
    with pm.Model():
        x = pm.Normal("x")
        with pytest.raises(TypeError, match="`check`"):
            pseudo_marginal_potential("loglik", good_estimate, x, check="no")


def test_theta_of_more_than_one_dimension():
    with pm.Model():
        x = pm.Normal("x", shape=(2, 3))
        with pytest.raises(ValueError, match=r"`theta` must be a scalar or a vector.*x has 2"):
            pseudo_marginal_potential("loglik", good_estimate, x)


@pytest.mark.parametrize(
    "theta, error, match",
    [
        ("abc", TypeError, "`theta` must be"),
        ([], ValueError, "`theta` is an empty list"),
        (np.zeros(0), ValueError, "`theta` has no elements"),
        (np.array([1 + 2j]), TypeError, "`theta` must be real numbers"),
    ],
)
def test_bad_theta(theta, error, match):
    with pm.Model():
        with pytest.raises(error, match=match):
            pseudo_marginal_potential("loglik", good_estimate, theta)


def test_theta_list_is_concatenated_in_order_as_floats():
    seen = []

    def recording(theta, rng):
        seen.append(theta.copy())
        return 0.0

    with pm.Model():
        a = pm.Normal("a", 1.0, 1.0)
        b = pm.Normal("b", [2.0, 3.0], 1.0, shape=2)
        n = pm.Poisson("n", 4.0)
        pseudo_marginal_potential("loglik", recording, [a, b, n])
    [theta] = seen
    assert theta.dtype == np.float64
    np.testing.assert_allclose(theta, [1.0, 2.0, 3.0, 4.0])


@pytest.mark.parametrize(
    "returned, error, match",
    [
        (np.zeros(2), ValueError, r"returned an array of shape \(2,\).*must return one float"),
        (np.zeros(1), ValueError, r"returned an array of shape \(1,\)"),
        (3, TypeError, "must return a float"),
        (None, TypeError, "must return a float"),
        (np.int64(3), TypeError, "must return a float"),
        (True, TypeError, "must return a float"),
        (1 + 1j, TypeError, "must return a float"),
        (math.inf, ValueError, r"returned \+inf"),
    ],
)
def test_bad_return_at_construction(returned, error, match):
    with pm.Model():
        x = pm.Normal("x", 0.5)
        with pytest.raises(error, match=f"`loglike_estimate` of 'loglik' at theta=.0.5.*{match}"):
            pseudo_marginal_potential("loglik", lambda theta, rng: returned, x)


@pytest.mark.parametrize("returned", [-1.5, np.float32(-1.5), np.array(-1.5), -math.inf, math.nan])
def test_valid_returns(returned):
    with pm.Model():
        x = pm.Normal("x")
        pseudo_marginal_potential("loglik", lambda theta, rng: returned, x)


def test_estimator_error_at_construction_is_annotated():
    def failing(theta, rng):
        raise ZeroDivisionError("boom")

    with pm.Model():
        x = pm.Normal("x")
        with pytest.raises(ZeroDivisionError, match="boom") as info:
            pseudo_marginal_potential("loglik", failing, x)
    assert any("check=False" in note for note in info.value.__notes__)


def test_check_false_does_not_call():
    calls = []
    with pm.Model():
        x = pm.Normal("x")
        pseudo_marginal_potential(
            "loglik", lambda theta, rng: calls.append(1) or np.zeros(3), x, check=False
        )
    assert calls == []


def array_above_half(theta, rng):
    return np.zeros(2) if theta[0] > 0.5 else -0.5 * float(theta @ theta)


def test_bad_return_while_sampling_names_the_estimator():
    with pm.Model() as model:
        x = pm.Normal("x", shape=2)
        pseudo_marginal_potential("loglik", array_above_half, x)
    with pytest.raises(LogDensityError, match="AdaptiveMetropolis, iteration") as info:
        sample(model, AdaptiveMetropolis, tune=200, draws=10, chains=1)
    assert isinstance(info.value.__cause__, ValueError)
    assert "`loglike_estimate` of 'loglik'" in str(info.value.__cause__)


def test_estimator_cannot_change_the_chains_point():
    def vandal(theta, rng):
        theta[:] = 99.0
        return 0.0

    with pm.Model() as model:
        x = pm.Normal("x", shape=2)
        pseudo_marginal_potential("loglik", vandal, x)
    fn, _ = _logp_function(model)
    point = np.array([0.25, -0.5])
    fn(point)
    assert np.array_equal(point, [0.25, -0.5])


# ---------------------------------------------------------------- the documentation runs
def _usage_section_blocks():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "usage.md").read_text()
    start = text.index("## Pseudo-marginal likelihoods")
    end = text.index("\n## ", start + 1)
    section = text[start:end]
    return [block.split("```", 1)[0] for block in section.split("```python\n")[1:]]


@pytest.mark.slow
def test_usage_examples_run_and_recover_the_posterior():
    from arviz import mcse

    blocks = _usage_section_blocks()
    assert len(blocks) == 2
    logging.getLogger("pymc").setLevel(logging.ERROR)

    namespace = {"__name__": "usage_example"}
    exec(compile(blocks[0], "docs/usage.md (pseudo-marginal example)", "exec"), namespace)
    draws = namespace["idata"].posterior["mu"].values
    exact_mean = namespace["y"].sum() / 2 / namespace["precision"]
    assert 1.0 < namespace["sd"] < 1.7  # the claim printed next to it
    assert abs(draws.mean() - exact_mean) / mcse(draws, method="mean") < 4

    namespace = {"__name__": "usage_example_pytensor"}
    exec(compile(blocks[1], "docs/usage.md (PyTensor estimator)", "exec"), namespace)
    draws = namespace["idata"].posterior["x"].values
    z = (draws.mean(axis=(0, 1)) - 0.5) / mcse(draws, method="mean")
    assert np.all(np.abs(z) < 4), z
