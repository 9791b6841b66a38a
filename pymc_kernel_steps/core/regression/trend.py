"""The parametric part of the regression surrogate: the Gaussian fitted to the evaluations, or a
proper quartic, and the choice between them."""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla

from ..integrators import NO_TREND
from ._common import _points_and_values


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
    U, values
        As for :func:`fit_quadratic_gaussian`, with at least twice as many points as the trend's
        coefficients (:func:`quartic_parameter_count`).
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
