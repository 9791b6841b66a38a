"""Score-matching estimators: the pinned formulas (DESIGN.md) against brute force."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from pymc_kernel_steps.core import score_matching as sm
from pymc_kernel_steps.core.kernels import GaussianKernel, median_lengthscale
from pymc_kernel_steps.core.score_matching import (
    FiniteScoreEstimator,
    LiteScoreEstimator,
    lite_linear_system,
    select_hyperparameters,
)


def _gaussian_sample(rng, n, d):
    A = rng.standard_normal((d, d))
    cov = A @ A.T / d + 0.5 * np.eye(d)
    mean = rng.standard_normal(d)
    Z = mean + rng.standard_normal((n, d)) @ np.linalg.cholesky(cov).T
    return Z, mean, cov


def _fd_objective(log_density, X, h=1e-3):
    """J = mean_j Σ_l [∂²_l f + ½ (∂_l f)²] by central finite differences of f."""
    n, d = X.shape
    f0 = log_density(X)
    total = np.zeros(n)
    for l in range(d):
        e = np.zeros(d)
        e[l] = h
        fp, fm = log_density(X + e), log_density(X - e)
        total += (fp - 2 * f0 + fm) / h**2 + 0.5 * ((fp - fm) / (2 * h)) ** 2
    return total.mean()


def _fd_grad(log_density, X, h=1e-5):
    d = X.shape[1]
    out = np.empty_like(X)
    for l in range(d):
        e = np.zeros(d)
        e[l] = h
        out[:, l] = (log_density(X + e) - log_density(X - e)) / (2 * h)
    return out


@pytest.fixture
def small_data():
    rng = np.random.default_rng(1)
    # far from the origin on purpose: the expanded form of C must stay accurate
    return 5.0 + rng.standard_normal((40, 3)) @ np.diag([1.0, 0.5, 2.0])


# ------------------------------------------------------------------------------- lite


def test_lite_linear_system_matches_paper_formulas(small_data):
    Z = small_data
    ell = 1.3
    sigma = 2 * ell**2
    b, C, K = lite_linear_system(Z, ell)
    n, d = Z.shape
    Kd = np.exp(-((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1) / sigma)
    b_ref = np.zeros(n)
    C_ref = np.zeros((n, n))
    one = np.ones(n)
    for l in range(d):
        x = Z[:, l]
        s = x * x
        D, Ds = np.diag(x), np.diag(s)
        b_ref += (2 / sigma) * (Kd @ s + Ds @ Kd @ one - 2 * D @ Kd @ x) - Kd @ one
        C_ref += (D @ Kd - Kd @ D) @ (Kd @ D - D @ Kd)
    np.testing.assert_allclose(K, Kd, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(b, b_ref, rtol=1e-10, atol=1e-10 * np.abs(b_ref).max())
    np.testing.assert_allclose(C, C_ref, rtol=1e-9, atol=1e-11 * np.abs(C_ref).max())


def test_lite_alpha_minimises_regularised_objective(small_data):
    Z = small_data
    ell, lam = 1.3, 0.05
    n = Z.shape[0]
    sigma = 2 * ell**2
    est = LiteScoreEstimator(GaussianKernel(ell), regularization=lam).fit(Z)
    _, _, K = lite_linear_system(Z, ell)
    R = K + np.eye(n)

    def regularised(alpha):
        trial = copy.copy(est)
        trial.alpha = alpha
        # J + λ‖f‖² term of Proposition 1 (authors' regulariser), in the scaling of J
        return trial.objective(Z) + 2 * lam / (n * sigma**2) * alpha @ R @ alpha

    alpha = est.alpha
    h = 1e-4 * np.abs(alpha).max()
    fd = np.array(
        [(regularised(alpha + h * e) - regularised(alpha - h * e)) / (2 * h) for e in np.eye(n)]
    )
    # scale: the gradient at α = 0 is (2/(nσ)) b
    g0 = np.array([(regularised(h * e) - regularised(-h * e)) / (2 * h) for e in np.eye(n)])
    assert np.abs(fd).max() < 1e-6 * np.abs(g0).max()
    rng = np.random.default_rng(0)
    base = regularised(alpha)
    for _ in range(5):
        delta = 1e-3 * np.abs(alpha).max() * rng.standard_normal(n)
        assert regularised(alpha + delta) > base


def test_lite_objective_matches_matrix_form_and_finite_differences(small_data):
    Z = small_data
    ell, lam = 1.3, 0.05
    n = Z.shape[0]
    sigma = 2 * ell**2
    est = LiteScoreEstimator(GaussianKernel(ell), regularization=lam).fit(Z)
    b, C, _ = lite_linear_system(Z, ell)
    a = est.alpha
    matrix_form = 2 / (n * sigma) * a @ b + 2 / (n * sigma**2) * a @ C @ a
    J = est.objective(Z)
    assert J == pytest.approx(matrix_form, rel=1e-9)
    assert J == pytest.approx(_fd_objective(est.log_density, Z), rel=1e-5)
    # also on points that are not basis points
    X = 5.0 + np.random.default_rng(7).standard_normal((30, 3))
    assert est.objective(X) == pytest.approx(_fd_objective(est.log_density, X), rel=1e-5)


def test_lite_grad_matches_finite_differences(small_data):
    est = LiteScoreEstimator(GaussianKernel(1.1), regularization=1e-2).fit(small_data)
    X = 5.0 + np.random.default_rng(3).standard_normal((20, 3))
    g = est.grad(X)
    np.testing.assert_allclose(g, _fd_grad(est.log_density, X), rtol=1e-6, atol=1e-8)
    # single point in, single point out
    np.testing.assert_allclose(est.grad(X[0]), g[0], rtol=1e-14)
    assert isinstance(est.log_density(X[0]), float)


def test_lite_median_heuristic_default():
    Z = np.random.default_rng(0).standard_normal((50, 2))
    est = LiteScoreEstimator().fit(Z)
    assert est.lengthscale == pytest.approx(median_lengthscale(Z))
    assert est.n_points == 50


@pytest.mark.parametrize("estimator", ["lite", "finite"])
@pytest.mark.parametrize("d", [2, 3])
def test_gaussian_score_recovered_in_the_bulk(estimator, d):
    """On n = 500 samples of N(μ, Σ) the fitted ∇f approximates −Σ⁻¹(x − μ) in the bulk.

    Bound: the relative error mean‖∇f − ∇log π‖ / mean‖∇log π‖ over fresh points within
    Mahalanobis distance 2 must be below 0.25. Fitting the d(d+3)/2 ≤ 9 coefficients of a
    quadratic log density from 500 samples already has a statistical error of order
    √(9/500) ≈ 0.13; the kernel estimators with cross-validated (ℓ, λ) reach 0.05–0.14 on
    these seeds (measured), so 0.25 leaves room for seeds while failing for a mis-scaled
    estimator (a factor-2 error in ℓ or in the σ = 2ℓ² convention gives errors ≥ 0.4).
    """
    rng = np.random.default_rng(10 + d)
    Z, mean, cov = _gaussian_sample(rng, 500, d)
    precision = np.linalg.inv(cov)
    kwargs = {"n_features": 300} if estimator == "finite" else {}
    ell, lam, scores = select_hyperparameters(Z, estimator, rng=1, **kwargs)
    assert np.isfinite(scores).any()
    if estimator == "lite":
        est = LiteScoreEstimator(GaussianKernel(ell), regularization=lam)
    else:
        est = FiniteScoreEstimator(300, GaussianKernel(ell), regularization=lam, rng=2)
    est.fit(Z)
    X = mean + rng.standard_normal((3000, d)) @ np.linalg.cholesky(cov).T
    maha = np.sqrt(np.einsum("ij,jk,ik->i", X - mean, precision, X - mean))
    X = X[maha <= 2.0]
    truth = -(X - mean) @ precision
    err = np.linalg.norm(est.grad(X) - truth, axis=1).mean()
    rel = err / np.linalg.norm(truth, axis=1).mean()
    assert rel < 0.25


def test_lite_low_rank_approaches_exact():
    rng = np.random.default_rng(4)
    Z = rng.standard_normal((150, 2))
    ell, lam = 0.8, 0.1
    exact = LiteScoreEstimator(GaussianKernel(ell), regularization=lam).fit(Z)
    X = rng.standard_normal((50, 2))
    g_exact = exact.grad(X)
    errors = []
    for rank in (3, 10, 30, 150):
        est = LiteScoreEstimator(
            GaussianKernel(ell), regularization=lam, low_rank=rank, cg_maxiter=5000
        ).fit(Z)
        assert est.rank_ <= rank
        errors.append(np.abs(est.grad(X) - g_exact).max() / np.abs(g_exact).max())
    assert errors[0] > errors[1] > errors[-1]
    assert errors[-1] < 1e-5
    # full rank: alpha itself agrees
    np.testing.assert_allclose(
        est.alpha, exact.alpha, rtol=1e-4, atol=1e-6 * np.abs(exact.alpha).max()
    )


def test_lite_low_rank_warm_start():
    rng = np.random.default_rng(5)
    Z = rng.standard_normal((120, 2))
    est = LiteScoreEstimator(GaussianKernel(0.8), regularization=0.1, low_rank=40, cg_maxiter=2000)
    est.fit(Z)
    cold = est.cg_iterations_
    est.fit(Z)  # warm start at the previous alpha: already converged
    assert est.cg_iterations_ < cold
    assert est.cg_iterations_ <= 2


# ------------------------------------------------------------------------------- finite


def test_finite_online_updates_reproduce_batch():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((60, 3))
    kernel = GaussianKernel(0.9)
    batch = FiniteScoreEstimator(80, kernel, regularization=1.0, rng=3).fit(X)
    online = FiniteScoreEstimator(80, kernel, regularization=1.0, rng=3)
    online.update(X[0])  # unfitted: starts from λI
    for x in X[1:40]:
        online.update(x)
    online.update(X[40:45])  # a small batch
    for x in X[45:]:
        online.update(x)
    assert online.n_points == batch.n_points == 60
    np.testing.assert_array_equal(online.frequencies, batch.frequencies)
    np.testing.assert_allclose(online.theta, batch.theta, rtol=1e-8, atol=1e-10)
    # fit, then update == fit on everything
    part = FiniteScoreEstimator(80, kernel, regularization=1.0, rng=3).fit(X[:30])
    part.update(X[30:])
    np.testing.assert_allclose(part.theta, batch.theta, rtol=1e-8, atol=1e-10)


def test_finite_theta_minimises_summed_objective():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((50, 2))
    lam = 0.5
    est = FiniteScoreEstimator(40, GaussianKernel(1.0), regularization=lam, rng=0).fit(X)
    n = X.shape[0]

    def total(theta):  # n J(θ) + (λ/2)‖θ‖², minimised by (Σ A + λI)θ = Σ β
        trial = copy.copy(est)
        trial.theta = theta
        return n * trial.objective(X) + 0.5 * lam * theta @ theta

    theta = est.theta
    h = 1e-4
    grad = np.array([(total(theta + h * e) - total(theta - h * e)) / (2 * h) for e in np.eye(40)])
    grad0 = np.array([(total(h * e) - total(-h * e)) / (2 * h) for e in np.eye(40)])
    assert np.abs(grad).max() < 1e-6 * np.abs(grad0).max()
    assert total(theta + 1e-2 * rng.standard_normal(40)) > total(theta)


def test_finite_features_approximate_gaussian_kernel():
    ell = 0.7
    est = FiniteScoreEstimator(20000, GaussianKernel(ell), rng=0)
    X = np.random.default_rng(1).standard_normal((15, 2))
    phi = est.features(X)
    approx = phi @ phi.T
    exact = GaussianKernel(ell).gram(X, X)
    # each entry is a mean of m bounded terms: sd ≤ 1/√m ≈ 0.007; allow ~5 sd
    assert np.abs(approx - exact).max() < 0.04


def test_finite_grad_and_objective_match_finite_differences():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((40, 3))
    est = FiniteScoreEstimator(50, GaussianKernel(1.0), regularization=0.3, rng=1).fit(X)
    Y = rng.standard_normal((20, 3))
    np.testing.assert_allclose(est.grad(Y), _fd_grad(est.log_density, Y), rtol=1e-6, atol=1e-8)
    assert est.objective(Y) == pytest.approx(_fd_objective(est.log_density, Y), rel=1e-5)


def test_finite_given_frequencies_and_update_without_kernel():
    rng = np.random.default_rng(2)
    omega = rng.standard_normal((30, 2))
    u = rng.uniform(0, 2 * np.pi, 30)
    est = FiniteScoreEstimator(30, frequencies=omega, offsets=u)
    est.update(np.zeros(2))
    np.testing.assert_array_equal(est.frequencies, omega)
    np.testing.assert_array_equal(est.offsets, u)
    with pytest.raises(ValueError, match="kernel"):
        FiniteScoreEstimator(30).update(np.zeros(2))
    with pytest.raises(ValueError, match="dimension"):
        FiniteScoreEstimator(30, frequencies=omega).fit(rng.standard_normal((5, 3)))


# ------------------------------------------------------------------------------- CV


def test_cv_scores_equal_fold_by_fold_fits():
    rng = np.random.default_rng(12)
    Z = rng.standard_normal((60, 2))
    ells, lams = [0.5, 1.0], [1e-3, 1.0]
    _, _, scores = select_hyperparameters(Z, "lite", ells, lams, n_folds=3, rng=5)
    folds = np.array_split(np.random.default_rng(5).permutation(60), 3)
    for a, ell in enumerate(ells):
        for j, lam in enumerate(lams):
            ref = np.mean(
                [
                    LiteScoreEstimator(GaussianKernel(ell), lam)
                    .fit(np.delete(Z, test, axis=0))
                    .objective(Z[test])
                    for test in folds
                ]
            )
            assert scores[a, j] == pytest.approx(ref, rel=1e-8)
    _, _, scores = select_hyperparameters(Z, "finite", ells, lams, n_folds=3, rng=5, n_features=25)
    r = np.random.default_rng(5)
    folds = np.array_split(r.permutation(60), 3)
    u = r.uniform(0, 2 * np.pi, 25)
    base = r.standard_normal((25, 2))
    for a, ell in enumerate(ells):
        for j, lam in enumerate(lams):
            ref = np.mean(
                [
                    FiniteScoreEstimator(25, regularization=lam, frequencies=base / ell, offsets=u)
                    .fit(np.delete(Z, test, axis=0))
                    .objective(Z[test])
                    for test in folds
                ]
            )
            assert scores[a, j] == pytest.approx(ref, rel=1e-8)


@pytest.mark.parametrize("estimator", ["lite", "finite"])
def test_cv_picks_a_sensible_lengthscale_on_a_bimodal_target(estimator):
    """Two unit-variance modes at ±3: a lengthscale of the order of the mode width is needed;
    the default grid spans median/10 … 10·median (median ≈ 2.4)."""
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((400, 2))
    Z[:200, 0] += 3.0
    Z[200:, 0] -= 3.0
    ell, lam, scores = select_hyperparameters(Z, estimator, rng=1)
    assert scores.shape == (7, 9 if estimator == "lite" else 8)
    assert np.isfinite(scores).mean() > 0.9
    assert 0.3 < ell < 3.0
    assert lam > 0
    # warm start: a small grid around the previous choice
    ell2, _, scores2 = select_hyperparameters(
        Z, estimator, lengthscales=ell * np.logspace(-0.2, 0.2, 3), regularizations=[lam], rng=2
    )
    assert scores2.shape == (3, 1)
    assert ell2 in ell * np.logspace(-0.2, 0.2, 3)


def test_cv_falls_back_when_every_fit_fails(monkeypatch):
    Z = np.random.default_rng(0).standard_normal((40, 2))

    def failing(M, shift, regularizations, rhs):
        return np.full((M.shape[0], regularizations.size), np.nan)

    monkeypatch.setattr(sm.selection, "_solve_spd_path", failing)
    ell, lam, scores = select_hyperparameters(Z, "lite", rng=0)
    assert ell == pytest.approx(median_lengthscale(Z))
    assert lam == 1e-3
    assert np.all(np.isinf(scores))


# ------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda: LiteScoreEstimator(regularization=0.0), "regularization"),
        (lambda: LiteScoreEstimator(regularization=-1.0), "regularization"),
        (lambda: LiteScoreEstimator(low_rank=0), "low_rank"),
        (lambda: LiteScoreEstimator(kernel="gauss"), "kernel"),
        (lambda: GaussianKernel(0.0), "lengthscale"),
        (lambda: GaussianKernel(-2.0), "lengthscale"),
        (lambda: FiniteScoreEstimator(0), "n_features"),
        (lambda: FiniteScoreEstimator(2.5), "n_features"),
        (lambda: FiniteScoreEstimator(10, regularization=np.nan), "regularization"),
        (lambda: FiniteScoreEstimator(10, frequencies=np.ones((9, 2))), "frequencies"),
        (lambda: FiniteScoreEstimator(10, offsets=np.ones(3)), "offsets"),
        (lambda: FiniteScoreEstimator(10, frequencies=np.full((10, 2), np.inf)), "frequencies"),
    ],
)
def test_invalid_constructor_arguments(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()


@pytest.mark.parametrize("make", [LiteScoreEstimator, lambda: FiniteScoreEstimator(10, rng=0)])
def test_invalid_data(make):
    with pytest.raises(ValueError, match="at least 2"):
        make().fit(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="2-d"):
        make().fit(np.zeros(5))
    with pytest.raises(ValueError, match="non-finite"):
        make().fit(np.array([[0.0, 1.0], [np.nan, 2.0], [1.0, 1.0]]))
    est = make().fit(np.random.default_rng(0).standard_normal((10, 2)))
    with pytest.raises(ValueError, match="shape"):
        est.grad(np.zeros(3))
    with pytest.raises(ValueError, match="columns"):
        est.objective(np.zeros((4, 3)))
    with pytest.raises(RuntimeError, match="not fitted"):
        make().grad(np.zeros(2))


def test_invalid_selection_arguments():
    Z = np.random.default_rng(0).standard_normal((30, 2))
    with pytest.raises(ValueError, match="estimator"):
        select_hyperparameters(Z, "full")
    with pytest.raises(ValueError, match="lengthscales"):
        select_hyperparameters(Z, lengthscales=[1.0, -1.0])
    with pytest.raises(ValueError, match="regularizations"):
        select_hyperparameters(Z, regularizations=[0.0])
    with pytest.raises(ValueError, match="n_folds"):
        select_hyperparameters(Z, n_folds=1)
    with pytest.raises(ValueError, match="Unknown keyword"):
        select_hyperparameters(Z, "lite", n_features=10)
    with pytest.raises(ValueError, match="n_features"):
        select_hyperparameters(Z, "finite", n_features=0)
    with pytest.raises(ValueError, match="at least 2"):
        select_hyperparameters(Z[:1])
