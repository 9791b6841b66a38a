"""RegressionSurrogate: gradient against finite differences, compiled leapfrog against the generic
one, recovery of a function of its own class, relevance determination, bad input; its trends
(quadratic, quartic): exact recovery, properness, the automatic choice."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_kernel_steps.core import (
    Confinement,
    PolynomialTrend,
    RegressionSurrogate,
    Whitening,
    fit_quadratic_gaussian,
    fit_quartic_trend,
    informative_evaluations,
    leapfrog,
    regression_gradient,
    select_regression_hyperparameters,
    select_trend,
)
from pymc_kernel_steps.core.regression import quartic_parameter_count


def _fitted(dim=3, n=400, seed=0, precisions=None):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, dim))
    values = -0.5 * np.sum(U**2, axis=1) + np.sin(U[:, 0]) + 0.3 * U[:, 1] ** 2
    if precisions is None:
        precisions = np.linspace(0.5, 2.0, dim)
    return RegressionSurrogate(precisions, 1e-3, n_centers=100, rng=rng).fit(U, values), U


def test_gradient_is_the_derivative_of_the_log_density():
    surrogate, _ = _fitted()
    rng = np.random.default_rng(1)
    h = 1e-6
    for x in rng.standard_normal((5, 3)):
        numeric = [
            (surrogate.log_density(x + h * e) - surrogate.log_density(x - h * e)) / (2 * h)
            for e in np.eye(3)
        ]
        np.testing.assert_allclose(surrogate.grad(x), numeric, rtol=1e-5, atol=1e-7)
    X = rng.standard_normal((4, 3))
    np.testing.assert_allclose(surrogate.grad(X), [surrogate.grad(x) for x in X], rtol=1e-12)
    assert np.allclose(surrogate.log_density(X), [surrogate.log_density(x) for x in X])


def test_compiled_leapfrog_is_the_generic_leapfrog_on_the_gradient():
    surrogate, _ = _fitted(precisions=np.array([1.0, 0.0, 4.0]))
    rng = np.random.default_rng(2)
    q, p = rng.standard_normal(3), rng.standard_normal(3)
    inv_mass = np.array([1.0, 0.5, 2.0])
    expected = leapfrog(surrogate.grad, q, p, 0.1, 17, inv_mass)
    got = surrogate.trajectory(q, p, 0.1, 17, inv_mass)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-10)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-10)
    # reversible: from the end with the momentum flipped, back to the start
    back_q, back_p = surrogate.trajectory(got[0], -got[1], 0.1, 17, inv_mass)
    np.testing.assert_allclose(back_q, q, atol=1e-10)
    np.testing.assert_allclose(-back_p, p, atol=1e-10)


def test_a_function_of_the_model_class_is_recovered_and_the_tails_are_the_gaussian():
    """Values from ``−½‖u‖² + c + Σ β_i k(z_i, u)`` with centres among the data points: the fit
    reproduces them off the data, and far away ``f`` is the Gaussian term plus the fitted
    constant (wide kernels can carry part of a constant, so that ``c`` is the fit's own)."""
    rng = np.random.default_rng(3)
    dim, precisions = 2, np.array([2.0, 0.5])
    U = rng.uniform(-2.5, 2.5, size=(600, dim))
    centres, beta = U[:30], rng.normal(0, 2.0, 30)
    truth = RegressionSurrogate(precisions, 1.0, n_centers=30, rng=rng).fit(centres, np.zeros(30))
    truth.Z, truth.beta, truth.offset = centres, beta, 1.5
    surrogate = RegressionSurrogate(precisions, 1e-6, n_centers=600, rng=rng).fit(
        U, truth.log_density(U)
    )
    test = rng.uniform(-2.0, 2.0, size=(200, dim))
    error = surrogate.log_density(test) - truth.log_density(test)
    assert np.max(np.abs(error)) < 1e-3
    far = np.array([40.0, -30.0])
    gaussian_tail = -0.5 * far @ far + surrogate.offset
    assert surrogate.log_density(far) == pytest.approx(gaussian_tail, abs=1e-9)
    np.testing.assert_allclose(surrogate.grad(far), -far, atol=1e-6)


def test_selection_drops_the_coordinates_the_log_density_does_not_depend_on():
    """A banana in the first two of five whitened coordinates: the other three have the Gaussian
    term only, and the search sets their precisions to zero; an isotropic kernel fits worse."""
    rng = np.random.default_rng(4)
    U = rng.standard_normal((2500, 5)) * 1.3
    ridge = 2.0 * U[:, 1] + 1.5 * (U[:, 0] ** 2 - 1.0)
    values = -0.5 * U[:, 0] ** 2 - 0.5 * ridge**2 - 0.5 * np.sum(U[:, 2:] ** 2, axis=1)
    precisions, regularization, error = select_regression_hyperparameters(U, values, rng)
    assert np.all(precisions[:2] > 0)
    np.testing.assert_array_equal(precisions[2:], 0.0)
    assert regularization > 0
    _, _, isotropic_error = select_regression_hyperparameters(
        U, values, np.random.default_rng(4), relevance_factors=()
    )
    assert error < 0.2 * isotropic_error


def test_informative_evaluations_leave_out_the_far_and_the_non_finite():
    rng = np.random.default_rng(5)
    points = rng.standard_normal((8, 2))
    values = np.array([-1.0, -2.0, -np.inf, np.nan, -50.0, -3.0, -10.0, -1.5])
    kept_points, kept_values = informative_evaluations(points, values, rng, size=100)
    window = 0.5 * 18.42  # ½ χ²₂ quantile 0.9999
    expected = np.isfinite(values) & (values >= -1.0 - window)
    np.testing.assert_array_equal(kept_values, values[expected])
    np.testing.assert_array_equal(kept_points, points[expected])
    _, few = informative_evaluations(points, values, rng, size=2)
    assert len(few) == 2 and set(few) <= set(values[expected])
    empty_points, empty_values = informative_evaluations(points[:2], [np.nan, -np.inf], rng, 5)
    assert empty_points.shape == (0, 2) and empty_values.shape == (0,)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"precisions": [1.0, -1.0]}, "precisions"),
        ({"precisions": [1.0, np.nan]}, "precisions"),
        ({"precisions": [1.0, 1.0], "regularization": 0.0}, "regularization"),
        ({"precisions": [1.0, 1.0], "n_centers": 0}, "n_centers"),
    ],
)
def test_bad_parameters_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RegressionSurrogate(**kwargs)


def test_bad_data_and_unfitted_use_raise():
    surrogate = RegressionSurrogate([1.0, 1.0])
    with pytest.raises(RuntimeError, match="not fitted"):
        surrogate.grad(np.zeros(2))
    with pytest.raises(ValueError, match="values"):
        surrogate.fit(np.zeros((5, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="finite"):
        surrogate.fit(np.zeros((5, 2)), [0, 0, 0, 0, np.nan])
    with pytest.raises(ValueError, match="precisions"):
        surrogate.fit(np.zeros((5, 3)), np.zeros(5))
    with pytest.raises(ValueError, match="holdout"):
        select_regression_hyperparameters(
            np.zeros((5, 2)), np.zeros(5), np.random.default_rng(), holdout=1.0
        )
    with pytest.raises(ValueError, match="precisions"):
        regression_gradient(np.zeros((3, 2)), np.zeros(3), [-1.0, 1.0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lengthscales": []}, "lengthscales"),
        ({"lengthscales": [0.5, -1.0]}, "lengthscales"),
        ({"regularizations": [0.0]}, "regularizations"),
        ({"relevance_factors": [-1.0]}, "relevance_factors"),
        ({"sweeps": 0}, "sweeps"),
        ({"n_centers": 0}, "n_centers"),
    ],
)
def test_bad_search_grids_name_the_parameter(kwargs, match):
    U = np.random.default_rng(0).standard_normal((50, 2))
    with pytest.raises(ValueError, match=match):
        select_regression_hyperparameters(
            U, -0.5 * np.sum(U**2, 1), np.random.default_rng(), **kwargs
        )


def test_informative_evaluations_bad_input_names_the_parameter():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="size"):
        informative_evaluations(np.zeros((3, 2)), np.zeros(3), rng, size=0)
    with pytest.raises(ValueError, match="points"):
        informative_evaluations(np.zeros((3, 2)), np.zeros(4), rng, size=5)


# ---------------------------------------------------------------- the fitted Gaussian term
def _gaussian_log_density(U, mean, covariance):
    centred = U - mean
    return -0.5 * np.einsum("ij,jk,ik->i", centred, np.linalg.inv(covariance), centred) + 3.0


def test_the_quadratic_through_gaussian_log_densities_is_that_gaussian():
    """Exact Gaussian log densities, wherever they were evaluated (here at points far narrower
    than the Gaussian), give back its mean and covariance."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((4, 4))
    covariance = A @ A.T + 0.5 * np.eye(4)
    mean = rng.standard_normal(4)
    U = 0.2 * rng.standard_normal((60, 4))
    fitted_mean, fitted_covariance = fit_quadratic_gaussian(
        U, _gaussian_log_density(U, mean, covariance)
    )
    np.testing.assert_allclose(fitted_mean, mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fitted_covariance, covariance, rtol=1e-6, atol=1e-6)


def test_a_flat_or_convex_direction_is_clipped_to_a_proper_gaussian():
    rng = np.random.default_rng(6)
    U = rng.standard_normal((200, 3))
    values = 0.5 * U[:, 0] ** 2 - 0.5 * U[:, 1] ** 2 - 2.0 * U[:, 2] ** 2  # convex in u₀
    mean, covariance = fit_quadratic_gaussian(U, values, min_precision=0.1, max_precision=2.0)
    np.testing.assert_allclose(np.diag(covariance), [10.0, 1.0, 0.5], rtol=1e-6)
    np.testing.assert_allclose(mean, 0.0, atol=1e-8)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"U": np.zeros((29, 4))}, "at least 30 points"),
        ({"min_precision": 0.0}, "min_precision"),
        ({"min_precision": 2.0, "max_precision": 1.0}, "max_precision"),
        ({"U": np.full((40, 4), np.nan)}, "finite"),
    ],
)
def test_quadratic_fit_bad_input_names_the_parameter(kwargs, match):
    rng = np.random.default_rng(7)
    arguments = {"U": rng.standard_normal((40, 4)), **kwargs}
    values = -0.5 * np.sum(np.nan_to_num(arguments["U"]) ** 2, axis=1)
    with pytest.raises(ValueError, match=match):
        fit_quadratic_gaussian(
            arguments["U"],
            values,
            **{k: v for k, v in arguments.items() if k != "U"},
        )


def test_whitening_of_a_gaussian():
    rng = np.random.default_rng(8)
    A = rng.standard_normal((3, 3))
    covariance = A @ A.T + np.eye(3)
    mean = rng.standard_normal(3)
    frame = Whitening.from_gaussian(mean, covariance)
    np.testing.assert_allclose(frame.chol @ frame.chol.T, covariance, rtol=1e-12)
    x = rng.standard_normal((5, 3))
    np.testing.assert_allclose(frame.unwhiten(frame.whiten(x)), x, rtol=1e-12, atol=1e-12)
    draws = frame.unwhiten(rng.standard_normal((200_000, 3)))
    np.testing.assert_allclose(np.cov(draws.T), covariance, rtol=0.03, atol=0.03)
    with pytest.raises(ValueError, match="positive definite"):
        Whitening.from_gaussian(mean, -covariance)
    with pytest.raises(ValueError, match="shape"):
        Whitening.from_gaussian(mean, covariance[:2])


# ------------------------------------------------------------------------------ the trends


def _random_trend(dim, seed):
    """A PolynomialTrend with every coefficient non-zero and a positive definite ``Q``."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((dim, dim))
    B = rng.standard_normal((dim, dim))
    return PolynomialTrend(
        rng.standard_normal(),
        rng.standard_normal(dim),
        0.5 * (A + A.T),
        0.3 * rng.standard_normal((dim, dim)),
        0.1 * (B @ B.T) + 0.05 * np.eye(dim),
    )


def _banana_values(U, b=0.5):
    """The 3-d banana's log density (up to a constant): quartic in ``u₀``, cubic in (u₀, u₁)."""
    return -0.5 * (U[:, 0] ** 2 + (U[:, 1] + b * U[:, 0] ** 2 - b) ** 2 + U[:, 2] ** 2)


def test_trend_gradient_is_the_derivative_of_its_log_density():
    trend = _random_trend(4, 0)
    rng = np.random.default_rng(1)
    X, h = rng.standard_normal((5, 4)), 1e-6
    numerical = np.stack(
        [
            (trend.log_density(X + h * e) - trend.log_density(X - h * e)) / (2 * h)
            for e in np.eye(4)
        ],
        axis=1,
    )
    np.testing.assert_allclose(trend.grad(X), numerical, rtol=1e-6, atol=1e-6)
    U = rng.standard_normal((3, 4))
    standard = PolynomialTrend.standard_gaussian(4)
    assert standard.is_standard_gaussian and not trend.is_standard_gaussian
    np.testing.assert_array_equal(standard.log_density(U), -0.5 * np.sum(U**2, axis=1))


def test_a_quartic_trend_is_recovered_from_its_log_densities():
    """Least squares on the monomials gives back every coefficient of a trend whose ``Q`` is
    positive definite (the clip then changes nothing)."""
    truth = _random_trend(3, 2)
    rng = np.random.default_rng(3)
    U = 1.5 * rng.standard_normal((2 * quartic_parameter_count(3), 3))
    fitted = fit_quartic_trend(U, truth.log_density(U), min_quartic=1e-3)
    for name in ("linear", "precision", "cubic", "quartic"):
        np.testing.assert_allclose(getattr(fitted, name), getattr(truth, name), atol=1e-8)
    assert fitted.offset == pytest.approx(truth.offset, abs=1e-8)


def test_the_quartic_trend_represents_the_banana_far_beyond_the_data():
    """Fitted where the data are (|u| < 1.5), the quartic trend predicts the banana's arms at
    u₀ = 4 to within the clip's small quartic; the kernel sum of the quadratic trend cannot (it
    vanishes there) and is off by tens of nats."""
    rng = np.random.default_rng(4)
    U = rng.uniform(-1.5, 1.5, size=(400, 3))
    values = _banana_values(U)
    far = np.array([[4.0, -0.5 * 16 + 0.5, 0.3], [-4.0, -7.0, -0.2]])
    trend = fit_quartic_trend(U, values, min_quartic=1e-6)
    np.testing.assert_allclose(trend.log_density(far), _banana_values(far), atol=1e-2)
    precisions = np.ones(3)
    quadratic = RegressionSurrogate(precisions, 1e-4, 400, rng).fit(U, values)
    assert np.max(np.abs(quadratic.log_density(far) - _banana_values(far))) > 10


def test_the_quartic_trend_is_proper_whatever_the_data():
    """Log densities that grow in a direction (convex, or a quartic with the wrong sign) give a
    ``Q`` with eigenvalues ≥ min_quartic, and the trend decays along every ray."""
    rng = np.random.default_rng(5)
    U = rng.standard_normal((300, 3))
    values = 0.5 * U[:, 0] ** 2 + 0.1 * U[:, 1] ** 4 - U[:, 2] ** 2 + U[:, 0] * U[:, 1] ** 2
    trend = fit_quartic_trend(U, values, min_quartic=1e-2)
    assert np.linalg.eigvalsh(trend.quartic).min() >= 1e-2 * (1 - 1e-9)
    directions = rng.standard_normal((50, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    for radius in (1e4, 1e5):  # far enough for the quartic to dominate the cubic
        assert np.all(trend.log_density(radius * directions) < trend.log_density(np.zeros(3)))


def test_the_compiled_leapfrog_follows_the_trend():
    trend = _random_trend(3, 6)
    rng = np.random.default_rng(7)
    U = rng.standard_normal((200, 3))
    values = trend.log_density(U) + np.sin(2 * U[:, 0])
    precisions = np.array([4.0, 0.0, 0.0])  # the residual sin(2u₀) depends on u₀ alone
    surrogate = RegressionSurrogate(precisions, 1e-4, 100, rng, trend=trend).fit(U, values)
    q, p = rng.standard_normal(3), rng.standard_normal(3)
    compiled = surrogate.trajectory(
        q, p, 0.05, 25, np.array([1.0, 0.5, 2.0]), Confinement(3.0, 0.7)
    )

    def gradient(x):
        excess = max(0.0, np.linalg.norm(x) - 3.0)
        return surrogate.grad(x) - 0.7 * excess * x / np.linalg.norm(x)

    generic = leapfrog(gradient, q, p, 0.05, 25, np.array([1.0, 0.5, 2.0]))
    np.testing.assert_allclose(compiled[0], generic[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(compiled[1], generic[1], rtol=1e-10, atol=1e-12)
    residual = values - trend.log_density(U)
    assert np.sqrt(np.mean((surrogate.log_density(U) - values) ** 2)) < 0.1 * np.std(residual)


def test_auto_keeps_the_quartic_trend_where_it_predicts_better_and_only_there():
    rng = np.random.default_rng(8)
    U = rng.standard_normal((400, 3))
    banana = select_trend(U, _banana_values(U), rng)
    assert not banana.is_standard_gaussian
    gaussian = -0.5 * np.sum(U**2, axis=1)
    noisy = gaussian + 2.0 * rng.standard_normal(len(U))  # a pseudo-marginal estimate
    assert select_trend(U, noisy, rng).is_standard_gaussian
    assert select_trend(U, _banana_values(U), rng, "quadratic").is_standard_gaussian
    few = U[: 2 * quartic_parameter_count(3) - 1]
    assert select_trend(few, _banana_values(few), rng, "quartic").is_standard_gaussian
    assert not select_trend(U, noisy, rng, "quartic").is_standard_gaussian


def test_kernel_selection_fits_what_the_trend_leaves():
    """With the banana's quartic trend nothing is left to bend: the held-out error is at the
    level of the trend's clip, far below that of the quadratic trend's kernel."""
    rng = np.random.default_rng(9)
    U = rng.standard_normal((600, 3))
    values = _banana_values(U)
    trend = fit_quartic_trend(U, values)
    _, _, error = select_regression_hyperparameters(U, values, rng, trend=trend, sweeps=1)
    _, _, quadratic_error = select_regression_hyperparameters(U, values, rng, sweeps=1)
    assert error < 1e-3 < quadratic_error


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"quartic": -np.eye(2)}, "positive definite or zero"),
        ({"precision": np.array([[1.0, 2.0], [0.0, 1.0]])}, "symmetric"),
        ({"cubic": np.zeros((3, 3))}, "cubic"),
        ({"linear": np.array([np.nan, 0.0])}, "linear"),
        ({"offset": np.inf}, "offset"),
    ],
)
def test_bad_trend_names_the_parameter(change, match):
    arguments = {
        "offset": 0.0,
        "linear": np.zeros(2),
        "precision": np.eye(2),
        "cubic": np.zeros((2, 2)),
        "quartic": np.zeros((2, 2)),
        **change,
    }
    with pytest.raises(ValueError, match=match):
        PolynomialTrend(**arguments)


def test_bad_trend_fits_name_the_parameter():
    rng = np.random.default_rng(10)
    U = rng.standard_normal((100, 3))
    values = _banana_values(U)
    with pytest.raises(ValueError, match="at least 50 points"):  # twice 1 + 3 + 6 + 9 + 6
        fit_quartic_trend(U[:49], values[:49])
    with pytest.raises(ValueError, match="min_quartic"):
        fit_quartic_trend(U, values, min_quartic=0.0)
    with pytest.raises(ValueError, match="kind"):
        select_trend(U, values, rng, "cubic")
    with pytest.raises(ValueError, match="holdout"):
        select_trend(U, values, rng, holdout=1.0)
    with pytest.raises(ValueError, match="dimension 2"):
        RegressionSurrogate(np.ones(2), trend=PolynomialTrend.standard_gaussian(3))
    with pytest.raises(ValueError, match="trend"):
        regression_gradient(U[:5], np.ones(5), np.ones(3), trend=(np.zeros(2),) * 4)
