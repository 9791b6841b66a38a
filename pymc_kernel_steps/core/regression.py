r"""A surrogate log density fitted by regression to the log densities the chain has evaluated.

Score matching (:mod:`.score_matching`) fits a surrogate to the *locations* of the chain's states
and ignores the log density the sampler computed at every proposal. :class:`RegressionSurrogate`
fits those values instead (kernel ridge regression, beyond the papers), in coordinates ``u``
whitened by a Gaussian::

    f(u) = −½‖u‖² + c + Σ_i β_i k(z_i, u),    k(z, u) = exp(−½ Σ_j P_j (z_j − u_j)²).

The Gaussian term is the one whose log density is the least-squares quadratic through the
evaluations (:func:`fit_quadratic_gaussian`; ``KMCLite(surrogate="regression")`` whitens by it,
so that it is ``−½‖u‖²``). It sees, through rejected proposals too, the width of a direction
the chain has not explored yet, which the history's own Gaussian underestimates after a short
tuning. The kernel sum corrects it where there is data and
vanishes far from the centres ``z_i``, so trajectories beyond the region the chain has seen turn
back towards it (no spurious far modes). The kernel has one precision ``P_j = 1/ℓ_j²`` per
coordinate (automatic relevance determination, ``P_j = 0`` ignores coordinate ``j``):
:func:`select_regression_hyperparameters` chooses them, with the ridge ``λ``, by greedy search on
held-out squared error. A thin curved ridge such as the banana's lives in two coordinates of
eight; an isotropic kernel has to resolve it in all eight and fails.

The coefficients minimise ``(1/n) Σ_k (r_k − c − Σ_i β_i k(z_i, u_k))² + λ βᵀK_zz β`` with
``r_k = y_k + ½‖u_k‖²`` (subset of regressors, the centres a sub-sample of the data).

The Gaussian term ``−½‖u‖²`` is the quadratic case of a *trend* (:class:`PolynomialTrend`): a
proper quartic, the log density of a Gaussian in the features ``(u, u∘u)``
(:func:`fit_quartic_trend`), follows a bending log density (the banana's arms, skewed marginals)
beyond the kernel's centres; the residuals are then ``r_k = y_k − t(u_k)``.
:func:`select_trend` chooses between the two by held-out error.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
from scipy import stats

from .integrators import NO_TREND, regression_trajectory

__all__ = [
    "TRENDS",
    "PolynomialTrend",
    "RegressionSurrogate",
    "fit_quadratic_gaussian",
    "fit_quartic_trend",
    "informative_evaluations",
    "quartic_parameter_count",
    "select_regression_hyperparameters",
    "select_trend",
]

#: evaluated log densities more than this quantile of ½χ²_d below the best one lie where no draw
#: of a Gaussian posterior goes: the regression leaves them to the Gaussian term
_WINDOW_QUANTILE = 0.9999
_JITTER = 1e-10


def _points_and_values(U, values) -> tuple[np.ndarray, np.ndarray]:
    U = np.asarray(U, dtype=float)
    values = np.asarray(values, dtype=float)
    if U.ndim != 2 or U.shape[0] < 2:
        raise ValueError(f"`U` must have shape (n, d) with n ≥ 2, got shape {U.shape}.")
    if values.shape != (U.shape[0],):
        raise ValueError(
            f"`values` must have shape ({U.shape[0]},) to match `U`, got {values.shape}."
        )
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(values))):
        raise ValueError("`U` and `values` must be finite.")
    return U, values


def _precisions(precisions, dim: int | None = None) -> np.ndarray:
    precisions = np.asarray(precisions, dtype=float)
    if precisions.ndim != 1 or (dim is not None and precisions.shape != (dim,)):
        expected = "(d,)" if dim is None else f"({dim},)"
        raise ValueError(f"`precisions` must have shape {expected}, got {precisions.shape}.")
    if not (np.all(np.isfinite(precisions)) and np.all(precisions >= 0)):
        raise ValueError(f"`precisions` must be finite and ≥ 0, got {precisions}.")
    return np.ascontiguousarray(precisions)


def _kernel(X, Z, precisions) -> np.ndarray:
    """``k(x_a, z_b) = exp(−½ Σ_j P_j (x_aj − z_bj)²)``, shape (len(X), len(Z))."""
    root = np.sqrt(precisions)
    Xs, Zs = X * root, Z * root
    sq = (Xs**2).sum(1)[:, None] + (Zs**2).sum(1)[None, :] - 2.0 * Xs @ Zs.T
    return np.exp(-0.5 * np.maximum(sq, 0.0))


def informative_evaluations(
    points, values, rng: np.random.Generator, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """The evaluations worth fitting: finite values within the ``1 − 10⁻⁴`` quantile of ``½χ²_d``
    of the best one, at most ``size`` of them (a uniform sub-sample).

    Parameters
    ----------
    points : array_like, shape (n, d)
        Where the log density was evaluated.
    values : array_like, shape (n,)
        The log densities there (``-inf`` and NaN allowed: they are left out).
    rng : numpy.random.Generator
        Draws the sub-sample.
    size : int
        At most this many are returned.

    Returns
    -------
    points, values : ndarray
        Copies, in their original order.
    """
    points = np.asarray(points, dtype=float)
    values = np.asarray(values, dtype=float)
    if points.ndim != 2 or values.shape != (points.shape[0],):
        raise ValueError(
            f"`points` must have shape (n, d) and `values` shape (n,), got {points.shape} and "
            f"{values.shape}."
        )
    if isinstance(size, bool) or int(size) != size or size < 1:
        raise ValueError(f"`size` must be a positive integer, got {size!r}.")
    finite = np.isfinite(values) & np.all(np.isfinite(points), axis=1)
    if not np.any(finite):
        return points[:0].copy(), values[:0].copy()
    window = 0.5 * stats.chi2.ppf(_WINDOW_QUANTILE, points.shape[1])
    keep = np.flatnonzero(finite & (values >= values[finite].max() - window))
    if len(keep) > size:
        keep = np.sort(rng.choice(keep, size=size, replace=False))
    return points[keep].copy(), values[keep].copy()


def _require_twice_the_coefficients(n: int, coefficient_count: int, what: str) -> None:
    if n < 2 * coefficient_count:
        raise ValueError(
            f"`U` must hold at least {2 * coefficient_count} points (twice the "
            f"{coefficient_count} coefficients of {what}), got {n}."
        )


def quadratic_parameter_count(dim: int) -> int:
    """Coefficients of a quadratic in ``dim`` variables: ``1 + d + d(d + 1)/2``."""
    return 1 + dim + dim * (dim + 1) // 2


def fit_quadratic_gaussian(
    U, values, min_precision: float = 1e-2, max_precision: float = 1e2
) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian whose log density is the least-squares quadratic through the log densities.

    ``values ≈ c + bᵀu − ½ uᵀAu`` is fitted by least squares (the minimum-norm solution where the
    points do not determine every coefficient); the eigenvalues of ``A`` are clipped to
    ``[min_precision, max_precision]``, so that the result is a proper Gaussian even where the
    log densities are flat or convex in a direction (the clip sets how much wider or narrower than
    the frame of ``U`` it may be). Returns the mean ``A⁻¹b`` and covariance ``A⁻¹``.

    Parameters
    ----------
    U : array_like, shape (n, d)
        Points, finite, at least twice as many as the quadratic's coefficients
        (:func:`quadratic_parameter_count`).
    values : array_like, shape (n,)
        Finite log densities there.
    min_precision, max_precision : float
        ``0 < min_precision ≤ max_precision``.

    Returns
    -------
    mean : ndarray, shape (d,)
    covariance : ndarray, shape (d, d)
    """
    U, values = _points_and_values(U, values)
    n, d = U.shape
    _require_twice_the_coefficients(
        n, quadratic_parameter_count(d), f"a quadratic in {d} variables"
    )
    min_precision, max_precision = float(min_precision), float(max_precision)
    if not (0 < min_precision <= max_precision < math.inf):
        raise ValueError(
            "`min_precision` and `max_precision` must satisfy 0 < min_precision ≤ max_precision "
            f"< inf, got {min_precision!r} and {max_precision!r}."
        )
    rows, cols = np.triu_indices(d)
    design = np.hstack([np.ones((n, 1)), U, U[:, rows] * U[:, cols]])
    coefficients = np.linalg.lstsq(design, values, rcond=None)[0]
    linear = coefficients[1 : d + 1]
    upper = np.zeros((d, d))
    upper[rows, cols] = coefficients[d + 1 :]
    precision = -(upper + upper.T)  # −∇² of uᵀ·upper·u
    eigenvalues, vectors = np.linalg.eigh(precision)
    eigenvalues = np.clip(eigenvalues, min_precision, max_precision)
    covariance = (vectors / eigenvalues) @ vectors.T
    return covariance @ linear, 0.5 * (covariance + covariance.T)


def quartic_parameter_count(dim: int) -> int:
    """Coefficients of a :class:`PolynomialTrend` in ``dim`` variables:
    ``1 + d + d(d + 1)/2`` (constant, linear, quadratic) ``+ d²`` (cubic) ``+ d(d + 1)/2``
    (quartic)."""
    return quadratic_parameter_count(dim) + dim * dim + dim * (dim + 1) // 2


def _square_matrix(name, value, dim) -> np.ndarray:
    value = np.asarray(value, dtype=float)
    if value.shape != (dim, dim) or not np.all(np.isfinite(value)):
        raise ValueError(f"`{name}` must be a finite array of shape ({dim}, {dim}).")
    return np.ascontiguousarray(value)


class PolynomialTrend:
    r"""The parametric part of a :class:`RegressionSurrogate`: a log density that is a
    polynomial of degree at most four,

    .. math::

        t(u) = c + g^\top u - \tfrac12 u^\top H u + \sum_{ij} T_{ij} u_i u_j^2
               - \tfrac12 s^\top Q s, \qquad s = u \circ u,

    that is a Gaussian in the features ``(u, u∘u)`` (the *trend* of universal kriging: the kernel
    sum models what it leaves). ``Q`` is positive definite or zero; with ``Q`` positive definite
    the quartic term dominates the others far out, so ``t`` decays in every direction whatever
    ``g``, ``H`` and ``T`` are (``exp t`` is integrable). With ``T = Q = 0`` it is a quadratic:
    :meth:`standard_gaussian` is ``−½‖u‖²``, the surrogate's Gaussian term in its whitened frame.

    A log density whose dependence on a direction bends (the banana's
    ``−½(x₂ + b x₁²)²``, skewed or flattened marginals) is quartic or cubic: a quadratic trend
    represents it only where the kernel sum has data, the quartic one in the tails too.

    Parameters
    ----------
    offset : float
        ``c``.
    linear : array_like, shape (d,)
        ``g``.
    precision : array_like, shape (d, d)
        ``H``, symmetric.
    cubic : array_like, shape (d, d)
        ``T``.
    quartic : array_like, shape (d, d)
        ``Q``, symmetric positive definite, or zero.
    """

    def __init__(self, offset, linear, precision, cubic, quartic):
        self.offset = float(offset)
        linear = np.asarray(linear, dtype=float)
        if linear.ndim != 1 or not np.all(np.isfinite(linear)):
            raise ValueError(f"`linear` must be a finite vector, got shape {linear.shape}.")
        dim = linear.shape[0]
        self.linear = np.ascontiguousarray(linear)
        self.precision = _square_matrix("precision", precision, dim)
        self.cubic = _square_matrix("cubic", cubic, dim)
        self.quartic = _square_matrix("quartic", quartic, dim)
        if not math.isfinite(self.offset):
            raise ValueError(f"`offset` must be finite, got {offset!r}.")
        if not np.allclose(self.precision, self.precision.T) or not np.allclose(
            self.quartic, self.quartic.T
        ):
            raise ValueError("`precision` and `quartic` must be symmetric.")
        if np.any(self.quartic) and np.linalg.eigvalsh(self.quartic)[0] <= 0:
            raise ValueError("`quartic` must be positive definite or zero.")
        self._is_standard_gaussian = (
            self.offset == 0.0
            and not np.any(self.linear)
            and np.array_equal(self.precision, np.eye(dim))
            and not np.any(self.cubic)
            and not np.any(self.quartic)
        )
        #: ``(g, H, T, Q)`` as the compiled leapfrog takes them (``NO_TREND`` for ``−½‖u‖²``)
        self.compiled_arrays = (
            NO_TREND
            if self._is_standard_gaussian
            else (self.linear, self.precision, self.cubic, self.quartic)
        )

    @classmethod
    def standard_gaussian(cls, dim: int) -> PolynomialTrend:
        """``t(u) = −½‖u‖²``."""
        zeros = np.zeros((dim, dim))
        return cls(0.0, np.zeros(dim), np.eye(dim), zeros, zeros)

    @property
    def dim(self) -> int:
        """The dimension ``d``."""
        return self.linear.shape[0]

    @property
    def is_standard_gaussian(self) -> bool:
        """Whether ``t(u) = −½‖u‖²`` exactly."""
        return self._is_standard_gaussian

    def log_density(self, U) -> np.ndarray:
        """``t`` at the rows of ``U`` (shape (n, d)); an array of shape (n,)."""
        U = np.atleast_2d(np.asarray(U, dtype=float))
        if self._is_standard_gaussian:
            return -0.5 * np.einsum("ij,ij->i", U, U)
        S = U * U
        return (
            self.offset
            + U @ self.linear
            - 0.5 * np.einsum("ni,ij,nj->n", U, self.precision, U)
            + np.einsum("ni,ij,nj->n", U, self.cubic, S)
            - 0.5 * np.einsum("ni,ij,nj->n", S, self.quartic, S)
        )

    def grad(self, U) -> np.ndarray:
        """``∇t`` at the rows of ``U`` (shape (n, d)); an array of shape (n, d)."""
        U = np.atleast_2d(np.asarray(U, dtype=float))
        if self._is_standard_gaussian:
            return -U
        S = U * U
        return (
            self.linear
            - U @ self.precision
            + S @ self.cubic.T
            + 2.0 * U * (U @ self.cubic)
            - 2.0 * U * (S @ self.quartic)
        )


def _trend_design(U) -> tuple[np.ndarray, np.ndarray]:
    """The columns of a :class:`PolynomialTrend`'s coefficients other than ``Q``'s (constant,
    ``u_i``, ``u_i u_j`` for i ≤ j, ``u_i u_j²``) and ``Q``'s (``u_i² u_j²`` for i ≤ j)."""
    n, d = U.shape
    S = U * U
    rows, cols = np.triu_indices(d)
    lower = np.hstack(
        [
            np.ones((n, 1)),
            U,
            U[:, rows] * U[:, cols],
            (U[:, :, None] * S[:, None, :]).reshape(n, -1),
        ]
    )
    return lower, S[:, rows] * S[:, cols]


def _symmetric_from_upper(coefficients, dim) -> np.ndarray:
    """``M`` with ``Σ_{i≤j} a_ij x_i x_j = xᵀMx``: ``M_ii = a_ii``, ``M_ij = M_ji = a_ij/2``."""
    rows, cols = np.triu_indices(dim)
    upper = np.zeros((dim, dim))
    upper[rows, cols] = coefficients
    return 0.5 * (upper + upper.T)


def fit_quartic_trend(U, values, min_quartic: float = 1e-3) -> PolynomialTrend:
    """The :class:`PolynomialTrend` fitted to the log densities by least squares, with its
    quartic matrix ``Q`` made positive definite.

    All coefficients are fitted first; the eigenvalues of ``Q`` below ``min_quartic`` are raised
    to it (so that the trend decays far out: a log density flat or growing in a direction
    cannot be represented), and the other coefficients are fitted again with that ``Q`` fixed.

    Parameters
    ----------
    U : array_like, shape (n, d)
        Points, finite, at least twice as many as the trend's coefficients
        (:func:`quartic_parameter_count`).
    values : array_like, shape (n,)
        Finite log densities there.
    min_quartic : float
        Smallest eigenvalue of ``Q`` (> 0; in the coordinates of ``U``: ``u = 3`` along an
        eigenvector adds ``−½ · 81 · min_quartic``).

    Returns
    -------
    PolynomialTrend
    """
    U, values = _points_and_values(U, values)
    n, d = U.shape
    _require_twice_the_coefficients(
        n, quartic_parameter_count(d), f"a quartic trend in {d} variables"
    )
    min_quartic = float(min_quartic)
    if not (math.isfinite(min_quartic) and min_quartic > 0):
        raise ValueError(f"`min_quartic` must be positive and finite, got {min_quartic!r}.")
    lower, quartic_columns = _trend_design(U)
    design = np.hstack([lower, quartic_columns])
    coefficients = sla.lstsq(design, values, lapack_driver="gelsy", check_finite=False)[0]
    quartic = -2.0 * _symmetric_from_upper(coefficients[lower.shape[1] :], d)
    eigenvalues, vectors = np.linalg.eigh(quartic)
    quartic = (vectors * np.maximum(eigenvalues, min_quartic)) @ vectors.T
    quartic = 0.5 * (quartic + quartic.T)
    S = U * U
    remainder = values + 0.5 * np.einsum("ni,ij,nj->n", S, quartic, S)
    coefficients = sla.lstsq(lower, remainder, lapack_driver="gelsy", check_finite=False)[0]
    n_quadratic = d * (d + 1) // 2
    precision = -2.0 * _symmetric_from_upper(coefficients[1 + d : 1 + d + n_quadratic], d)
    cubic = coefficients[1 + d + n_quadratic :].reshape(d, d)
    return PolynomialTrend(coefficients[0], coefficients[1 : d + 1], precision, cubic, quartic)


#: the trends :func:`select_trend` chooses from
TRENDS = ("auto", "quartic", "quadratic")


def select_trend(
    U, values, rng: np.random.Generator, kind: str = "auto", holdout: float = 0.2
) -> PolynomialTrend:
    """The trend of a :class:`RegressionSurrogate` in the frame of ``U``.

    ``"quadratic"`` is ``−½‖u‖²`` (the frame's Gaussian). ``"quartic"`` is
    :func:`fit_quartic_trend`, given at least twice as many points as its coefficients
    (:func:`quartic_parameter_count`), else the quadratic one. ``"auto"`` fits the quartic trend
    on ``1 − holdout`` of the points and keeps it, refitted on all of them, if it predicts the
    held-out log densities better than the quadratic one (its constant fitted on the same
    points); the quadratic one otherwise, and whenever the points are too few. A noisy log
    density (pseudo-marginal estimates) or a log density a quartic does not improve on keeps
    the quadratic trend.

    Parameters
    ----------
    U : array_like, shape (n, d)
        Points in the surrogate's (whitened) coordinates.
    values : array_like, shape (n,)
        Finite log densities there.
    rng : numpy.random.Generator
        Draws the split (``"auto"`` only).
    kind : {"auto", "quartic", "quadratic"}
    holdout : float
        Share of the points held out by ``"auto"``, in (0, 1).

    Returns
    -------
    PolynomialTrend
    """
    if kind not in TRENDS:
        raise ValueError(f"`kind` must be one of {TRENDS}, got {kind!r}.")
    if not 0 < holdout < 1:
        raise ValueError(f"`holdout` must lie in (0, 1), got {holdout!r}.")
    U, values = _points_and_values(U, values)
    n, d = U.shape
    quadratic = PolynomialTrend.standard_gaussian(d)
    needed = 2 * quartic_parameter_count(d)
    if kind == "quadratic" or n < needed:
        return quadratic
    if kind == "auto":
        order = rng.permutation(n)
        n_valid = max(1, int(round(holdout * n)))
        valid, train = order[:n_valid], order[n_valid:]
        if len(train) < needed:
            return quadratic
        quartic_error = np.mean(
            (fit_quartic_trend(U[train], values[train]).log_density(U[valid]) - values[valid]) ** 2
        )
        residual = values + 0.5 * np.einsum("ij,ij->i", U, U)
        quadratic_error = np.mean((residual[valid] - residual[train].mean()) ** 2)
        if not quartic_error < quadratic_error:
            return quadratic
    return fit_quartic_trend(U, values)


class RegressionSurrogate:
    r"""``f(u) = t(u) + c + Σ_i β_i k(z_i, u)`` fitted by kernel ridge regression to log
    densities, with the trend ``t`` by default ``−½‖u‖²`` (see the module's description).

    Parameters
    ----------
    precisions : array_like, shape (d,)
        Per-coordinate kernel precisions ``P_j = 1/ℓ_j² ≥ 0`` (0 ignores coordinate ``j``).
    regularization : float
        Ridge ``λ > 0`` (default ``1e-2``).
    n_centers : int
        At most this many data points (distinct ones, drawn uniformly) become kernel centres
        (default 500).
    rng : numpy.random.Generator, optional
        Draws the centres (default ``numpy.random.default_rng()``).
    trend : PolynomialTrend, optional
        The parametric part in place of ``−½‖u‖²`` (default
        :meth:`PolynomialTrend.standard_gaussian`): ``f(u) = t(u) + c + Σ_i β_i k(z_i, u)``,
        the kernel sum fitted to what ``t`` leaves.

    Attributes
    ----------
    Z : ndarray, shape (m, d)
        Kernel centres (after :meth:`fit`).
    beta : ndarray, shape (m,)
        Coefficients.
    offset : float
        The constant ``c``.
    """

    def __init__(
        self,
        precisions,
        regularization: float = 1e-2,
        n_centers: int = 500,
        rng: np.random.Generator | None = None,
        trend: PolynomialTrend | None = None,
    ):
        self.precisions = _precisions(precisions)
        if trend is None:
            trend = PolynomialTrend.standard_gaussian(self.precisions.shape[0])
        if not isinstance(trend, PolynomialTrend) or trend.dim != self.precisions.shape[0]:
            raise ValueError(
                f"`trend` must be a PolynomialTrend of dimension {self.precisions.shape[0]}."
            )
        self.trend = trend
        regularization = float(regularization)
        if not (math.isfinite(regularization) and regularization > 0):
            raise ValueError(f"`regularization` must be positive, got {regularization!r}.")
        self.regularization = regularization
        if isinstance(n_centers, bool) or int(n_centers) != n_centers or n_centers < 1:
            raise ValueError(f"`n_centers` must be a positive integer, got {n_centers!r}.")
        self.n_centers = int(n_centers)
        self.rng = rng if rng is not None else np.random.default_rng()
        self.Z: np.ndarray | None = None
        self.beta: np.ndarray | None = None
        self.offset = 0.0

    @property
    def is_fitted(self) -> bool:
        """Whether :meth:`fit` has been called."""
        return self.beta is not None

    @property
    def lengthscale(self) -> float:
        """The shortest kernel lengthscale ``1/√max P_j`` (inf when every ``P_j`` is 0)."""
        largest = float(self.precisions.max())
        return 1.0 / math.sqrt(largest) if largest > 0 else math.inf

    def _check_fitted(self):
        if self.beta is None:
            raise RuntimeError("RegressionSurrogate is not fitted; call fit(U, values) first.")

    def fit(self, U, values) -> RegressionSurrogate:
        """Fit ``c`` and ``β`` to the log densities ``values`` at the rows of ``U``.

        Parameters
        ----------
        U : array_like, shape (n, d)
            Points (``n ≥ 2``, finite), in the coordinates of the surrogate.
        values : array_like, shape (n,)
            Finite log densities there.

        Returns
        -------
        RegressionSurrogate
            ``self``.
        """
        U, values = _points_and_values(U, values)
        precisions = _precisions(self.precisions, U.shape[1])
        _, first = np.unique(U, axis=0, return_index=True)
        centres = np.sort(first)
        if len(centres) > self.n_centers:
            centres = np.sort(self.rng.choice(centres, size=self.n_centers, replace=False))
        Z = U[centres]
        residual = values - self.trend.log_density(U)
        beta, K_mean = np.zeros(len(Z)), np.zeros(len(Z))
        if np.any(precisions > 0):  # else the kernel is a constant: the Gaussian term alone
            K = _kernel(U, Z, precisions)
            K_mean = K.mean(axis=0)
            Kc = K - K_mean
            n = len(U)
            system = Kc.T @ Kc / n + self.regularization * _kernel(Z, Z, precisions)
            system[np.diag_indices_from(system)] += _JITTER * max(1.0, np.trace(system) / len(Z))
            rhs = Kc.T @ (residual - residual.mean()) / n
            try:
                beta = sla.solve(system, rhs, assume_a="pos", check_finite=False)
            except (np.linalg.LinAlgError, sla.LinAlgError):
                beta = np.linalg.lstsq(system, rhs, rcond=None)[0]
        self.offset = float(residual.mean() - K_mean @ beta)
        self.Z = np.ascontiguousarray(Z)
        self.beta = np.ascontiguousarray(beta)
        return self

    def _query(self, X) -> tuple[np.ndarray, bool]:
        self._check_fitted()
        X = np.asarray(X, dtype=float)
        single = X.ndim == 1
        X = np.atleast_2d(X)
        if X.ndim != 2 or X.shape[1] != self.Z.shape[1]:
            raise ValueError(f"`X` must have shape (d,) or (m, d) with d = {self.Z.shape[1]}.")
        return X, single

    def log_density(self, X):
        """``f(x)`` at a point ``(d,)`` (a float) or at the rows of ``(m, d)`` (an array)."""
        X, single = self._query(X)
        f = self.trend.log_density(X) + self.offset
        f += _kernel(X, self.Z, self.precisions) @ self.beta
        return float(f[0]) if single else f

    def grad(self, X):
        """``∇f(x) = ∇t(x) + Σ_i β_i k(z_i, x) P (z_i − x)``, shape ``(d,)`` or ``(m, d)``."""
        X, single = self._query(X)
        weights = _kernel(X, self.Z, self.precisions) * self.beta  # (m, n)
        g = (weights @ self.Z - weights.sum(axis=1)[:, None] * X) * self.precisions
        g += self.trend.grad(X)
        return g[0] if single else g

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
        """Compiled leapfrog trajectory on ``f`` (see
        :func:`.integrators.regression_leapfrog`); arguments as for
        :meth:`.LiteScoreEstimator.leapfrog`."""
        self._check_fitted()
        return regression_trajectory(
            self.Z,
            self.beta,
            self.precisions,
            self.trend.compiled_arrays,
            q,
            p,
            step_size,
            n_steps,
            inv_mass_diag,
            wall_radius,
            wall_stiffness,
            abort_radius,
        )


def _held_out_error(train, valid, precisions, regularization, n_centers, rng, trend) -> float:
    surrogate = RegressionSurrogate(precisions, regularization, n_centers, rng, trend)
    surrogate.fit(*train)
    error = surrogate.log_density(valid[0]) - valid[1]
    return float(np.mean(error**2))


def select_regression_hyperparameters(
    U,
    values,
    rng: np.random.Generator,
    lengthscales=(0.3, 0.6, 1.0, 1.6, 2.5),
    regularizations=(1e-3, 1e-2, 1e-1),
    relevance_factors=(0.0, 0.25, 0.5, 2.0, 4.0),
    sweeps: int = 2,
    n_points: int = 1500,
    n_centers: int = 200,
    holdout: float = 0.2,
    trend: PolynomialTrend | None = None,
) -> tuple[np.ndarray, float, float]:
    """Per-coordinate precisions and the ridge of a :class:`RegressionSurrogate`, by greedy
    search on held-out mean squared error of the log density.

    Starting from an isotropic kernel, each sweep first tries every common lengthscale ``ℓ``
    (with the per-coordinate relevances so far) and ridge ``λ`` of the grids, then, coordinate
    by coordinate, multiplies that coordinate's relevance ``s_j`` by each of
    ``relevance_factors`` (0 drops it for good), keeping any change that lowers the error. The
    precisions are ``P_j = (s_j/ℓ)²``.

    Parameters
    ----------
    U : array_like, shape (n, d)
        Points, in the surrogate's (whitened) coordinates.
    values : array_like, shape (n,)
        Finite log densities there.
    rng : numpy.random.Generator
        Draws the split, the sub-sample and the centres.
    lengthscales, regularizations : sequences of float
        Grids of the common lengthscale and of ``λ``.
    relevance_factors : sequence of float
        Multipliers tried on each coordinate's relevance.
    sweeps : int
        Rounds of the search.
    n_points : int
        At most this many points are used (a uniform sub-sample).
    n_centers : int
        Kernel centres of the trial fits.
    holdout : float
        Share of the points held out, in (0, 1).
    trend : PolynomialTrend, optional
        The surrogates' trend (default ``−½‖u‖²``): the kernel models what it leaves.

    Returns
    -------
    precisions : ndarray, shape (d,)
    regularization : float
    error : float
        Held-out mean squared error of the choice.
    """
    U, values = _points_and_values(U, values)
    for name, grid in (("lengthscales", lengthscales), ("regularizations", regularizations)):
        grid = np.asarray(grid, dtype=float)
        if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
            raise ValueError(f"`{name}` must be a non-empty sequence of positive numbers.")
    factors = np.asarray(relevance_factors, dtype=float)
    if factors.ndim != 1 or not np.all(np.isfinite(factors) & (factors >= 0)):
        raise ValueError("`relevance_factors` must be a sequence of numbers ≥ 0.")
    for name, value in (("sweeps", sweeps), ("n_points", n_points), ("n_centers", n_centers)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")
    if not 0 < holdout < 1:
        raise ValueError(f"`holdout` must lie in (0, 1), got {holdout!r}.")
    n, d = U.shape
    order = rng.permutation(n)[: max(int(n_points), 4)]
    n_valid = max(1, int(round(holdout * len(order))))
    valid_index, train_index = order[:n_valid], order[n_valid:]
    if len(train_index) < 2:
        raise ValueError(f"{n} points are too few to hold out {holdout:.0%} and fit.")
    train = (U[train_index], values[train_index])
    valid = (U[valid_index], values[valid_index])
    seed = int(rng.integers(2**63))

    def error(relevance, lengthscale, regularization):
        precisions = (relevance / lengthscale) ** 2
        fit_rng = np.random.default_rng(seed)  # the same centres for every candidate
        return _held_out_error(train, valid, precisions, regularization, n_centers, fit_rng, trend)

    relevance = np.ones(d)
    lengthscale, regularization = float(np.median(lengthscales)), float(np.median(regularizations))
    best = error(relevance, lengthscale, regularization)
    for _ in range(int(sweeps)):
        for candidate_ell in lengthscales:
            for candidate_lambda in regularizations:
                trial = error(relevance, candidate_ell, candidate_lambda)
                if trial < best:
                    best, lengthscale, regularization = trial, candidate_ell, candidate_lambda
        for j in range(d):
            for factor in relevance_factors:
                if factor == 1.0:
                    continue
                candidate = relevance.copy()
                candidate[j] *= factor
                if np.array_equal(candidate, relevance):
                    continue
                trial = error(candidate, lengthscale, regularization)
                if trial < best:
                    best, relevance = trial, candidate
    return (relevance / lengthscale) ** 2, float(regularization), float(best)
