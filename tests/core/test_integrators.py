"""Leapfrog integration: reversibility, second-order energy error, the one compiled trajectory
of every surrogate against a pure-numpy leapfrog, the confining wall and the abort ball."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from pymc_kernel_steps.core import Confinement, PolynomialTrend, RegressionSurrogate
from pymc_kernel_steps.core.integrators import (
    finite_gradient,
    kinetic_energy,
    leapfrog,
    lite_gradient,
    regression_gradient,
    surrogate_trajectory,
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
        q1, p1 = est.trajectory(q0, p0, 0.1, 30, inv_mass)
        q2, p2 = est.trajectory(q1, -p1, 0.1, 30, inv_mass)
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
        q1, p1 = est.trajectory(q0, p0, 0.07, 20, inv_mass)
        q2, p2 = leapfrog(est.grad, q0, p0, 0.07, 20, inv_mass)
        np.testing.assert_allclose(q1, q2, rtol=0, atol=1e-10)
        np.testing.assert_allclose(p1, p2, rtol=0, atol=1e-10)
    # the module functions behind the methods
    lite, finite = estimators
    q0, p0 = rng.standard_normal(3), rng.standard_normal(3)
    spec = lite_gradient(lite.Z, lite.alpha, lite.lengthscale)
    np.testing.assert_array_equal(
        surrogate_trajectory(spec, q0, p0, 0.1, 5)[0], lite.trajectory(q0, p0, 0.1, 5)[0]
    )
    spec = finite_gradient(finite.frequencies, finite.offsets, finite.theta)
    np.testing.assert_array_equal(
        surrogate_trajectory(spec, q0, p0, 0.1, 5)[0], finite.trajectory(q0, p0, 0.1, 5)[0]
    )


def test_zero_steps_returns_copies(estimators):
    q0, p0 = np.ones(3), np.arange(3.0)
    for q, p in [leapfrog(gaussian_grad, q0, p0, 0.1, 0)] + [
        est.trajectory(q0, p0, 0.1, 0) for est in estimators
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
    q, _ = broken.trajectory(lite.Z[0], np.ones(3), 0.1, 10)
    assert np.all(np.isnan(q))
    theta = finite.theta.copy()
    theta[0] = np.nan
    spec = finite_gradient(finite.frequencies, finite.offsets, theta)
    q, _ = surrogate_trajectory(spec, np.ones(3), np.ones(3), 0.1, 5)
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
            est.trajectory(**args)


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
    trend = (np.zeros(3), np.eye(3), np.zeros((3, 3)), np.eye(3))
    for spec in (
        lite_gradient(Z, coef, 1.0),
        finite_gradient(Z, rng.uniform(0, 6, size=5), coef),
        regression_gradient(Z, coef, np.ones(3)),
        regression_gradient(Z, coef, np.ones(3), trend=trend),
    ):
        surrogate_trajectory(spec, q, p, 0.1, 3, confinement=Confinement(1.0, 1.0, 5.0))

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
    spec = regression_gradient(Z, beta, precisions)
    end, end_momentum = surrogate_trajectory(spec, q, p, 0.2, 10)
    assert np.all(np.isfinite(end)) and np.linalg.norm(end) > 1.5
    ball = Confinement(abort_radius=1.5)
    aborted, _ = surrogate_trajectory(spec, q, p, 0.2, 10, confinement=ball)
    assert np.all(np.isnan(aborted))
    back, _ = surrogate_trajectory(spec, end, -end_momentum, 0.2, 10, confinement=ball)
    assert np.all(np.isnan(back))
    inside, _ = surrogate_trajectory(spec, q, p, 0.2, 10, None, Confinement(abort_radius=10.0))
    np.testing.assert_array_equal(inside, end)
    with pytest.raises(ValueError, match="abort_radius"):
        Confinement(abort_radius=0.0)


def test_rejecting_aborted_trajectories_keeps_the_target():
    """Surrogate HMC on N(0, I) in 2-d (the surrogate's Gaussian twice too wide) with trajectories
    aborted beyond radius 2, where 14 % of the mass lies, mixed with random-walk moves (from
    outside the ball every trajectory aborts). Rejecting aborted trajectories keeps the target;
    accepting their last position inside instead would pull mass inwards."""
    from ..helpers import assert_moments

    rng = np.random.default_rng(3)
    Z, beta, precisions = np.zeros((1, 2)), np.zeros(1), np.ones(2)
    wide = (np.zeros(2), 0.25 * np.eye(2), np.zeros((2, 2)), np.zeros((2, 2)))
    spec, ball = regression_gradient(Z, beta, precisions, trend=wide), Confinement(abort_radius=2.0)
    x, draws, aborted = np.zeros(2), np.empty((4, 6000, 2)), 0
    for chain in range(4):
        for i in range(6000):
            if rng.uniform() < 0.3:
                y, log_correction = x + rng.standard_normal(2), 0.0
            else:
                p = rng.standard_normal(2)
                y, p_new = surrogate_trajectory(spec, x, p, 0.5, 8, confinement=ball)
                log_correction = 0.5 * (p @ p - p_new @ p_new)
                aborted += not np.all(np.isfinite(y))
            if np.all(np.isfinite(y)):
                log_ratio = -0.5 * (y @ y - x @ x) + log_correction
                if np.log(rng.uniform()) < log_ratio:
                    x = y
            draws[chain, i] = x
    assert aborted > 1000
    assert_moments(draws, np.zeros(2), np.ones(2))


def numpy_trajectory(grad, q, p, eps, n_steps, inv_mass, radius, stiffness, abort_radius):
    """Brute force: leapfrog on ``grad`` plus the wall ``−(k/2)(‖q‖ − R)₊²`` in plain numpy,
    all-NaN once a position (the start included) leaves the ball of ``abort_radius``."""

    def force(x):
        norm = np.linalg.norm(x)
        return grad(x) - (stiffness * (norm - radius) / norm * x if norm > radius else 0.0)

    q, p = q.copy(), p.copy()
    if np.linalg.norm(q) > abort_radius:
        return np.full_like(q, np.nan), p
    p += 0.5 * eps * force(q)
    for step in range(n_steps):
        q += eps * inv_mass * p
        if np.linalg.norm(q) > abort_radius:
            return np.full_like(q, np.nan), p
        p += (eps if step < n_steps - 1 else 0.5 * eps) * force(q)
    return q, p


def _surrogates():
    """A fitted surrogate of every kind (the regression one with and without a quartic
    trend), with its gradient in plain numpy, written here from its formula."""
    rng = np.random.default_rng(11)
    Z = rng.standard_normal((60, 3)) @ np.linalg.cholesky(COV).T
    lite = LiteScoreEstimator(GaussianKernel(0.9), regularization=1e-2).fit(Z)

    def lite_grad(x):
        diff = lite.Z - x
        k = np.exp(-0.5 * np.sum(diff**2, 1) / lite.lengthscale**2)
        return (lite.alpha * k) @ diff / lite.lengthscale**2

    finite = FiniteScoreEstimator(40, GaussianKernel(0.9), regularization=1.0, rng=2).fit(Z)

    def finite_grad(x):
        m = len(finite.theta)
        phases = finite.frequencies @ x + finite.offsets
        return -np.sqrt(2.0 / m) * (finite.theta * np.sin(phases)) @ finite.frequencies

    values = gaussian_logp_rows(Z) + np.sin(Z[:, 0])
    precisions = np.array([1.5, 0.5, 0.0])
    plain = RegressionSurrogate(precisions, 1e-3, 30, rng).fit(Z, values)
    trend = PolynomialTrend(
        offset=0.0,
        linear=np.array([0.1, -0.2, 0.3]),
        precision=np.eye(3) * 0.8,
        cubic=0.01 * rng.standard_normal((3, 3)),
        quartic=0.05 * np.eye(3),
    )
    trended = RegressionSurrogate(precisions, 1e-3, 30, rng, trend=trend).fit(Z, values)

    def regression_grad(surrogate):
        def grad(x):
            diff = surrogate.Z - x
            k = np.exp(-0.5 * (diff**2) @ surrogate.precisions)
            t = surrogate.trend
            s = x * x
            trend_grad = (
                t.linear
                - t.precision @ x
                + t.cubic @ s
                + 2.0 * x * (t.cubic.T @ x)
                - 2.0 * x * (t.quartic @ s)
            )
            return trend_grad + (surrogate.beta * k) @ diff * surrogate.precisions

        return grad

    return {
        "lite": (lite, lite_grad),
        "finite": (finite, finite_grad),
        "regression": (plain, regression_grad(plain)),
        "regression with a trend": (trended, regression_grad(trended)),
    }


def gaussian_logp_rows(X):
    return -0.5 * np.einsum("ij,jk,ik->i", X, PRECISION, X)


@pytest.mark.parametrize("kind", ["lite", "finite", "regression", "regression with a trend"])
def test_the_one_trajectory_is_a_numpy_leapfrog_for_every_surrogate(kind):
    """Every surrogate's ``trajectory`` (the one compiled function on its ``gradient_spec()``)
    ends where a plain numpy leapfrog on its gradient formula ends, with and without the wall,
    and is all-NaN exactly where the numpy one leaves the abort ball."""
    surrogate, grad = _surrogates()[kind]
    rng = np.random.default_rng(12)
    inv_mass = np.array([0.7, 1.2, 1.0])
    walls = [
        Confinement(),
        Confinement(1.0, 2.0),
        Confinement.around(0.4 * rng.standard_normal((20, 3)), inv_mass),
        Confinement(0.5, 3.0, 1.4),
    ]
    n_aborted = 0
    for wall in walls:
        for _ in range(4):
            q, p = 0.5 * rng.standard_normal(3), rng.standard_normal(3)
            got = surrogate.trajectory(q, p, 0.08, 25, inv_mass, wall)
            expected = numpy_trajectory(
                grad, q, p, 0.08, 25, inv_mass, wall.radius, wall.stiffness, wall.abort_radius
            )
            np.testing.assert_allclose(got[0], expected[0], rtol=1e-9, atol=1e-11)
            n_aborted += np.all(np.isnan(got[0]))
            if np.all(np.isfinite(got[0])):
                np.testing.assert_allclose(got[1], expected[1], rtol=1e-9, atol=1e-11)
            again = surrogate_trajectory(surrogate.gradient_spec(), q, p, 0.08, 25, inv_mass, wall)
            np.testing.assert_array_equal(got[0], again[0])
    assert 0 < n_aborted < 16  # the small abort ball stops some trajectories, not all


def test_a_gradient_of_another_dimension_raises(estimators):
    lite, _ = estimators
    with pytest.raises(ValueError, match="dimension"):
        lite.trajectory(np.zeros(2), np.ones(2), 0.1, 3)
    with pytest.raises(ValueError, match="lengthscale"):
        lite_gradient(lite.Z, lite.alpha, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        lite_gradient(lite.Z, lite.alpha[:-1], 1.0)
    with pytest.raises(ValueError, match="theta"):
        finite_gradient(lite.Z, lite.alpha, lite.alpha[:-1])
