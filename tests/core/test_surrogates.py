"""The surrogates' fitters driven without PyMC: each fitter's frame, selection, fit and gradient
spec against the estimator it wraps (same random numbers, same result), its far-field curvature
by finite differences, and the interface the steps rely on."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from pymc_kernel_steps.core import (
    FiniteScoreEstimator,
    GaussianKernel,
    LiteScoreEstimator,
    RegressionSurrogate,
    Whitening,
    fit_quadratic_gaussian,
    informative_evaluations,
    leapfrog,
    median_lengthscale,
    select_hyperparameters,
    select_regression_hyperparameters,
    select_trend,
)
from pymc_kernel_steps.core.history import first_visits
from pymc_kernel_steps.core.surrogates import (
    Evaluations,
    FiniteScoreFitter,
    KernelHyperparameters,
    LiteScoreFitter,
    RegressionFitter,
    RegressionHyperparameters,
    SurrogateFitter,
    TrainingData,
)

DIM = 3
COVARIANCE = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, 0.2], [0.0, 0.2, 0.5]])


def _log_density(X):
    """A skewed, correlated 3-d log density."""
    X = np.atleast_2d(X)
    quadratic = -0.5 * np.einsum("ij,jk,ik->i", X, np.linalg.inv(COVARIANCE), X)
    return quadratic + 0.3 * np.sin(X[:, 0])


def _evaluations(n=600, seed=0) -> Evaluations:
    rng = np.random.default_rng(seed)
    points = 1.5 * rng.standard_normal((n, DIM))
    values = _log_density(points)
    values[::97] = -np.inf  # left out by the fitter
    return Evaluations(points, values)


def _states(n=300, seed=1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    states = rng.multivariate_normal(np.zeros(DIM), COVARIANCE, size=n)
    return np.repeat(states, 2, axis=0)[:n]  # a chain's rejections repeat states


def _data(fitter_frame=None, evaluations=None, states=None) -> TrainingData:
    frame = Whitening.from_points(_states()) if fitter_frame is None else fitter_frame
    states = _states() if states is None else states
    return TrainingData(frame.whiten(states), frame, evaluations)


def _same_surrogate(got, expected, rng_seed=5):
    """The same gradient: the compiled trajectory on the fitted surrogate's gradient spec is the
    generic leapfrog on the directly fitted estimator's gradient."""
    rng = np.random.default_rng(rng_seed)
    q, p = rng.standard_normal(DIM), rng.standard_normal(DIM)
    inv_mass = np.array([1.0, 0.5, 2.0])
    compiled = got.trajectory(q, p, 0.05, 20, inv_mass)
    generic = leapfrog(expected.grad, q, p, 0.05, 20, inv_mass)
    np.testing.assert_allclose(compiled[0], generic[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(compiled[1], generic[1], rtol=1e-9, atol=1e-12)
    X = rng.standard_normal((5, DIM))
    np.testing.assert_array_equal(got.log_density(X), expected.log_density(X))


# ---------------------------------------------------------------------------- the interface


@pytest.mark.parametrize(
    ("fitter", "needs_evaluations", "curvature"),
    [
        (RegressionFitter(), True, 1.0),
        (LiteScoreFitter(), False, 0.0),
        (FiniteScoreFitter(), False, 0.0),
    ],
)
def test_each_fitter_says_what_it_needs(fitter, needs_evaluations, curvature):
    assert isinstance(fitter, SurrogateFitter)
    assert fitter.needs_evaluations is needs_evaluations
    assert fitter.needs_whitening is needs_evaluations  # the regression fits its own frame
    assert fitter.far_field_curvature == curvature
    fixed = fitter.fixing(0.7, 0.01)
    assert (fixed.lengthscale, fixed.regularization) == (0.7, 0.01)
    assert (fitter.lengthscale, fitter.regularization) == (None, None)  # unchanged
    assert type(fixed) is type(fitter)
    assert pickle.loads(pickle.dumps(fixed)) == fixed


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: LiteScoreFitter(lengthscale=0.0), "`lengthscale` must be a positive"),
        (lambda: LiteScoreFitter(regularization=np.inf), "`regularization` must be a positive"),
        (lambda: FiniteScoreFitter(n_features=0), "`n_features` must be a positive integer"),
        (lambda: RegressionFitter(n_centres=2.5), "`n_centres` must be a positive integer"),
        (lambda: RegressionFitter(trend="cubic"), "`trend` must be one of"),
    ],
)
def test_bad_options_name_the_parameter(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_a_lengthscale_that_is_not_a_number_is_a_type_error():
    with pytest.raises(TypeError, match="`lengthscale` must be a number"):
        LiteScoreFitter(lengthscale="1.0")


def test_the_score_fitters_keep_the_histories_frame():
    frame = Whitening.from_points(_states())
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for fitter in (LiteScoreFitter(), FiniteScoreFitter()):
        assert fitter.frame(frame, None, rng) is frame
    assert rng.bit_generator.state == state


# ---------------------------------------------------------------------------- regression


def test_regression_frame_is_the_gaussian_of_the_evaluations_quadratic():
    history = Whitening.from_points(_states())
    evaluations = _evaluations()
    frame = RegressionFitter(n_centres=100).frame(history, evaluations, np.random.default_rng(3))
    points, values = informative_evaluations(*evaluations, np.random.default_rng(3), 400)
    mean, covariance = fit_quadratic_gaussian(history.whiten(points), values, 1e-2, 1e2)
    chol = history.chol
    expected = Whitening.from_gaussian(history.unwhiten(mean), chol @ covariance @ chol.T)
    np.testing.assert_array_equal(frame.mean, expected.mean)
    np.testing.assert_array_equal(frame.chol, expected.chol)
    # the log density is nearly Gaussian: its frame is close to its covariance
    np.testing.assert_allclose(frame.chol @ frame.chol.T, COVARIANCE, atol=0.15)


def test_regression_frame_with_too_few_evaluations_is_the_histories():
    history = Whitening.from_points(_states())
    few = Evaluations(*(array[:10] for array in _evaluations()))
    assert RegressionFitter().frame(history, few, np.random.default_rng(0)) is history


def test_regression_select_is_the_trend_then_the_precisions_by_held_out_error():
    evaluations = _evaluations()
    data = _data(evaluations=evaluations)
    chosen = RegressionFitter(n_centres=100).select(data, np.random.default_rng(4))
    rng = np.random.default_rng(4)
    points, values = informative_evaluations(*evaluations, rng, 400)
    U = data.frame.whiten(points)
    trend = select_trend(U, values, rng, "auto")
    precisions, regularization, _ = select_regression_hyperparameters(U, values, rng, trend=trend)
    np.testing.assert_array_equal(chosen.precisions, precisions)
    assert chosen.regularization == regularization
    np.testing.assert_array_equal(chosen.trend.precision, trend.precision)
    assert chosen.lengthscale == pytest.approx(1.0 / np.sqrt(precisions.max()))


def test_regression_select_with_a_fixed_lengthscale_is_isotropic():
    data = _data(evaluations=_evaluations())
    fitter = RegressionFitter(n_centres=100, trend="quadratic").fixing(0.8, 0.05)
    chosen = fitter.select(data, np.random.default_rng(0))
    np.testing.assert_allclose(chosen.precisions, np.full(DIM, 0.8**-2))
    assert chosen.regularization == 0.05
    assert chosen.trend.is_standard_gaussian
    assert chosen.lengthscale == pytest.approx(0.8)


def test_regression_select_with_too_few_evaluations_keeps_the_frames_gaussian():
    few = Evaluations(*(array[:5] for array in _evaluations()))
    chosen = RegressionFitter().select(_data(evaluations=few), np.random.default_rng(0))
    np.testing.assert_array_equal(chosen.precisions, np.zeros(DIM))
    assert chosen.trend is None and chosen.regularization == 1e-2
    assert chosen.lengthscale == np.inf
    fixed = RegressionFitter(lengthscale=2.0).select(
        _data(evaluations=few), np.random.default_rng(0)
    )
    np.testing.assert_array_equal(fixed.precisions, np.full(DIM, 0.25))


def test_regression_fit_is_the_surrogate_fitted_to_the_informative_evaluations():
    evaluations = _evaluations()
    data = _data(evaluations=evaluations)
    fitter = RegressionFitter(n_centres=80)
    chosen = fitter.select(data, np.random.default_rng(4))
    got = fitter.fit(data, chosen, np.random.default_rng(6))
    rng = np.random.default_rng(6)
    points, values = informative_evaluations(*evaluations, rng, 320)
    expected = RegressionSurrogate(
        chosen.precisions, chosen.regularization, 80, rng, chosen.trend
    ).fit(data.frame.whiten(points), values)
    assert isinstance(got, RegressionSurrogate) and len(got.Z) == 80
    _same_surrogate(got, expected)
    # a good fit: in the frame, the log density is predicted at held-out points
    test = np.random.default_rng(7).multivariate_normal(np.zeros(DIM), COVARIANCE, 200)
    predicted = got.log_density(data.frame.whiten(test))
    truth = _log_density(test)
    residual = (predicted - predicted.mean()) - (truth - truth.mean())
    assert np.sqrt(np.mean(residual**2)) < 0.05 * np.std(truth)


def test_regression_fit_without_evaluations_is_the_frames_gaussian_at_the_states():
    one = Evaluations(*(array[:1] for array in _evaluations()))
    data = _data(evaluations=one)
    fitter = RegressionFitter(n_centres=50)
    chosen = fitter.select(data, np.random.default_rng(0))
    surrogate = fitter.fit(data, chosen, np.random.default_rng(0))
    U = np.random.default_rng(1).standard_normal((4, DIM))
    np.testing.assert_allclose(surrogate.grad(U), -U, atol=1e-12)


def test_regression_fitter_needs_evaluations():
    with pytest.raises(ValueError, match="fitted to evaluations"):
        RegressionFitter().select(_data(), np.random.default_rng(0))


def test_regression_far_field_curvature_is_the_gaussian_terms():
    """Far from the centres only the trend ``−½‖u‖²`` acts: unit curvature, which the steps add
    to the wall's in the leapfrog's stability limit."""
    data = _data(evaluations=_evaluations())
    fitter = RegressionFitter(n_centres=80, trend="quadratic")
    surrogate = fitter.fit(
        data, fitter.select(data, np.random.default_rng(0)), np.random.default_rng(1)
    )
    far, h = np.array([40.0, -30.0, 25.0]), 1e-3
    for e in np.eye(DIM):
        second = (
            surrogate.log_density(far + h * e)
            - 2 * surrogate.log_density(far)
            + surrogate.log_density(far - h * e)
        ) / h**2
        assert second == pytest.approx(-fitter.far_field_curvature, rel=1e-4)


def test_regression_hyperparameters_copy_and_pickle():
    data = _data(evaluations=_evaluations())
    chosen = RegressionFitter(n_centres=50).select(data, np.random.default_rng(0))
    for clone in (copy.deepcopy(chosen), pickle.loads(pickle.dumps(chosen))):
        assert isinstance(clone, RegressionHyperparameters)
        np.testing.assert_array_equal(clone.precisions, chosen.precisions)
        assert clone.lengthscale == chosen.lengthscale


# ---------------------------------------------------------------------------- score matching


def _expected_selection(points, estimator, rng, **options):
    """The cross-validation the score fitters run, written out: on the distinct states."""
    distinct = points[first_visits(points)]
    if len(distinct) > 500:
        distinct = distinct[np.sort(rng.choice(len(distinct), 500, replace=False))]
    lengthscales = median_lengthscale(distinct) * np.array([1.0, 1.5, 2.0, 3.0])
    ell, lam, _ = select_hyperparameters(
        distinct, estimator=estimator, lengthscales=lengthscales, rng=rng, **options
    )
    return ell, lam


@pytest.mark.parametrize(
    ("fitter", "options"),
    [(LiteScoreFitter(), {}), (FiniteScoreFitter(n_features=40), {"n_features": 40})],
)
def test_score_select_is_the_cross_validation_on_the_distinct_states(fitter, options):
    data = _data(states=_states(n=1200))  # 600 distinct: sub-sampled to 500
    chosen = fitter.select(data, np.random.default_rng(8))
    expected = _expected_selection(
        data.states, fitter.estimator, np.random.default_rng(8), **options
    )
    assert isinstance(chosen, KernelHyperparameters)
    assert (chosen.lengthscale, chosen.regularization) == expected


def test_score_select_with_both_fixed_chooses_nothing():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    chosen = LiteScoreFitter(lengthscale=1.3, regularization=0.1).select(_data(), rng)
    assert chosen == KernelHyperparameters(1.3, 0.1)
    assert rng.bit_generator.state == state


def test_score_select_with_a_fixed_lengthscale_chooses_the_regularization():
    chosen = LiteScoreFitter(lengthscale=1.3).select(_data(), np.random.default_rng(0))
    assert chosen.lengthscale == 1.3
    assert chosen.regularization in np.logspace(-5, 3, 9)


def test_lite_fit_is_the_lite_estimator():
    data = _data()
    chosen = KernelHyperparameters(1.1, 1e-3)
    got = LiteScoreFitter().fit(data, chosen, np.random.default_rng(0))
    expected = LiteScoreEstimator(GaussianKernel(1.1), regularization=1e-3).fit(data.states)
    np.testing.assert_array_equal(got.alpha, expected.alpha)
    _same_surrogate(got, expected)


def test_finite_fit_is_the_finite_estimator_and_updates_online():
    data = _data()
    chosen = KernelHyperparameters(1.1, 1.0)
    fitter = FiniteScoreFitter(n_features=60)
    got = fitter.fit(data, chosen, np.random.default_rng(2))
    expected = FiniteScoreEstimator(
        60, GaussianKernel(1.1), regularization=1.0, rng=np.random.default_rng(2)
    ).fit(data.states)
    np.testing.assert_array_equal(got.theta, expected.theta)
    _same_surrogate(got, expected)
    # the online update the step makes with each new state is the batch fit on all of them
    new = np.random.default_rng(3).standard_normal((5, DIM))
    for u in new:
        got.update(u)
    batch = FiniteScoreEstimator(
        60, GaussianKernel(1.1), regularization=1.0, rng=np.random.default_rng(2)
    ).fit(np.concatenate([data.states, new]))
    np.testing.assert_allclose(got.theta, batch.theta, rtol=1e-8, atol=1e-10)


def test_the_lite_surrogate_flattens_far_from_the_data():
    """Zero far-field curvature: the lite surrogate's gradient vanishes away from its centres
    (the finite one is periodic there, which the confining wall handles)."""
    data = _data()
    fitter = LiteScoreFitter()
    chosen = fitter.select(data, np.random.default_rng(0))
    surrogate = fitter.fit(data, chosen, np.random.default_rng(1))
    np.testing.assert_allclose(surrogate.grad(np.array([60.0, -45.0, 30.0])), 0.0, atol=1e-12)
    assert fitter.far_field_curvature == 0.0
