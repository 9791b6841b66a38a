r"""Score-matching surrogates of a log density (Strathmann et al. 2015, paper 002).

Two estimators of an unnormalised log density ``f ≈ log π`` fitted to samples by minimising the
empirical score-matching objective

.. math::

    J(f) = \frac{1}{n} \sum_j \sum_l
    \Big[\partial_l^2 f(x_j) + \tfrac12 (\partial_l f(x_j))^2\Big],

which needs neither π nor its gradient (Hyvärinen 2005):

* :class:`LiteScoreEstimator` — ``f(x) = Σ_i α_i k(z_i, x)`` in the span of Gaussian kernels
  centred on the data (Proposition 1; O(n³) fit, O(n d) gradient; gradients vanish away from the
  data, so trajectories fall back to a random walk there).
* :class:`FiniteScoreEstimator` — ``f(x) = θᵀφ(x)`` with ``m`` random Fourier features
  (Proposition 2; O(n d m² + m³) fit, exact O(d m²) online update per new point).

:func:`select_hyperparameters` chooses the kernel lengthscale ``ℓ`` and the regulariser ``λ`` by
K-fold cross-validation of the held-out objective ``J``.

Conventions (``DESIGN.md``): ``k(x, y) = exp(−‖x − y‖² / (2ℓ²))``, ``σ = 2ℓ²``;
lite: ``α = −(σ/2)(C + λ(K + I))⁻¹ b``; finite: ``(Σ_i A(x_i) + λI) θ = Σ_i β(x_i)`` (sums).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.linalg as sla
from scipy.spatial.distance import cdist

from .integrators import finite_leapfrog, lite_leapfrog
from .kernels import GaussianKernel, median_lengthscale

__all__ = [
    "FiniteScoreEstimator",
    "LiteScoreEstimator",
    "lite_linear_system",
    "select_hyperparameters",
]

#: cap on the number of entries of the (chunk, n, d) difference tensors used for evaluation
_CHUNK_ENTRIES = 1 << 21


# ---------------------------------------------------------------------------------------------
# validation helpers


def _positive(name: str, value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a positive finite number, got {value!r}.") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"`{name}` must be a positive finite number, got {value!r}.")
    return value


def _data(Z, name: str, min_points: int = 2, dim: int | None = None) -> np.ndarray:
    Z = np.asarray(Z, dtype=float)
    if Z.ndim != 2:
        raise ValueError(f"`{name}` must be a 2-d array of points (n, d), got shape {Z.shape}.")
    if Z.shape[0] < min_points:
        raise ValueError(f"`{name}` needs at least {min_points} points, got {Z.shape[0]}.")
    if Z.shape[1] < 1:
        raise ValueError(f"`{name}` must have at least one column.")
    if dim is not None and Z.shape[1] != dim:
        raise ValueError(f"`{name}` must have {dim} columns, got {Z.shape[1]}.")
    if not np.all(np.isfinite(Z)):
        raise ValueError(f"`{name}` contains non-finite values.")
    return np.ascontiguousarray(Z)


def _query(X, dim: int, name: str = "X") -> tuple[np.ndarray, bool]:
    """Points to evaluate at: ``(d,)`` → one point (``single=True``) or ``(n, d)``."""
    X = np.asarray(X, dtype=float)
    single = X.ndim == 1
    if single:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != dim:
        raise ValueError(f"`{name}` must have shape ({dim},) or (n, {dim}), got {X.shape}.")
    return X, single


def _gaussian_kernel(kernel) -> GaussianKernel | None:
    if kernel is None or isinstance(kernel, GaussianKernel):
        return kernel
    raise ValueError(
        f"`kernel` must be a GaussianKernel (or None for the median heuristic), got {kernel!r}."
    )


# ---------------------------------------------------------------------------------------------
# lite estimator


def _lite_system(K: np.ndarray, sq: np.ndarray, Zc: np.ndarray, sigma: float):
    """``b`` and ``C`` of Proposition 1 from the Gram matrix ``K``, squared distances ``sq`` and
    centred points ``Zc``.

    ``b_i = (2/σ) Σ_j K_ij ‖z_i − z_j‖² − d Σ_j K_ij`` is the sum over ``l`` of the paper's
    expression. With ``A_l = D_l K − K D_l`` (antisymmetric), ``C = Σ_l A_l A_lᵀ`` expands to
    ``(K K) ⊙ G − M − Mᵀ + K diag(q) K`` with ``G = Z Zᵀ``, ``M = (K ⊙ G) K`` and ``q_i = ‖z_i‖²``:
    one matrix product and two symmetric rank-n products (4n³ flops) instead of ``2d`` products.
    ``C`` is translation invariant; centring the points keeps the cancellation in the expanded
    form small.
    """
    d = Zc.shape[1]
    b = (2.0 / sigma) * np.einsum("ij,ij->i", K, sq) - d * K.sum(axis=1)
    G = Zc @ Zc.T
    q = np.einsum("ij,ij->i", Zc, Zc)
    return b, _lite_C(K, G, q)


def _symmetric_product(A: np.ndarray) -> np.ndarray:
    """``A Aᵀ`` via BLAS ``syrk`` (upper triangle filled, the rest zero)."""
    return sla.blas.dsyrk(1.0, np.asfortranarray(A))


def _symmetrize_upper(U: np.ndarray) -> np.ndarray:
    lower = np.tril_indices_from(U, -1)
    U[lower] = U.T[lower]
    return U


def _lite_C(K: np.ndarray, G: np.ndarray, q: np.ndarray) -> np.ndarray:
    # K is symmetric: K.T is a Fortran-ordered view of the same matrix
    C = _symmetric_product(K.T)  # K K (upper)
    C *= G
    C += _symmetric_product((np.sqrt(q)[:, None] * K).T)  # (K D_√q)(K D_√q)ᵀ = K diag(q) K
    C = _symmetrize_upper(C)
    M = (K * G) @ K
    C -= M
    C -= M.T
    return C


def _lite_C_downdate(K_out: np.ndarray, G_in: np.ndarray, G_out: np.ndarray, q_out: np.ndarray):
    """The part of ``C`` contributed by left-out points ``k``: with ``K_out = K[in, out]``,
    ``Σ_{k∈out} K_ik K_jk (G_ij − G_ik − G_jk + q_k)``, so that ``C_in = C[in, in] − this``."""
    D = _symmetric_product(K_out)
    D *= G_in
    D += _symmetric_product(K_out * np.sqrt(q_out)[None, :])
    D = _symmetrize_upper(D)
    M = (K_out * G_out) @ K_out.T
    D -= M
    D -= M.T
    return D


def lite_linear_system(Z, lengthscale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The linear system of the lite estimator (Proposition 1 of paper 002).

    With ``σ = 2ℓ²`` and ``x_l`` the ``l``-th column of ``Z``, ``s_l = x_l ⊙ x_l``::

        b = Σ_l [(2/σ)(K s_l + D_{s_l} K 1 − 2 D_{x_l} K x_l) − K 1]
        C = Σ_l (D_{x_l} K − K D_{x_l})(K D_{x_l} − D_{x_l} K)

    so that the score-matching objective of ``f = Σ α_i k(z_i, ·)`` on ``Z`` itself is
    ``J(α) = (2/(nσ)) αᵀb + (2/(nσ²)) αᵀCα``.

    Parameters
    ----------
    Z : array_like, shape (n, d)
        Data (``n ≥ 2``, finite).
    lengthscale : float
        Gaussian kernel lengthscale ``ℓ > 0``.

    Returns
    -------
    b : ndarray, shape (n,)
    C : ndarray, shape (n, n)
        Symmetric positive semi-definite.
    K : ndarray, shape (n, n)
        Gram matrix.
    """
    Z = _data(Z, "Z")
    ell = _positive("lengthscale", lengthscale)
    sigma = 2.0 * ell**2
    Zc = Z - Z.mean(axis=0)
    sq = cdist(Zc, Zc, "sqeuclidean")
    K = np.exp(-sq / sigma)
    b, C = _lite_system(K, sq, Zc, sigma)
    return b, C, K


def _incomplete_cholesky(Z: np.ndarray, lengthscale: float, rank: int, tol: float = 1e-12):
    """Pivoted incomplete Cholesky ``K ≈ L Lᵀ`` of the Gaussian Gram matrix, columns computed on
    demand: O(n r (r + d)) time, O(n r) memory. Stops early once the residual diagonal (the
    trace error) falls below ``tol``."""
    n = Z.shape[0]
    rank = min(rank, n)
    L = np.zeros((n, rank))
    residual = np.ones(n)  # diag of K − L Lᵀ; k(x, x) = 1
    inv_two_ell2 = 1.0 / (2.0 * lengthscale**2)
    used = 0
    for j in range(rank):
        pivot = int(np.argmax(residual))
        if residual[pivot] <= tol:
            break
        diff = Z - Z[pivot]
        col = np.exp(-np.einsum("ij,ij->i", diff, diff) * inv_two_ell2)
        col -= L[:, :j] @ L[pivot, :j]
        L[:, j] = col / math.sqrt(residual[pivot])
        residual -= L[:, j] ** 2
        residual[pivot] = 0.0
        used = j + 1
    return L[:, :used]


def _conjugate_gradient(matvec, rhs, x0, tol, maxiter):
    """Plain conjugate gradient for a symmetric positive-definite operator."""
    x = x0.copy()
    r = rhs - matvec(x)
    p = r.copy()
    rs = float(r @ r)
    rhs_norm = float(np.linalg.norm(rhs)) or 1.0
    iterations = 0
    for iterations in range(1, maxiter + 1):  # noqa: B007 - the count is returned
        if math.sqrt(rs) <= tol * rhs_norm:
            iterations -= 1
            break
        Ap = matvec(p)
        curvature = float(p @ Ap)
        if not curvature > 0:
            break
        step = rs / curvature
        x += step * p
        if iterations % 50 == 0:  # refresh the recursive residual against drift
            r = rhs - matvec(x)
        else:
            r -= step * Ap
        rs_new = float(r @ r)
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x, iterations, math.sqrt(rs) / rhs_norm


def _lite_evaluate(Z, alpha, lengthscale, X, value=False, grad=False, laplacian=False):
    """``f``, ``∇f`` and ``Σ_l ∂²_l f`` of ``f = Σ α_i k(z_i, ·)`` at the rows of ``X``."""
    n, d = Z.shape
    inv_ell2 = 1.0 / lengthscale**2
    nx = X.shape[0]
    out_f = np.empty(nx) if value else None
    out_g = np.empty((nx, d)) if grad else None
    out_l = np.empty(nx) if laplacian else None
    chunk = max(1, _CHUNK_ENTRIES // max(1, n * d))
    for start in range(0, nx, chunk):
        rows = slice(start, min(nx, start + chunk))
        diff = Z[None, :, :] - X[rows, None, :]  # (c, n, d): z_i − x
        sq = np.einsum("cnd,cnd->cn", diff, diff)
        ak = np.exp(-0.5 * inv_ell2 * sq) * alpha  # α_i k(z_i, x)
        if value:
            out_f[rows] = ak.sum(axis=1)
        if grad:
            out_g[rows] = inv_ell2 * np.einsum("cn,cnd->cd", ak, diff)
        if laplacian:
            # ∂²_l f = (1/ℓ²) Σ_i α_i k_i [(z_il − x_l)²/ℓ² − 1], summed over l
            out_l[rows] = inv_ell2 * np.einsum("cn,cn->c", ak, inv_ell2 * sq - d)
    return out_f, out_g, out_l


class LiteScoreEstimator:
    r"""Score matching "lite": ``f(x) = Σ_i α_i k(z_i, x)`` with a Gaussian kernel.

    The coefficients minimise the regularised score-matching objective on the data ``Z``
    (paper 002, Proposition 1, with the regulariser of the authors' code)::

        α = −(σ/2) (C + λ(K + I))⁻¹ b,    σ = 2ℓ²,

    i.e. the minimiser of ``J(α) + (2λ/(nσ²)) αᵀ(K + I)α`` where
    ``J(α) = (2/(nσ)) αᵀb + (2/(nσ²)) αᵀCα`` (see :func:`lite_linear_system`).

    Parameters
    ----------
    kernel : GaussianKernel, optional
        Kernel; default: a Gaussian kernel with the median-heuristic lengthscale of the data,
        chosen at each :meth:`fit`.
    regularization : float
        ``λ > 0`` (default ``1e-3``).
    low_rank : int, optional
        If given, fit through the route of the paper's Appendix A: a pivoted incomplete Cholesky
        factor ``K ≈ L Lᵀ`` of rank at most ``low_rank`` and conjugate gradient on
        ``(C + λ(K + I)) α = −(σ/2) b`` with matrix-vector products in O(n r d), warm-started at
        the previous ``α`` when the basis size is unchanged. Default: the exact dense solve.
    cg_tol : float
        Relative residual tolerance of conjugate gradient (``low_rank`` only; default ``1e-10``).
    cg_maxiter : int, optional
        Iteration cap of conjugate gradient (default ``n``).

    Attributes
    ----------
    alpha : ndarray, shape (n,)
        Coefficients (after :meth:`fit`).
    Z : ndarray, shape (n, d)
        Basis points.
    kernel_ : GaussianKernel
        Kernel used by the last fit.
    rank_ : int
        Rank of the low-rank factor (``n`` for the exact solve).
    cg_iterations_, cg_residual_ : int, float
        Conjugate-gradient diagnostics of the last low-rank fit.
    """

    def __init__(
        self,
        kernel: GaussianKernel | None = None,
        regularization: float = 1e-3,
        low_rank: int | None = None,
        cg_tol: float = 1e-10,
        cg_maxiter: int | None = None,
    ):
        self.kernel = _gaussian_kernel(kernel)
        self.regularization = _positive("regularization", regularization)
        if low_rank is not None:
            if isinstance(low_rank, bool) or int(low_rank) != low_rank or low_rank < 1:
                raise ValueError(
                    f"`low_rank` must be a positive integer or None, got {low_rank!r}."
                )
            low_rank = int(low_rank)
        self.low_rank = low_rank
        self.cg_tol = _positive("cg_tol", cg_tol)
        if cg_maxiter is not None and (int(cg_maxiter) != cg_maxiter or cg_maxiter < 1):
            raise ValueError(
                f"`cg_maxiter` must be a positive integer or None, got {cg_maxiter!r}."
            )
        self.cg_maxiter = cg_maxiter
        self.alpha: np.ndarray | None = None
        self.Z: np.ndarray | None = None
        self.kernel_: GaussianKernel | None = None
        self.rank_: int | None = None
        self.cg_iterations_: int | None = None
        self.cg_residual_: float | None = None

    # ---------------------------------------------------------------- properties
    @property
    def is_fitted(self) -> bool:
        """Whether :meth:`fit` has been called."""
        return self.alpha is not None

    @property
    def lengthscale(self) -> float:
        """Lengthscale ``ℓ`` of the fitted kernel."""
        self._check_fitted()
        return self.kernel_.lengthscale

    @property
    def n_points(self) -> int:
        """Number ``n`` of basis points."""
        return 0 if self.Z is None else self.Z.shape[0]

    @property
    def dim(self) -> int:
        """Dimension ``d`` of the fitted data."""
        self._check_fitted()
        return self.Z.shape[1]

    def _check_fitted(self):
        if self.alpha is None:
            raise RuntimeError("LiteScoreEstimator is not fitted; call fit(Z) first.")

    # ---------------------------------------------------------------- fitting
    def fit(self, Z, x0=None) -> LiteScoreEstimator:
        """Fit ``α`` to the data ``Z``.

        Parameters
        ----------
        Z : array_like, shape (n, d)
            Samples (``n ≥ 2``, finite); they become the basis points.
        x0 : array_like, shape (n,), optional
            Starting point of conjugate gradient (``low_rank`` only); default: the previous
            ``α`` if it has length ``n``, else zero.

        Returns
        -------
        LiteScoreEstimator
            ``self``.

        Raises
        ------
        ValueError
            For invalid data.
        numpy.linalg.LinAlgError
            If the regularised system is numerically not positive definite.
        """
        Z = _data(Z, "Z")
        n, d = Z.shape
        kernel = self.kernel if self.kernel is not None else GaussianKernel(median_lengthscale(Z))
        ell = kernel.lengthscale
        sigma = 2.0 * ell**2
        lam = self.regularization
        Zc = Z - Z.mean(axis=0)
        if self.low_rank is None:
            sq = cdist(Zc, Zc, "sqeuclidean")
            K = np.exp(-sq / sigma)
            b, C = _lite_system(K, sq, Zc, sigma)
            C += lam * K
            C[np.diag_indices(n)] += lam
            factor = sla.cho_factor(C, lower=True, overwrite_a=True, check_finite=False)
            alpha = sla.cho_solve(factor, -0.5 * sigma * b, check_finite=False)
            rank, iterations, residual = n, None, None
        else:
            if x0 is None:
                x0 = self.alpha if self.alpha is not None and self.alpha.shape == (n,) else None
            x0 = np.zeros(n) if x0 is None else np.asarray(x0, dtype=float)
            if x0.shape != (n,) or not np.all(np.isfinite(x0)):
                raise ValueError(f"`x0` must be a finite vector of shape ({n},).")
            alpha, rank, iterations, residual = self._fit_low_rank(Zc, ell, x0)
        if not np.all(np.isfinite(alpha)):
            raise np.linalg.LinAlgError("LiteScoreEstimator.fit produced non-finite coefficients.")
        self.Z = Z
        self.alpha = np.ascontiguousarray(alpha)
        self.kernel_ = kernel
        self.rank_ = rank
        self.cg_iterations_ = iterations
        self.cg_residual_ = residual
        return self

    def _fit_low_rank(self, Zc, ell, x0):
        n, d = Zc.shape
        sigma = 2.0 * ell**2
        lam = self.regularization
        L = _incomplete_cholesky(Zc, ell, self.low_rank)

        def K_times(V):
            return L @ (L.T @ V)

        ones = np.ones(n)
        K1 = K_times(ones)
        KS = K_times(Zc**2)
        KX = K_times(Zc)
        q = np.einsum("ij,ij->i", Zc, Zc)
        # b = Σ_l (2/σ)(K s_l + s_l ⊙ K1 − 2 x_l ⊙ K x_l) − d K1
        b = (2.0 / sigma) * (KS.sum(axis=1) + q * K1 - 2.0 * np.einsum("il,il->i", Zc, KX))
        b -= d * K1

        def A_times(W):
            # columns l of the result: A_l w_l = x_l ⊙ K w_l − K (x_l ⊙ w_l)
            return Zc * K_times(W) - K_times(Zc * W)

        def matvec(v):
            Kv = K_times(v)
            W = Zc * Kv[:, None] - K_times(Zc * v[:, None])  # A_l v, column l
            Cv = -A_times(W).sum(axis=1)  # C = Σ A_l A_lᵀ = −Σ A_l A_l
            return Cv + lam * (Kv + v)

        maxiter = self.cg_maxiter if self.cg_maxiter is not None else n
        alpha, iterations, residual = _conjugate_gradient(
            matvec, -0.5 * sigma * b, x0, self.cg_tol, maxiter
        )
        return alpha, L.shape[1], iterations, residual

    # ---------------------------------------------------------------- evaluation
    def log_density(self, X):
        """Surrogate log density ``f(x) = Σ α_i k(z_i, x)`` (up to a constant).

        Parameters
        ----------
        X : array_like, shape (d,) or (m, d)

        Returns
        -------
        float or ndarray, shape (m,)
        """
        self._check_fitted()
        X, single = _query(X, self.Z.shape[1])
        f, _, _ = _lite_evaluate(self.Z, self.alpha, self.kernel_.lengthscale, X, value=True)
        return float(f[0]) if single else f

    def grad(self, X):
        """Gradient ``∇f(x) = Σ α_i (2/σ) k(z_i, x)(z_i − x)``.

        Parameters
        ----------
        X : array_like, shape (d,) or (m, d)

        Returns
        -------
        ndarray, shape (d,) or (m, d)
        """
        self._check_fitted()
        X, single = _query(X, self.Z.shape[1])
        _, g, _ = _lite_evaluate(self.Z, self.alpha, self.kernel_.lengthscale, X, grad=True)
        return g[0] if single else g

    def objective(self, X) -> float:
        """Score-matching objective ``J = (1/m) Σ_j Σ_l [∂²_l f(x_j) + ½(∂_l f(x_j))²]`` on ``X``
        (no regulariser); lower is better, e.g. on held-out data.

        Parameters
        ----------
        X : array_like, shape (m, d)

        Returns
        -------
        float
        """
        self._check_fitted()
        X = _data(X, "X", min_points=1, dim=self.Z.shape[1])
        _, g, lap = _lite_evaluate(
            self.Z, self.alpha, self.kernel_.lengthscale, X, grad=True, laplacian=True
        )
        return float(np.mean(lap + 0.5 * np.einsum("ij,ij->i", g, g)))

    def leapfrog(
        self,
        q,
        p,
        step_size: float,
        n_steps: int,
        inv_mass_diag=None,
        wall_radius: float = math.inf,
        wall_stiffness: float = 1.0,
        abort_radius: float = math.inf,
    ):
        """Compiled leapfrog trajectory on ``f`` (see :func:`.integrators.lite_leapfrog`).

        Parameters
        ----------
        q, p : array_like, shape (d,)
            Initial position and momentum.
        step_size : float
            Step size ``ε``.
        n_steps : int
            Number of steps ``L``.
        inv_mass_diag : array_like, shape (d,) or scalar, optional
            Diagonal inverse mass matrix (default identity).
        wall_radius, wall_stiffness : float
            Optional confinement ``−(k/2)(‖q‖ − R)₊²`` added to the surrogate (default none).
        abort_radius : float
            A trajectory that leaves the ball of this radius is all NaN (default inf; see
            :func:`.integrators.lite_leapfrog`).

        Returns
        -------
        q_new, p_new : ndarray, shape (d,)
            End point (``q_new`` all NaN if the gradient became non-finite).
        """
        self._check_fitted()
        return lite_leapfrog(
            self.Z,
            self.alpha,
            self.kernel_.lengthscale,
            q,
            p,
            step_size,
            n_steps,
            inv_mass_diag,
            wall_radius,
            wall_stiffness,
            abort_radius,
        )


# ---------------------------------------------------------------------------------------------
# finite (random Fourier feature) estimator


@numba.njit(cache=True)
def _cholesky_rank_one_update(R, x):
    """In place: upper ``R`` with ``RᵀR = A`` becomes the factor of ``A + x xᵀ``; ``x`` is
    overwritten. O(m²)."""
    m = R.shape[0]
    for k in range(m):
        rkk = R[k, k]
        xk = x[k]
        r = math.sqrt(rkk * rkk + xk * xk)
        c = r / rkk
        s = xk / rkk
        inv_c = rkk / r
        R[k, k] = r
        for j in range(k + 1, m):
            rkj = (R[k, j] + s * x[j]) * inv_c
            R[k, j] = rkj
            x[j] = c * x[j] - s * rkj


@numba.njit(cache=True)
def _rff_factor_update(R, omega, offsets, X, scale):
    """Add ``Σ_l ∂_lφ(x) ∂_lφ(x)ᵀ`` for every row ``x`` of ``X`` to the factor ``R``."""
    m, d = omega.shape
    v = np.empty(m)
    sines = np.empty(m)
    for i in range(X.shape[0]):
        for k in range(m):
            a = offsets[k]
            for j in range(d):
                a += omega[k, j] * X[i, j]
            sines[k] = math.sin(a)
        for l in range(d):
            for k in range(m):
                v[k] = scale * sines[k] * omega[k, l]
            _cholesky_rank_one_update(R, v)


class FiniteScoreEstimator:
    r"""Score matching in a random Fourier feature space: ``f(x) = θᵀφ(x)``.

    ``φ(x) = √(2/m) cos(Ωx + u)`` approximates the Gaussian kernel, ``φ(x)ᵀφ(y) ≈ k(x, y)``,
    with rows of ``Ω`` drawn from ``N(0, ℓ⁻² I)`` and ``u ~ U[0, 2π)``. The coefficients solve
    (paper 002, Proposition 2, in summed form)::

        (Σ_i A(x_i) + λ I) θ = Σ_i β(x_i),
        A(x) = Σ_l ∂_lφ(x) ∂_lφ(x)ᵀ,   β(x) = −Σ_l ∂²_lφ(x) = φ(x) ⊙ (Σ_l ω_{·l}²).

    Because these are sums, a new point is an exact rank-``d`` update of the Cholesky factor of
    ``Σ A + λI`` (:meth:`update`, O(d m²)), and online updates reproduce the batch fit. The
    paper's averaged form with ``λ_paper`` corresponds to ``λ = n λ_paper``.

    Parameters
    ----------
    n_features : int
        Number ``m ≥ 1`` of random features (default 300).
    kernel : GaussianKernel, optional
        Kernel whose spectral measure the frequencies are drawn from; default: the
        median-heuristic lengthscale of the data at the first :meth:`fit` (or at each refit).
        Ignored when ``frequencies`` are given.
    regularization : float
        ``λ > 0`` (default ``1.0``).
    rng : int, numpy.random.Generator or None
        Source of the random features (``numpy.random.default_rng(rng)``).
    frequencies : array_like, shape (m, d), optional
        Fixed ``Ω`` (then the lengthscale plays no role).
    offsets : array_like, shape (m,), optional
        Fixed phases ``u``.

    Attributes
    ----------
    theta : ndarray, shape (m,)
        Coefficients (after :meth:`fit` or :meth:`update`).
    frequencies : ndarray, shape (m, d)
    offsets : ndarray, shape (m,)
    """

    def __init__(
        self,
        n_features: int = 300,
        kernel: GaussianKernel | None = None,
        regularization: float = 1.0,
        rng=None,
        frequencies=None,
        offsets=None,
    ):
        if isinstance(n_features, bool) or int(n_features) != n_features or n_features < 1:
            raise ValueError(f"`n_features` must be a positive integer, got {n_features!r}.")
        self.n_features = m = int(n_features)
        self.kernel = _gaussian_kernel(kernel)
        self.regularization = _positive("regularization", regularization)
        self._rng = np.random.default_rng(rng)
        self._fixed_frequencies = frequencies is not None
        if frequencies is not None:
            frequencies = np.array(frequencies, dtype=float)
            if frequencies.ndim != 2 or frequencies.shape[0] != m or frequencies.shape[1] < 1:
                raise ValueError(
                    f"`frequencies` must have shape (n_features={m}, d), got {frequencies.shape}."
                )
            if not np.all(np.isfinite(frequencies)):
                raise ValueError("`frequencies` contains non-finite values.")
            frequencies = np.ascontiguousarray(frequencies)
        if offsets is not None:
            offsets = np.array(offsets, dtype=float)
            if offsets.shape != (m,):
                raise ValueError(f"`offsets` must have shape ({m},), got {offsets.shape}.")
            if not np.all(np.isfinite(offsets)):
                raise ValueError("`offsets` contains non-finite values.")
            offsets = np.ascontiguousarray(offsets)
        self.frequencies: np.ndarray | None = frequencies
        self.offsets: np.ndarray | None = offsets
        self._standard_normals: np.ndarray | None = None
        self.lengthscale_: float | None = None
        self.theta: np.ndarray | None = None
        self._factor: np.ndarray | None = None  # upper R, RᵀR = Σ A + λI
        self._rhs: np.ndarray | None = None  # Σ β
        self._n = 0

    # ---------------------------------------------------------------- properties
    @property
    def is_fitted(self) -> bool:
        """Whether ``θ`` is available."""
        return self.theta is not None

    @property
    def n_points(self) -> int:
        """Number of points absorbed by :meth:`fit` and :meth:`update`."""
        return self._n

    @property
    def _scale(self) -> float:
        return math.sqrt(2.0 / self.n_features)

    def _check_fitted(self):
        if self.theta is None:
            raise RuntimeError("FiniteScoreEstimator is not fitted; call fit(X) or update(x).")

    def _prepare_features(self, X: np.ndarray) -> None:
        """Draw (or rescale) the frequencies for data ``X`` of dimension ``d``."""
        m, d = self.n_features, X.shape[1]
        if self.offsets is None:
            self.offsets = self._rng.uniform(0.0, 2.0 * np.pi, size=m)
        if self._fixed_frequencies:
            if self.frequencies.shape[1] != d:
                raise ValueError(
                    f"`frequencies` have dimension {self.frequencies.shape[1]} but the data has "
                    f"{d} columns."
                )
            return
        if self.kernel is not None:
            ell = self.kernel.lengthscale
        elif X.shape[0] >= 2:
            ell = median_lengthscale(X)
        else:
            raise ValueError(
                "FiniteScoreEstimator needs a `kernel` (or `frequencies`) to start from a single "
                "point: the median heuristic needs at least 2 points."
            )
        if self._standard_normals is None or self._standard_normals.shape[1] != d:
            self._standard_normals = self._rng.standard_normal((m, d))
        self.frequencies = np.ascontiguousarray(self._standard_normals / ell)
        self.lengthscale_ = ell

    def features(self, X) -> np.ndarray:
        """Random features ``φ(x) = √(2/m) cos(Ωx + u)``.

        The frequencies are drawn on first use (by this method, :meth:`fit` or :meth:`update`).

        Parameters
        ----------
        X : array_like, shape (d,) or (n, d)

        Returns
        -------
        ndarray, shape (m,) or (n, m)
        """
        if self.frequencies is None or self.offsets is None:
            self._prepare_features(_data(np.atleast_2d(X), "X", min_points=1))
        X, single = _query(X, self.frequencies.shape[1])
        phi = self._scale * np.cos(X @ self.frequencies.T + self.offsets)
        return phi[0] if single else phi

    # ---------------------------------------------------------------- fitting
    def fit(self, X) -> FiniteScoreEstimator:
        """Batch fit of ``θ`` on all of ``X``, replacing any previous fit.

        Parameters
        ----------
        X : array_like, shape (n, d)
            Samples (``n ≥ 2``, finite).

        Returns
        -------
        FiniteScoreEstimator
            ``self``.
        """
        X = _data(X, "X")
        self._prepare_features(X)
        omega, scale, lam = self.frequencies, self._scale, self.regularization
        phases = X @ omega.T + self.offsets
        S = np.sin(phases)
        A = (scale * scale) * (omega @ omega.T) * (S.T @ S)
        A[np.diag_indices_from(A)] += lam
        self._factor = np.ascontiguousarray(sla.cholesky(A, lower=False, check_finite=False))
        self._rhs = scale * np.cos(phases).sum(axis=0) * np.einsum("kl,kl->k", omega, omega)
        self._n = X.shape[0]
        self._solve()
        return self

    def update(self, X) -> FiniteScoreEstimator:
        """Add one point (shape ``(d,)``) or a small batch (``(k, d)``) to the fit: a rank-``d``
        Cholesky update per point, O(k d m²). An unfitted estimator starts from ``λI``.

        Parameters
        ----------
        X : array_like, shape (d,) or (k, d)

        Returns
        -------
        FiniteScoreEstimator
            ``self``.
        """
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[None, :]
        dim = self.frequencies.shape[1] if self._factor is not None else None
        X = _data(X, "X", min_points=1, dim=dim)
        if self._factor is None:
            self._prepare_features(X)
            m = self.n_features
            self._factor = math.sqrt(self.regularization) * np.eye(m)
            self._rhs = np.zeros(m)
            self._n = 0
        omega = self.frequencies
        _rff_factor_update(self._factor, omega, self.offsets, X, self._scale)
        phi = self._scale * np.cos(X @ omega.T + self.offsets)
        self._rhs = self._rhs + phi.sum(axis=0) * np.einsum("kl,kl->k", omega, omega)
        self._n += X.shape[0]
        self._solve()
        return self

    def _solve(self):
        theta = sla.cho_solve((self._factor, False), self._rhs, check_finite=False)
        self.theta = np.ascontiguousarray(theta)

    # ---------------------------------------------------------------- evaluation
    def _evaluate(self, X):
        X, single = _query(X, self.frequencies.shape[1])
        phases = X @ self.frequencies.T + self.offsets
        return phases, single

    def log_density(self, X):
        """Surrogate log density ``f(x) = θᵀφ(x)``.

        Parameters
        ----------
        X : array_like, shape (d,) or (n, d)

        Returns
        -------
        float or ndarray, shape (n,)
        """
        self._check_fitted()
        phases, single = self._evaluate(X)
        f = self._scale * np.cos(phases) @ self.theta
        return float(f[0]) if single else f

    def grad(self, X):
        """Gradient ``∇f(x) = −√(2/m) Σ_j θ_j sin(ω_jᵀx + u_j) ω_j``.

        Parameters
        ----------
        X : array_like, shape (d,) or (n, d)

        Returns
        -------
        ndarray, shape (d,) or (n, d)
        """
        self._check_fitted()
        phases, single = self._evaluate(X)
        g = (-self._scale * np.sin(phases) * self.theta) @ self.frequencies
        return g[0] if single else g

    def objective(self, X) -> float:
        """Score-matching objective ``J = (1/n) Σ_j Σ_l [∂²_l f(x_j) + ½(∂_l f(x_j))²]`` on ``X``
        (no regulariser).

        Parameters
        ----------
        X : array_like, shape (n, d)

        Returns
        -------
        float
        """
        self._check_fitted()
        X = _data(X, "X", min_points=1, dim=self.frequencies.shape[1])
        phases = X @ self.frequencies.T + self.offsets
        g = (-self._scale * np.sin(phases) * self.theta) @ self.frequencies
        w = np.einsum("kl,kl->k", self.frequencies, self.frequencies)
        lap = -(self._scale * np.cos(phases) * w) @ self.theta
        return float(np.mean(lap + 0.5 * np.einsum("ij,ij->i", g, g)))

    def leapfrog(
        self,
        q,
        p,
        step_size: float,
        n_steps: int,
        inv_mass_diag=None,
        wall_radius: float = math.inf,
        wall_stiffness: float = 1.0,
        abort_radius: float = math.inf,
    ):
        """Compiled leapfrog trajectory on ``f`` (see :func:`.integrators.finite_leapfrog`).

        Parameters
        ----------
        q, p : array_like, shape (d,)
            Initial position and momentum.
        step_size : float
            Step size ``ε``.
        n_steps : int
            Number of steps ``L``.
        inv_mass_diag : array_like, shape (d,) or scalar, optional
            Diagonal inverse mass matrix (default identity).
        wall_radius, wall_stiffness : float
            Optional confinement ``−(k/2)(‖q‖ − R)₊²`` added to the surrogate (default none).
        abort_radius : float
            A trajectory that leaves the ball of this radius is all NaN (default inf; see
            :func:`.integrators.lite_leapfrog`).

        Returns
        -------
        q_new, p_new : ndarray, shape (d,)
            End point (``q_new`` all NaN if the gradient became non-finite).
        """
        self._check_fitted()
        return finite_leapfrog(
            self.frequencies,
            self.offsets,
            self.theta,
            q,
            p,
            step_size,
            n_steps,
            inv_mass_diag,
            wall_radius,
            wall_stiffness,
            abort_radius,
        )


# ---------------------------------------------------------------------------------------------
# cross-validated choice of (lengthscale, regularization)

_DEFAULT_LITE_REGULARIZATIONS = np.logspace(-5, 3, 9)
_DEFAULT_FINITE_REGULARIZATIONS = np.logspace(-4, 3, 8)


def _grid(values, name: str) -> np.ndarray:
    values = np.atleast_1d(np.asarray(values, dtype=float))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"`{name}` must be a non-empty 1-d sequence of positive numbers.")
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"`{name}` must contain positive finite numbers, got {values!r}.")
    return values


def _solve_spd_path(M, shift, regularizations, rhs):
    """Columns ``(M + λ shift)⁻¹ rhs`` for each λ; NaN where the Cholesky factorisation fails."""
    out = np.full((M.shape[0], regularizations.size), np.nan)
    potrf, potrs = sla.lapack.dpotrf, sla.lapack.dpotrs
    for j, lam in enumerate(regularizations):
        A = M + lam * shift
        factor, info = potrf(A, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            continue
        solution, info = potrs(factor, rhs, lower=1)
        if info == 0:
            out[:, j] = solution
    return out


def _cv_lite(Z, folds, lengthscales, regularizations):
    n, d = Z.shape
    Zc = Z - Z.mean(axis=0)
    sq_all = cdist(Zc, Zc, "sqeuclidean")
    G_all = Zc @ Zc.T
    q_all = np.einsum("ij,ij->i", Zc, Zc)
    scores = np.zeros((len(folds), lengthscales.size, regularizations.size))
    n_lam = regularizations.size
    splits = [(np.setdiff1d(np.arange(n), test, assume_unique=True), test) for test in folds]
    for a, ell in enumerate(lengthscales):
        sigma = 2.0 * ell**2
        inv_ell2 = 1.0 / ell**2
        K_all = np.exp(-sq_all / sigma)
        C_all = _lite_C(K_all, G_all, q_all)
        for f, (train, test) in enumerate(splits):
            n_tr = train.size
            K = K_all[np.ix_(train, train)]
            K_out = K_all[np.ix_(train, test)]
            C = C_all[np.ix_(train, train)]
            C -= _lite_C_downdate(
                K_out, G_all[np.ix_(train, train)], G_all[np.ix_(train, test)], q_all[test]
            )
            b = (2.0 / sigma) * np.einsum("ij,ij->i", K, sq_all[np.ix_(train, train)])
            b -= d * K.sum(axis=1)
            shift = K.copy()
            shift[np.diag_indices_from(shift)] += 1.0
            alphas = _solve_spd_path(C, shift, regularizations, -0.5 * sigma * b)  # (n_tr, n_lam)
            # held-out objective for every λ at once
            Kc = K_out.T
            Ztr, Zte = Zc[train], Zc[test]
            with np.errstate(invalid="ignore", over="ignore"):
                Ka = Kc @ alphas  # (n_te, n_lam)
                weighted = (alphas[:, :, None] * Ztr[:, None, :]).reshape(n_tr, -1)
                KaZ = (Kc @ weighted).reshape(test.size, n_lam, d)
                grads = inv_ell2 * (KaZ - Ka[:, :, None] * Zte[:, None, :])
                lap = inv_ell2 * ((Kc * (inv_ell2 * sq_all[np.ix_(test, train)] - d)) @ alphas)
                J = np.mean(lap + 0.5 * np.einsum("tkd,tkd->tk", grads, grads), axis=0)
            scores[f, a] = J
    return scores


def _cv_finite(Z, folds, lengthscales, regularizations, n_features, rng):
    n, d = Z.shape
    m = n_features
    scale = math.sqrt(2.0 / m)
    offsets = rng.uniform(0.0, 2.0 * np.pi, size=m)  # same draw order as FiniteScoreEstimator
    base = rng.standard_normal((m, d))
    scores = np.zeros((len(folds), lengthscales.size, regularizations.size))
    identity = np.eye(m)
    for a, ell in enumerate(lengthscales):
        omega = base / ell
        w = np.einsum("kl,kl->k", omega, omega)
        phases = Z @ omega.T + offsets
        S = np.sin(phases)
        Cs = np.cos(phases)
        OO = (scale * scale) * (omega @ omega.T)
        SS_all = S.T @ S
        beta_all = Cs.sum(axis=0)
        for f, test in enumerate(folds):
            S_te, C_te = S[test], Cs[test]
            A = OO * (SS_all - S_te.T @ S_te)
            rhs = scale * (beta_all - C_te.sum(axis=0)) * w
            thetas = _solve_spd_path(A, identity, regularizations, rhs)  # (m, n_lam)
            with np.errstate(invalid="ignore", over="ignore"):
                lap = -(scale * C_te * w) @ thetas  # (n_te, n_lam)
                sq_grad = np.empty_like(lap)
                for j in range(regularizations.size):
                    g = (-scale * S_te * thetas[:, j]) @ omega
                    sq_grad[:, j] = np.einsum("ij,ij->i", g, g)
                J = np.mean(lap + 0.5 * sq_grad, axis=0)
            scores[f, a] = J
    return scores


def select_hyperparameters(
    Z,
    estimator: str = "lite",
    lengthscales=None,
    regularizations=None,
    n_folds: int = 5,
    rng=None,
    se_penalty: float = 1.0,
    contiguous_folds: bool = False,
    **estimator_kwargs,
) -> tuple[float, float, np.ndarray]:
    """Choose the kernel lengthscale ``ℓ`` and regulariser ``λ`` by K-fold cross-validation.

    For every ``(ℓ, λ)`` on the grid the estimator is fitted on ``K − 1`` folds and scored by
    the score-matching objective ``J`` on the held-out fold (lower is better). The returned pair
    minimises the mean held-out ``J`` plus ``se_penalty`` times its standard error across folds:
    held-out ``J`` is heavy-tailed for very short lengthscales (a few test points next to a
    training point carry large negative curvature), and the plain minimum of the mean then
    picks such a noisy, badly overfitted model now and then; the standard-error term rules those
    out (``se_penalty=0`` gives the plain minimiser). Per lengthscale and fold the expensive
    part (the lite ``C``, or the finite ``Σ A``) is built once and only a Cholesky factorisation
    is repeated per ``λ``. For the finite estimator the same random features (scaled by
    ``1/ℓ``) are used across the grid.

    Parameters
    ----------
    Z : array_like, shape (n, d)
        Samples (``n ≥ n_folds``, finite).
    estimator : {"lite", "finite"}
        Which estimator to tune.
    lengthscales : array_like, optional
        Grid of ``ℓ``. Default: ``median_lengthscale(Z) × logspace(−1, 1, 7)``. To warm start,
        pass a small grid around a previous choice, e.g. ``ℓ₀ × logspace(−0.25, 0.25, 3)``.
    regularizations : array_like, optional
        Grid of ``λ``. Default: ``logspace(−5, 3, 9)`` for "lite"; ``logspace(−4, 3, 8)`` for
        "finite" (its ``λ`` multiplies a sum over the points, not an average).
    n_folds : int
        Number of folds ``K ≥ 2`` (default 5).
    rng : int, numpy.random.Generator or None
        Source of the fold assignment (and of the random features for "finite").
    se_penalty : float
        Weight ``≥ 0`` of the across-fold standard error in the selection criterion (default 1).
    contiguous_folds : bool
        Folds of consecutive rows instead of a random partition (default False). For the states
        of a Markov chain, in their order: neighbouring states are close, and a held-out state
        next to a training state rewards vanishing lengthscales.
    **estimator_kwargs
        ``n_features`` for "finite" (default 300). "lite" accepts ``low_rank``, ``cg_tol`` and
        ``cg_maxiter`` but always cross-validates the exact solve.

    Returns
    -------
    lengthscale : float
        Selected ``ℓ``.
    regularization : float
        Selected ``λ``.
    scores : ndarray, shape (len(lengthscales), len(regularizations))
        Mean held-out objective over folds per grid point (``inf`` where a fit failed). If every
        fit failed, the median-heuristic lengthscale and the estimator's default ``λ`` are
        returned.

    Raises
    ------
    ValueError
        For an unknown estimator or keyword, invalid grids, ``n_folds`` out of range or invalid
        data.
    """
    if estimator not in ("lite", "finite"):
        raise ValueError(f"`estimator` must be 'lite' or 'finite', got {estimator!r}.")
    Z = _data(Z, "Z")
    n = Z.shape[0]
    if isinstance(n_folds, bool) or int(n_folds) != n_folds or not 2 <= n_folds <= n:
        raise ValueError(f"`n_folds` must be an integer in [2, n={n}], got {n_folds!r}.")
    allowed = {"lite": {"low_rank", "cg_tol", "cg_maxiter"}, "finite": {"n_features"}}[estimator]
    unknown = set(estimator_kwargs) - allowed
    if unknown:
        raise ValueError(
            f"Unknown keyword(s) for estimator={estimator!r}: {sorted(unknown)}; "
            f"accepted: {sorted(allowed)}."
        )
    if lengthscales is None:
        lengthscales = median_lengthscale(Z) * np.logspace(-1.0, 1.0, 7)
    lengthscales = _grid(lengthscales, "lengthscales")
    if regularizations is None:
        regularizations = (
            _DEFAULT_LITE_REGULARIZATIONS
            if estimator == "lite"
            else _DEFAULT_FINITE_REGULARIZATIONS
        )
    regularizations = _grid(regularizations, "regularizations")
    se_penalty = float(se_penalty)
    if not (math.isfinite(se_penalty) and se_penalty >= 0):
        raise ValueError(f"`se_penalty` must be a non-negative number, got {se_penalty!r}.")
    rng = np.random.default_rng(rng)
    order = np.arange(n) if contiguous_folds else rng.permutation(n)
    folds = np.array_split(order, int(n_folds))
    if estimator == "lite":
        fold_scores = _cv_lite(Z, folds, lengthscales, regularizations)
        default_lambda = 1e-3
    else:
        n_features = estimator_kwargs.get("n_features", 300)
        if isinstance(n_features, bool) or int(n_features) != n_features or n_features < 1:
            raise ValueError(f"`n_features` must be a positive integer, got {n_features!r}.")
        fold_scores = _cv_finite(Z, folds, lengthscales, regularizations, int(n_features), rng)
        default_lambda = 1.0
    fold_scores = np.where(np.isfinite(fold_scores), fold_scores, np.inf)
    with np.errstate(invalid="ignore"):
        scores = fold_scores.mean(axis=0)
        stderr = fold_scores.std(axis=0, ddof=1) / math.sqrt(len(folds))
        criterion = scores + se_penalty * stderr
    scores = np.where(np.isfinite(scores), scores, np.inf)
    criterion = np.where(np.isfinite(criterion), criterion, np.inf)
    if not np.any(np.isfinite(criterion)):
        return median_lengthscale(Z), default_lambda, scores
    a, j = np.unravel_index(int(np.argmin(criterion)), criterion.shape)
    return float(lengthscales[a]), float(regularizations[j]), scores
