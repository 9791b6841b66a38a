"""The regression surrogate: kernel ridge regression of the evaluated log densities around a
trend, and the choice of its precisions and ridge."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.linalg as sla
from scipy import stats

from ..history import first_visits
from ..integrators import GradientSpec, SurrogateTrajectory, regression_gradient
from ._common import _JITTER, _WINDOW_QUANTILE, _kernel, _points_and_values, _precisions
from .trend import PolynomialTrend


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


class _System(NamedTuple):
    """A regression fit's parts that do not depend on the ridge ``λ`` (``K_mean`` None: no
    kernel, every precision 0)."""

    Z: np.ndarray
    residual: np.ndarray
    K_mean: np.ndarray | None
    gram: np.ndarray | None
    centre_kernel: np.ndarray | None
    rhs: np.ndarray | None


class RegressionSurrogate(SurrogateTrajectory):
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
        return self._solve(self._system(U, values))

    def _system(self, U, values) -> _System:
        """What :meth:`fit` computes before the ridge enters: the centres, the residuals and
        the centred kernel's normal equations (shared by fits that differ in ``λ`` alone)."""
        U, values = _points_and_values(U, values)
        precisions = _precisions(self.precisions, U.shape[1])
        centres = first_visits(U)
        if len(centres) > self.n_centers:
            centres = np.sort(self.rng.choice(centres, size=self.n_centers, replace=False))
        Z = U[centres]
        residual = values - self.trend.log_density(U)
        if not np.any(precisions > 0):  # the kernel is a constant: the Gaussian term alone
            return _System(Z, residual, None, None, None, None)
        K = _kernel(U, Z, precisions)
        K_mean = K.mean(axis=0)
        Kc = K - K_mean
        n = len(U)
        gram = Kc.T @ Kc / n
        rhs = Kc.T @ (residual - residual.mean()) / n
        return _System(Z, residual, K_mean, gram, _kernel(Z, Z, precisions), rhs)

    def _solve(self, system: _System) -> RegressionSurrogate:
        """The fit from its :meth:`_system` with this surrogate's ``λ``."""
        Z, residual, K_mean, gram, centre_kernel, rhs = system
        beta = np.zeros(len(Z))
        if K_mean is None:
            K_mean = np.zeros(len(Z))
        else:
            normal = gram + self.regularization * centre_kernel
            normal[np.diag_indices_from(normal)] += _JITTER * max(1.0, np.trace(normal) / len(Z))
            try:
                beta = sla.solve(normal, rhs, assume_a="pos", check_finite=False)
            except (np.linalg.LinAlgError, sla.LinAlgError):
                beta = np.linalg.lstsq(normal, rhs, rcond=None)[0]
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

    def gradient_spec(self) -> GradientSpec:
        """The gradient ``∇f`` as :func:`.integrators.surrogate_trajectory` evaluates it. The
        parameters were checked when the surrogate was built and fitted, so they are not
        checked again on every trajectory."""
        self._check_fitted()
        return regression_gradient(
            self.Z, self.beta, self.precisions, self.trend.compiled_arrays, check=False
        )


class _HeldOut:
    """The held-out mean squared error of candidate precisions and ridges on one split: a
    surrogate fitted to ``train`` (centres drawn with ``seed``, the same for every candidate)
    predicts ``valid``. The parts of the fit and of the prediction that do not depend on ``λ``
    are computed once per precisions: the same arithmetic as a fit and a
    :meth:`~RegressionSurrogate.log_density` of its own, hence the same errors."""

    def __init__(self, train, valid, n_centers, seed, trend):
        self.train, self.valid = train, valid
        self.n_centers, self.seed, self.trend = n_centers, seed, trend
        self._parts: dict = {}

    def error(self, precisions, regularization) -> float:
        fit_rng = np.random.default_rng(self.seed)  # the same centres for every candidate
        surrogate = RegressionSurrogate(
            precisions, regularization, self.n_centers, fit_rng, self.trend
        )
        key = precisions.tobytes()
        if key not in self._parts:
            system = surrogate._system(*self.train)
            X = self.valid[0]
            self._parts = {  # the grid tries every λ of one precisions in a row
                key: (system, surrogate.trend.log_density(X), _kernel(X, system.Z, precisions))
            }
        system, trend_valid, valid_kernel = self._parts[key]
        surrogate._solve(system)
        prediction = trend_valid + surrogate.offset
        prediction += valid_kernel @ surrogate.beta
        error = prediction - self.valid[1]
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

    held_out = _HeldOut(train, valid, n_centers, seed, trend)
    errors: dict = {}  # a candidate tried again (the grid's centre, a later sweep) is not refitted

    def error(relevance, lengthscale, regularization):
        precisions = (relevance / lengthscale) ** 2
        key = (precisions.tobytes(), regularization)
        if key not in errors:
            errors[key] = held_out.error(precisions, regularization)
        return errors[key]

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
