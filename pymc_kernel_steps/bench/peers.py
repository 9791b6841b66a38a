"""The peers as an expert runs them on a black box, each at a budget of counted evaluations.

Every sampler starts from the same information: the model's initial point (PyMC's
``model.initial_point()``, which this package's steps start from too); SMC starts from the prior,
as it must.

``emcee`` (:func:`run_emcee_expert`)
    A short optimisation first, as emcee's documentation advises: L-BFGS-B from the initial point
    on the negative log density with finite-difference gradients, at most a fifth of the budget
    (charged). Then ``W = max(32, 2 d)`` walkers (even) in a small Gaussian ball around the
    optimum, sd ``0.01`` times each unconstrained coordinate's conditional standard deviation
    there (from the second differences of the log density); the stretch move grows the ensemble
    to the posterior's scale. The remaining ``B' / W − 1`` iterations run; the burn-in is read
    off the run as emcee's documentation does: ``3 τ`` (``τ`` the largest integrated autocorrelation
    time, estimated on the second half) and not before the walkers' mean log density first reaches
    its median over the second half; at most half the run.
``pm.sample_smc``
    Its default IMH kernel; the particles are sized to the budget (a pilot, not charged, measures
    the evaluations per particle; see :mod:`pymc_kernel_steps.bench.runners`).
``DEMetropolisZ``
    PyMC's defaults, its own tuning of the scaling during the tuning half of the budget (2
    evaluations per iteration: it evaluates the current point again).
NUTS on finite differences (:func:`run_nuts_finite_differences`)
    What an expert does with a smooth black box: PyMC's NUTS on a central-difference gradient
    (:class:`~pymc_kernel_steps.bench.blackbox.FiniteDifferenceLogp`), charged ``2 d + 1``
    evaluations per leapfrog step (the value and ``2 d`` for the gradient). A pilot (not charged)
    measures the leapfrog steps per iteration; the tuning half of the budget and the draws are
    sized from it and the draws truncated where the count passes the budget.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import ascend
from ._util import BENCH_EXTRA, _datatree, _unconstrained
from .runners import Sampler, _run_nuts, _Settings

__all__ = ["EMCEE_BALL", "nuts_finite_differences_sampler", "run_emcee_expert"]

#: sd of the Gaussian ball the emcee walkers start in (unconstrained space)
EMCEE_BALL = 0.01


def emcee_burn_in(log_prob: np.ndarray, tau: float) -> int:
    """Iterations to discard: ``3 τ``, and not before the walkers' mean log density first reaches
    its median over the second half of the run; at most half of it. ``log_prob``: ``(n, W)``."""
    n = len(log_prob)
    mean_lp = log_prob.mean(axis=1)
    typical = np.median(mean_lp[n // 2 :])
    reached = int(np.argmax(mean_lp >= typical))
    burn = max(math.ceil(3 * tau) if math.isfinite(tau) else n // 2, reached)
    return int(min(burn, n // 2))


def optimise_start(logp, x0: np.ndarray, max_evaluations: int):
    """L-BFGS-B on ``−logp`` from ``x0`` (finite-difference gradients) within
    ``max_evaluations`` evaluations, then the curvature there: ``(optimum, scale, evaluations)``.

    The ascent is :func:`~pymc_kernel_steps.core.ascend` (L-BFGS-B restarted from its optimum,
    in coordinates scaled by its last inverse Hessian, while that still improves: with finite
    differences one run stops early on ill-conditioned targets), leaving ``2 d`` evaluations
    for the curvature. ``scale`` is ``1 / √(−∂²logp/∂x_i²)`` at the optimum by central second
    differences: each coordinate's conditional standard deviation, a scale that is never wider
    than the posterior; ``1`` where the curvature is not positive and finite. The start itself
    is returned where the optimiser found nothing better.
    """
    dim = np.size(x0)
    ascent = ascend(logp, x0, max_evaluations, reserve=2 * dim)
    best, best_logp = ascent.best, ascent.best_value
    step = 1e-4 * np.minimum(ascent.unit, np.maximum(1.0, np.abs(best)))
    curvature = np.empty(dim)
    for i in range(dim):
        e = np.zeros(dim)
        e[i] = step[i]
        curvature[i] = (2 * best_logp - logp(best + e) - logp(best - e)) / step[i] ** 2
    usable = np.isfinite(curvature) & (curvature > 0)
    scale = np.where(usable, 1.0 / np.sqrt(np.where(usable, curvature, 1.0)), 1.0)
    return best, scale, ascent.evaluations + 2 * dim


def run_emcee_expert(model, budget: int, seed: int, *, n_walkers: int = 32) -> dict:
    """``emcee``'s stretch move within ``budget`` evaluations, started and burnt in as the
    module describes; returns what :func:`~pymc_kernel_steps.bench.runners.compare_samplers`'s
    custom runners return."""
    try:
        import emcee
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"run_emcee_expert needs emcee: {BENCH_EXTRA}") from err

    x0, logp, to_posterior = _unconstrained(model)
    dim = x0.size
    walkers = max(int(n_walkers), 2 * dim)
    walkers += walkers % 2
    centre, scale, spent = optimise_start(logp, x0, max_evaluations=int(budget) // 5)
    iterations = (int(budget) - spent) // walkers - 1
    if iterations < 4:
        raise ValueError(f"budget: {budget} evaluations give {walkers} walkers under 4 iterations")
    rng = np.random.default_rng(seed)
    start = centre + EMCEE_BALL * scale * rng.standard_normal((walkers, dim))
    sampler = emcee.EnsembleSampler(walkers, dim, logp)
    sampler._random = np.random.mtrand.RandomState(int(rng.integers(2**31)))
    sampler.run_mcmc(start, iterations, progress=False)
    chain = sampler.get_chain()  # (iterations, walkers, dim)
    log_prob = sampler.get_log_prob()
    second_half = chain[iterations // 2 :]
    tau = float(np.max(emcee.autocorr.integrated_time(second_half, quiet=True, tol=0)))
    burn = emcee_burn_in(log_prob, tau)
    kept = np.swapaxes(chain[burn:], 0, 1)
    idata = _datatree(to_posterior(kept), {"lp": np.swapaxes(log_prob[burn:], 0, 1)})
    return {
        "idata": idata,
        "evaluations": spent + walkers * (iterations + 1),
        "iterations": walkers * iterations,
        "tune": burn,
    }


def nuts_finite_differences_sampler(fd_model, dim: int, name: str = "NUTS-FD") -> Sampler:
    """A custom :class:`~pymc_kernel_steps.bench.runners.Sampler`: NUTS on ``fd_model`` (a
    :func:`~pymc_kernel_steps.bench.blackbox.black_box` with finite differences) charged
    ``2 dim + 1`` evaluations per leapfrog step, in as many chains as the comparison's
    ``chains`` (sharing the budget, as the step methods' chains do)."""
    per_step = 2 * dim + 1
    pilots: dict = {}

    def run(model, budget, seed, chains=1):
        settings = _Settings(
            budget=max(4, int(budget) // per_step),
            tune_fraction=0.5,
            chains=int(chains),
            gradient_model=fd_model,
            smc_pilot_particles=0,
            smc_prior_scale=0.0,
            emcee_walkers=0,
            pilots=pilots,
        )
        out = _run_nuts(Sampler(name, "nuts"), fd_model, seed, settings)
        out["evaluations"] = out["counted"] = out["evaluations"] * per_step
        return out

    return Sampler(name, "custom", run=run)
