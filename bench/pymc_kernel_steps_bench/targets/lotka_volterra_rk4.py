"""A Lotka–Volterra black box solved by fixed-step RK4 (it never hangs, whatever θ), with data
simulated from :data:`LV_TRUE`: the ODE of the fault tests and
``benchmarks/ode_check/ode_check.py``.

:func:`lotka_volterra_model` looks :func:`lotka_volterra_loglik` up in this module when it is
called, so a study can record the calls by replacing that attribute. The benchmark target
``"ode"`` is the other Lotka–Volterra model, :mod:`.lotka_volterra` (``scipy``'s adaptive solver).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from .blackbox import CountingLogp

__all__ = [
    "LV_OBSERVED",
    "LV_START",
    "LV_TIMES",
    "LV_TRUE",
    "lotka_volterra_loglik",
    "lotka_volterra_model",
    "lotka_volterra_solution",
]

LV_TRUE = np.array([0.55, 0.028, 0.84, 0.026, 0.25])  # α, β, γ, δ, observation noise σ
LV_TIMES = np.linspace(0.0, 20.0, 21)
LV_START = np.array([33.0, 6.0])


def lotka_volterra_solution(theta, steps_per_unit=20):
    """Prey and predator at ``LV_TIMES`` by fixed-step RK4 (never hangs, whatever θ).

    The arithmetic is on Python floats, in the order of the vector form ``k1 = rate(y)``, ``y +
    0.5 h k1``, ..., ``y + h / 6 (k1 + 2 k2 + 2 k3 + k4)``: the same numbers, bit for bit,
    about ten times faster than on arrays of two elements (an evaluation is 400 steps).
    """
    alpha, beta, gamma, delta = (float(p) for p in theta[:4])
    h = 1.0 / steps_per_unit
    half, sixth = 0.5 * h, h / 6.0
    u, v = (float(p) for p in LV_START)
    out = [(u, v)]
    for _ in range(len(LV_TIMES) - 1):
        for _ in range(steps_per_unit):
            a1, b1 = alpha * u - beta * u * v, delta * u * v - gamma * v
            u2, v2 = u + half * a1, v + half * b1
            a2, b2 = alpha * u2 - beta * u2 * v2, delta * u2 * v2 - gamma * v2
            u3, v3 = u + half * a2, v + half * b2
            a3, b3 = alpha * u3 - beta * u3 * v3, delta * u3 * v3 - gamma * v3
            u4, v4 = u + h * a3, v + h * b3
            a4, b4 = alpha * u4 - beta * u4 * v4, delta * u4 * v4 - gamma * v4
            u = u + sixth * (a1 + 2 * a2 + 2 * a3 + a4)
            v = v + sixth * (b1 + 2 * b2 + 2 * b3 + b4)
        out.append((u, v))
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
    with pm.Model() as model:
        alpha = pm.LogNormal("alpha", np.log(1.0), 0.5)
        beta = pm.LogNormal("beta", np.log(0.05), 0.5)
        gamma = pm.LogNormal("gamma", np.log(1.0), 0.5)
        delta = pm.LogNormal("delta", np.log(0.05), 0.5)
        sigma = pm.LogNormal("sigma", np.log(0.3), 0.5)
        theta = pt.stack([alpha, beta, gamma, delta, sigma])
        pm.Potential("loglik", CountingLogp(lotka_volterra_loglik, name="lotka_volterra")(theta))
    return model
