"""RegressionSurrogate: gradient against finite differences, compiled leapfrog against the generic
one, recovery of a function of its own class, relevance determination, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_kernel_steps.core import (
    RegressionSurrogate,
    Whitening,
    fit_quadratic_gaussian,
    informative_evaluations,
    leapfrog,
    regression_leapfrog,
    select_regression_hyperparameters,
)


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
    got = surrogate.leapfrog(q, p, 0.1, 17, inv_mass)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-10)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-10)
    # reversible: from the end with the momentum flipped, back to the start
    back_q, back_p = surrogate.leapfrog(got[0], -got[1], 0.1, 17, inv_mass)
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
        regression_leapfrog(
            np.zeros((3, 2)), np.zeros(3), [-1.0, 1.0], np.zeros(2), np.ones(2), 0.1, 3
        )


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
