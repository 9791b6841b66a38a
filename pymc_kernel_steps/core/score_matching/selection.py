"""Choice of the lengthscale and regulariser by K-fold cross-validation of the held-out
score-matching objective."""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
from scipy.spatial.distance import cdist

from ..kernels import median_lengthscale
from ._common import _data
from .lite import _lite_C, _lite_C_downdate

__all__ = ["select_hyperparameters"]


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
