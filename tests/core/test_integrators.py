"""Leapfrog integration: reversibility, second-order energy error, compiled trajectories, the
abort ball."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from pymc_kernel_steps.core.integrators import (
    finite_leapfrog,
    kinetic_energy,
    leapfrog,
    lite_leapfrog,
    regression_leapfrog,
)
from pymc_kernel_steps.core.kernels import GaussianKernel
from pymc_kernel_steps.core.score_matching import FiniteScoreEstimator, LiteScoreEstimator

COV = np.array([[2.0, 0.8, 0.0], [0.8, 1.0, 0.3], [0.0, 0.3, 0.5]])
PRECISION = np.linalg.inv(COV)


def gaussian_logp(q):
    return -0.5 * q @ PRECISION @ q


def gaussian_grad(q):
    return -PRECISION @ q


def banana_grad(q):  # a non-quadratic target: log π = −x²/200 − ½(y + b x² − 100 b)²
    b = 0.1
    x, y = q
    r = y + b * x**2 - 100 * b
    return np.array([-x / 100 - r * 2 * b * x, -r])


@pytest.fixture(scope="module")
def estimators():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((200, 3)) @ np.linalg.cholesky(COV).T
    lite = LiteScoreEstimator(GaussianKernel(1.0), regularization=1e-2).fit(Z)
    finite = FiniteScoreEstimator(100, GaussianKernel(1.0), regularization=1.0, rng=1).fit(Z)
    return lite, finite


def test_kinetic_energy():
    p = np.array([1.0, -2.0, 3.0])
    m = np.array([1.0, 0.5, 2.0])
    assert kinetic_energy(p, m) == pytest.approx(0.5 * (1 + 2 + 18))
    assert kinetic_energy(p) == pytest.approx(7.0)
    np.testing.assert_allclose(kinetic_energy(np.stack([p, 2 * p]), m), [10.5, 42.0])


def test_leapfrog_reversible_on_non_quadratic_target():
    q0 = np.array([3.0, 1.0])
    p0 = np.array([0.7, -1.2])
    inv_mass = np.array([2.0, 0.5])
    q1, p1 = leapfrog(banana_grad, q0, p0, 0.05, 200, inv_mass)
    assert np.abs(q1 - q0).max() > 0.5  # it actually moved
    q2, p2 = leapfrog(banana_grad, q1, -p1, 0.05, 200, inv_mass)
    np.testing.assert_allclose(q2, q0, atol=1e-10)
    np.testing.assert_allclose(-p2, p0, atol=1e-10)


def test_compiled_trajectories_reversible(estimators):
    rng = np.random.default_rng(1)
    inv_mass = np.array([1.5, 1.0, 0.7])
    for est in estimators:
        q0, p0 = rng.standard_normal(3), rng.standard_normal(3)
        q1, p1 = est.leapfrog(q0, p0, 0.1, 30, inv_mass)
        q2, p2 = est.leapfrog(q1, -p1, 0.1, 30, inv_mass)
        np.testing.assert_allclose(q2, q0, atol=1e-10)
        np.testing.assert_allclose(-p2, p0, atol=1e-10)


def test_energy_error_is_second_order():
    """Fixed integration time T = 2: halving ε divides the max |ΔH| over the trajectory's
    end points from several starts by ≈ 4 (leapfrog is a second-order method)."""
    rng = np.random.default_rng(2)
    inv_mass = np.array([1.0, 2.0, 1.5])
    starts = [
        (rng.standard_normal(3), rng.standard_normal(3) / np.sqrt(inv_mass)) for _ in range(5)
    ]

    def max_energy_error(eps):
        worst = 0.0
        n_steps = int(round(2.0 / eps))
        for q0, p0 in starts:
            h0 = -gaussian_logp(q0) + kinetic_energy(p0, inv_mass)
            for n in range(1, n_steps + 1):  # along the whole trajectory
                q, p = leapfrog(gaussian_grad, q0, p0, eps, n, inv_mass)
                worst = max(worst, abs(-gaussian_logp(q) + kinetic_energy(p, inv_mass) - h0))
        return worst

    e1, e2, e3 = max_energy_error(0.1), max_energy_error(0.05), max_energy_error(0.025)
    assert 3.5 < e1 / e2 < 4.5
    assert 3.5 < e2 / e3 < 4.5


@pytest.mark.parametrize("which", [0, 1])
def test_compiled_trajectory_equals_generic_leapfrog(estimators, which):
    est = estimators[which]
    rng = np.random.default_rng(3)
    inv_mass = np.array([0.5, 1.0, 2.0])
    for _ in range(3):
        q0, p0 = rng.standard_normal(3), rng.standard_normal(3)
        q1, p1 = est.leapfrog(q0, p0, 0.07, 20, inv_mass)
        q2, p2 = leapfrog(est.grad, q0, p0, 0.07, 20, inv_mass)
        np.testing.assert_allclose(q1, q2, rtol=0, atol=1e-10)
        np.testing.assert_allclose(p1, p2, rtol=0, atol=1e-10)
    # the module functions behind the methods
    lite, finite = estimators
    q0, p0 = rng.standard_normal(3), rng.standard_normal(3)
    np.testing.assert_array_equal(
        lite_leapfrog(lite.Z, lite.alpha, lite.lengthscale, q0, p0, 0.1, 5)[0],
        lite.leapfrog(q0, p0, 0.1, 5)[0],
    )
    np.testing.assert_array_equal(
        finite_leapfrog(finite.frequencies, finite.offsets, finite.theta, q0, p0, 0.1, 5)[0],
        finite.leapfrog(q0, p0, 0.1, 5)[0],
    )


def test_zero_steps_returns_copies(estimators):
    q0, p0 = np.ones(3), np.arange(3.0)
    for q, p in [leapfrog(gaussian_grad, q0, p0, 0.1, 0)] + [
        est.leapfrog(q0, p0, 0.1, 0) for est in estimators
    ]:
        np.testing.assert_array_equal(q, q0)
        np.testing.assert_array_equal(p, p0)
        assert q is not q0 and p is not p0


def test_non_finite_gradient_gives_nan_position_without_raising(estimators):
    calls = []

    def bad_after_three(q):
        calls.append(1)
        return gaussian_grad(q) if len(calls) < 3 else np.array([np.nan, 0.0, 0.0])

    q, p = leapfrog(bad_after_three, np.ones(3), np.ones(3), 0.1, 10)
    assert np.all(np.isnan(q))
    q, _ = leapfrog(lambda q: np.full(3, np.inf), np.ones(3), np.ones(3), 0.1, 10)
    assert np.all(np.isnan(q))
    lite, finite = estimators
    broken = LiteScoreEstimator(GaussianKernel(1.0)).fit(lite.Z)
    broken.alpha = broken.alpha.copy()
    broken.alpha[0] = np.inf
    q, _ = broken.leapfrog(lite.Z[0], np.ones(3), 0.1, 10)
    assert np.all(np.isnan(q))
    theta = finite.theta.copy()
    theta[0] = np.nan
    q, _ = finite_leapfrog(
        finite.frequencies, finite.offsets, theta, np.ones(3), np.ones(3), 0.1, 5
    )
    assert np.all(np.isnan(q))
    # a gradient blowing up far away (overflowing momentum) also ends in NaN, not an exception
    q, _ = leapfrog(lambda q: 1e300 * np.exp(np.abs(q)), np.ones(3), np.ones(3), 1.0, 50)
    assert np.all(np.isnan(q))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"q": np.zeros((2, 3))}, "q"),
        ({"p": np.zeros(2)}, "p"),
        ({"step_size": np.nan}, "step_size"),
        ({"n_steps": -1}, "n_steps"),
        ({"n_steps": 2.5}, "n_steps"),
        ({"inv_mass_diag": np.ones(2)}, "inv_mass_diag"),
        ({"inv_mass_diag": np.array([1.0, 0.0, 1.0])}, "inv_mass_diag"),
    ],
)
def test_invalid_arguments_raise(estimators, kwargs, match):
    args = {
        "q": np.zeros(3),
        "p": np.ones(3),
        "step_size": 0.1,
        "n_steps": 3,
        "inv_mass_diag": None,
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        leapfrog(gaussian_grad, **args)
    for est in estimators:
        with pytest.raises(ValueError, match=match):
            est.leapfrog(**args)


def test_wrong_gradient_shape_raises():
    with pytest.raises(ValueError, match="grad_log_density"):
        leapfrog(lambda q: np.zeros(2), np.zeros(3), np.ones(3), 0.1, 2)
    with pytest.raises(ValueError, match="inv_mass_diag"):
        kinetic_energy(np.ones(3), np.ones(4))


def test_one_compiled_trajectory_for_every_surrogate_with_plain_arguments():
    """The three surrogates share one compiled leapfrog loop, specialised once, whose arguments
    are arrays, tuples of arrays and numbers only. A numba function passed as an argument made
    the on-disk cache key hold a reference to that function object, and a process loading the
    cache that another process had written failed with ``ReferenceError: underlying object has
    vanished`` (seen with two pytest workers). A quartic regression trend is the same type as
    none."""
    from pymc_kernel_steps.core import integrators

    rng = np.random.default_rng(0)
    q, p, Z, coef = rng.normal(size=3), rng.normal(size=3), rng.normal(size=(5, 3)), np.ones(5)
    integrators.lite_leapfrog(Z, coef, 1.0, q, p, 0.1, 3)
    integrators.finite_leapfrog(Z, rng.uniform(0, 6, size=5), coef, q, p, 0.1, 3)
    integrators.regression_leapfrog(Z, coef, np.ones(3), q, p, 0.1, 3)
    trend = (np.zeros(3), np.eye(3), np.zeros((3, 3)), np.eye(3))
    integrators.regression_leapfrog(Z, coef, np.ones(3), q, p, 0.1, 3, trend=trend)

    def plain(t):
        if isinstance(t, numba.types.BaseTuple):
            return all(isinstance(member, numba.types.Array) for member in t.types)
        return isinstance(t, (numba.types.Array, numba.types.Number))

    assert len(integrators._trajectory.signatures) == 1
    for signature in integrators._trajectory.signatures:
        assert all(plain(t) for t in signature)


def test_a_trajectory_leaving_the_abort_ball_is_all_nan_and_its_reversal_too():
    """The abort depends on the set of positions visited: the start counts, so the reversal of
    an aborted trajectory (which starts at its far end) is aborted as well."""
    Z, beta, precisions = np.zeros((1, 2)), np.zeros(1), np.ones(2)
    q, p = np.array([0.5, 0.0]), np.array([3.0, 0.0])
    end, end_momentum = regression_leapfrog(Z, beta, precisions, q, p, 0.2, 10)
    assert np.all(np.isfinite(end)) and np.linalg.norm(end) > 1.5
    aborted, _ = regression_leapfrog(Z, beta, precisions, q, p, 0.2, 10, abort_radius=1.5)
    assert np.all(np.isnan(aborted))
    back, _ = regression_leapfrog(
        Z, beta, precisions, end, -end_momentum, 0.2, 10, abort_radius=1.5
    )
    assert np.all(np.isnan(back))
    inside, _ = regression_leapfrog(Z, beta, precisions, q, p, 0.2, 10, abort_radius=10.0)
    np.testing.assert_array_equal(inside, end)
    with pytest.raises(ValueError, match="abort_radius"):
        regression_leapfrog(Z, beta, precisions, q, p, 0.2, 10, abort_radius=0.0)


def test_rejecting_aborted_trajectories_keeps_the_target():
    """Surrogate HMC on N(0, I) in 2-d (the surrogate's Gaussian twice too wide) with trajectories
    aborted beyond radius 2, where 14 % of the mass lies, mixed with random-walk moves (from
    outside the ball every trajectory aborts). Rejecting aborted trajectories keeps the target;
    accepting their last position inside instead would pull mass inwards."""
    from ..helpers import assert_moments

    rng = np.random.default_rng(3)
    Z, beta, precisions = np.zeros((1, 2)), np.zeros(1), np.ones(2)
    wide = (np.zeros(2), 0.25 * np.eye(2), np.zeros((2, 2)), np.zeros((2, 2)))
    x, draws, aborted = np.zeros(2), np.empty((4, 6000, 2)), 0
    for chain in range(4):
        for i in range(6000):
            if rng.uniform() < 0.3:
                y, log_correction = x + rng.standard_normal(2), 0.0
            else:
                p = rng.standard_normal(2)
                y, p_new = regression_leapfrog(
                    Z, beta, precisions, x, p, 0.5, 8, abort_radius=2.0, trend=wide
                )
                log_correction = 0.5 * (p @ p - p_new @ p_new)
                aborted += not np.all(np.isfinite(y))
            if np.all(np.isfinite(y)):
                log_ratio = -0.5 * (y @ y - x @ x) + log_correction
                if np.log(rng.uniform()) < log_ratio:
                    x = y
            draws[chain, i] = x
    assert aborted > 1000
    assert_moments(draws, np.zeros(2), np.ones(2))
