"""The finite estimator: ``f(x) = θᵀφ(x)`` with random Fourier features (paper 002,
Proposition 2)."""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.linalg as sla

from ..integrators import GradientSpec, SurrogateTrajectory, finite_gradient
from ..kernels import GaussianKernel, median_lengthscale
from ._common import _data, _gaussian_kernel, _positive, _query

__all__ = ["FiniteScoreEstimator"]


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


class FiniteScoreEstimator(SurrogateTrajectory):
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
        """Surrogate log density ``f(x) = θᵀφ(x)`` at a point ``X`` of shape ``(d,)`` (a float)
        or at the rows of ``(n, d)`` (an array of shape ``(n,)``)."""
        self._check_fitted()
        phases, single = self._evaluate(X)
        f = self._scale * np.cos(phases) @ self.theta
        return float(f[0]) if single else f

    def grad(self, X):
        """Gradient ``∇f(x) = −√(2/m) Σ_j θ_j sin(ω_jᵀx + u_j) ω_j`` at a point ``X`` of shape
        ``(d,)`` or at the rows of ``(n, d)`` (an array of the shape of ``X``)."""
        self._check_fitted()
        phases, single = self._evaluate(X)
        g = (-self._scale * np.sin(phases) * self.theta) @ self.frequencies
        return g[0] if single else g

    def objective(self, X) -> float:
        """Score-matching objective ``J = (1/n) Σ_j Σ_l [∂²_l f(x_j) + ½(∂_l f(x_j))²]`` (a
        float, no regulariser) on the rows of ``X``, shape ``(n, d)``."""
        self._check_fitted()
        X = _data(X, "X", min_points=1, dim=self.frequencies.shape[1])
        phases = X @ self.frequencies.T + self.offsets
        g = (-self._scale * np.sin(phases) * self.theta) @ self.frequencies
        w = np.einsum("kl,kl->k", self.frequencies, self.frequencies)
        lap = -(self._scale * np.cos(phases) * w) @ self.theta
        return float(np.mean(lap + 0.5 * np.einsum("ij,ij->i", g, g)))

    def gradient_spec(self) -> GradientSpec:
        """The gradient ``∇f`` as :func:`.integrators.surrogate_trajectory` evaluates it."""
        self._check_fitted()
        return finite_gradient(self.frequencies, self.offsets, self.theta)
