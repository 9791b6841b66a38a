"""Hamiltonian Monte Carlo on a log density with its gradient (paper 003, Alg. 1).

The Hamiltonian is ``H(q, p) = −log π(q) + ½ pᵀ M⁻¹ p`` with a diagonal ``M⁻¹ = diag(inv_mass)``,
``p ~ N(0, M)``. One transition draws ``L_r ~ U{1, ..., L}``, runs ``L_r`` leapfrog steps of size
``ε`` and accepts the end point with probability ``min(1, exp(H(q, p) − H(q*, p*)))``: a mixture
over ``L_r`` of reversible, volume-preserving proposals, so every fixed ``(ε, L)`` leaves π
invariant.

``logp_and_grad(q) -> (log π(q), ∇log π(q))`` is any callable; the gradient at the current point
is carried in :class:`HamiltonianState`, so a transition costs ``L_r`` evaluations.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .transitions import accept

__all__ = [
    "HamiltonianState",
    "find_step_size",
    "hmc_transition",
    "leapfrog_with_logp",
    "regularized_variance",
]

#: an energy error above this counts as a divergence (PyMC's value)
MAX_ENERGY_ERROR = 1000.0

LogpAndGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


@dataclass(frozen=True)
class HamiltonianState:
    """A position with its log density and gradient."""

    position: np.ndarray
    logp: float
    grad: np.ndarray

    @classmethod
    def at(cls, logp_and_grad: LogpAndGrad, position) -> HamiltonianState:
        position = np.array(position, dtype=float)
        logp, grad = logp_and_grad(position)
        return cls(position, float(logp), np.asarray(grad, dtype=float))


def leapfrog_with_logp(
    logp_and_grad: LogpAndGrad,
    state: HamiltonianState,
    momentum,
    step_size: float,
    n_steps: int,
    inv_mass,
) -> tuple[HamiltonianState, np.ndarray, int]:
    """``n_steps`` leapfrog steps from ``(state, momentum)``.

    Returns
    -------
    end : HamiltonianState
        The end point with its log density and gradient. If the log density or the gradient
        became non-finite the trajectory stops there, and ``end.logp`` is ``-inf`` (NaN counts as
        ``-inf``), so an accept test rejects it.
    momentum : ndarray
        The end momentum.
    evaluations : int
        Calls of ``logp_and_grad`` made (``n_steps`` unless the trajectory stopped early).
    """
    q = state.position.copy()
    p = np.array(momentum, dtype=float)
    grad = state.grad
    logp = state.logp
    for step in range(n_steps):
        p = p + 0.5 * step_size * grad
        q = q + step_size * inv_mass * p
        logp, grad = logp_and_grad(q)
        logp = float(logp)
        grad = np.asarray(grad, dtype=float)
        if not (math.isfinite(logp) and np.all(np.isfinite(grad))):
            return HamiltonianState(q, -math.inf, grad), p, step + 1
        p = p + 0.5 * step_size * grad
    return HamiltonianState(q, logp, grad), p, n_steps


def _kinetic(p, inv_mass) -> float:
    """``½ pᵀ M⁻¹ p``; +inf for a diverged trajectory's momentum (rejected), without NumPy's
    overflow warning."""
    with np.errstate(over="ignore"):
        return 0.5 * float(np.sum(p * p * inv_mass))


def hmc_transition(
    rng: np.random.Generator,
    state: HamiltonianState,
    logp_and_grad: LogpAndGrad,
    step_size: float,
    max_n_steps: int,
    inv_mass,
) -> tuple[HamiltonianState, dict]:
    """One HMC transition with ``L_r ~ U{1..max_n_steps}`` leapfrog steps.

    Random numbers are drawn in this order: ``L_r`` (``rng.integers``), the momentum
    (``standard_normal(d) / √inv_mass``), the uniform of the accept test.

    Returns
    -------
    state : HamiltonianState
        The next state (the current one if rejected).
    info : dict
        ``n_steps`` (``L_r``), ``evaluations``, ``proposal`` (end point), ``log_accept_ratio``
        (``H(q, p) − H(q*, p*)``, ``-inf`` for a non-finite end point), ``accept_prob``,
        ``accepted``, ``energy_error`` (``H(q*, p*) − H(q, p)``), ``energy`` (the Hamiltonian
        of the state kept: ``H(q*, p*)`` if accepted, else ``H(q, p)``), ``diverging``
        (non-finite or above ``MAX_ENERGY_ERROR``), ``squared_jump``
        (``Σ_j (q*_j − q_j)² / inv_mass_j``: the jump in the metric of the posterior's scales)
        and ``esjd_term`` (``accept_prob × squared_jump``, the Rao–Blackwellised squared jump).
    """
    inv_mass = np.asarray(inv_mass, dtype=float)
    n_steps = int(rng.integers(1, int(max_n_steps) + 1))
    momentum = rng.standard_normal(state.position.shape[0]) / np.sqrt(inv_mass)
    end, end_momentum, evaluations = leapfrog_with_logp(
        logp_and_grad, state, momentum, step_size, n_steps, inv_mass
    )
    start_energy = -state.logp + _kinetic(momentum, inv_mass)
    end_energy = -end.logp + _kinetic(end_momentum, inv_mass)
    energy_error = end_energy - start_energy
    if not math.isfinite(energy_error):
        energy_error = math.inf
    log_ratio = -energy_error
    accepted, accept_prob = accept(rng, log_ratio)
    with np.errstate(all="ignore"):
        squared_jump = float(np.sum((end.position - state.position) ** 2 / inv_mass))
    if not math.isfinite(squared_jump):
        squared_jump = 0.0
    info = {
        "n_steps": n_steps,
        "evaluations": evaluations,
        "proposal": end.position,
        "log_accept_ratio": log_ratio,
        "accept_prob": accept_prob,
        "accepted": bool(accepted),
        "energy_error": energy_error,
        "energy": end_energy if accepted else start_energy,
        "diverging": not energy_error < MAX_ENERGY_ERROR,
        "squared_jump": squared_jump,
        "esjd_term": accept_prob * squared_jump,
    }
    return (end if accepted else state), info


def find_step_size(
    rng: np.random.Generator,
    state: HamiltonianState,
    logp_and_grad: LogpAndGrad,
    inv_mass,
    initial: float = 1.0,
    n_momenta: int = 5,
    target: float = 0.5,
    max_doublings: int = 40,
) -> tuple[float, int]:
    """A step size at which one leapfrog step is accepted with probability about ``target``.

    For each of ``n_momenta`` momenta drawn from ``N(0, M)``, the step size is doubled (or halved)
    from ``initial`` until the acceptance probability of a single leapfrog step from ``state``
    crosses ``target`` (Hoffman & Gelman 2014, Alg. 4); the median over the momenta is returned,
    with the number of evaluations used.
    """
    inv_mass = np.asarray(inv_mass, dtype=float)
    found, evaluations = [], 0
    for _ in range(n_momenta):
        momentum = rng.standard_normal(state.position.shape[0]) / np.sqrt(inv_mass)
        start_energy = -state.logp + _kinetic(momentum, inv_mass)

        def accept_prob(step_size, momentum=momentum, start_energy=start_energy):
            end, end_momentum, _ = leapfrog_with_logp(
                logp_and_grad, state, momentum, step_size, 1, inv_mass
            )
            log_ratio = start_energy - (-end.logp + _kinetic(end_momentum, inv_mass))
            return math.exp(min(0.0, log_ratio)) if math.isfinite(log_ratio) else 0.0

        step_size = float(initial)
        above = accept_prob(step_size) > target
        evaluations += 1
        factor = 2.0 if above else 0.5
        for _ in range(max_doublings):
            step_size *= factor
            evaluations += 1
            if (accept_prob(step_size) > target) != above:
                break
        # the last step size on the accepted side of the crossing
        found.append(step_size if not above else step_size / factor)
    return float(np.median(found)), evaluations


def regularized_variance(points, reference_variance=1.0) -> np.ndarray:
    """Per-coordinate variance of ``points`` (shape (n, d)) shrunk towards
    ``10⁻³ × reference_variance`` as Stan does (which takes the reference 1):
    ``n/(n + 5) var + 10⁻³ reference × 5/(n + 5)``. A reference in each coordinate's own units
    (a scalar or shape (d,)) keeps the shrinkage from swamping a coordinate of scale 10⁻⁶."""
    points = np.asarray(points, dtype=float)
    n = points.shape[0]
    variance = points.var(axis=0, ddof=1) if n > 1 else np.zeros(points.shape[1])
    reference = np.asarray(reference_variance, dtype=float)
    return n / (n + 5.0) * variance + 1e-3 * reference * 5.0 / (n + 5.0)
