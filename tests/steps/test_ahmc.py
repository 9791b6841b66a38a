"""AdaptiveHMC: exactness (replayed acceptance), moments, tuning, the PyMC contract, bad input."""

from __future__ import annotations

import math
import pickle

import cloudpickle
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats as stats_module

from pymc_kernel_steps import KAMH, AdaptiveHMC, LogDensityError
from pymc_kernel_steps.options import BayesianTuning
from pymc_kernel_steps_bench.targets import CountingLogp

from ..helpers import CORRELATED_COV, CORRELATED_MEAN, assert_moments, correlated_gaussian_model

QUIET = dict(progressbar=False, compute_convergence_checks=False)


def _sample(model, step=None, **kwargs):
    options = dict(tune=400, draws=400, chains=1, cores=1, random_seed=7, **QUIET)
    options.update(kwargs)
    with model:
        return pm.sample(step=AdaptiveHMC() if step is None else step, **options)


# ---------------------------------------------------------------- exactness
# The transition itself (leapfrog, the Hamiltonian ratio, its reversal with explicit momenta) is
# checked in tests/core/test_hmc.py; here the step's use of it, through its stats and states.
def _tuned_step():
    model = correlated_gaussian_model()
    with model:
        step = AdaptiveHMC()
        logp = model.compile_logp()
    step.setup_chain(np.random.default_rng(0), tune=300, draws=3000)
    point = model.initial_point()
    for _ in range(300):
        point, _ = step.step(point)
    step.stop_tuning()
    assert not np.allclose(step.chain.inv_mass, 1.0)  # the mass matrix was estimated
    return step, point, logp


def test_step_reports_the_hamiltonian_acceptance_of_its_transitions():
    """After tuning: each transition takes L_r ∈ {1..L} steps of the tuned ε (one evaluation
    each, the gradient at x carried over), is accepted with probability min(1, exp(−ΔH)) for
    the energy error ΔH it reports, moves to a new point exactly when accepted, and reports the
    model's own log density there."""
    step, point, logp = _tuned_step()
    chain = step.chain
    step_size, max_n_steps = chain.step_size, chain.max_n_steps
    outcomes = []
    for _ in range(40):
        x = point["x"].copy()
        point, [stats] = step.step(point)
        assert 1 <= stats["n_steps"] <= max_n_steps and stats["step_size"] == step_size
        assert stats["max_n_steps"] == max_n_steps and stats["tuning_window"] == -1
        assert stats["accept"] == pytest.approx(min(1.0, math.exp(-stats["energy_error"])))
        assert stats["logp_evals"] == stats["n_steps"]  # the gradient at x is carried over
        accepted = bool(stats["accepted"])
        assert accepted == (not np.array_equal(point["x"], x))
        assert stats["model_logp"] == pytest.approx(logp(point), rel=1e-10, abs=1e-10)
        outcomes.append(accepted)
    assert 0 < sum(outcomes) < 40


def test_step_transition_keeps_exact_draws_exact():
    """One transition of the tuned (frozen) step applied to exact draws of the target keeps them
    exact: the acceptance it uses is the Hamiltonian one (a wrong sign or a missing kinetic
    term would bias the moved draws)."""
    step, _, _ = _tuned_step()
    rng = np.random.default_rng(1)
    draws = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=3000)
    moved, accepted = [], 0
    for x in draws:
        new, [stats] = step.step({"x": x})
        moved.append(new["x"])
        accepted += stats["accepted"]
    assert 0.2 < accepted / len(draws) < 0.999
    white = np.linalg.solve(
        np.linalg.cholesky(CORRELATED_COV), (np.array(moved) - CORRELATED_MEAN).T
    ).T
    for column in white.T:
        assert stats_module.kstest(column, "norm").pvalue > 1e-3


@pytest.mark.slow
def test_correlated_gaussian_moments():
    idata = _sample(correlated_gaussian_model(), tune=1000, draws=3000, chains=2)
    assert_moments(idata.posterior.x.values, CORRELATED_MEAN, np.diag(CORRELATED_COV))


# eight schools, non-centred, τ ~ HalfNormal(5), μ ~ N(0, 5²): exact moments by quadrature over τ
SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools_model() -> pm.Model:
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 5.0)
        eta = pm.Normal("eta", 0.0, 1.0, shape=8)
        theta = pm.Deterministic("theta", mu + tau * eta)
        pm.Normal("y", theta, SCHOOLS_SIGMA, observed=SCHOOLS_Y)
    return model


def eight_schools_moments():
    """Posterior means and variances of (μ, τ, θ_1..8): given τ the posterior of (μ, θ) is
    Gaussian, and p(τ | y) ∝ p(τ) N(y; 0, diag(σ² + τ²) + 25·11ᵀ) is integrated on a fine grid."""
    tau = np.linspace(1e-6, 60.0, 60001)[:, None]
    s2 = SCHOOLS_SIGMA**2 + tau**2
    covariance_det = np.prod(s2, axis=1) * (1 + 25 * np.sum(1 / s2, axis=1))
    weighted = SCHOOLS_Y / s2
    quad = np.sum(SCHOOLS_Y**2 / s2, axis=1) - 25 * np.sum(weighted, 1) ** 2 / (
        1 + 25 * np.sum(1 / s2, axis=1)
    )  # yᵀ(D + 25·11ᵀ)⁻¹y by Sherman–Morrison
    log_post = -0.5 * tau[:, 0] ** 2 / 25 - 0.5 * np.log(covariance_det) - 0.5 * quad
    weights = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    mu_var = 1 / (1 / 25 + np.sum(1 / s2, axis=1))
    mu_mean = mu_var * np.sum(weighted, axis=1)
    shrink = SCHOOLS_SIGMA**2 / s2  # weight of μ in E[θ_j | μ, τ, y]
    theta_mean = (1 - shrink) * SCHOOLS_Y + shrink * mu_mean[:, None]
    theta_var = 1 / (1 / SCHOOLS_SIGMA**2 + 1 / tau**2) + shrink**2 * mu_var[:, None]
    conditional_mean = np.column_stack([mu_mean, tau[:, 0], theta_mean])
    conditional_var = np.column_stack([mu_var, np.zeros(len(tau)), theta_var])
    mean = weights @ conditional_mean
    variance = weights @ (conditional_var + conditional_mean**2) - mean**2
    return mean, variance


@pytest.mark.slow
def test_hierarchical_model_moments():
    idata = _sample(eight_schools_model(), tune=1000, draws=3000, chains=2, random_seed=3)
    posterior = idata.posterior
    draws = np.concatenate(
        [posterior.mu.values[..., None], posterior.tau.values[..., None], posterior.theta.values],
        axis=-1,
    )
    mean, variance = eight_schools_moments()
    assert_moments(draws, mean, variance)


# ---------------------------------------------------------------- tuning
def test_tuning_searches_the_box_then_freezes_the_best_parameters():
    model = correlated_gaussian_model()
    step_size_bounds, n_steps_bounds = (0.05, 0.9), (2, 12)
    with model:
        step = AdaptiveHMC(
            tuning=BayesianTuning(step_size_bounds=step_size_bounds, n_steps_bounds=n_steps_bounds)
        )
    idata = _sample(model, step, tune=1000, draws=300, discard_tuned_samples=False)
    warm, post = idata.warmup_sample_stats, idata.sample_stats
    for stats in (warm, post):
        eps, n_max = stats.step_size.values[0], stats.max_n_steps.values[0]
        assert np.all((eps >= 0.05) & (eps <= 0.9))
        assert np.all((n_max >= 2) & (n_max <= 12))
        assert np.all((stats.n_steps.values >= 1) & (stats.n_steps.values <= n_max))
    # windows of m = 1000 // 100 = 10 iterations, restarted after the mass-matrix updates
    windows = warm.tuning_window.values[0]
    np.testing.assert_array_equal(windows[:10], 0)
    assert windows[-1] == 99
    assert np.unique(warm.step_size.values[0]).size > 10  # the optimiser explored
    assert np.all(post.tuning_window.values == -1)
    assert np.unique(post.step_size.values).size == 1
    assert np.unique(post.max_n_steps.values).size == 1
    # the frozen parameters are among those tried in the last stage of tuning
    tried = set(zip(warm.step_size.values[0, 400:], warm.max_n_steps.values[0, 400:], strict=True))
    assert (float(post.step_size.values[0, 0]), int(post.max_n_steps.values[0, 0])) in tried
    assert 0.3 < float(post.accept.mean()) <= 1.0


def test_default_box_comes_from_the_step_size_search():
    model = correlated_gaussian_model()
    with model:
        step = AdaptiveHMC()
    _sample(model, step, tune=200, draws=10)
    box = step.chain.tuner.optimizer.box
    reference = step.chain.reference_step_size
    assert box.lower[0] == pytest.approx(0.1 * reference)
    assert box.upper[0] == pytest.approx(2 * reference)
    assert box.lower[1] == 1 and box.upper[1] == max(10, math.ceil(2 * math.pi / reference))


def _uncentred_regression():
    """Earnings in dollars on an uncentred height (as posteriordb's ``earnings-earn_height``,
    smaller): flat intercept and slope (correlation −0.998), a flat scale of about 19,000,
    started at 0 and 1; returns the model and the least-squares fit (the posterior mean of the
    coefficients) with its standard errors."""
    rng = np.random.default_rng(5)
    height = rng.normal(66.0, 4.0, size=300)
    earn = -60_000.0 + 1_260.0 * height + rng.normal(0.0, 19_000.0, size=300)
    design = np.column_stack([np.ones_like(height), height])
    fit, residuals, *_ = np.linalg.lstsq(design, earn, rcond=None)
    scale2 = float(residuals[0]) / (height.size - 2)
    se = np.sqrt(np.diag(scale2 * np.linalg.inv(design.T @ design)))
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=2)
        sigma = pm.HalfFlat("sigma")
        pm.Normal("earn", beta[0] + beta[1] * height, sigma, observed=earn)
    return model, fit, se, math.sqrt(scale2)


def test_start_far_from_an_uncentred_regression_finds_its_posterior():
    """From beta = 0, sigma = 1 the first transition flings sigma to millions, where the step
    size found at the start (10⁻⁷) is hopeless; after a far start the box is re-checked, the
    mass matrix is re-estimated in doubling windows and L may reach 100 while it is provisional,
    so the chain reaches the ridge (before: the intercept stayed within ±40 of 0, 6 sds away)."""
    model, fit, se, scale = _uncentred_regression()
    idata = _sample(model, tune=1000, draws=1000, random_seed=1)
    beta = idata.posterior.beta.values.reshape(-1, 2)
    np.testing.assert_array_less(np.abs(beta.mean(axis=0) - fit), 2 * se)
    assert float(idata.posterior.sigma.mean()) == pytest.approx(scale, rel=0.05)
    assert np.all(beta.std(axis=0) > 0.5 * se)


def test_no_tuning_still_samples_with_the_initial_parameters():
    idata = _sample(correlated_gaussian_model(), tune=0, draws=600)
    stats = idata.sample_stats
    assert np.unique(stats.step_size.values).size == 1
    assert np.all(stats.tuning_window.values == -1)
    assert float(stats.accepted.mean()) > 0.3
    x = idata.posterior.x.values
    assert np.unique(x[..., 0]).size > 200


def test_short_tuning_keeps_the_starting_mass_matrix_and_one_optimisation():
    """With 60 tuning iterations the mass-matrix estimates would rest on fewer than 20 draws:
    they are skipped, the inverse mass stays the start's frame squared (a Gaussian's
    conditional variance ``1 / precision_jj`` where it lies more than a factor 100² from 1,
    else 1), and the optimiser runs through the whole tuning phase (windows of 1)."""
    sds = np.array([1e-3, 0.5, 1.0, 300.0])
    with pm.Model() as model:
        pm.Normal("x", 0.0, sds)
        step = AdaptiveHMC()
    idata = _sample(model, step, tune=60, draws=50, discard_tuned_samples=False)
    np.testing.assert_allclose(step.chain.inv_mass, [1e-6, 1.0, 1.0, 9e4], rtol=1e-6)
    np.testing.assert_array_equal(idata.warmup_sample_stats.tuning_window.values[0], np.arange(60))
    assert step.chain.tuner.windows == 60


def test_adapt_after_tuning_keeps_optimising_with_vanishing_probability():
    model = correlated_gaussian_model()
    with model:
        step = AdaptiveHMC(tuning=BayesianTuning(n_windows=20), adapt_after_tuning=True)
    idata = _sample(model, step, tune=200, draws=1000)
    stats = idata.sample_stats
    windows = stats.tuning_window.values[0]
    assert windows[0] >= 0 and np.all(np.diff(windows) >= 0)
    # windows of 10 iterations: 100 more windows after tuning, p_i ≈ (i − 19)^(-1/2) per window
    assert windows[-1] - windows[0] == 99
    assert np.unique(stats.step_size.values).size > 1


@pytest.mark.slow
def test_adapt_after_tuning_keeps_the_moments():
    model = correlated_gaussian_model()
    with model:
        step = AdaptiveHMC(adapt_after_tuning=True)
    idata = _sample(model, step, tune=1000, draws=3000, chains=2)
    assert_moments(idata.posterior.x.values, CORRELATED_MEAN, np.diag(CORRELATED_COV))


# ---------------------------------------------------------------- PyMC contract
def test_parallel_chains_reproducible_and_distinct():
    kwargs = dict(tune=200, draws=200, chains=2, cores=2, random_seed=11)
    a = _sample(correlated_gaussian_model(), **kwargs)
    b = _sample(correlated_gaussian_model(), **kwargs)
    np.testing.assert_array_equal(a.posterior.x.values, b.posterior.x.values)
    assert not np.array_equal(a.posterior.x.values[0], a.posterior.x.values[1])
    c = _sample(correlated_gaussian_model(), **{**kwargs, "random_seed": 12})
    assert not np.array_equal(a.posterior.x.values, c.posterior.x.values)


def test_sequential_chains_do_not_leak_state():
    model = correlated_gaussian_model()
    with model:
        step = AdaptiveHMC()
    both = _sample(model, step, tune=100, draws=50, chains=2, random_seed=5)
    again = _sample(model, tune=100, draws=50, chains=2, random_seed=5)
    np.testing.assert_array_equal(both.posterior.x.values, again.posterior.x.values)
    assert step.chain.iteration == 150


def test_stats_present_with_declared_dtypes():
    model = correlated_gaussian_model()
    with model:
        step = AdaptiveHMC()
        trace = pm.sample(
            step=step, tune=300, draws=100, chains=1, cores=1, return_inferencedata=False,
            discard_tuned_samples=False, random_seed=1, **QUIET,
        )  # fmt: skip
    # seeded: a short chain's end-of-chain check may warn on some random streams (2 in 10)
    for name, (dtype, _) in step.stats_dtypes_shapes.items():
        values = trace.get_sampler_stats(name)
        if name == "warning":
            assert values.shape[0] == 400 and all(w is None for w in values.ravel())
            continue
        assert values.dtype == np.dtype(dtype), name
        assert values.shape == (400,), name
    np.testing.assert_array_equal(trace.get_sampler_stats("tune"), np.arange(400) < 300)
    accepted = trace.get_sampler_stats("accepted")
    assert set(np.unique(accepted)) <= {0.0, 1.0} and 0 < accepted.mean() < 1
    logp = trace.get_sampler_stats("model_logp")
    with model:
        exact = model.compile_logp()
    assert logp[-1] == pytest.approx(exact({"x": trace["x"][-1]}))
    # evaluations: L_r per iteration, plus the initial evaluation and step-size searches
    evals, steps = trace.get_sampler_stats("logp_evals"), trace.get_sampler_stats("n_steps")
    np.testing.assert_array_equal(evals[300:], steps[300:])
    assert evals[0] > steps[0]


def test_compound_with_nuts_is_correct():
    with pm.Model():
        a = pm.Normal("a", 0.0, 1.0)
        b = pm.Normal("b", a, 1.0)
        pm.Normal("y", b, 1.0, observed=1.5)
        steps = [AdaptiveHMC([a]), pm.NUTS([b])]
        idata = pm.sample(
            step=steps, tune=500, draws=2000, chains=2, cores=1, random_seed=2, **QUIET
        )
    cov = np.linalg.inv(np.array([[2.0, -1.0], [-1.0, 2.0]]))
    mean = cov @ np.array([0.0, 1.5])
    draws = np.stack([idata.posterior.a.values, idata.posterior.b.values], axis=-1)
    assert_moments(draws, mean, np.diag(cov))
    # when b changed between our steps the log density and gradient at a are recomputed: one
    # evaluation beside the L_r ≤ L of the trajectory (the merged `n_steps` stat is NUTS's)
    stats = idata.sample_stats
    evaluations, b_draws = stats.logp_evals.values, idata.posterior.b.values
    assert np.all((evaluations >= 1) & (evaluations <= stats.max_n_steps.values + 1))
    b_moved = np.diff(b_draws, axis=1) != 0  # NUTS moved b in draw k + 1, after our step
    assert np.all(evaluations[:, 2:][b_moved[:, :-1]] >= 2)  # so our step k + 2 recomputes


def test_pickle_round_trip_steps_identically():
    model = correlated_gaussian_model()
    with model:
        step = AdaptiveHMC()
    clone = pickle.loads(cloudpickle.dumps(step))
    runs = []
    for candidate in (step, clone):
        candidate.setup_chain(np.random.default_rng(10), tune=150, draws=20)
        point, draws = model.initial_point(), []
        for i in range(170):
            if i == 150:
                candidate.stop_tuning()
            point, _ = candidate.step(point)
            draws.append(point["x"])
        runs.append(np.array(draws))
    np.testing.assert_array_equal(runs[0], runs[1])
    # and mid-chain: a pickled step resumes identically
    resumed = pickle.loads(cloudpickle.dumps(step))
    a, b = dict(point), dict(point)
    for _ in range(5):
        a, _ = step.step(a)
        b, _ = resumed.step(b)
    np.testing.assert_array_equal(a["x"], b["x"])


def test_progress_bar_shows_step_size_and_steps():
    with correlated_gaussian_model():
        step = AdaptiveHMC()
    columns, fields = step._progressbar_config(2)
    assert [c.get_table_column().header for c in columns] == ["Accept rate", "Step size", "Steps"]
    (update,) = step._make_progressbar_update_functions()
    shown = update({"accept": 0.7, "accept_rate": 0.6, "step_size": 0.3, "max_n_steps": 9})
    assert shown == {"accept_rate": 0.6, "kernel_scale": "0.3", "max_n_steps": 9}
    assert set(shown) == set(fields)


# ---------------------------------------------------------------- faults and bad input
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"step_size_bounds": (0.0, 1.0)}, "step_size_bounds"),
        ({"step_size_bounds": (0.5, 0.1)}, r"step_size_bounds.*low ≤ high"),
        ({"step_size_bounds": (0.1, math.inf)}, "step_size_bounds"),
        ({"step_size_bounds": (math.nan, 1.0)}, "step_size_bounds"),
        ({"step_size_bounds": (0.1, 0.2, 0.3)}, "step_size_bounds"),
        ({"step_size_bounds": 0.1}, "step_size_bounds"),
        ({"n_steps_bounds": (0, 5)}, "n_steps_bounds"),
        ({"n_steps_bounds": (8, 3)}, r"n_steps_bounds.*low ≤ high"),
        ({"n_steps_bounds": (1.5, 3)}, "n_steps_bounds"),
        ({"n_windows": 0}, "n_windows"),
        ({"window": 0}, "window"),
        ({"reward_max": -1.0}, "reward_max"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    with correlated_gaussian_model():
        with pytest.raises(ValueError, match=match):
            AdaptiveHMC(**kwargs)


def test_bad_flag_types_raise():
    with correlated_gaussian_model():
        with pytest.raises(TypeError, match="adapt_mass"):
            AdaptiveHMC(adapt_mass="yes")
        with pytest.raises(TypeError, match="adapt_after_tuning"):
            AdaptiveHMC(adapt_after_tuning=1)


def test_black_box_without_gradient_gets_a_clear_error():
    with pm.Model():
        x = pm.Flat("x", shape=2)
        pm.Potential("loglik", CountingLogp(lambda v: -0.5 * float(v @ v))(x))
        with pytest.raises(ValueError, match="gradient.*KMCLite"):
            AdaptiveHMC()


def test_random_log_density_gets_a_clear_error():
    import pytensor

    rng = pytensor.shared(np.random.default_rng(0))
    with pm.Model():
        x = pm.Normal("x", 0.0, 1.0)
        pm.Potential("noisy", pt.random.normal(0.0, 0.1, rng=rng) + 0 * x)
        with pytest.raises(ValueError, match="random"):
            AdaptiveHMC()


def test_discrete_variable_raises():
    with pm.Model():
        pm.Poisson("k", 3.0)
        with pytest.raises(ValueError, match="'k' is discrete"):
            AdaptiveHMC()


def test_nan_log_density_is_a_counted_rejection():
    with pm.Model():
        x = pm.Flat("x")
        pm.Potential("half", pt.switch(x > 0, np.nan, -0.5 * x**2))
        idata = pm.sample(
            step=AdaptiveHMC(), tune=300, draws=300, chains=1, cores=1, random_seed=1,
            initvals={"x": -1.0}, **QUIET,
        )  # fmt: skip
    draws = idata.posterior.x.values
    assert np.all(draws <= 0)
    assert np.unique(draws).size > 20
    assert idata.sample_stats.logp_nan.values.any()


def test_infinite_log_density_is_a_counted_rejection_and_at_the_start_an_error():
    with pm.Model():
        x = pm.Flat("x")
        pm.Potential("overflow", pt.switch(x > 2, np.inf, -0.5 * x**2))
        idata = pm.sample(
            step=AdaptiveHMC(), tune=300, draws=300, chains=1, cores=1, random_seed=1, **QUIET
        )
        with pytest.raises(LogDensityError, match=r"AdaptiveHMC.*\+inf at the start"):
            pm.sample(
                step=AdaptiveHMC(), tune=300, draws=300, chains=1, cores=1, random_seed=1,
                initvals={"x": 3.0}, **QUIET,
            )  # fmt: skip
    draws = idata.posterior.x.values
    assert np.all(draws <= 2) and np.unique(draws).size > 20
    assert idata.sample_stats.logp_inf.values.any()
    assert not idata.sample_stats.logp_nan.values.any()


@pytest.mark.parametrize("step_class", [AdaptiveHMC, KAMH])
def test_infinite_log_density_at_the_current_point_after_another_step_moved_is_an_error(
    step_class,
):
    """In compound sampling another step may move the rest of the model to where the log
    density is +inf: the chain's current point then has no finite value to compare with, so
    the step stops (as at the start) rather than carry on at -inf, rejecting everything."""
    with pm.Model() as model:
        x = pm.Normal("x")
        y = pm.Flat("y")
        pm.Potential("overflow", pt.switch(y > 2, np.inf, -0.5 * y**2))
        step = step_class([x])
    step.setup_chain(np.random.default_rng(0), 100, 100)
    point = model.initial_point()
    for _ in range(5):
        point, _ = step.step(point)
    point = {**point, "y": np.array(3.0)}
    with pytest.raises(LogDensityError, match=r"\+inf"):
        step.step(point)


def test_competence_needs_a_gradient_as_nuts():
    from pymc.step_methods.compound import Competence

    with pm.Model():
        k = pm.Poisson("k", 3.0)
        x = pm.Normal("x")
    assert AdaptiveHMC.competence(x, True) == Competence.COMPATIBLE
    assert AdaptiveHMC.competence(x, False) == Competence.INCOMPATIBLE
    assert AdaptiveHMC.competence(k, True) == Competence.INCOMPATIBLE
