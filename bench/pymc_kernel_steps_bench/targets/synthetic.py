"""Synthetic targets with exact moments: banana, bimodal, Gaussian, logistic, noisy Gaussian.

Every target comes in two flavours:

* a **black-box** model, whose log density is computed by numpy code behind a
  :class:`~.targets.CountingLogp` ``Op`` that has no gradient (the way a user's
  external likelihood, simulator or pseudo-marginal estimator is wrapped), so PyMC cannot use NUTS
  on it and every call is counted;
* a **differentiable twin** (``black_box=False``) written in PyTensor with the same variables and
  the same density, for NUTS.

The models use unbounded ``pm.Flat`` vector variables named ``x`` (``w`` for the logistic
regression) and put the whole log density in a ``pm.Potential``, so the sampled space is the
space the moments refer to (no transforms).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

from ._checks import require_count
from .blackbox import CountingLogp, _potential

__all__ = [
    "banana_logp",
    "banana_moments",
    "banana_sample",
    "banana_model",
    "bimodal_logp",
    "bimodal_moments",
    "bimodal_model",
    "gaussian_logp",
    "gaussian_model",
    "logistic_regression_data",
    "logistic_regression_logp",
    "logistic_regression_model",
    "noisy_gaussian_data",
    "noisy_gaussian_moments",
    "noisy_gaussian_model",
]

_LOG_2PI = math.log(2.0 * math.pi)


# ------------------------------------------------------------------------------------- banana
def banana_logp(x: np.ndarray, b: float = 0.03, V: float = 100.0) -> float:
    """Haario's twisted Gaussian ("banana"), normalised.

    ``x1 ~ N(0, V)``, ``x2 + b (x1² − V) ~ N(0, 1)``, every other coordinate ``N(0, 1)``: the
    density is ``N(x1; 0, V) N(x2 + b(x1² − V); 0, 1) Π_{i>2} N(xi; 0, 1)`` (the twist has unit
    Jacobian).
    """
    x = np.asarray(x, dtype=float)
    y2 = x[1] + b * (x[0] ** 2 - V)
    quad = x[0] ** 2 / V + y2**2 + np.sum(x[2:] ** 2)
    return float(-0.5 * quad - 0.5 * x.size * _LOG_2PI - 0.5 * math.log(V))


def _banana_logp_pt(x, b: float, V: float):
    y2 = x[1] + b * (x[0] ** 2 - V)
    dim = x.type.shape[0]
    quad = x[0] ** 2 / V + y2**2 + pt.sum(x[2:] ** 2)
    return -0.5 * quad - 0.5 * dim * _LOG_2PI - 0.5 * math.log(V)


def banana_moments(dim: int = 8, b: float = 0.03, V: float = 100.0):
    """Exact mean and variance of the banana: mean 0, ``Var(x1) = V``, ``Var(x2) = 1 + 2b²V²``.

    ``Var(x2) = Var(y2) + b² Var(x1²) = 1 + b² · 2V²`` since ``x1² / V ~ χ²₁``; all other
    coordinates have variance 1.

    Returns
    -------
    mean, var : np.ndarray
        Both of shape ``(dim,)``.
    """
    require_count("dim", dim, minimum=2)
    var = np.ones(dim)
    var[0] = V
    var[1] = 1.0 + 2.0 * b**2 * V**2
    return np.zeros(dim), var


def banana_sample(rng, size: int, dim: int = 8, b: float = 0.03, V: float = 100.0) -> np.ndarray:
    """Exact independent draws from the banana, shape ``(size, dim)``."""
    require_count("dim", dim, minimum=2)
    rng = np.random.default_rng(rng)
    z = rng.standard_normal((size, dim))
    x = z.copy()
    x[:, 0] = math.sqrt(V) * z[:, 0]
    x[:, 1] = z[:, 1] - b * (x[:, 0] ** 2 - V)
    return x


def banana_model(
    dim: int = 8, b: float = 0.03, V: float = 100.0, black_box: bool = True, cost: float = 0.0
) -> pm.Model:
    """The ``dim``-dimensional banana as a model on a flat vector ``x`` (see :func:`banana_logp`).

    Parameters
    ----------
    dim : int
        Dimension (>= 2).
    b, V : float
        Twist and variance of the first coordinate (paper 001 uses b = 0.03, V = 100).
    black_box : bool
        True: the density is a :class:`CountingLogp` (no gradient). False: a differentiable
        PyTensor twin with the same density, for NUTS.
    cost : float
        Artificial seconds per evaluation of the black box.
    """
    require_count("dim", dim, minimum=2)
    with pm.Model() as model:
        x = pm.Flat("x", shape=dim)
        fn = functools.partial(banana_logp, b=b, V=V)
        _potential("banana", fn, x, black_box, functools.partial(_banana_logp_pt, b=b, V=V), cost)
    return model


# ------------------------------------------------------------------------------------ bimodal
#: paper 004's 2-d bimodal target: 0.5 N([−8, 0], 0.5 I) + 0.5 N([8, 0], 2 I)
BIMODAL_MEANS = np.array([[-8.0, 0.0], [8.0, 0.0]])
BIMODAL_VARIANCES = np.array([0.5, 2.0])
BIMODAL_WEIGHTS = np.array([0.5, 0.5])


def bimodal_logp(x: np.ndarray) -> float:
    """Log density of ``0.5 N([−8, 0], 0.5 I) + 0.5 N([8, 0], 2 I)`` (paper 004)."""
    x = np.asarray(x, dtype=float)
    sq = np.sum((x[None, :] - BIMODAL_MEANS) ** 2, axis=1)
    comp = np.log(BIMODAL_WEIGHTS) - 0.5 * sq / BIMODAL_VARIANCES
    comp -= np.log(2.0 * np.pi * BIMODAL_VARIANCES)  # 2-d normalisation: (2π s²)^{-d/2}, d = 2
    top = comp.max()
    return float(top + np.log(np.sum(np.exp(comp - top))))


def _bimodal_logp_pt(x):
    means = pt.as_tensor_variable(BIMODAL_MEANS)
    variances = pt.as_tensor_variable(BIMODAL_VARIANCES)
    sq = pt.sum((x[None, :] - means) ** 2, axis=1)
    comp = np.log(BIMODAL_WEIGHTS) - 0.5 * sq / variances - pt.log(2.0 * np.pi * variances)
    return pt.logsumexp(comp)


def bimodal_moments():
    """Exact mean ``[0, 0]`` and variance ``[65.25, 1.25]`` of :func:`bimodal_logp`."""
    mean = BIMODAL_WEIGHTS @ BIMODAL_MEANS
    second = BIMODAL_WEIGHTS @ (BIMODAL_MEANS**2 + BIMODAL_VARIANCES[:, None])
    return mean, second - mean**2


def bimodal_model(black_box: bool = True, cost: float = 0.0) -> pm.Model:
    """Paper 004's bimodal mixture on a flat 2-vector ``x`` (see :func:`bimodal_logp`)."""
    with pm.Model() as model:
        x = pm.Flat("x", shape=2)
        _potential("bimodal", bimodal_logp, x, black_box, _bimodal_logp_pt, cost)
    return model


# ----------------------------------------------------------------------------------- Gaussian
def gaussian_logp(x: np.ndarray, mean: np.ndarray, chol: np.ndarray) -> float:
    """Log density of ``N(mean, L Lᵀ)`` given the lower Cholesky factor ``chol = L``."""
    x = np.asarray(x, dtype=float)
    z = _solve_lower(chol, x - mean)
    return float(-0.5 * z @ z - np.sum(np.log(np.diag(chol))) - 0.5 * x.size * _LOG_2PI)


def _solve_lower(chol, v):
    import scipy.linalg

    return scipy.linalg.solve_triangular(chol, v, lower=True)


def _gaussian_logp_pt(x, mean, chol):
    z = pt.linalg.solve_triangular(pt.as_tensor_variable(chol), x - mean, lower=True)
    return -0.5 * pt.sum(z**2) - np.sum(np.log(np.diag(chol))) - 0.5 * len(mean) * _LOG_2PI


def gaussian_model(cov, mean=None, black_box: bool = True, cost: float = 0.0) -> pm.Model:
    """A (correlated) Gaussian ``N(mean, cov)`` on a flat vector ``x``.

    Parameters
    ----------
    cov : array_like
        Positive definite ``(d, d)`` covariance.
    mean : array_like, optional
        Mean (default 0). The exact moments are ``mean`` and ``diag(cov)``.
    black_box, cost
        As for :func:`banana_model`.
    """
    cov = np.atleast_2d(np.asarray(cov, dtype=float))
    dim = cov.shape[0]
    if cov.shape != (dim, dim):
        raise ValueError(f"cov must be square, got shape {cov.shape}")
    mean = np.zeros(dim) if mean is None else np.broadcast_to(np.asarray(mean, float), (dim,))
    mean = np.array(mean)
    chol = np.linalg.cholesky(cov)
    with pm.Model() as model:
        x = pm.Flat("x", shape=dim)
        fn = functools.partial(gaussian_logp, mean=mean, chol=chol)
        pt_fn = functools.partial(_gaussian_logp_pt, mean=mean, chol=chol)
        _potential("gaussian", fn, x, black_box, pt_fn, cost)
    return model


# ------------------------------------------------------------------------ logistic regression
def logistic_regression_data(n: int = 100, dim: int = 5, seed: int = 0):
    """Synthetic logistic-regression data from a fixed seed.

    Returns
    -------
    X : np.ndarray
        ``(n, dim)`` design; the first column is an intercept of ones, the others standard normal.
    y : np.ndarray
        ``(n,)`` labels in {0, 1}.
    w_true : np.ndarray
        The coefficients that generated ``y``.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dim))
    X[:, 0] = 1.0
    w_true = rng.normal(0.0, 1.0, size=dim)
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-X @ w_true))).astype(float)
    return X, y, w_true


def logistic_regression_logp(w, X, y, prior_sd: float = 5.0) -> float:
    """Log posterior (up to a constant) of a logistic regression, prior ``N(0, prior_sd²)``."""
    w = np.asarray(w, dtype=float)
    eta = X @ w
    return float(y @ eta - np.sum(np.logaddexp(0.0, eta)) - 0.5 * np.sum(w**2) / prior_sd**2)


def _logistic_logp_pt(w, X, y, prior_sd):
    eta = pt.dot(pt.as_tensor_variable(X), w)
    return pt.dot(y, eta) - pt.sum(pt.softplus(eta)) - 0.5 * pt.sum(w**2) / prior_sd**2


def logistic_regression_model(
    n: int = 100,
    dim: int = 5,
    seed: int = 0,
    prior_sd: float = 5.0,
    black_box: bool = True,
    cost: float = 0.0,
) -> pm.Model:
    """Bayesian logistic regression on :func:`logistic_regression_data`, flat vector ``w``.

    The prior ``N(0, prior_sd²)`` is part of the potential, so both flavours have the same
    density. There are no exact moments: use a long NUTS run on the twin as the reference.
    """
    X, y, _ = logistic_regression_data(n, dim, seed)
    with pm.Model() as model:
        w = pm.Flat("w", shape=dim)
        fn = functools.partial(logistic_regression_logp, X=X, y=y, prior_sd=prior_sd)
        pt_fn = functools.partial(_logistic_logp_pt, X=X, y=y, prior_sd=prior_sd)
        _potential("logistic", fn, w, black_box, pt_fn, cost)
    return model


# --------------------------------------------------------------------------- pseudo-marginal
def noisy_gaussian_data(n_obs: int = 20, dim: int = 2, sigma: float = 1.0, seed: int = 0):
    """Observations ``y[i, j] ~ N(θ_j, σ²)`` with ``θ ~ N(0, 4 I)`` from a fixed seed.

    Returns ``(y, theta_true)`` with ``y`` of shape ``(n_obs, dim)``.
    """
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 2.0, size=dim)
    return theta + sigma * rng.standard_normal((n_obs, dim)), theta


def _gaussian_loglik(x, y, sigma):
    x = np.asarray(x, dtype=float)
    quad = np.sum((y - x) ** 2) / sigma**2
    return float(-0.5 * quad - y.size * (math.log(sigma) + 0.5 * _LOG_2PI))


def _gaussian_loglik_pt(x, y, sigma):
    return -0.5 * pt.sum((y - x[None, :]) ** 2) / sigma**2 - y.size * (
        math.log(sigma) + 0.5 * _LOG_2PI
    )


def noisy_gaussian_moments(
    n_obs: int = 20, dim: int = 2, sigma: float = 1.0, prior_sd: float = 10.0, seed: int = 0
):
    """Exact posterior mean and variance of the model behind :func:`noisy_gaussian_model`.

    Conjugate normal model: precision ``1/prior_sd² + n_obs/σ²`` per coordinate, mean
    ``(Σ_i y_ij / σ²) / precision``.
    """
    y, _ = noisy_gaussian_data(n_obs, dim, sigma, seed)
    precision = 1.0 / prior_sd**2 + n_obs / sigma**2
    mean = y.sum(axis=0) / sigma**2 / precision
    return mean, np.full(dim, 1.0 / precision)


def noisy_gaussian_model(
    n_obs: int = 20,
    dim: int = 2,
    sigma: float = 1.0,
    prior_sd: float = 10.0,
    noise_sd: float = 1.0,
    seed: int = 0,
    black_box: bool = True,
    cost: float = 0.0,
) -> pm.Model:
    """A pseudo-marginal model: a Gaussian likelihood estimated with log-normal noise.

    ``θ ~ N(0, prior_sd² I)`` on a flat vector ``x``; the log-likelihood of
    :func:`noisy_gaussian_data` is replaced by ``log L(θ) + ε`` with a fresh
    ``ε ~ N(−s²/2, s²)`` (``s = noise_sd``) at every evaluation, so ``E[exp(ε)] = 1``: an unbiased
    likelihood estimate, and an exact pseudo-marginal sampler targets the exact posterior of
    :func:`noisy_gaussian_moments`.

    The noise is a PyTensor random variable inside the log-density graph (``pt.random.normal`` with
    its own shared generator). ``model.logp()`` accepts it; compile with
    ``pymc.pytensorf.compile(..., return_updates=True)`` (or ``model.compile_logp()``) so that the
    generator advances and successive calls give different values. Reseed it with
    ``pymc.pytensorf.reseed_rngs``. Samplers that evaluate the log density at the current point
    again (PyMC's Metropolis) are not valid pseudo-marginal samplers.

    Parameters
    ----------
    n_obs, dim, sigma, seed
        As for :func:`noisy_gaussian_data`.
    prior_sd : float
        Prior standard deviation of each coordinate.
    noise_sd : float
        Standard deviation ``s`` of the log-likelihood noise (0 gives the exact model).
    black_box, cost
        The exact log-likelihood is a :class:`CountingLogp` (True) or a PyTensor expression.
    """
    y, _ = noisy_gaussian_data(n_obs, dim, sigma, seed)
    with pm.Model() as model:
        x = pm.Flat("x", shape=dim)
        pm.Potential("prior", -0.5 * pt.sum(x**2) / prior_sd**2)
        if black_box:
            fn = functools.partial(_gaussian_loglik, y=y, sigma=sigma)
            loglik = CountingLogp(fn, cost=cost, name="loglik")(x)
        else:
            loglik = _gaussian_loglik_pt(x, pt.as_tensor_variable(y), sigma)
        if noise_sd > 0:
            rng = pytensor.shared(np.random.default_rng(seed), name="noise_rng")
            _, noise = pt.random.normal(-0.5 * noise_sd**2, noise_sd, rng=rng, return_next_rng=True)
            loglik = loglik + noise
        pm.Potential("loglik", loglik)
    return model
