"""Shared test utilities: MCSE z-tests and small PyMC models with known answers."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from arviz import ess, mcse

from pymc_kernel_steps import KMCLite


def posterior_array(idata, var="x") -> np.ndarray:
    """Draws of ``var`` as an array (chain, draw, *shape)."""
    return np.asarray(idata.posterior[var].values)


def assert_moments(draws, mean, var=None, z_max=4.0, min_ess=100):
    """MCSE z-tests: |mean − truth| / MCSE < z_max for the mean and the second central moment.

    ``draws`` has shape (chain, draw, d). The variance is tested as the mean of
    ``(x − μ)²``, whose MCSE is again ESS-based.
    """
    draws = np.asarray(draws, dtype=float)
    if draws.ndim == 2:
        draws = draws[..., None]
    mean = np.broadcast_to(np.asarray(mean, dtype=float), draws.shape[-1:])
    bulk = ess(draws, method="bulk")
    assert np.all(bulk > min_ess), f"ESS too small for a meaningful test: {bulk}"
    z_mean = (draws.mean(axis=(0, 1)) - mean) / mcse(draws, method="mean")
    assert np.all(np.abs(z_mean) < z_max), f"mean z-scores {z_mean}"
    if var is not None:
        var = np.broadcast_to(np.asarray(var, dtype=float), draws.shape[-1:])
        squares = (draws - mean) ** 2
        z_var = (squares.mean(axis=(0, 1)) - var) / mcse(squares, method="mean")
        assert np.all(np.abs(z_var) < z_max), f"variance z-scores {z_var}"


CORRELATED_MEAN = np.array([0.0, 1.0, 2.0, 3.0])
CORRELATED_COV = np.array(
    [[1.0, 0.9, 0.0, 0.0], [0.9, 1.0, 0.0, 0.0], [0.0, 0.0, 4.0, 1.0], [0.0, 0.0, 1.0, 1.0]]
)


def correlated_gaussian_model() -> pm.Model:
    with pm.Model() as model:
        pm.MvNormal("x", mu=CORRELATED_MEAN, cov=CORRELATED_COV)
    return model


def banana_logp_pt(x, b=0.03, V=100.0):
    """Haario's twisted Gaussian in pytensor."""
    y2 = x[1] + b * (x[0] ** 2 - V)
    rest = pt.sum(x[2:] ** 2) if x.type.shape[0] is None or x.type.shape[0] > 2 else 0.0
    return -0.5 * x[0] ** 2 / V - 0.5 * y2**2 - 0.5 * rest


def banana_model(dim=2, b=0.03, V=100.0) -> pm.Model:
    with pm.Model() as model:
        x = pm.Flat("x", shape=dim)
        pm.Potential("banana", banana_logp_pt(x, b, V))
    return model


def banana_moments(dim=2, b=0.03, V=100.0):
    var = np.ones(dim)
    var[0] = V
    var[1] = 1.0 + 2.0 * b**2 * V**2
    return np.zeros(dim), var


# ---------------------------------------------------------------- a black-box ODE (Lotka–Volterra)
LV_TRUE = np.array([0.55, 0.028, 0.84, 0.026, 0.25])  # α, β, γ, δ, observation noise σ
LV_TIMES = np.linspace(0.0, 20.0, 21)
LV_START = np.array([33.0, 6.0])


def lotka_volterra_solution(theta, steps_per_unit=20):
    """Prey and predator at ``LV_TIMES`` by fixed-step RK4 (never hangs, whatever θ)."""
    alpha, beta, gamma, delta = theta[:4]

    def rate(y):
        return np.array([alpha * y[0] - beta * y[0] * y[1], delta * y[0] * y[1] - gamma * y[1]])

    h = 1.0 / steps_per_unit
    y = LV_START.copy()
    out = [y.copy()]
    with np.errstate(all="ignore"):
        for _ in range(len(LV_TIMES) - 1):
            for _ in range(steps_per_unit):
                k1 = rate(y)
                k2 = rate(y + 0.5 * h * k1)
                k3 = rate(y + 0.5 * h * k2)
                k4 = rate(y + h * k3)
                y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            out.append(y.copy())
    return np.array(out)


LV_OBSERVED = lotka_volterra_solution(LV_TRUE) * np.exp(
    LV_TRUE[4] * np.random.default_rng(0).standard_normal((len(LV_TIMES), 2))
)


def lotka_volterra_loglik(theta):
    """Log-normal observation likelihood; −inf where the solution is not positive and finite."""
    solution = lotka_volterra_solution(theta)
    if not np.all(np.isfinite(solution)) or np.any(solution <= 0):
        return -np.inf
    residual = np.log(LV_OBSERVED) - np.log(solution)
    sigma = theta[4]
    return float(-0.5 * np.sum(residual**2) / sigma**2 - residual.size * np.log(sigma))


def lotka_volterra_model() -> pm.Model:
    """Five positive parameters with log-normal priors; the likelihood is a black box."""
    from pymc_kernel_steps.bench.targets import CountingLogp

    with pm.Model() as model:
        alpha = pm.LogNormal("alpha", np.log(1.0), 0.5)
        beta = pm.LogNormal("beta", np.log(0.05), 0.5)
        gamma = pm.LogNormal("gamma", np.log(1.0), 0.5)
        delta = pm.LogNormal("delta", np.log(0.05), 0.5)
        sigma = pm.LogNormal("sigma", np.log(0.3), 0.5)
        theta = pt.stack([alpha, beta, gamma, delta, sigma])
        pm.Potential("loglik", CountingLogp(lotka_volterra_loglik, name="lotka_volterra")(theta))
    return model


def sample_stuck_on_a_lucky_estimate(step_factory, tune=1500, draws=300, seed=4) -> dict:
    """Sample a 4-d pseudo-marginal target whose 400th estimate is 300 above the rest, so the
    chain accepts it and then sits on that one state; return every iteration's stats (tuning
    included) as ``{name: 1-d array}``."""
    from pymc_kernel_steps import pseudo_marginal_potential

    calls = {"n": 0}

    def lucky_once(theta, rng):
        calls["n"] += 1
        lucky = 300.0 if calls["n"] == 400 else 0.0  # one estimate far above the rest
        return float(-0.5 * theta @ theta + 0.1 * rng.standard_normal() + lucky)

    with pm.Model():
        x = pm.Flat("x", shape=4)
        pseudo_marginal_potential("loglik", lucky_once, x)
        idata = pm.sample(
            step=step_factory(),
            tune=tune,
            draws=draws,
            chains=1,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
        )
    groups = ("warmup_sample_stats", "sample_stats")
    return {
        name: np.concatenate([idata[group][name].values.ravel() for group in groups])
        for name in idata.sample_stats.data_vars
    }


class ScoreMatchingKMCLite(KMCLite):
    """``KMCLite(surrogate="score_matching")``, the paper's surrogate fitted to the chain's
    states (the default is ``surrogate="regression"``), as a class for parametrised tests."""

    def __init__(self, *args, surrogate="score_matching", **kwargs):
        super().__init__(*args, surrogate=surrogate, **kwargs)
