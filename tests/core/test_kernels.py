"""Kernels: Gram matrices and gradients against brute force, PSD, median heuristic, validation.

The reference formulas below are written out independently of ``pymc_kernel_steps.core.kernels``
from DESIGN.md's parametrisation (Gaussian ``exp(−‖x−y‖²/(2ℓ²))``) and the textbook forms of the
other kernels (Rasmussen & Williams §4.2): Matérn ``2^(1−ν)/Γ(ν) s^ν K_ν(s)`` with
``s = √(2ν) r/ℓ``, rational quadratic ``(1 + r²/(2αℓ²))^(−α)``, linear ``xᵀy``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import special

from pymc_kernel_steps.core.kernels import (
    GaussianKernel,
    LinearKernel,
    MaternKernel,
    RationalQuadraticKernel,
    median_lengthscale,
)

# --------------------------------------------------------------------------- reference formulas


def _sqdist(x, y):
    return sum((float(a) - float(b)) ** 2 for a, b in zip(x, y, strict=True))


def ref_gaussian(x, y, ell):
    return math.exp(-_sqdist(x, y) / (2.0 * ell**2))


def ref_matern(x, y, ell, nu):
    """Bessel form for every ν, so the closed forms for ν = 1/2, 3/2, 5/2 are checked too."""
    r = math.sqrt(_sqdist(x, y))
    if r == 0.0:
        return 1.0
    s = math.sqrt(2.0 * nu) * r / ell
    return 2.0 ** (1.0 - nu) / math.gamma(nu) * s**nu * float(special.kv(nu, s))


def ref_matern_closed(x, y, ell, nu):
    """Textbook closed forms (R&W eqs. 4.16–4.17)."""
    r = math.sqrt(_sqdist(x, y))
    if nu == 0.5:
        return math.exp(-r / ell)
    if nu == 1.5:
        t = math.sqrt(3.0) * r / ell
        return (1.0 + t) * math.exp(-t)
    if nu == 2.5:
        t = math.sqrt(5.0) * r / ell
        return (1.0 + t + 5.0 * r**2 / (3.0 * ell**2)) * math.exp(-t)
    raise AssertionError(nu)


def ref_rq(x, y, ell, alpha):
    return (1.0 + _sqdist(x, y) / (2.0 * alpha * ell**2)) ** (-alpha)


def ref_linear(x, y):
    return sum(float(a) * float(b) for a, b in zip(x, y, strict=True))


def ref_gram(fn, X, Y):
    out = np.empty((len(X), len(Y)))
    for i, x in enumerate(X):
        for j, y in enumerate(Y):
            out[i, j] = fn(x, y)
    return out


# (id, kernel, reference k(x, y)) -- every kernel and every Matérn code path
CASES = [
    ("gauss-0.7", GaussianKernel(0.7), lambda x, y: ref_gaussian(x, y, 0.7)),
    ("gauss-2.3", GaussianKernel(2.3), lambda x, y: ref_gaussian(x, y, 2.3)),
    ("matern-0.5", MaternKernel(1.3, 0.5), lambda x, y: ref_matern(x, y, 1.3, 0.5)),
    ("matern-1.5", MaternKernel(0.9, 1.5), lambda x, y: ref_matern(x, y, 0.9, 1.5)),
    ("matern-2.5", MaternKernel(1.7, 2.5), lambda x, y: ref_matern(x, y, 1.7, 2.5)),
    ("matern-0.7", MaternKernel(1.1, 0.7), lambda x, y: ref_matern(x, y, 1.1, 0.7)),
    ("matern-3.2", MaternKernel(0.8, 3.2), lambda x, y: ref_matern(x, y, 0.8, 3.2)),
    ("matern-1.0", MaternKernel(1.2, 1.0), lambda x, y: ref_matern(x, y, 1.2, 1.0)),
    ("rq-0.5", RationalQuadraticKernel(1.4, 0.5), lambda x, y: ref_rq(x, y, 1.4, 0.5)),
    ("rq-3", RationalQuadraticKernel(0.6, 3.0), lambda x, y: ref_rq(x, y, 0.6, 3.0)),
    ("linear", LinearKernel(), ref_linear),
]
STATIONARY = [c for c in CASES if c[0] != "linear"]


def _ids(cases):
    return [c[0] for c in cases]


def _points(seed, n, d, scale=1.0):
    return scale * np.random.default_rng(seed).standard_normal((n, d))


# --------------------------------------------------------------------------- gram


@pytest.mark.parametrize(("name", "kernel", "ref"), CASES, ids=_ids(CASES))
def test_gram_matches_brute_force(name, kernel, ref):
    X = _points(1, 9, 3)
    Y = _points(2, 7, 3, scale=1.5)
    np.testing.assert_allclose(kernel.gram(X, Y), ref_gram(ref, X, Y), rtol=1e-10, atol=1e-14)
    # Y defaults to X; the diagonal then holds coincident points (r = 0)
    np.testing.assert_allclose(kernel.gram(X), ref_gram(ref, X, X), rtol=1e-10, atol=1e-14)
    # a single point may be passed as a 1-d array, and __call__ gives the scalar
    assert kernel.gram(X[0], Y).shape == (1, len(Y))
    assert kernel(X[0], Y[3]) == pytest.approx(ref(X[0], Y[3]), rel=1e-10, abs=1e-14)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_closed_forms_match_textbook_and_bessel_limit(nu):
    X = _points(3, 6, 2)
    Y = _points(4, 5, 2, scale=2.0)
    ell = 1.3
    textbook = ref_gram(lambda x, y: ref_matern_closed(x, y, ell, nu), X, Y)
    np.testing.assert_allclose(MaternKernel(ell, nu).gram(X, Y), textbook, rtol=1e-12)
    # the general (Bessel) branch next to a half-integer agrees with the closed-form branch
    near = MaternKernel(ell, nu + 1e-9).gram(X, Y)
    np.testing.assert_allclose(near, textbook, rtol=1e-6, atol=1e-12)


def test_limits_towards_gaussian():
    X = _points(5, 6, 2)
    gauss = GaussianKernel(1.1).gram(X)
    np.testing.assert_allclose(RationalQuadraticKernel(1.1, 1e7).gram(X), gauss, atol=1e-6)
    # Matérn → Gaussian as ν → ∞ (error O(1/ν)); it must already be much closer at ν = 60
    err_small = np.abs(MaternKernel(1.1, 3.2).gram(X) - gauss).max()
    err_large = np.abs(MaternKernel(1.1, 60.0).gram(X) - gauss).max()
    assert err_large < 0.01 < err_small


def test_gram_dimension_mismatch_raises():
    with pytest.raises(ValueError, match="dimension"):
        GaussianKernel().gram(np.zeros((3, 2)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="shape"):
        GaussianKernel().grad_x(np.zeros(3), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="2-d"):
        GaussianKernel().gram(np.zeros((2, 3, 4)))


# --------------------------------------------------------------------------- gradients


def _fd_grad(kernel, x, Y, h):
    out = np.empty((len(Y), len(x)))
    for j in range(len(x)):
        e = np.zeros_like(x)
        e[j] = h
        out[:, j] = (kernel.gram(x + e, Y)[0] - kernel.gram(x - e, Y)[0]) / (2.0 * h)
    return out


@pytest.mark.parametrize(("name", "kernel", "ref"), CASES, ids=_ids(CASES))
def test_grad_x_matches_central_differences(name, kernel, ref):
    rng = np.random.default_rng(11)
    Y = rng.standard_normal((12, 3))
    for x in (rng.standard_normal(3), Y[4] + 0.05 * rng.standard_normal(3)):
        # keep away from coincidence: Matérn ν ≤ 1 is not differentiable at x = y
        assert np.min(np.linalg.norm(Y - x, axis=1)) > 0.01
        grad = kernel.grad_x(x, Y)
        assert grad.shape == Y.shape
        np.testing.assert_allclose(grad, _fd_grad(kernel, x, Y, 1e-6), rtol=1e-5, atol=1e-8)


def test_gaussian_grad_matches_design_formula():
    # DESIGN.md: ∇ₓk(x, y) = k(x, y)(y − x)/ℓ²
    ell = 0.8
    rng = np.random.default_rng(12)
    x, Y = rng.standard_normal(4), rng.standard_normal((6, 4))
    expected = np.array([ref_gaussian(x, y, ell) * (y - x) / ell**2 for y in Y])
    np.testing.assert_allclose(GaussianKernel(ell).grad_x(x, Y), expected, rtol=1e-12)


@pytest.mark.parametrize(
    "kernel",
    [
        GaussianKernel(0.9),
        MaternKernel(0.9, 1.5),
        MaternKernel(0.9, 2.5),
        MaternKernel(0.9, 3.2),
        RationalQuadraticKernel(0.9, 2.0),
    ],
    ids=repr,
)
def test_grad_x_at_and_near_coincidence(kernel):
    """Differentiable kernels have zero gradient at x = y and no NaN; near it FD still agrees."""
    rng = np.random.default_rng(13)
    Y = rng.standard_normal((5, 2))
    at = kernel.grad_x(Y[2].copy(), Y)
    assert np.all(np.isfinite(at))
    np.testing.assert_array_equal(at[2], 0.0)
    x = Y[2] + np.array([1e-3, -2e-3])
    np.testing.assert_allclose(
        kernel.grad_x(x, Y), _fd_grad(kernel, x, Y, 1e-7), rtol=1e-4, atol=1e-9
    )


def test_linear_gradient_is_independent_of_x():
    Y = _points(14, 5, 3)
    lin = LinearKernel()
    assert lin.gradient_depends_on_x is False
    np.testing.assert_array_equal(lin.grad_x(np.zeros(3), Y), Y)
    np.testing.assert_array_equal(lin.grad_x(np.full(3, 7.0), Y), Y)
    # the returned rows must not alias the data
    lin.grad_x(np.zeros(3), Y)[0, 0] = 123.0
    assert Y[0, 0] != 123.0


@pytest.mark.parametrize(("name", "kernel", "ref"), STATIONARY, ids=_ids(STATIONARY))
def test_nonlinear_kernels_have_x_dependent_gradients(name, kernel, ref):
    assert kernel.gradient_depends_on_x is True
    Y = _points(15, 5, 3)
    assert not np.allclose(kernel.grad_x(np.zeros(3), Y), kernel.grad_x(np.full(3, 0.5), Y))


# --------------------------------------------------------------------------- PSD


@pytest.mark.parametrize(("name", "kernel", "ref"), STATIONARY, ids=_ids(STATIONARY))
def test_gram_symmetric_psd(name, kernel, ref):
    rng = np.random.default_rng(16)
    # clustered points make the Gram matrix nearly singular: a wrong formula shows up as a
    # clearly negative eigenvalue
    X = np.concatenate([rng.standard_normal((40, 3)), 0.05 * rng.standard_normal((20, 3))])
    K = kernel.gram(X)
    np.testing.assert_allclose(K, K.T, rtol=1e-14, atol=0)
    np.testing.assert_allclose(np.diag(K), 1.0, rtol=1e-12)
    assert np.all(K <= 1.0 + 1e-12) and np.all(K > 0)
    eig = np.linalg.eigvalsh(K)
    assert eig.min() >= -1e-10 * eig.max(), eig.min()


def test_linear_gram_psd():
    X = _points(17, 30, 4)
    K = LinearKernel().gram(X)
    eig = np.linalg.eigvalsh(K)
    assert eig.min() >= -1e-10 * eig.max()
    assert np.sum(eig > 1e-8 * eig.max()) == 4  # rank d


# --------------------------------------------------------------------------- lengthscale API


@pytest.mark.parametrize(
    ("kernel", "extra"),
    [
        (GaussianKernel(0.5), {}),
        (MaternKernel(0.5, 3.2), {"nu": 3.2}),
        (RationalQuadraticKernel(0.5, 4.0), {"alpha": 4.0}),
    ],
    ids=repr,
)
def test_with_lengthscale(kernel, extra):
    assert kernel.has_lengthscale is True
    new = kernel.with_lengthscale(2.5)
    assert type(new) is type(kernel)
    assert new.lengthscale == 2.5 and kernel.lengthscale == 0.5
    for key, value in extra.items():
        assert getattr(new, key) == value
    X = _points(18, 4, 2)
    np.testing.assert_allclose(new.gram(X), type(kernel)(2.5, *extra.values()).gram(X))
    # scaling points and lengthscale together leaves a stationary kernel unchanged
    np.testing.assert_allclose(new.gram(5.0 * X), kernel.gram(X), rtol=1e-12)
    with pytest.raises(ValueError, match="lengthscale"):
        kernel.with_lengthscale(-1.0)


def test_linear_has_no_lengthscale():
    assert LinearKernel.has_lengthscale is False
    assert not hasattr(LinearKernel(), "lengthscale")


# --------------------------------------------------------------------------- median heuristic


def ref_median_lengthscale(Z):
    """DESIGN.md: ℓ² = median_{i<j} ‖z_i − z_j‖² / 2.

    The median of an even count is the mean of the middle two values.
    """
    sq = sorted(_sqdist(Z[i], Z[j]) for i, j in itertools.combinations(range(len(Z)), 2))
    m = len(sq)
    med = sq[m // 2] if m % 2 else 0.5 * (sq[m // 2 - 1] + sq[m // 2])
    return math.sqrt(med / 2.0)


def test_median_lengthscale_hand_computed():
    # squared distances on 0..4: 1 (×4), 4 (×3), 9 (×2), 16 → median of 10 values = 4 → ℓ = √2
    assert median_lengthscale(np.arange(5.0)[:, None]) == pytest.approx(math.sqrt(2.0), rel=1e-14)
    # two points: the single squared distance 25 → ℓ² = 12.5
    assert median_lengthscale([[0.0, 0.0], [3.0, 4.0]]) == pytest.approx(math.sqrt(12.5))


@pytest.mark.parametrize(("n", "d"), [(2, 3), (5, 2), (6, 2), (31, 4), (80, 1)])
def test_median_lengthscale_matches_brute_force(n, d):
    Z = _points(100 + n, n, d, scale=1.7)
    assert median_lengthscale(Z) == pytest.approx(ref_median_lengthscale(Z), rel=1e-12)


def test_median_lengthscale_invariances_and_gaussian_link():
    Z = _points(19, 45, 3)
    ell = median_lengthscale(Z)
    perm = np.random.default_rng(0).permutation(len(Z))
    assert median_lengthscale(Z[perm]) == pytest.approx(ell, rel=1e-14)
    assert median_lengthscale(Z + 10.0) == pytest.approx(ell, rel=1e-10)
    assert median_lengthscale(3.0 * Z) == pytest.approx(3.0 * ell, rel=1e-12)
    # with that ℓ the Gaussian kernel equals e^{-1} at the median pair (45·44/2 = 990 pairs, even:
    # the two middle values straddle it)
    K = GaussianKernel(ell).gram(Z)
    off = np.sort(K[np.triu_indices(len(Z), 1)])
    assert off[494] <= math.exp(-1.0) <= off[495]


def test_median_lengthscale_caps_points():
    Z = _points(20, 3000, 2)
    # vectorised full answer (3000² pairs is too many for the loop reference)
    diff = Z[:, None, :] - Z[None, :, :]
    sq = np.einsum("ijk,ijk->ij", diff, diff)[np.triu_indices(len(Z), 1)]
    full = math.sqrt(np.median(sq) / 2.0)
    capped = median_lengthscale(Z, max_points=500)
    assert capped == pytest.approx(full, rel=0.05)
    assert median_lengthscale(Z[:40], max_points=1000) == pytest.approx(
        ref_median_lengthscale(Z[:40]), rel=1e-12
    )


def test_median_lengthscale_errors():
    with pytest.raises(ValueError, match="two points"):
        median_lengthscale(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="zero"):
        median_lengthscale(np.ones((6, 2)))


# --------------------------------------------------------------------------- validation

BAD_VALUES = [0.0, -1.0, np.nan, np.inf, -np.inf]


@pytest.mark.parametrize("bad", BAD_VALUES, ids=str)
@pytest.mark.parametrize(
    ("make", "param"),
    [
        (lambda v: GaussianKernel(lengthscale=v), "lengthscale"),
        (lambda v: MaternKernel(lengthscale=v, nu=1.5), "lengthscale"),
        (lambda v: MaternKernel(lengthscale=1.0, nu=v), "nu"),
        (lambda v: RationalQuadraticKernel(lengthscale=v, alpha=1.0), "lengthscale"),
        (lambda v: RationalQuadraticKernel(lengthscale=1.0, alpha=v), "alpha"),
        (lambda v: GaussianKernel(1.0).with_lengthscale(v), "lengthscale"),
    ],
    ids=["gauss-ell", "matern-ell", "matern-nu", "rq-ell", "rq-alpha", "with_lengthscale"],
)
def test_invalid_parameters_raise(make, param, bad):
    with pytest.raises(ValueError, match=param):
        make(bad)


# --------------------------------------------------------------------------- numerical edges


def test_matern_general_nu_tiny_distance():
    """s^ν K_ν(s) overflows as s → 0 in direct form; the log-space form gives k → 1, ∇ → 0."""
    k = MaternKernel(1.0, 3.2)
    Y = np.array([[1e-100, 0.0], [1e-150, 0.0]])
    assert np.allclose(k.gram(np.zeros((1, 2)), Y), 1.0)
    gradient = k.grad_x(np.zeros(2), Y)
    assert np.all(np.isfinite(gradient)) and np.allclose(gradient, 0.0, atol=1e-90)


def test_matern_moderately_large_nu_is_close_to_gaussian():
    Y = np.array([[0.5], [1.0], [200.0]])
    K = MaternKernel(1.0, 90.0).gram(np.zeros((1, 1)), Y)
    assert np.all(np.isfinite(K)) and K[0, 2] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(
        K[0, :2], GaussianKernel(1.0).gram(np.zeros((1, 1)), Y[:2])[0], atol=0.01
    )


def test_matern_too_large_nu_raises():
    with pytest.raises(ValueError, match="nu"):
        MaternKernel(1.0, 200.0)
