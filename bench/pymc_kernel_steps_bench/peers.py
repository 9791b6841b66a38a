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
    the evaluations per particle; see :mod:`pymc_kernel_steps_bench.runners`).
``DEMetropolisZ``
    PyMC's defaults, its own tuning of the scaling during the tuning half of the budget (2
    evaluations per iteration: it evaluates the current point again).
NUTS on finite differences (:func:`run_nuts_finite_differences`)
    What an expert does with a smooth black box: PyMC's NUTS on a central-difference gradient
    (:class:`~pymc_kernel_steps_bench.blackbox.FiniteDifferenceLogp`), charged ``2 d + 1``
    evaluations per leapfrog step (the value and ``2 d`` for the gradient). A pilot (not charged)
    measures the leapfrog steps per iteration; the tuning half of the budget and the draws are
    sized from it and the draws truncated where the count passes the budget.

The field's samplers for expensive black boxes (issue 49) get the model's priors as
:func:`~pymc_kernel_steps_bench.prior_transform.unit_cube_prior` builds them: the priors' inverse
CDFs where every prior has one, and otherwise (a flat prior, a Dirichlet) the proper stand-in
``N(x0, 10² I)`` in the unconstrained space that ``pm.sample_smc`` gets here, with the model's log
density minus it as the likelihood. They start from the prior, as SMC does (zeus, an MCMC
sampler, starts as emcee does). Every evaluation is one call of the model's log density, counted
by its :class:`~pymc_kernel_steps_bench.targets.CountingLogp`, the op every peer is counted by;
the importance-weighted samplers return their weights and are scored on weighted moments.

nautilus (:func:`run_nautilus`)
    Its defaults (neural-network bounds, ``n_networks=4``, ``f_live=0.01``, exploration points
    kept: ``discard_exploration=False``, the documented default) but for ``n_live``, which
    :func:`nautilus_live_points` sizes to the budget: ``B / 10`` between 200 and 2000
    (nautilus's default). The live set is the unit of its exploration: a new bound is built after
    ``n_live`` additions to it, and the first ``n_live`` evaluations are prior draws, so at the
    default a budget of 2,000 would be spent on the prior alone; ``B / 10`` leaves room for
    several bounds (the issue's measurement at 12,000 used 1,000, the size this rule gives). It
    stops at the budget itself (``n_like_max``: whole batches of 100 evaluations, never past
    it). Its importance weights (``posterior()``) give the moments.
pocoMC (:func:`run_pocomc`)
    Its defaults (``n_effective=512``, ``n_active=256``, the t-preconditioned Crank-Nicolson
    kernel, a neural spline flow, ``n_total`` = ``n_effective``) but ``n_total=512``: the run
    ends as soon as the temperature reaches 1 with 512 effective particles, its cheapest
    documented finish (the default 4,096 adds posterior samples after that); and
    ``n_evidence=0``: no importance samples for the evidence, which the benchmark does not use.
    pocoMC cannot stop at a budget of evaluations: its cost is what the tempering needs. It is
    scored at its own count (``at_budget`` False in the frame) and marked as such. Its trimmed
    importance weights (``posterior()``, the default trimming) give the moments.
dynesty (:func:`run_dynesty`)
    Its static sampler with its defaults: ``nlive=500``, multi-ellipsoid bounds,
    ``sample='auto'`` (uniform sampling within the bounds below 10 dimensions, random walks up to
    20, slices above), stopped by ``maxcall`` at the budget (the initial live points included;
    it checks between iterations, so the last iteration may pass the budget by a few calls: it
    is then scored at its measured count and marked, ``at_budget`` False). dynesty's
    documentation recommends the dynamic sampler for posteriors, but that one begins with a
    static baseline run of 500 live points to ``dlogz_init=0.01`` and starts adding posterior
    batches only after it: at budgets of a few thousand to tens of thousands of evaluations it
    is the static run. The importance weights
    of the dead and final live points (``results.importance_weights()``) give the moments.
zeus (:func:`run_zeus`)
    Ensemble slice sampling with its defaults (the differential move, ``mu`` tuned during the
    first iterations), ``W = max(8, 2 d)`` walkers (its documentation: at least twice the
    number of parameters), started as :func:`run_emcee_expert` starts emcee (a short L-BFGS-B
    optimisation, charged, then a small ball), the first half of the chain discarded as
    burn-in as its documentation does. Its evaluations per iteration vary (stepping out and
    shrinking), so it runs until the count passes the budget and is truncated to the last
    iteration within it, as NUTS on finite differences is.
"""

from __future__ import annotations

import math

import numpy as np

from pymc_kernel_steps.core import ascend

from ._util import BENCH_EXTRA, _counting_ops, _datatree, _measured, _reset, _unconstrained
from .prior_transform import unit_cube_prior
from .runners import Sampler, _run_nuts, _Settings

__all__ = [
    "EMCEE_BALL",
    "FIELD_PEERS",
    "PEERS_EXTRA",
    "POCOMC_N_TOTAL",
    "ZEUS_MIN_WALKERS",
    "field_peer",
    "nautilus_live_points",
    "nuts_finite_differences_sampler",
    "run_dynesty",
    "run_emcee_expert",
    "run_nautilus",
    "run_pocomc",
    "run_zeus",
    "weighted_moments",
]

#: how to install the field's samplers
PEERS_EXTRA = "pip install 'pymc-kernel-steps-bench[peers]'"
#: pocoMC's ``n_total``: its ``n_effective`` default, the cheapest documented finish
POCOMC_N_TOTAL = 512
#: fewest zeus walkers (at least ``2 d`` are used)
ZEUS_MIN_WALKERS = 8

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
    module describes; returns what :func:`~pymc_kernel_steps_bench.runners.compare_samplers`'s
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
    """A custom :class:`~pymc_kernel_steps_bench.runners.Sampler`: NUTS on ``fd_model`` (a
    :func:`~pymc_kernel_steps_bench.blackbox.black_box` with finite differences) charged
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


# ------------------------------------------------------------------- the field's samplers
def _import(module: str, package: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"the {package} peer needs {package}: {PEERS_EXTRA}") from err


def _normalised(log_w: np.ndarray) -> np.ndarray:
    log_w = np.asarray(log_w, dtype=float)
    w = np.exp(log_w - np.max(log_w))
    return w / w.sum()


def weighted_moments(draws: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(E[x], E[x²])`` of weighted draws ``(n, k)`` with weights ``(n,)`` (normalised here)."""
    draws = np.asarray(draws, dtype=float)
    w = np.asarray(weights, dtype=float)
    w = w / w.sum()
    return w @ draws, w @ draws**2


def _weighted_result(prior, points, weights, ops, **extra) -> dict:
    points = np.asarray(points, dtype=float)
    keep = np.all(np.isfinite(points), axis=1) & (weights > 0)
    points, weights = points[keep], weights[keep] / weights[keep].sum()
    evaluations, _ = _measured(ops)
    return {
        "idata": _datatree(prior.to_posterior(points[None])),
        "weights": weights,
        "evaluations": evaluations,
        "iterations": len(points),
        "tune": 0,
        **extra,
    }


def nautilus_live_points(budget: int) -> int:
    """nautilus's ``n_live`` at a budget: ``budget / 10`` between 200 and 2000 (see the module
    notes)."""
    return int(min(2000, max(200, int(budget) // 10)))


def run_nautilus(model, budget: int, seed: int, *, n_live: int | None = None) -> dict:
    """nautilus within ``budget`` evaluations, configured as the module describes.

    Parameters
    ----------
    model : pymc.Model
    budget : int
        Likelihood evaluations allowed (``n_like_max``).
    seed : int
    n_live : int, optional
        Live points (default: :func:`nautilus_live_points`).

    Returns
    -------
    dict
        What :func:`~pymc_kernel_steps_bench.runners.compare_samplers`'s custom runners return,
        with ``weights`` (normalised importance weights of the draws).
    """
    nautilus = _import("nautilus", "nautilus-sampler")
    prior = unit_cube_prior(model)
    ops = _counting_ops(model)
    _reset(ops)
    sampler = nautilus.Sampler(
        prior.transform,
        prior.log_likelihood,
        n_dim=prior.dim,
        n_live=nautilus_live_points(budget) if n_live is None else int(n_live),
        seed=int(seed),
    )
    sampler.run(n_like_max=int(budget), verbose=False)
    points, log_w, _ = sampler.posterior()
    return _weighted_result(prior, points, _normalised(log_w), ops, counted=int(sampler.n_like))


def run_pocomc(model, budget: int, seed: int, *, n_total: int = POCOMC_N_TOTAL) -> dict:
    """pocoMC run to its own end (it cannot stop at ``budget``), configured as the module
    describes; scored at its own count, ``at_budget`` False.

    Returns
    -------
    dict
        As :func:`run_nautilus`, with ``at_budget`` False.
    """
    pc = _import("pocomc", "pocomc")
    import tempfile

    prior = unit_cube_prior(model)
    ops = _counting_ops(model)
    state = np.random.get_state()  # noqa: NPY002 - pocoMC seeds numpy's global generator
    _reset(ops)
    try:
        with tempfile.TemporaryDirectory() as states:
            sampler = pc.Sampler(
                prior=prior,
                likelihood=prior.log_likelihood,
                n_dim=prior.dim,
                random_state=int(seed),
                output_dir=states,
            )
            sampler.run(n_total=int(n_total), n_evidence=0, progress=False)
            points, weights, _, _ = sampler.posterior()
    finally:
        np.random.set_state(state)  # noqa: NPY002
    return _weighted_result(
        prior, points, np.asarray(weights, float), ops, counted=int(sampler.calls), at_budget=False
    )


def run_dynesty(model, budget: int, seed: int, *, nlive: int = 500) -> dict:
    """dynesty's static nested sampler within ``budget`` evaluations (``maxcall``), configured
    as the module describes.

    Returns
    -------
    dict
        As :func:`run_nautilus`.
    """
    dynesty = _import("dynesty", "dynesty")
    prior = unit_cube_prior(model)
    ops = _counting_ops(model)
    _reset(ops)
    sampler = dynesty.NestedSampler(
        prior.log_likelihood,
        prior.transform,
        prior.dim,
        nlive=int(nlive),
        rstate=np.random.default_rng(seed),
    )
    spent, _ = _measured(ops)  # the initial live points
    if spent >= budget:
        raise ValueError(f"budget: {budget} evaluations do not leave dynesty past its live points")
    import warnings

    with warnings.catch_warnings():  # stopped short of dlogz: what a budget does
        warnings.simplefilter("ignore", UserWarning)
        sampler.run_nested(maxcall=int(budget) - spent, print_progress=False)
    results = sampler.results
    weights = np.asarray(results.importance_weights(), dtype=float)
    out = _weighted_result(prior, results.samples, weights, ops, counted=int(np.sum(results.ncall)))
    out["at_budget"] = out["evaluations"] <= budget  # its last iteration may pass the budget
    return out


def run_zeus(model, budget: int, seed: int, *, min_walkers: int = ZEUS_MIN_WALKERS) -> dict:
    """zeus's ensemble slice sampler within ``budget`` evaluations, configured as the module
    describes (the chain truncated to the last iteration within the budget).

    Returns
    -------
    dict
        What :func:`~pymc_kernel_steps_bench.runners.compare_samplers`'s custom runners return.
    """
    zeus = _import("zeus", "zeus-mcmc")
    import logging

    x0, logp, to_posterior = _unconstrained(model)
    dim = x0.size
    walkers = max(int(min_walkers), 2 * dim)
    walkers += walkers % 2
    ops = _counting_ops(model)
    _reset(ops)
    centre, scale, spent = optimise_start(logp, x0, max_evaluations=int(budget) // 5)
    rng = np.random.default_rng(seed)
    start = centre + EMCEE_BALL * scale * rng.standard_normal((walkers, dim))
    root = logging.getLogger()  # zeus replaces the root logger's handlers: put them back
    handlers, level = list(root.handlers), root.level
    state = np.random.get_state()  # noqa: NPY002 - zeus draws from numpy's global generator
    np.random.seed(int(rng.integers(2**31)))  # noqa: NPY002
    counts = []
    try:
        sampler = zeus.EnsembleSampler(walkers, dim, logp, verbose=False)
        for _ in sampler.sample(start, iterations=int(budget), progress=False):
            counts.append(_measured(ops)[0] if ops else spent + int(sampler.ncall))
            if counts[-1] >= budget:
                break
    finally:
        np.random.set_state(state)  # noqa: NPY002
        root.handlers[:] = handlers
        root.setLevel(level)
    counts = np.asarray(counts)
    keep = int(max(2, np.sum(counts <= budget)))
    chain = sampler.get_chain()[:keep]  # (iterations, walkers, dim)
    log_prob = sampler.get_log_prob()[:keep]
    burn = keep // 2
    kept = np.swapaxes(chain[burn:], 0, 1)
    idata = _datatree(to_posterior(kept), {"lp": np.swapaxes(log_prob[burn:], 0, 1)})
    return {
        "idata": idata,
        "evaluations": int(counts[keep - 1]),
        "evaluations_made": int(counts[-1]),
        "counted": int(spent + np.sum(sampler.neval[:keep]) + walkers),
        "iterations": walkers * keep,
        "tune": burn,
    }


#: the field's samplers by label: ``(runner, package)``
FIELD_PEERS = {
    "nautilus": (run_nautilus, "nautilus"),
    "pocoMC": (run_pocomc, "pocomc"),
    "dynesty": (run_dynesty, "dynesty"),
    "zeus": (run_zeus, "zeus"),
}


def field_peer(label: str) -> Sampler:
    """The :class:`~pymc_kernel_steps_bench.runners.Sampler` of one of :data:`FIELD_PEERS`."""
    run, _ = FIELD_PEERS[label]
    return Sampler(label, "custom", run=run)
