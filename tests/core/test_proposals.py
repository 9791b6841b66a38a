"""KAMH proposal covariance, Gaussian log density through a Cholesky factor, and the proposal draw.

DESIGN.md: R(x) = γ² I_d + ν² Mᵀ H M, M ∈ ℝ^{n×d} with rows 2∇ₓk(x, z_i), H = I_n − 11ᵀ/n;
proposal x* ~ N(x, R(x)); Hastings correction log N(x; x*, R(x*)) − log N(x*; x, R(x)).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pymc_kernel_steps.core.kernels import (
    GaussianKernel,
    LinearKernel,
    MaternKernel,
    RationalQuadraticKernel,
)
from pymc_kernel_steps.core.moves import kamh_propose
from pymc_kernel_steps.core.proposals import (
    gaussian_logpdf,
    gaussian_random_walk,
    kamh_covariance,
    kamh_feature_covariance,
)

# --------------------------------------------------------------------------- brute force


def gaussian_grad_ref(ell):
    """DESIGN.md: ∇ₓk(x, y) = k(x, y)(y − x)/ℓ² for k = exp(−‖x − y‖²/(2ℓ²))."""

    def grad(x, z):
        diff = z - x
        return math.exp(-float(diff @ diff) / (2.0 * ell**2)) * diff / ell**2

    return grad


def fd_grad_ref(kernel, h=1e-6):
    """Central differences of the scalar kernel k(x, z) (independent of ``grad_x``)."""

    def grad(x, z):
        out = np.empty(len(x))
        for j in range(len(x)):
            e = np.zeros(len(x))
            e[j] = h
            out[j] = (kernel(x + e, z) - kernel(x - e, z)) / (2.0 * h)
        return out

    return grad


def brute_kamh_covariance(x, Z, grad, gamma, nu2):
    n, d = Z.shape
    M = np.empty((n, d))
    for i in range(n):
        M[i] = 2.0 * grad(x, Z[i])
    H = np.empty((n, n))
    for a in range(n):
        for b in range(n):
            H[a, b] = (1.0 if a == b else 0.0) - 1.0 / n
    R = np.zeros((d, d))
    for p in range(d):
        for q in range(d):
            acc = 0.0
            for a in range(n):
                for b in range(n):
                    acc += M[a, p] * H[a, b] * M[b, q]
            R[p, q] = nu2 * acc + (gamma**2 if p == q else 0.0)
    return R


def _data(seed, n=15, d=3):
    rng = np.random.default_rng(seed)
    A = np.array([[1.0, 0.0, 0.0], [0.9, 0.4, 0.0], [-0.5, 0.3, 0.6]])[:d, :d]
    return rng.standard_normal((n, d)) @ A.T


KERNEL_CASES = [
    ("gauss", GaussianKernel(0.9), gaussian_grad_ref(0.9), 1e-12),
    ("matern-2.5", MaternKernel(1.2, 2.5), None, 1e-6),
    ("matern-3.2", MaternKernel(1.0, 3.2), None, 1e-6),
    ("rq", RationalQuadraticKernel(0.8, 2.0), None, 1e-6),
]


# --------------------------------------------------------------------------- kamh_covariance


@pytest.mark.parametrize(
    ("name", "kernel", "grad", "rtol"), KERNEL_CASES, ids=[c[0] for c in KERNEL_CASES]
)
@pytest.mark.parametrize(("gamma", "nu2"), [(0.3, 1.0), (0.0, 2.5), (1.5, 0.1)])
def test_kamh_covariance_matches_brute_force(name, kernel, grad, rtol, gamma, nu2):
    grad = grad or fd_grad_ref(kernel)
    Z = _data(1)
    for x in (np.array([0.2, -0.1, 0.4]), Z[3] + 0.1):
        R = kamh_covariance(x, Z, kernel, gamma, nu2)
        expected = brute_kamh_covariance(x, Z, grad, gamma, nu2)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(R, expected, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize(("gamma", "nu2"), [(0.3, 1.0), (0.0, 0.7), (2.0, 0.0)])
def test_kamh_covariance_linear_kernel_is_scaled_sample_covariance(gamma, nu2):
    # ∇ₓ xᵀz = z, so M = 2Z and MᵀHM = 4 n Cov(Z) (biased); R does not depend on x
    Z = _data(2, n=25)
    n, d = Z.shape
    expected = gamma**2 * np.eye(d) + 4.0 * nu2 * n * np.cov(Z.T, bias=True)
    for x in (np.zeros(d), np.array([5.0, -3.0, 1.0])):
        R = kamh_covariance(x, Z, LinearKernel(), gamma, nu2)
        np.testing.assert_allclose(R, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            R, brute_kamh_covariance(x, Z, lambda _x, z: z, gamma, nu2), rtol=1e-12, atol=1e-12
        )


@pytest.mark.parametrize(
    "kernel", [GaussianKernel(0.7), MaternKernel(1.0, 1.5), LinearKernel()], ids=repr
)
def test_kamh_covariance_symmetric_positive_definite(kernel):
    Z = _data(3, n=30)
    gamma = 0.2
    for x in (Z.mean(axis=0), Z[0], np.array([3.0, 3.0, -3.0])):
        R = kamh_covariance(x, Z, kernel, gamma, 1.7)
        np.testing.assert_allclose(R, R.T, rtol=1e-13, atol=1e-15)
        # MᵀHM is PSD, so every eigenvalue is at least γ²
        assert np.linalg.eigvalsh(R).min() >= gamma**2 * (1.0 - 1e-9)
        np.linalg.cholesky(R)


def test_kamh_covariance_learned_part_is_anisotropic_and_centred():
    Z = _data(4, n=40)
    x = Z.mean(axis=0)
    F = kamh_feature_covariance(x, Z, GaussianKernel(1.0))
    eig = np.linalg.eigvalsh(F)
    assert eig.max() > 3.0 * eig.min() > 0  # the data are correlated: R(x) is not isotropic
    # centring (H): one point gives nothing to learn; two points give a rank-one matrix
    np.testing.assert_array_equal(kamh_feature_covariance(x, Z[:1], GaussianKernel(1.0)), 0.0)
    eig2 = np.linalg.eigvalsh(kamh_feature_covariance(x, Z[:2], GaussianKernel(1.0)))
    assert np.sum(eig2 > 1e-12 * eig2.max()) == 1


# --------------------------------------------------------------------------- feature covariance


@pytest.mark.parametrize(
    "kernel", [GaussianKernel(0.8), RationalQuadraticKernel(1.1, 0.5), LinearKernel()], ids=repr
)
def test_feature_covariance_is_the_learned_part(kernel):
    # the step classes cache kamh_feature_covariance and rebuild R = ν² F + γ² I from it
    Z = _data(5, n=20)
    x = np.array([0.3, -0.2, 0.1])
    Z_before, x_before = Z.copy(), x.copy()
    F = kamh_feature_covariance(x, Z, kernel)
    np.testing.assert_array_equal(Z, Z_before)
    np.testing.assert_array_equal(x, x_before)
    np.testing.assert_allclose(kamh_covariance(x, Z, kernel, 0.0, 1.0), F, rtol=1e-14)
    for gamma, nu2 in [(0.5, 2.0), (1.3, 0.01)]:
        R = kamh_covariance(x, Z, kernel, gamma, nu2)
        np.testing.assert_allclose(R, gamma**2 * np.eye(3) + nu2 * F, rtol=1e-13, atol=1e-15)
    # kamh_covariance must not write into a matrix it shares with a later call
    np.testing.assert_allclose(kamh_feature_covariance(x, Z, kernel), F, rtol=1e-14)
    # equals n times the biased covariance of the rows of M = 2∇ₓk(x, Z)
    M = np.array([2.0 * fd_grad_ref(kernel)(x, z) for z in Z])
    np.testing.assert_allclose(F, len(Z) * np.cov(M.T, bias=True), rtol=1e-6, atol=1e-10)


# --------------------------------------------------------------------------- gaussian_logpdf


def _spd(seed, d, spread=1.0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return Q @ np.diag(np.logspace(-spread, spread, d)) @ Q.T


@pytest.mark.parametrize(("d", "spread"), [(1, 0.0), (2, 1.0), (4, 2.0), (7, 3.0)])
def test_gaussian_logpdf_matches_scipy(d, spread):
    cov = _spd(10 + d, d, spread)
    L = np.linalg.cholesky(cov)
    rng = np.random.default_rng(d)
    mean = rng.standard_normal(d)
    for _ in range(5):
        x = mean + 3.0 * rng.standard_normal(d)
        expected = stats.multivariate_normal(mean, cov).logpdf(x)
        assert gaussian_logpdf(x, mean, L) == pytest.approx(expected, rel=1e-10, abs=1e-10)
    # Fortran-ordered factor and list inputs give the same answer
    x = mean + 1.0
    assert gaussian_logpdf(list(x), list(mean), np.asfortranarray(L)) == pytest.approx(
        stats.multivariate_normal(mean, cov).logpdf(x), rel=1e-10
    )


# --------------------------------------------------------------------------- proposals


def _brute_log_correction(x, y, Z, kernel, gamma, nu2):
    """log q(x | y) − log q(y | x) with q(· | u) = N(u, R(u))."""
    R_x = kamh_covariance(x, Z, kernel, gamma, nu2)
    R_y = kamh_covariance(y, Z, kernel, gamma, nu2)
    return stats.multivariate_normal(y, R_y).logpdf(x) - stats.multivariate_normal(x, R_x).logpdf(y)


@pytest.mark.parametrize(
    "kernel",
    [
        GaussianKernel(0.6),
        MaternKernel(0.8, 2.5),
        MaternKernel(0.7, 3.2),
        RationalQuadraticKernel(0.6),
    ],
    ids=repr,
)
def test_kamh_propose_log_correction_matches_scipy(kernel):
    Z = _data(6, n=25)
    gamma, nu2 = 0.2, 1.5
    rng = np.random.default_rng(7)
    corrections = []
    for start in (Z.mean(axis=0), Z[2] + 0.05, np.array([1.0, -1.0, 0.5])):
        for _ in range(10):
            proposal, log_corr = kamh_propose(rng, start, Z, kernel, gamma, nu2)
            expected = _brute_log_correction(start, proposal, Z, kernel, gamma, nu2)
            assert log_corr == pytest.approx(expected, rel=1e-8, abs=1e-10)
            corrections.append(expected)
    # position dependence makes the correction matter here: a test of a zero would be vacuous
    assert np.max(np.abs(corrections)) > 0.5


def test_kamh_propose_linear_kernel_has_zero_correction():
    Z = _data(8, n=20)
    rng = np.random.default_rng(9)
    x = np.array([0.5, 0.5, -1.0])
    for _ in range(20):
        proposal, log_corr = kamh_propose(rng, x, Z, LinearKernel(), 0.3, 0.05)
        assert abs(log_corr) < 1e-9
        assert not np.allclose(proposal, x)


def test_kamh_propose_is_reproducible_and_does_not_move_x():
    Z = _data(10)
    x = np.array([0.1, 0.2, 0.3])
    a = kamh_propose(np.random.default_rng(5), x, Z, GaussianKernel(1.0), 0.4, 1.0)
    b = kamh_propose(np.random.default_rng(5), x, Z, GaussianKernel(1.0), 0.4, 1.0)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]
    np.testing.assert_array_equal(x, [0.1, 0.2, 0.3])


def test_kamh_propose_distribution_is_gaussian_with_covariance_R():
    Z = _data(11, n=20)
    kernel = GaussianKernel(1.0)
    gamma, nu2 = 0.1, 2.0
    x = Z.mean(axis=0) + np.array([0.2, 0.0, -0.1])
    R = kamh_covariance(x, Z, kernel, gamma, nu2)
    eig = np.linalg.eigvalsh(R)
    assert eig.max() > 5.0 * eig.min()  # anisotropic: a wrong square root (Lᵀ L) would show
    n_draws = 8000
    rng = np.random.default_rng(12)
    draws = np.array([kamh_propose(rng, x, Z, kernel, gamma, nu2)[0] for _ in range(n_draws)])
    # mean: z-scores of each coordinate
    z_mean = (draws.mean(axis=0) - x) / np.sqrt(np.diag(R) / n_draws)
    assert np.all(np.abs(z_mean) < 4.5), z_mean
    # covariance entries: Var(S_pq) ≈ (R_pp R_qq + R_pq²)/N for Gaussian data
    S = np.cov(draws.T, bias=True)
    se = np.sqrt((np.outer(np.diag(R), np.diag(R)) + R**2) / n_draws)
    z_cov = (S - R) / se
    assert np.all(np.abs(z_cov) < 4.5), z_cov
    # Gaussian shape: squared Mahalanobis distances are χ²_d
    L = np.linalg.cholesky(R)
    white = np.linalg.solve(L, (draws - x).T)
    assert stats.kstest((white**2).sum(axis=0), stats.chi2(df=3).cdf).pvalue > 1e-4


# --------------------------------------------------------------------------- gaussian_random_walk


def test_gaussian_random_walk_constant_covariance():
    cov = _spd(20, 3, 1.0)
    L = np.linalg.cholesky(cov)
    x = np.array([1.0, 2.0, 3.0])
    proposal, log_corr = gaussian_random_walk(np.random.default_rng(0), x, L)
    assert log_corr == 0.0
    # x* = x + L ξ with the rng's standard normals
    xi = np.random.default_rng(0).standard_normal(3)
    np.testing.assert_allclose(proposal, x + L @ xi, rtol=1e-14)
    # supplying the same factor for the reverse move gives a zero correction, too
    _, log_corr = gaussian_random_walk(np.random.default_rng(0), x, L, lambda _y: L)
    assert log_corr == pytest.approx(0.0, abs=1e-12)


def test_gaussian_random_walk_position_dependent_correction():
    L_here = np.linalg.cholesky(_spd(21, 2, 1.0))
    L_there = np.linalg.cholesky(_spd(22, 2, 0.5))
    x = np.array([0.3, -0.7])
    proposal, log_corr = gaussian_random_walk(
        np.random.default_rng(1), x, L_here, lambda _y: L_there
    )
    expected = stats.multivariate_normal(proposal, L_there @ L_there.T).logpdf(
        x
    ) - stats.multivariate_normal(x, L_here @ L_here.T).logpdf(proposal)
    assert log_corr == pytest.approx(expected, rel=1e-10)
    # a failed factorisation at x* rejects the move
    _, log_corr = gaussian_random_walk(
        np.random.default_rng(1), x, L_here, lambda _y: np.full((2, 2), np.nan)
    )
    assert log_corr == -math.inf


# --------------------------------------------------------------------------- degenerate input
def test_singular_kamh_covariance_is_a_rejection_not_an_error():
    """γ = 0 with fewer points than dimensions makes R singular: the proposal is rejected."""
    from pymc_kernel_steps.core import kamh_propose

    Z = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    proposal, log_ratio = kamh_propose(
        np.random.default_rng(0), [0.5, 0.0, 0.0], Z, GaussianKernel(1.0), 0.0, 1.0
    )
    assert log_ratio == -np.inf or not np.all(np.isfinite(proposal))


def test_cholesky_or_nan_and_smallest_scale():
    from pymc_kernel_steps.core import cholesky_or_nan, smallest_scale

    A = np.array([[4.0, 1.0], [1.0, 2.0]])
    np.testing.assert_allclose(cholesky_or_nan(A), np.linalg.cholesky(A))
    assert np.all(np.isnan(cholesky_or_nan(np.array([[1.0, 2.0], [2.0, 1.0]]))))
    rng = np.random.default_rng(3)
    points = rng.standard_normal((500, 3)) * [3.0, 0.5, 1.0]
    expected = np.sqrt(np.linalg.eigvalsh(np.cov(points.T, bias=True))[0])
    assert smallest_scale(points) == pytest.approx(expected)
    assert smallest_scale(np.ones((10, 2))) == 0.0
