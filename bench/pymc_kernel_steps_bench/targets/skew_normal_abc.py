"""ABC for a 10-d skew-normal location (paper 002 §5 and App. D.4).

Model
-----
Likelihood ``p(x | θ) = 2 N(x; θ, I) Φ(⟨α, x − θ⟩)`` with known skewness ``α = 10 · 1``;
observed data: ``n_obs = 10`` draws at ``θ_true = 10 · 1`` (the paper's values; fixed seed);
summary statistic: the mean of a data set; prior ``θ ~ N(0, 5 I)`` (the authors' code, whose
docstring intends variance 5).

ABC likelihood with a Gaussian kernel of width ``ε = 0.55`` on the summaries,
``f_ε(y | θ) = E_{x ~ p(·|θ)^{n_obs}}[N(s(y); s(x), ε² I)]``, estimated without bias by
``(1/n_sim) Σ_k N(s(y); s(x_k), ε² I)`` over ``n_sim = 10`` simulated data sets
``x_k`` (App. D.4's ``g̃_ε``). An exact pseudo-marginal sampler targets the ABC posterior
``π_ε(θ | y) ∝ N(θ; 0, 5 I) f_ε(y | θ)``.

Simulation (exact): with ``u ~ N(0, I)`` and ``t ~ N(0, 1)``, ``x = θ + u`` if ``t ≤ ⟨α, u⟩``
and ``θ − u`` otherwise has density ``2 φ(u) Φ(⟨α, u⟩)``. The ``(n_sim, n_obs, d + 1)`` standard
normals are drawn inside the PyTensor graph with a shared generator (see
:class:`~pymc_kernel_steps_bench.targets.NoisyCountingLogp`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from scipy.special import logsumexp

from ._checks import require_black_box, require_count, require_finite
from .blackbox import NoisyCountingLogp

__all__ = [
    "skew_normal_sample",
    "skew_normal_abc_data",
    "skew_normal_abc_log_likelihood_estimate",
    "skew_normal_abc_model",
]

_LOG_2PI = math.log(2.0 * math.pi)


def _skew_normal_from_normals(theta, alpha, noise):
    """Skew-normal draws from standard normals ``noise[..., :d]`` (u) and ``noise[..., d]`` (t)."""
    d = alpha.size
    u = noise[..., :d]
    sign = np.where(noise[..., d] <= u @ alpha, 1.0, -1.0)
    return theta + sign[..., None] * u


def skew_normal_sample(rng, size, theta, alpha) -> np.ndarray:
    """Exact draws from ``2 N(x; θ, I) Φ(⟨α, x − θ⟩)``, shape ``(*size, d)``."""
    theta = np.asarray(theta, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    size = (size,) if np.isscalar(size) else tuple(size)
    noise = np.random.default_rng(rng).standard_normal((*size, alpha.size + 1))
    return _skew_normal_from_normals(theta, alpha, noise)


def _check(dim, n_obs, n_sim, epsilon, prior_var):
    for name, value in (("dim", dim), ("n_obs", n_obs), ("n_sim", n_sim)):
        require_count(name, value)
    require_finite("epsilon", epsilon)
    require_finite("prior_var", prior_var)


def skew_normal_abc_data(dim: int = 10, n_obs: int = 10, skewness: float = 10.0, seed: int = 0):
    """Observed data of the ABC target from a fixed seed.

    Returns
    -------
    y : np.ndarray
        ``(n_obs, dim)`` draws of the skew-normal at ``theta_true``.
    theta_true, alpha : np.ndarray
        ``skewness · 1`` both (the paper's ``θ = α = 1 · 10``).
    """
    _check(dim, n_obs, 1, 1.0, 1.0)
    theta_true = np.full(int(dim), float(skewness))
    alpha = np.full(int(dim), float(skewness))
    return skew_normal_sample(seed, int(n_obs), theta_true, alpha), theta_true, alpha


def skew_normal_abc_log_likelihood_estimate(theta, noise, s_obs, alpha, epsilon) -> float:
    """Log of the unbiased ABC likelihood estimate ``(1/n_sim) Σ_k N(s_obs; s(x_k), ε² I)``.

    Parameters
    ----------
    theta : array_like
        Location, shape ``(d,)``.
    noise : array_like
        Standard normals of shape ``(n_sim, n_obs, d + 1)`` that make the ``n_sim`` simulated
        data sets of ``n_obs`` draws each.
    s_obs : array_like
        Observed summary (the mean of the observed data), shape ``(d,)``.
    alpha : array_like
        Skewness vector, shape ``(d,)``.
    epsilon : float
        Width of the Gaussian ABC kernel.
    """
    theta = np.asarray(theta, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    noise = np.asarray(noise, dtype=float)
    d = alpha.size
    if theta.shape != (d,):
        raise ValueError(f"theta must have shape ({d},), got {theta.shape}")
    if noise.ndim != 3 or noise.shape[2] != d + 1 or noise.shape[0] < 1 or noise.shape[1] < 1:
        raise ValueError(f"noise must have shape (n_sim, n_obs, {d + 1}), got {noise.shape}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    summaries = _skew_normal_from_normals(theta, alpha, noise).mean(axis=1)  # (n_sim, d)
    log_kernel = (
        -0.5 * np.sum((s_obs - summaries) ** 2, axis=1) / epsilon**2
        - d * math.log(epsilon)
        - 0.5 * d * _LOG_2PI
    )
    return float(logsumexp(log_kernel) - math.log(noise.shape[0]))


def skew_normal_abc_model(
    dim: int = 10,
    n_obs: int = 10,
    n_sim: int = 10,
    epsilon: float = 0.55,
    skewness: float = 10.0,
    prior_var: float = 5.0,
    data_seed: int = 0,
    seed: int = 0,
    black_box: bool = True,
    cost: float = 0.0,
) -> pm.Model:
    """The ABC posterior of the skew-normal location (module notes), pseudo-marginal.

    Variable ``theta`` (shape ``dim``) with prior ``N(0, prior_var I)``; potential ``"abc"`` is
    the log of a fresh unbiased ABC likelihood estimate at every evaluation (counted by a
    :class:`~pymc_kernel_steps_bench.targets.NoisyCountingLogp`). The true parameter is
    ``skew_normal_abc_data(...)[1]`` (``skewness · 1``).

    Parameters
    ----------
    dim : int
        Dimension (paper: 10).
    n_obs : int
        Draws per data set, observed and simulated.
    n_sim : int
        Simulated data sets per likelihood estimate (paper: 10).
    epsilon : float
        Width of the Gaussian ABC kernel on the summaries (paper: 0.55).
    skewness : float
        ``α = θ_true = skewness · 1`` (paper: 10).
    prior_var : float
        Prior variance of each coordinate.
    data_seed, seed : int
        Seeds of the observed data and of the simulations' shared generator.
    black_box : bool
        Must be True: there is no differentiable twin.
    cost : float
        Artificial extra seconds per evaluation.
    """
    _check(dim, n_obs, n_sim, epsilon, prior_var)
    require_black_box(black_box, "ABC")
    y, _, alpha = skew_normal_abc_data(dim, n_obs, skewness, data_seed)
    fn = functools.partial(
        skew_normal_abc_log_likelihood_estimate,
        s_obs=y.mean(axis=0),
        alpha=alpha,
        epsilon=float(epsilon),
    )
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, math.sqrt(prior_var), shape=int(dim))
        rng = pytensor.shared(np.random.default_rng(seed), name="abc_rng")
        size = (int(n_sim), int(n_obs), int(dim) + 1)
        _, noise = pt.random.normal(0.0, 1.0, size=size, rng=rng, return_next_rng=True)
        pm.Potential("abc", NoisyCountingLogp(fn, cost=cost, name="abc_loglik")(theta, noise))
    return model
