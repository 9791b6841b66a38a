"""The lite estimator: ``f(x) = Σ_i α_i k(z_i, x)`` in the span of kernels on the data
(paper 002, Proposition 1)."""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
from scipy.spatial.distance import cdist

from ..integrators import GradientSpec, SurrogateTrajectory, lite_gradient
from ..kernels import GaussianKernel, median_lengthscale
from ._common import _CHUNK_ENTRIES, _data, _gaussian_kernel, _positive, _query

__all__ = ["LiteScoreEstimator", "lite_linear_system"]


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


class LiteScoreEstimator(SurrogateTrajectory):
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
        """Surrogate log density ``f(x) = Σ α_i k(z_i, x)`` (up to a constant) at a point ``X``
        of shape ``(d,)`` (a float) or at the rows of ``(m, d)`` (an array of shape ``(m,)``)."""
        self._check_fitted()
        X, single = _query(X, self.Z.shape[1])
        f, _, _ = _lite_evaluate(self.Z, self.alpha, self.kernel_.lengthscale, X, value=True)
        return float(f[0]) if single else f

    def grad(self, X):
        """Gradient ``∇f(x) = Σ α_i (2/σ) k(z_i, x)(z_i − x)`` at a point ``X`` of shape ``(d,)``
        or at the rows of ``(m, d)`` (an array of the shape of ``X``)."""
        self._check_fitted()
        X, single = _query(X, self.Z.shape[1])
        _, g, _ = _lite_evaluate(self.Z, self.alpha, self.kernel_.lengthscale, X, grad=True)
        return g[0] if single else g

    def objective(self, X) -> float:
        """Score-matching objective ``J = (1/m) Σ_j Σ_l [∂²_l f(x_j) + ½(∂_l f(x_j))²]`` (a
        float, no regulariser) on the rows of ``X``, shape ``(m, d)``; lower is better, e.g. on
        held-out data."""
        self._check_fitted()
        X = _data(X, "X", min_points=1, dim=self.Z.shape[1])
        _, g, lap = _lite_evaluate(
            self.Z, self.alpha, self.kernel_.lengthscale, X, grad=True, laplacian=True
        )
        return float(np.mean(lap + 0.5 * np.einsum("ij,ij->i", g, g)))

    def gradient_spec(self) -> GradientSpec:
        """The gradient ``∇f`` as :func:`.integrators.surrogate_trajectory` evaluates it."""
        self._check_fitted()
        return lite_gradient(self.Z, self.alpha, self.kernel_.lengthscale)
