"""KMCLite(surrogate="regression"), the default: the surrogate fitted to the evaluated log
densities.

Exactness with the frozen surrogate (reversible trajectories, the ratio is the Hamiltonian change,
MCSE z-tests), what is recorded and when, relevance determination through pm.sample, bad input.
"""

from __future__ import annotations

import copy
import pickle

import arviz as az
import cloudpickle
import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps import KMCLite
from pymc_kernel_steps.core import RegressionSurrogate
from pymc_kernel_steps.core.surrogates import LiteScoreFitter, RegressionFitter
from pymc_kernel_steps.options import Regression
from pymc_kernel_steps_bench.targets import banana_model
from pymc_kernel_steps_bench.targets.synthetic import banana_moments

from ..helpers import CORRELATED_COV, CORRELATED_MEAN, assert_moments, correlated_gaussian_model
from .test_kmc import (
    _run,
    assert_frozen_trajectories_reversible,
    assert_pickled_clone_steps_identically,
)

QUIET = dict(progressbar=False, compute_convergence_checks=False)


def _frozen_regression_step(model, points, values=None, seed=0, **kwargs):
    """A step warm-started on ``points`` (``history=``: its regression surrogate fitted to log
    densities there, the model's or ``values``) and then frozen."""
    if values is None:
        logp = model.compile_logp()
        values = np.array([logp({"x": point}) for point in points])
    with model:
        step = KMCLite(surrogate="regression", history=_idata(points, values), **kwargs)
    step.setup_chain(np.random.default_rng(seed), tune=1, draws=1)
    step.stop_tuning()
    return step


def test_frozen_regression_proposal_is_reversible_and_ratio_is_the_hamiltonian():
    rng = np.random.default_rng(1)
    points = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=300)
    step = _frozen_regression_step(
        correlated_gaussian_model(), points, moves="fixed", random_walk_probability=0.0
    )
    assert isinstance(step.chain.surrogate, RegressionSurrogate)
    assert len(step.chain.evaluated_values) == 300
    assert_frozen_trajectories_reversible(step, rng)


def _twisted_log_densities(points):
    """Log densities of a banana-like twist of the correlated Gaussian: quartic and cubic."""
    centred = points - CORRELATED_MEAN
    twisted = centred.copy()
    twisted[:, 1] += 0.4 * (centred[:, 0] ** 2 - 1.0)
    return -0.5 * np.einsum("ij,jk,ik->i", twisted, np.linalg.inv(CORRELATED_COV), twisted)


def test_frozen_quartic_trend_proposal_is_reversible_and_ratio_is_the_hamiltonian():
    rng = np.random.default_rng(12)
    points = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=400)
    step = _frozen_regression_step(
        correlated_gaussian_model(),
        points,
        _twisted_log_densities(points),
        trend="quartic",
        moves="fixed",
        random_walk_probability=0.0,
    )
    trend = step.chain.surrogate.trend
    assert trend is step.chain.trend and not trend.is_standard_gaussian
    assert np.max(np.abs(trend.cubic)) > 0.1  # the twist is in the trend
    assert_frozen_trajectories_reversible(step, rng, trials=30)


def test_auto_trend_is_quartic_on_the_banana_and_quadratic_on_a_gaussian():
    rng = np.random.default_rng(13)
    points = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=400)
    twisted = _frozen_regression_step(
        correlated_gaussian_model(), points, _twisted_log_densities(points)
    )
    assert not twisted.chain.trend.is_standard_gaussian
    gaussian = _frozen_regression_step(correlated_gaussian_model(), points)
    assert gaussian.chain.trend.is_standard_gaussian  # the quartic predicts no better
    few = _frozen_regression_step(
        correlated_gaussian_model(), points[:100], _twisted_log_densities(points[:100])
    )
    assert few.chain.trend.is_standard_gaussian  # 2 × 69 coefficients needed at d = 4


def test_the_gaussian_term_is_fitted_to_the_evaluations_not_to_the_history():
    """A history 5× too narrow (as after a short tuning that has not yet explored the long
    direction of a posterior) whitens to a Gaussian 5× too narrow; the surrogate's frame is the
    quadratic through the evaluated log densities, here the target itself."""
    rng = np.random.default_rng(9)
    chol = np.linalg.cholesky(CORRELATED_COV)
    points = CORRELATED_MEAN + 0.2 * rng.standard_normal((300, 4)) @ chol.T
    step = _frozen_regression_step(correlated_gaussian_model(), points)
    chain = step.chain
    history_cov = chain.rw_whitening.chol @ chain.rw_whitening.chol.T
    frame_cov = chain.whitening.chol @ chain.whitening.chol.T
    assert np.max(np.linalg.eigvalsh(np.linalg.solve(history_cov, CORRELATED_COV))) > 15
    np.testing.assert_allclose(frame_cov, CORRELATED_COV, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(chain.whitening.mean, CORRELATED_MEAN, atol=1e-6)


def test_with_few_evaluations_the_frame_is_the_historys():
    rng = np.random.default_rng(10)
    points = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=20)
    step = _frozen_regression_step(correlated_gaussian_model(), points)
    np.testing.assert_array_equal(step.chain.whitening.chol, step.chain.rw_whitening.chol)


def test_step_sizes_stay_stable_on_the_gaussian_term_far_from_the_data():
    """Far from the centres the surrogate is the history's Gaussian (unit curvature) plus the
    wall: the limit counts both, and a step size the tuner pushed past it is capped."""
    rng = np.random.default_rng(4)
    points = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=300)
    step = _frozen_regression_step(
        correlated_gaussian_model(), points, moves="fixed", random_walk_probability=0.0
    )
    limit = step.chain.far_field_step_size_limit
    hmc = copy.deepcopy(step.chain.hmc)  # the frozen move, out of the step
    curvature = 1.0 + hmc.confinement.stiffness
    assert limit == pytest.approx(0.9 * 2.0 / np.sqrt(np.max(hmc.inv_mass) * curvature))
    hmc.step_size = 20.0 * limit
    proposals = np.random.default_rng(5)
    for _ in range(50):
        proposal = hmc.propose(proposals, points[-1])
        assert proposal.extra.step_size <= limit
        u = hmc.frame.whiten(proposal.x)
        assert np.sqrt(u @ u) < 10.0 * hmc.confinement.radius  # bounded; at 1.2× the limit: 10¹³


@pytest.mark.slow
def test_frozen_surrogate_of_the_wrong_log_densities_still_samples_the_target():
    """Fitted to a shifted, too wide Gaussian's log densities, the frozen kernel only loses
    efficiency: the true density in the ratio keeps the target's moments."""
    rng = np.random.default_rng(2)
    points = rng.normal(CORRELATED_MEAN + 0.5, 1.5, size=(400, 4))
    wrong_values = -0.5 * np.sum(((points - CORRELATED_MEAN - 0.5) / 1.5) ** 2, axis=1)
    step = _frozen_regression_step(
        correlated_gaussian_model(),
        points,
        wrong_values,
        seed=3,
        moves="fixed",
        random_walk_probability=0.0,
    )
    draws = _run(step, CORRELATED_MEAN, 12000)
    assert_moments(draws[None], CORRELATED_MEAN, np.diag(CORRELATED_COV))


@pytest.mark.slow
def test_frozen_quartic_trend_of_the_wrong_log_densities_still_samples_the_target():
    """A quartic trend fitted to a twisted Gaussian's log densities steers the trajectories
    along the twist; the true density in the ratio keeps the Gaussian's moments.

    One chain of this frozen kernel mixes slowly along the correlated pair, and over 12,000
    draws its MCSE understated the error: under another machine's floating point the variance z
    of x₀ was −5.2 and −4.1 from two of three pilots, and −0.7 and 0.1 from the same pilots over
    48,000 draws (slow mixing, not a wrong stationary law). Over 24,000 draws every pilot of
    14-16 gave |z| < 3.4 on both floating points; two of three pilots must pass (the warm start
    chooses the surrogate from the pilot alone, so every chain of one pilot shares it)."""
    failures, passed = [], 0
    for seed in (14, 15, 16):  # the pilot, from which the warm start chooses the surrogate
        rng = np.random.default_rng(seed)
        points = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=400)
        step = _frozen_regression_step(
            correlated_gaussian_model(),
            points,
            _twisted_log_densities(points),
            seed=5,
            trend="quartic",
            moves="fixed",
            random_walk_probability=0.0,
        )
        assert not step.chain.trend.is_standard_gaussian
        draws = _run(step, CORRELATED_MEAN, 24000)
        try:
            assert_moments(draws[None], CORRELATED_MEAN, np.diag(CORRELATED_COV))
        except AssertionError as error:
            failures.append(f"pilot {seed}: {error}")
        else:
            passed += 1
        if passed == 2:
            break
        if len(failures) > 1:
            raise AssertionError("; ".join(failures))


@pytest.mark.slow
def test_tuned_then_frozen_quartic_trend_keeps_the_banana_moments():
    """The default (``trend="auto"``) on the 4-d banana, whose log density is quartic: the
    quartic trend is chosen, and the draws pass the z-tests of the exact moments.

    Four chains, PyMC's default: the variance of x2 is carried by the arms' tips, which a chain
    visits rarely, and the MCSE of two chains does not see that. Over seeds 0–39 of this
    configuration, |z| > 4 on x2's variance in 4 of 40 runs with two chains (5 of 40 with the
    envelope before its defensive mixture) and in 2 of 40 with four (6 of 40 before). A run
    also fails when a chain makes a sticky excursion far out in an arm (sds 16 and 12 instead
    of 10 and 4.4, reported by the step's warning): the bulk ESS of x1 and x2 falls below 100
    (31-55 of 12,000 draws), too few for the z-tests to mean anything; so did seed 15 with
    other OpenBLAS kernels here and on an AMD EPYC machine (no failure in seeds 0-11 here).

    So a run fails with probability q of about 0.05-0.1, on any random stream, and the test
    wants 2 of 4 runs (seeds 15-18) to pass, stopping at the second pass: 3 failures of 4 have
    probability below 0.004 at q = 0.1. A sampler whose frozen kernel is biased fails every
    run's z-tests (12,000 draws resolve a bias of a few percent of an sd), and the test."""
    mean, var = banana_moments(4)
    passed, failures = 0, []
    for seed in (15, 16, 17, 18):
        with banana_model(4):
            step = KMCLite()
            idata = pm.sample(
                step=step, tune=1500, draws=3000, chains=4, cores=1, random_seed=seed, **QUIET
            )
        try:
            assert not step.chain.trend.is_standard_gaussian, "the quartic trend not chosen"
            assert_moments(idata.posterior["x"].values, mean, var)
        except AssertionError as failure:
            failures.append(f"seed {seed}: {failure}")
            continue
        passed += 1
        if passed == 2:
            return
    pytest.fail("fewer than 2 of 4 runs pass: " + "; ".join(failures))


@pytest.mark.slow
def test_tuned_then_frozen_regression_kmc_keeps_the_moments():
    with correlated_gaussian_model():
        idata = pm.sample(
            step=KMCLite(surrogate="regression"), tune=1500, draws=3000, chains=2, cores=1,
            random_seed=11, **QUIET,
        )  # fmt: skip
    post = idata.sample_stats
    assert not post.refit.values.any()
    assert np.unique(post.lengthscale.values).size <= 2  # one frozen value per chain
    assert float(post.accept.values[post.surrogate.values].mean()) > 0.5
    assert_moments(idata.posterior["x"].values, CORRELATED_MEAN, np.diag(CORRELATED_COV))


def test_evaluations_are_recorded_while_tuning_only():
    model = correlated_gaussian_model()
    with model:
        step = KMCLite(surrogate=Regression(min_history=60))
    step.setup_chain(np.random.default_rng(4), tune=200, draws=50)
    point, evaluations = model.initial_point(), 0
    for i in range(250):
        if i == 200:
            step.stop_tuning()
            recorded = len(step.chain.evaluated_values)
            assert recorded == evaluations
        point, (stats,) = step.step(point)
        evaluations += stats["logp_evals"]
    assert len(step.chain.evaluated_values) == recorded
    assert len(step.chain.evaluated_points) == recorded
    assert isinstance(step.chain.surrogate, RegressionSurrogate)


def test_relevance_determination_drops_the_coordinates_off_the_banana():
    """On a 4-d banana the twist lives in the first two coordinates: the fitted Gaussian term
    describes the two Gaussian coordinates exactly, so the kernel has nothing to model along
    them, and relevance determination makes their precisions much smaller than those of the
    banana pair, which the kernel bends. (In the frame of the fitted Gaussian, lower-triangular,
    the banana pair's log density depends on the first two frame coordinates only.) With the
    quadratic trend: a quartic one represents the banana, and leaves the kernel nothing to bend.

    The greedy search on held-out error is not exact: over seeds 0–29 it dropped both
    Gaussian coordinates (precision 0) in 28 runs and left them 0.04 and 0.098 in two, where
    the pair's largest was 2.56 and 6.25; with numba, numpy and OpenBLAS set as on another
    machine, in 28 again, (0.062 of 1) and (0.098 and 0.391 of 6.25) in two; on an AMD EPYC
    machine one run gave (0, 4, 1, 0.25). So a run passes when the Gaussian coordinates'
    precisions are at most a tenth of the pair's largest, which is positive (60 of these 61
    runs), and the test wants 3 of 5 runs to pass: at a failure rate of 0.1 per run, six
    times the rate seen, 5 runs fail it with probability 0.009. It fails if relevance
    determination keeps the kernel isotropic (every run fails: the precisions are equal), or
    the trend or the frame leaves the Gaussian coordinates something to model, or the kernel
    is dropped."""
    passed, seen = 0, []
    for seed in (5, 6, 7, 8, 9):
        with banana_model(4):
            step = KMCLite(surrogate=Regression(trend="quadratic"))
            pm.sample(step=step, tune=2000, draws=10, chains=1, random_seed=seed, **QUIET)
        precisions = step.chain.precisions
        seen.append(precisions)
        pair = np.max(precisions[:2])
        passed += bool(pair > 0 and np.all(precisions[2:] <= 0.1 * pair))
    assert passed >= 3, np.array(seen)


def test_pickle_round_trip_steps_identically():
    model = correlated_gaussian_model()
    with model:
        step = KMCLite(surrogate=Regression(min_history=30))
    clone = assert_pickled_clone_steps_identically(step, model)
    assert isinstance(clone.chain.surrogate, RegressionSurrogate)


def test_the_regression_surrogate_is_the_default():
    with correlated_gaussian_model():
        assert isinstance(KMCLite().fitter, RegressionFitter)
        assert isinstance(KMCLite(surrogate="score_matching").fitter, LiteScoreFitter)
        with pytest.raises(ValueError, match="the default.*surrogate=ScoreMatching"):
            KMCLite(whiten=False)  # the paper's isotropic kernel is score matching's option


def test_bad_surrogate_and_warm_start_name_the_parameter():
    with correlated_gaussian_model():
        with pytest.raises(ValueError, match="`surrogate` must be one of"):
            KMCLite(surrogate="gp")
        with pytest.raises(ValueError, match="`history` with surrogate='regression'.*`lp`"):
            KMCLite(surrogate="regression", history=np.random.default_rng(0).normal(size=(50, 4)))
        with pytest.raises(ValueError, match="whiten=True"):
            KMCLite(surrogate="regression", whiten=False)
        with pytest.raises(ValueError, match="`Regression.trend` must be one of"):
            KMCLite(surrogate=Regression(trend="cubic"))
        with pytest.raises(ValueError, match="`trend`.*surrogate='score_matching' has none"):
            KMCLite(surrogate="score_matching", trend="quartic")


def test_a_fixed_lengthscale_gives_an_isotropic_kernel():
    model = correlated_gaussian_model()
    with model:
        step = KMCLite(surrogate=Regression(lengthscale=0.8, min_history=60))
    step.setup_chain(np.random.default_rng(6), tune=300, draws=1)
    point = model.initial_point()
    for _ in range(300):
        point, _ = step.step(point)
    np.testing.assert_allclose(step.chain.precisions, np.full(4, 0.8**-2))
    assert step.chain.lengthscale == pytest.approx(0.8)


def test_with_adapt_after_tuning_the_draws_are_recorded_too():
    model = correlated_gaussian_model()
    with model:
        step = KMCLite(surrogate=Regression(min_history=60), adapt_after_tuning=True)
    step.setup_chain(np.random.default_rng(7), tune=150, draws=50)
    point, evaluations = model.initial_point(), 0
    for i in range(200):
        if i == 150:
            step.stop_tuning()
        point, (stats,) = step.step(point)
        evaluations += stats["logp_evals"]
    assert len(step.chain.evaluated_values) == evaluations


# ---------------------------------------------------------------- warm start (history=)
def _idata(states, log_densities):
    """What pm.sample returns, reduced to what a warm start reads: one chain of states and the
    ``lp`` sample statistic."""
    return az.from_dict(
        {"posterior": {"x": states[None]}, "sample_stats": {"lp": log_densities[None]}}
    )


def _wrong_states(n=400, seed=5):
    """States shifted and differently shaped from the target (a surrogate fitted there is
    wrong away from them): exactness must not depend on them."""
    rng = np.random.default_rng(seed)
    return CORRELATED_MEAN + 0.5 + 1.5 * rng.standard_normal((n, 4))


def _warm_started_step(model):
    """A default KMCLite warm-started from ``_wrong_states`` and the model's log densities
    there; returns the step, the states and the log densities."""
    logp = model.compile_logp()
    states = _wrong_states()
    log_densities = np.array([logp({"x": state}) for state in states])
    with model:
        step = KMCLite(history=_idata(states, log_densities))
    return step, states, log_densities


def test_warm_start_fits_the_regression_to_the_recorded_log_densities():
    model = correlated_gaussian_model()
    step, states, log_densities = _warm_started_step(model)
    step.setup_chain(np.random.default_rng(0), tune=0, draws=10)
    chain = step.chain
    assert isinstance(chain.surrogate, RegressionSurrogate)
    np.testing.assert_array_equal(chain.evaluated_points.points, states)
    np.testing.assert_array_equal(chain.evaluated_values, log_densities)
    # fitted to those values: up to a constant, the surrogate is the log density at the states
    fitted = chain.surrogate.log_density(chain.whitening.whiten(states)) - log_densities
    assert np.std(fitted) < 0.05 * np.std(log_densities)
    clone = assert_pickled_clone_steps_identically(step, model)
    np.testing.assert_array_equal(clone.warm_log_densities, log_densities)


@pytest.mark.slow
def test_regression_warm_start_with_tune_0_samples_the_target():
    """The kernel fitted to an earlier run's log densities is fixed from the first draw: the
    draws are exact even though those states lie where the target does not."""
    model = correlated_gaussian_model()
    step, _, _ = _warm_started_step(model)
    with model:
        idata = pm.sample(step=step, tune=0, draws=3000, chains=2, cores=1, random_seed=3, **QUIET)
    stats = idata.sample_stats
    assert stats.surrogate.values[:, :20].any(axis=1).all()  # no random-walk phase
    assert not stats.refit.values.any()
    assert_moments(np.asarray(idata.posterior.x.values), CORRELATED_MEAN, np.diag(CORRELATED_COV))


def test_warm_start_from_a_pilot_run_reads_its_log_densities():
    model = correlated_gaussian_model()
    with model:
        pilot = pm.sample(
            step=KMCLite(surrogate=Regression(min_history=50)), tune=100, draws=100,
            chains=2, random_seed=1, **QUIET,
        )  # fmt: skip
        step = KMCLite(surrogate="regression", history=pilot)
    logp = model.compile_logp()
    expected = [logp({"x": state}) for state in step.warm_history]
    np.testing.assert_allclose(step.warm_log_densities, expected, rtol=1e-10)


def test_bad_regression_warm_start_names_the_parameter():
    states = _wrong_states(n=50)
    with correlated_gaussian_model():
        without_lp = az.from_dict({"posterior": {"x": states[None]}})
        with pytest.raises(ValueError, match="`history` with surrogate='regression'.*`lp`"):
            KMCLite(surrogate="regression", history=without_lp)
        too_few = _idata(states, np.zeros(50))
        too_few["sample_stats"] = too_few["sample_stats"].isel(draw=slice(0, 40))
        with pytest.raises(ValueError, match="`history`: sample_stats 'lp' holds 40 values"):
            KMCLite(surrogate="regression", history=too_few)
    with pm.Model():
        x = pm.Normal("x", shape=4)
        pm.Normal("y")
        with pytest.raises(ValueError, match="samples every free variable.*'y'"):
            KMCLite([x], surrogate="regression", history=_idata(states, np.zeros(50)))


def test_a_pilot_from_a_compound_step_gives_the_last_step_s_log_densities_or_an_error():
    """PyMC 6.4 keeps only a compound step's last `lp` (the others 0): the model's log density
    at the draw when the last step records one, else 0 at every draw (an error, not a fit to
    a constant)."""
    from pymc_kernel_steps import AdaptiveMetropolis

    options = dict(tune=50, draws=100, chains=1, cores=1, random_seed=1, **QUIET)
    with pm.Model() as model:
        a, b = pm.Normal("a"), pm.Normal("b")
        pilot = pm.sample(step=[AdaptiveMetropolis([a]), AdaptiveMetropolis([b])], **options)
        assert pilot.sample_stats["lp"].shape == (1, 100, 2)
        step = KMCLite(history=pilot)
        logp = model.compile_logp()
        draws = zip(pilot.posterior["a"].values[0], pilot.posterior["b"].values[0], strict=True)
        exact = [logp({"a": va, "b": vb}) for va, vb in draws]
        np.testing.assert_allclose(step.warm_log_densities, exact, rtol=1e-12)
        pilot = pm.sample(step=[AdaptiveMetropolis([a]), pm.Metropolis([b])], **options)
        assert not pilot.sample_stats["lp"].values.any()
        with pytest.raises(ValueError, match=r"'lp' is 0 at every draw.*compound step"):
            KMCLite(history=pilot)


def test_warm_start_chooses_the_hyperparameters_once_per_step_not_per_chain(monkeypatch):
    """The selection by held-out error (72 trial fits, most of a warm-started chain's time
    before its first draw) runs once, when the step is built from the history; the chains
    of pm.sample and a pickled copy (as PyMC's worker processes get it) reuse it."""
    import pymc_kernel_steps.core.surrogates.regression as fitters

    calls = {"hyperparameters": 0, "trend": 0}

    def counted(name, function):
        def spy(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return spy

    monkeypatch.setattr(
        fitters,
        "select_regression_hyperparameters",
        counted("hyperparameters", fitters.select_regression_hyperparameters),
    )
    monkeypatch.setattr(fitters, "select_trend", counted("trend", fitters.select_trend))
    model = correlated_gaussian_model()
    step, _, _ = _warm_started_step(model)
    built = dict(calls)
    assert built == {"hyperparameters": 1, "trend": 1}
    with model:
        idata = pm.sample(step=step, tune=0, draws=5, chains=2, cores=1, random_seed=3, **QUIET)
    # the same hyper-parameters in both chains: the kernel's lengthscale too
    lengthscales = idata.sample_stats["lengthscale"].values
    assert np.all(lengthscales == lengthscales[0, 0])
    clone = pickle.loads(cloudpickle.dumps(step))  # what a worker process starts from
    for seed in (4, 5):
        clone.setup_chain(np.random.default_rng(seed), tune=0, draws=5)
        assert clone.chain.lengthscale == lengthscales[0, 0]
    assert calls == built


def test_warm_started_chains_and_copies_get_the_same_hyperparameters():
    """Chosen from the history's data alone (their own seeded generator): identical in every
    chain, in a pickled copy and in a step built again from the same history, whatever the
    chains' and the step's generators."""
    model = correlated_gaussian_model()
    step, _, _ = _warm_started_step(model)
    again, _, _ = _warm_started_step(model)
    chosen = []
    for candidate, seed in ((step, 0), (step, 1), (pickle.loads(cloudpickle.dumps(step)), 2)):
        candidate.setup_chain(np.random.default_rng(seed), tune=100, draws=10)
        chosen.append(candidate.chain)
    chosen.append(_chain_of(again, seed=3))
    first = chosen[0]
    assert first.trend is not None and np.any(first.precisions > 0)
    for chain in chosen[1:]:
        np.testing.assert_array_equal(chain.precisions, first.precisions)
        assert chain.regularization == first.regularization
        for name in ("linear", "precision", "cubic", "quartic"):
            np.testing.assert_array_equal(getattr(chain.trend, name), getattr(first.trend, name))


def _chain_of(step, seed):
    step.setup_chain(np.random.default_rng(seed), tune=100, draws=10)
    return step.chain
