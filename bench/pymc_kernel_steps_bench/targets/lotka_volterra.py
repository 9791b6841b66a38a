"""A black-box ODE: Lotka–Volterra predator–prey dynamics solved by ``scipy.integrate.solve_ivp``.

Model
-----
``du/dt = α u − β u v``, ``dv/dt = −γ v + δ u v`` from the known initial state
``(u₀, v₀) = (30, 4)`` on ``t ∈ [0, 20]``; observations of both species at ``t = 1, …, 20``
(20 × 2 values) with log-normal noise, ``log y_{t,k} ~ N(log z_k(t), σ²)``. The 5 parameters
``theta = (α, β, γ, δ, σ)`` have independent log-normal priors (medians ``1, 0.05, 1, 0.05,
0.25``; log-scale sds ``0.5, 0.5, 0.5, 0.5, 1``), and PyMC samples them in log space (its default
log transform). The observations are simulated once from :data:`LOTKA_VOLTERRA_TRUE`
(α = 0.55, β = 0.028, γ = 0.84, δ = 0.026, σ = 0.2; seed 0) and stored as constants.

Robustness
----------
The solver (``LSODA``, ``rtol = 10⁻⁶``, ``atol = 10⁻⁸``) stops with a log density of ``−inf``
(never an exception) when it fails, when a state leaves ``(0, 10⁶)`` (a terminal event), when the
right-hand side has been evaluated more than ``max_rhs_evals`` (default 20 000) times, or when the
result is not finite. So absurd parameters cost at most a few tens of milliseconds; a typical
evaluation costs ≈9 ms on one core of the development machine (mostly ``solve_ivp``'s Python
overhead).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pymc as pm
from scipy.integrate import solve_ivp

from ._checks import require_black_box, require_count
from .blackbox import CountingLogp

__all__ = [
    "LOTKA_VOLTERRA_NAMES",
    "LOTKA_VOLTERRA_TRUE",
    "lotka_volterra_solve",
    "lotka_volterra_data",
    "lotka_volterra_loglik",
    "lotka_volterra_model",
]

#: parameter names, in the order of the model's ``theta``
LOTKA_VOLTERRA_NAMES = ("alpha", "beta", "gamma", "delta", "sigma")
#: the parameters that generated the stored observations
LOTKA_VOLTERRA_TRUE = np.array([0.55, 0.028, 0.84, 0.026, 0.2])
#: prior medians and log-scale standard deviations of ``theta``
LOTKA_VOLTERRA_PRIOR_MEDIAN = np.array([1.0, 0.05, 1.0, 0.05, 0.25])
LOTKA_VOLTERRA_PRIOR_LOG_SD = np.array([0.5, 0.5, 0.5, 0.5, 1.0])
_Y0 = (30.0, 4.0)
_TIMES = np.arange(1.0, 21.0)
_UPPER = 1e6
_METHOD = "LSODA"


class _TooManySteps(Exception):
    pass


def lotka_volterra_solve(params, times=_TIMES, y0=_Y0, max_rhs_evals: int = 20_000):
    """The states ``(len(times), 2)`` at ``times``, or None when the solve fails or diverges.

    Parameters
    ----------
    params : array_like
        ``(α, β, γ, δ)`` (a fifth entry is ignored).
    times : array_like
        Increasing observation times > 0.
    y0 : tuple
        Initial state at ``t = 0``.
    max_rhs_evals : int
        Give up after this many evaluations of the right-hand side.
    """
    alpha, beta, gamma, delta = (float(p) for p in np.asarray(params, dtype=float)[:4])
    if not all(math.isfinite(p) for p in (alpha, beta, gamma, delta)):
        return None
    calls = [0]

    def rhs(t, state):
        calls[0] += 1
        if calls[0] > max_rhs_evals:
            raise _TooManySteps
        u, v = state
        return [alpha * u - beta * u * v, -gamma * v + delta * u * v]

    def blow_up(t, state):
        return _UPPER - max(state[0], state[1])

    blow_up.terminal = True

    def extinct(t, state):
        return min(state[0], state[1])

    extinct.terminal = True
    try:
        with np.errstate(all="ignore"):
            sol = solve_ivp(
                rhs,
                (0.0, float(times[-1])),
                list(y0),
                method=_METHOD,
                t_eval=times,
                rtol=1e-6,
                atol=1e-8,
                events=(blow_up, extinct),
            )
    except (_TooManySteps, ValueError, ArithmeticError):
        return None
    if sol.status != 0 or sol.y.shape[1] != len(times):
        return None
    states = sol.y.T
    if not np.all(np.isfinite(states)) or np.any(states <= 0.0):
        return None
    return states


def lotka_volterra_data(seed: int = 0):
    """Observations ``(20, 2)`` at ``t = 1..20`` simulated from :data:`LOTKA_VOLTERRA_TRUE`.

    Returns ``(times, y)``.
    """
    states = lotka_volterra_solve(LOTKA_VOLTERRA_TRUE)
    rng = np.random.default_rng(seed)
    y = states * np.exp(LOTKA_VOLTERRA_TRUE[4] * rng.standard_normal(states.shape))
    return _TIMES.copy(), y


def lotka_volterra_loglik(theta, y, max_rhs_evals: int = 20_000) -> float:
    """Log-normal log-likelihood of the observations ``y`` given ``theta = (α, β, γ, δ, σ)``.

    ``−inf`` if any parameter is not positive and finite or the solve fails (module notes).
    """
    theta = np.asarray(theta, dtype=float)
    if theta.shape != (5,):
        raise ValueError(
            f"theta must have shape (5,) (alpha, beta, gamma, delta, sigma), got {theta.shape}"
        )
    if not np.all(np.isfinite(theta)) or np.any(theta <= 0.0):
        return -math.inf
    states = lotka_volterra_solve(theta, _TIMES, _Y0, max_rhs_evals)
    if states is None:
        return -math.inf
    sigma = theta[4]
    resid = (np.log(y) - np.log(states)) / sigma
    value = -0.5 * np.sum(resid**2) - y.size * (math.log(sigma) + 0.5 * math.log(2 * math.pi))
    value -= np.sum(np.log(y))  # the log-normal density's Jacobian
    return float(value) if math.isfinite(value) else -math.inf


def lotka_volterra_model(
    seed: int = 0, max_rhs_evals: int = 20_000, black_box: bool = True, cost: float = 0.0
) -> pm.Model:
    """The Lotka–Volterra posterior (module notes) with a counted, gradient-free ODE likelihood.

    Variable ``theta`` (shape 5: ``α, β, γ, δ, σ``, coordinate ``param``), a ``pm.LogNormal``
    vector, sampled as ``theta_log__``; potential ``"ode"`` is the log-likelihood, computed by
    :func:`lotka_volterra_loglik` inside a :class:`~pymc_kernel_steps_bench.targets.CountingLogp`.
    The true parameters are :data:`LOTKA_VOLTERRA_TRUE`.

    Parameters
    ----------
    seed : int
        Seed of the observation noise.
    max_rhs_evals : int
        Right-hand-side evaluations after which a solve is abandoned (log density −inf).
    black_box : bool
        Must be True: there is no differentiable twin.
    cost : float
        Artificial extra seconds per evaluation.
    """
    require_count("max_rhs_evals", max_rhs_evals, minimum=100)
    require_black_box(black_box, "Lotka-Volterra")
    _, y = lotka_volterra_data(seed)
    fn = functools.partial(lotka_volterra_loglik, y=y, max_rhs_evals=int(max_rhs_evals))
    with pm.Model(coords={"param": list(LOTKA_VOLTERRA_NAMES)}) as model:
        theta = pm.LogNormal(
            "theta",
            mu=np.log(LOTKA_VOLTERRA_PRIOR_MEDIAN),
            sigma=LOTKA_VOLTERRA_PRIOR_LOG_SD,
            dims="param",
        )
        pm.Potential("ode", CountingLogp(fn, cost=cost, name="lotka_volterra")(theta))
    return model
