"""Accuracy per target evaluation: samplers compared at equal counted budgets against a reference.

:func:`compare_samplers` gives every sampler the same budget of *counted* target evaluations, runs
it ``replicates`` times with independent seeds, and compares the estimates of ``E[x_i]`` and
``E[x_i²]`` (every scalar coordinate ``i`` of the selected variables) with a reference. The error
over replicates gives the **error-based effective sample size**

    ESS_err(f) = Var_π(f) / MSE(f),   MSE(f) = mean over replicates of (estimate − truth)²,

the number of independent draws that would estimate ``E[f]`` as accurately as one run of the
sampler; it is reported per 1000 *measured* evaluations. Unlike a within-run ESS it sees bias: a
run that never reached part of the posterior has a large error even when its chain looks well
mixed. ArviZ's rank-normalised bulk/tail ESS and R-hat are reported beside it, never alone.

Budget mapping
--------------
``B`` is the budget, ``τ`` the ``tune_fraction``, ``c`` the ``chains`` per replicate.

PyMC step methods (ours, ``DEMetropolisZ``, ``Metropolis``; kind ``"step"``)
    ``e`` evaluations per iteration: 1 for this package's steps (they keep the current log
    density), 2 for ``DEMetropolisZ`` (it evaluates the current point again), ``2 × size`` for
    ``Metropolis`` (two per accept test, one test per scalar element). Our steps also evaluate
    each chain's initial point once (``i = 1``; ``i = 0`` for PyMC's). Each replicate runs ``c``
    chains of ``n = (B − c i) // (e c)`` iterations, ``tune = round(τ n)`` of them tuning, the
    rest draws: the tuning evaluations are part of the budget. Estimates use the draws (for
    ``CKAM``, only its sampling-phase draws).
``"nuts"`` (on the differentiable twin ``gradient_model``)
    One evaluation is one log-density-and-gradient evaluation; the count is the sum of
    ``n_steps`` over tuning and draws. Its cost per iteration is not known in advance, so a
    pilot run (tune 200, draws 100, not charged) measures the mean ``n_steps`` ``g_t`` during
    tuning and ``g`` after; each chain then tunes ``round(τ B / (c g_t))`` iterations and draws
    enough iterations to exceed its share of the budget, and the draws are truncated where the
    cumulative count (tuning included) would pass ``B / c``; the wall time is scaled to the
    iterations kept.
``"smc"`` (``pm.sample_smc``, IMH kernel, one SMC chain per replicate)
    Every particle evaluation counts: ``particles × (1 + Σ_stages mutation steps)``. The number
    of stages and steps adapts, so a pilot with ``smc_pilot_particles`` particles (not charged)
    measures the evaluations per particle ``p`` and each replicate uses ``round(B / p)``
    particles, ``p`` being the running mean over the pilot and the earlier replicates; the
    count lands near ``B`` (a warning when it exceeds ``B`` by more than 25 %) and the
    *measured* count is reported and used. ArviZ's ESS and R-hat are not computed (particles
    are not a chain). A model with an improper (flat) prior is sampled through an equivalent
    model with prior ``N(initial point, smc_prior_scale² I)`` in the unconstrained space and the
    target's log density minus that prior as likelihood: the same posterior, a prior SMC can
    draw from.
``"emcee"`` (``emcee.EnsembleSampler`` on the model's compiled log density, unconstrained space)
    ``W = max(n_walkers, 2 × dim)`` walkers (rounded up to even) started at the initial point
    jittered by ``U(−1, 1)`` (as PyMC's ``jitter+adapt_diag``); the initial ensemble costs
    ``W`` evaluations and every iteration ``W``: ``n = B // W − 1`` iterations, the first
    ``round(τ n)`` discarded as burn-in; the walkers are the chains of the result (they are not
    independent, so ArviZ's ESS over them is optimistic).
``"custom"``
    ``run(model, budget, seed) -> dict(idata=..., evaluations=...)``: anything else (tests use
    it for exact i.i.d. draws).

The measured count (the calls seen by every :class:`~pymc_kernel_steps.targets.CountingLogp`
in the model; everything runs in this process, ``cores=1``) is checked against the count each
kind implies (:func:`~pymc_kernel_steps.diagnostics.count_evaluations`, or the formulas above)
and against the budget: a mismatch warns; the measured count is the one reported and used.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .diagnostics import count_evaluations, posterior_draws

__all__ = [
    "SAMPLER_KINDS",
    "Reference",
    "Sampler",
    "as_sampler",
    "compare_samplers",
    "ess_err_table",
    "plot_comparison",
    "reference_run_var_sq",
    "run_emcee",
    "run_smc",
]

#: sampler kinds understood by :func:`compare_samplers`
SAMPLER_KINDS = ("step", "nuts", "smc", "emcee", "custom")
#: names accepted as sampler specifications
SAMPLER_NAMES = ("nuts", "smc", "emcee", "demetropolisz", "metropolis")
STATISTICS = ("mean", "second_moment")
BENCH_EXTRA = "pip install pymc-kernel-steps[bench]"


# ----------------------------------------------------------------------------------- reference
@dataclass
class Reference:
    """The truth to compare estimates with, for the flattened, concatenated variables.

    Attributes
    ----------
    mean : np.ndarray
        ``E[x_i]``.
    var : np.ndarray
        ``Var(x_i)`` (so ``E[x_i²] = var + mean²``).
    var_sq : np.ndarray or None
        ``Var(x_i²)``, needed to scale the error of the second moments (for a
        :class:`~pymc_kernel_steps.targets.Target` with a cached reference run, that run's).
        When None, :func:`compare_samplers` estimates it from the pooled draws of all samplers
        (the same scale for every sampler, so the ranking is unaffected, but samplers that have
        not converged inflate it) and marks it in the frame.
    draws : np.ndarray or None
        ``(n, k)`` draws from the target, for plots (and the moments when built from draws).
    """

    mean: np.ndarray
    var: np.ndarray
    var_sq: np.ndarray | None = None
    draws: np.ndarray | None = None

    def __post_init__(self):
        self.mean = np.atleast_1d(np.asarray(self.mean, dtype=float))
        self.var = np.broadcast_to(np.asarray(self.var, dtype=float), self.mean.shape).copy()
        if np.any(~(self.var > 0)):
            raise ValueError("reference: var must be positive")
        if self.var_sq is not None:
            self.var_sq = np.broadcast_to(np.asarray(self.var_sq, float), self.mean.shape).copy()
        if self.draws is not None:
            self.draws = np.asarray(self.draws, dtype=float).reshape(len(self.draws), -1)

    @property
    def mean_sq(self) -> np.ndarray:
        """``E[x_i²]``."""
        return self.var + self.mean**2

    @classmethod
    def from_draws(cls, draws, mean=None, var=None) -> Reference:
        """A reference from (exact or long converged) draws ``(n, k)``.

        Exact ``mean``/``var`` given here override the draws' estimates; ``Var(x²)`` always comes
        from the draws.
        """
        draws = np.asarray(draws, dtype=float)
        draws = draws.reshape(len(draws), -1)
        return cls(
            mean=draws.mean(axis=0) if mean is None else mean,
            var=draws.var(axis=0, ddof=1) if var is None else var,
            var_sq=(draws**2).var(axis=0, ddof=1),
            draws=draws,
        )

    @classmethod
    def coerce(cls, reference) -> Reference | None:
        """Accept a :class:`Reference`, a dict (``mean``, ``var``, optional ``var_sq``,
        ``draws``), an object with ``true_mean``/``true_var`` (a
        :class:`~pymc_kernel_steps.targets.Target`), an array of draws ``(n, k)``, or None."""
        if reference is None or isinstance(reference, Reference):
            return reference
        if isinstance(reference, Mapping):
            unknown = set(reference) - {"mean", "var", "var_sq", "draws"}
            if unknown or not {"mean", "var"} <= set(reference):
                raise ValueError(
                    "reference: a dict needs the keys 'mean' and 'var' (optional 'var_sq', "
                    f"'draws'), got {sorted(reference)}"
                )
            return cls(**reference)
        if hasattr(reference, "true_mean"):
            if reference.true_mean is None or reference.true_var is None:
                raise ValueError(f"reference: {reference!r} has no true moments")
            var_sq = reference_run_var_sq(getattr(reference, "reference", None))
            return cls(reference.true_mean, reference.true_var, var_sq=var_sq)
        array = np.asarray(reference, dtype=float)
        if array.ndim != 2 or len(array) < 3:
            raise ValueError(
                "reference: expected a Reference, a dict of moments, a Target or draws of shape "
                f"(n, k), got an array of shape {array.shape}"
            )
        return cls.from_draws(array)


def reference_run_var_sq(reference_run: Mapping | None) -> np.ndarray | None:
    """``Var_π(x_i²)`` of a cached reference run (a dict from
    :func:`~pymc_kernel_steps.targets.load_reference`): ``MCSE² × ESS`` of its second moments,
    the variance behind the MCSE it reports; None when there is no run or it lacks those
    fields."""
    if reference_run is None:
        return None
    mcse = reference_run.get("mcse_second_moment")
    ess = reference_run.get("ess_second_moment")
    if mcse is None or ess is None:
        return None
    var_sq = np.asarray(mcse, dtype=float) ** 2 * np.asarray(ess, dtype=float)
    return var_sq if np.all(np.isfinite(var_sq)) and np.all(var_sq > 0) else None


# ------------------------------------------------------------------------------------ samplers
@dataclass
class Sampler:
    """One sampler of a comparison.

    Attributes
    ----------
    name : str
        Label in the tables and plots.
    kind : str
        One of :data:`SAMPLER_KINDS`.
    factory : callable, optional
        ``"step"``: called without arguments inside the model context, returns the step
        (a step class or ``lambda: KMCLite(n_steps=20)``).
    run : callable, optional
        ``"custom"``: ``run(model, budget, seed) -> {"idata": ..., "evaluations": int}``.
    options : dict
        Keyword arguments for the kind: ``pm.sample`` (step), ``pm.NUTS`` (nuts, e.g.
        ``target_accept``), :func:`run_smc` keywords (smc: ``prior_scale``, IMH kernel keywords),
        :func:`run_emcee` keywords (emcee: ``n_walkers``, ``init_jitter``, ``moves``).
    estimates : callable, optional
        ``estimates(idata) -> idata`` selecting the draws to estimate from (for example
        :func:`~pymc_kernel_steps.sampling_phase` for ``CKAM``; applied automatically when the
        run has the ``exploring`` stat).
    """

    name: str
    kind: str
    factory: Callable | None = None
    run: Callable | None = None
    options: dict = field(default_factory=dict)
    estimates: Callable | None = None

    def __post_init__(self):
        if self.kind not in SAMPLER_KINDS:
            raise ValueError(f"kind must be one of {SAMPLER_KINDS}, got {self.kind!r}")
        if self.kind == "step" and not callable(self.factory):
            raise ValueError(f"sampler {self.name!r}: kind 'step' needs a callable factory")
        if self.kind == "custom" and not callable(self.run):
            raise ValueError(f"sampler {self.name!r}: kind 'custom' needs a callable run")


def as_sampler(spec, name: str | None = None) -> Sampler:
    """A :class:`Sampler` from a specification.

    Parameters
    ----------
    spec : Sampler, str, step class or callable
        ``"nuts"``, ``"smc"``, ``"emcee"``, ``"demetropolisz"``, ``"metropolis"``
        (case-insensitive); a step class (``KMCLite``, ``pm.DEMetropolisZ``); or a factory
        returning a step (``lambda: KMCLite(n_steps=20)``).
    name : str, optional
        Label (default: the canonical name, the class name, or the factory's ``__name__``).
    """
    import pymc as pm

    if isinstance(spec, Sampler):
        if name is not None and name != spec.name:
            return Sampler(name, spec.kind, spec.factory, spec.run, spec.options, spec.estimates)
        return spec
    if isinstance(spec, str):
        key = spec.lower()
        if key not in SAMPLER_NAMES:
            raise ValueError(f"samplers: unknown sampler name {spec!r}; known: {SAMPLER_NAMES}")
        labels = {
            "nuts": "NUTS",
            "smc": "SMC",
            "emcee": "emcee",
            "demetropolisz": "DEMetropolisZ",
            "metropolis": "Metropolis",
        }
        factories = {"demetropolisz": pm.DEMetropolisZ, "metropolis": pm.Metropolis}
        kind = "step" if key in factories else key
        return Sampler(name or labels[key], kind, factory=factories.get(key))
    if callable(spec):
        label = name or getattr(spec, "__name__", None)
        if not label or label == "<lambda>":
            raise ValueError(
                "samplers: give a factory a name, e.g. {'KMCLite(20)': lambda: ...} or "
                "[('KMCLite(20)', lambda: ...)]"
            )
        return Sampler(label, "step", factory=spec)
    raise ValueError(f"samplers: cannot interpret {spec!r} as a sampler")


def _as_samplers(samplers) -> list[Sampler]:
    if isinstance(samplers, str | Sampler) or (
        callable(samplers) and not isinstance(samplers, Mapping)
    ):
        samplers = [samplers]
    if isinstance(samplers, Mapping):
        out = [as_sampler(spec, name) for name, spec in samplers.items()]
    else:
        out = []
        for spec in samplers:
            if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
                out.append(as_sampler(spec[1], spec[0]))
            else:
                out.append(as_sampler(spec))
    if not out:
        raise ValueError("samplers: give at least one sampler")
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise ValueError(f"samplers: names must be unique, got {names}")
    return out


# --------------------------------------------------------------------------- model utilities
def _counting_ops(model):
    from .targets import counting_ops

    return counting_ops(model)


def _reset(ops):
    for op in ops:
        op.reset()


def _measured(ops):
    if not ops:
        return None, 0.0
    return int(sum(op.n_calls for op in ops)), float(sum(op.seconds for op in ops))


def _quiet():
    """Silence sampling warnings and PyMC's progress logging inside a comparison."""
    import logging

    class _Ctx:
        def __enter__(self):
            self._w = warnings.catch_warnings()
            self._w.__enter__()
            warnings.simplefilter("ignore")
            self._logger = logging.getLogger("pymc")
            self._level = self._logger.level
            self._logger.setLevel(logging.ERROR)
            return self

        def __exit__(self, *exc):
            self._logger.setLevel(self._level)
            return self._w.__exit__(*exc)

    return _Ctx()


def _unconstrained(model):
    """``(x0, logp(x), to_posterior(draws))`` for the model's value variables, raveled."""
    from pymc.blocking import DictToArrayBijection, RaveledVars

    point = model.initial_point()
    names = [v.name for v in model.value_vars]
    x0 = DictToArrayBijection.map({n: point[n] for n in names})
    logp_fn = model.compile_logp()
    info = x0.point_map_info

    def logp(x):
        value = float(logp_fn(DictToArrayBijection.rmap(RaveledVars(np.asarray(x), info))))
        return value if not math.isnan(value) else -math.inf

    rv_names = [rv.name for rv in model.free_RVs] + [d.name for d in model.deterministics]
    outs = model.unobserved_value_vars
    transform = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore")
    out_names = [o.name for o in outs]

    def to_posterior(draws):
        """``draws (chain, draw, size)`` in the unconstrained space -> {name: values} of the free
        variables and the deterministics."""
        chains, n = draws.shape[:2]
        values = {name: [] for name in rv_names}
        for x in draws.reshape(chains * n, -1):
            result = transform(DictToArrayBijection.rmap(RaveledVars(x, info)))
            for name, value in zip(out_names, result, strict=True):
                if name in values:
                    values[name].append(np.asarray(value))
        return {name: np.stack(v).reshape(chains, n, *np.shape(v[0])) for name, v in values.items()}

    return np.asarray(x0.data, dtype=float), logp, to_posterior


def _datatree(posterior: dict, sample_stats: dict | None = None):
    import arviz as az

    groups = {"posterior": posterior}
    if sample_stats:
        groups["sample_stats"] = sample_stats
    with warnings.catch_warnings():  # many walkers, few iterations: chain longer than draw
        warnings.simplefilter("ignore", UserWarning)
        return az.from_dict(groups)


# ------------------------------------------------------------------------------------- emcee
def run_emcee(
    model=None,
    budget: int = 12_000,
    *,
    n_walkers: int = 32,
    tune_fraction: float = 0.5,
    init_jitter: float = 1.0,
    random_seed=None,
    moves=None,
):
    """Sample a PyMC model with ``emcee``'s affine-invariant ensemble within a budget.

    The log density is the model's compiled ``logp`` in the unconstrained space (what PyMC's
    samplers see). ``W = max(n_walkers, 2 × dim)`` walkers start at the initial point plus
    ``U(−init_jitter, init_jitter)`` noise; ``emcee`` evaluates the initial ensemble once (``W``
    evaluations) and every iteration ``W`` proposals, so ``n = budget // W − 1`` iterations fit,
    the first ``round(tune_fraction × n)`` of which are discarded.

    Parameters
    ----------
    model : pymc.Model, optional
    budget : int
        Target evaluations allowed (at least ``2 W``).
    n_walkers : int
        Minimum number of walkers.
    tune_fraction : float
        Fraction of the iterations discarded as burn-in.
    init_jitter : float
        Half-width of the uniform jitter of the initial walkers.
    random_seed : int or numpy.random.Generator, optional
    moves : optional
        ``emcee`` moves (default: the stretch move).

    Returns
    -------
    dict
        ``idata`` (a DataTree: ``posterior`` with the walkers as chains, ``sample_stats`` with
        ``lp`` and ``accepted``, ``warmup_posterior``), ``evaluations`` (``W (n + 1)``),
        ``walkers``, ``iterations``, ``tune``, ``acceptance``.
    """
    try:
        import emcee
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"run_emcee needs emcee: {BENCH_EXTRA}") from err
    import pymc as pm

    model = pm.modelcontext(model)
    x0, logp, to_posterior = _unconstrained(model)
    dim = x0.size
    walkers = max(int(n_walkers), 2 * dim)
    walkers += walkers % 2
    iterations = int(budget) // walkers - 1
    if iterations < 1:
        raise ValueError(f"budget: {budget} evaluations do not fit {walkers} walkers twice")
    tune = round(tune_fraction * iterations)
    if tune >= iterations:
        tune = iterations - 1
    rng = np.random.default_rng(random_seed)
    start = x0 + rng.uniform(-init_jitter, init_jitter, size=(walkers, dim))
    sampler = emcee.EnsembleSampler(walkers, dim, logp, moves=moves)
    sampler._random = np.random.mtrand.RandomState(int(rng.integers(2**31)))
    sampler.run_mcmc(start, iterations, progress=False)
    chain = np.swapaxes(sampler.get_chain(), 0, 1)  # (walkers, iterations, dim)
    lp = np.swapaxes(sampler.get_log_prob(), 0, 1)
    idata = _datatree(to_posterior(chain[:, tune:]), {"lp": lp[:, tune:]})
    return {
        "idata": idata,
        "evaluations": walkers * (iterations + 1),
        "walkers": walkers,
        "iterations": iterations,
        "tune": tune,
        "acceptance": float(np.mean(sampler.acceptance_fraction)),
    }


# --------------------------------------------------------------------------------------- SMC
def _has_improper_prior(model) -> bool:
    from pymc.distributions.continuous import FlatRV, HalfFlatRV

    return any(isinstance(rv.owner.op, FlatRV | HalfFlatRV) for rv in model.free_RVs)


def _smc_twin(model, prior_scale: float):
    """The posterior of ``model`` as prior ``N(x0, s² I)`` times likelihood ``π / N(x0, s² I)``.

    Returns ``(twin, to_posterior)``; the twin has one free vector ``smc_x`` in the original
    model's unconstrained space and shares its log-density graph (and so its counting ops).
    """
    import pymc as pm
    import pytensor.tensor as pt
    from pytensor.graph.replace import graph_replace

    x0, _, to_posterior = _unconstrained(model)
    logp = model.logp()
    with pm.Model() as twin:
        z = pm.Normal("smc_x", mu=x0, sigma=prior_scale, shape=x0.size)
        replace, start, point = {}, 0, model.initial_point()
        for var in model.value_vars:
            shape = np.shape(point[var.name])
            size = int(np.prod(shape, dtype=int))
            replace[var] = pt.cast(z[start : start + size].reshape(shape), var.dtype)
            start += size
        target = graph_replace(logp, replace, strict=False)
        prior = pm.logp(pm.Normal.dist(mu=x0, sigma=prior_scale), z).sum()
        pm.Potential("target_over_prior", target - prior)
    return twin, to_posterior


def _smc_kernel():
    from pymc.smc.kernels import IMH

    class CountingIMH(IMH):
        """PyMC's IMH SMC kernel, recording the likelihood evaluations in its stats."""

        stats_dtypes_shapes = {**IMH.stats_dtypes_shapes, "evaluations": (np.int64, [])}

        def _initialize_kernel(self):
            self.likelihood_evaluations = int(self.draws)
            super()._initialize_kernel()

        def mutate(self):
            super().mutate()
            self.likelihood_evaluations += int(self.draws) * (self.n_steps - 1)

        def sample_stats(self):
            stats = super().sample_stats()
            stats["evaluations"] = self.likelihood_evaluations
            return stats

    return CountingIMH


def run_smc(
    model=None,
    particles: int = 1000,
    *,
    prior_scale: float = 10.0,
    random_seed=None,
    **kernel_kwargs,
):
    """``pm.sample_smc`` (IMH kernel, one chain, in this process) with its evaluations counted.

    Parameters
    ----------
    model : pymc.Model, optional
    particles : int
        Number of particles (``draws`` of ``pm.sample_smc``).
    prior_scale : float
        For a model with a flat prior: standard deviation of the Gaussian prior that replaces it
        (divided back out of the likelihood, so the posterior is unchanged).
    random_seed : int, optional
    **kernel_kwargs
        For the IMH kernel (``threshold``, ``correlation_threshold``).

    Returns
    -------
    dict
        ``idata`` (posterior in the model's variables), ``evaluations`` (likelihood
        evaluations: ``particles × (1 + Σ_stages mutation steps)``), ``stages``.
    """
    import pymc as pm

    model = pm.modelcontext(model)
    to_posterior = None
    sampled = model
    if _has_improper_prior(model):
        sampled, to_posterior = _smc_twin(model, prior_scale)
    with sampled:
        idata = pm.sample_smc(
            draws=int(particles),
            kernel=_smc_kernel(),
            chains=1,
            cores=1,
            random_seed=random_seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kernel_kwargs,
        )
    stats = idata["sample_stats"]
    evaluations = np.asarray(stats["evaluations"].values).ravel()
    evaluations = evaluations[np.isfinite(evaluations.astype(float))]
    stages = int(evaluations.size)
    if to_posterior is not None:
        draws = np.asarray(idata["posterior"]["smc_x"].values, dtype=float)
        idata = _datatree(to_posterior(draws))
    return {"idata": idata, "evaluations": int(evaluations.max()), "stages": stages}


# ------------------------------------------------------------------------------- the runners
@dataclass
class _Settings:
    budget: int
    tune_fraction: float
    chains: int
    gradient_model: Any
    smc_pilot_particles: int
    smc_prior_scale: float
    emcee_walkers: int
    nuts_pilot: tuple[int, int] = (200, 100)
    pilots: dict = field(default_factory=dict)


def _step_cost(step, model) -> tuple[str, int]:
    """(count_evaluations kind, nominal evaluations per iteration) of a step."""
    import pymc as pm

    from .steps.base import KernelStep

    steps = getattr(step, "methods", [step])
    if len(steps) != 1:
        raise ValueError("samplers: compound steps are not supported; give one step")
    step = steps[0]
    if isinstance(step, KernelStep):
        return "kernel", 1
    if isinstance(step, pm.DEMetropolisZ):
        return "demetropolisz", 2
    if isinstance(step, pm.Metropolis):
        point = model.initial_point()
        size = int(sum(np.size(point[v.name]) for v in step.vars))
        return "metropolis", 2 * size
    if isinstance(step, pm.NUTS):
        raise ValueError("samplers: give NUTS as 'nuts' (it runs on gradient_model)")
    raise ValueError(
        f"samplers: no evaluation count is known for {type(step).__name__}; wrap it as "
        "Sampler(kind='custom', run=...) and return the evaluations"
    )


def _pm_sample(model, step, tune, draws, chains, seed, **options):
    import pymc as pm

    with model, _quiet():
        return pm.sample(
            tune=int(tune),
            draws=int(draws),
            chains=chains,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            discard_tuned_samples=False,
            compute_convergence_checks=False,
            **options,
        )


def _run_step(sampler: Sampler, model, seed, s: _Settings) -> dict:
    ops = _counting_ops(model)
    with model, _quiet():
        step = sampler.factory()
    kind, per_iteration = _step_cost(step, model)
    # this package's steps evaluate the initial point once per chain
    initial = s.chains if kind == "kernel" else 0
    iterations = (s.budget - initial) // (per_iteration * s.chains)
    if iterations < 2:
        raise ValueError(f"budget: {s.budget} evaluations give fewer than 2 iterations per chain")
    tune = min(round(s.tune_fraction * iterations), iterations - 1)
    _reset(ops)
    start = time.perf_counter()
    idata = _pm_sample(model, step, tune, iterations - tune, s.chains, seed, **sampler.options)
    seconds = time.perf_counter() - start
    measured, inside = _measured(ops)
    counted = count_evaluations(idata, kind)
    loop = float(idata["posterior"].attrs.get("sampling_time", seconds))
    total_iterations = s.chains * iterations
    return {
        "idata": idata,
        "evaluations": measured if measured is not None else counted,
        "counted": counted,
        "seconds": seconds,
        "own_seconds_per_iteration": (loop - inside) / total_iterations if ops else math.nan,
        "iterations": total_iterations,
        "tune": tune,
    }


def _nuts_steps(idata, group):
    return np.asarray(idata[group]["n_steps"].values, dtype=np.int64)


def _run_nuts(sampler: Sampler, model, seed, s: _Settings) -> dict:
    import pymc as pm

    twin = s.gradient_model
    if twin is None:
        raise ValueError("gradient_model: 'nuts' needs a differentiable twin of the model")
    if "nuts" not in s.pilots:
        pilot_tune, pilot_draws = s.nuts_pilot
        with twin, _quiet():
            step = pm.NUTS(**sampler.options)
        pilot = _pm_sample(twin, step, pilot_tune, pilot_draws, 1, seed + 7919)
        s.pilots["nuts"] = (
            float(_nuts_steps(pilot, "warmup_sample_stats").mean()),
            float(_nuts_steps(pilot, "sample_stats").mean()),
        )
    g_tune, g_draw = s.pilots["nuts"]
    share = s.budget / s.chains
    tune = max(1, round(s.tune_fraction * share / g_tune))
    draws = max(2, math.ceil(1.5 * max(share - tune * g_tune, 0) / g_draw) + 10)
    with twin, _quiet():
        step = pm.NUTS(**sampler.options)
    start = time.perf_counter()
    idata = _pm_sample(twin, step, tune, draws, s.chains, seed)
    seconds = time.perf_counter() - start
    warm = _nuts_steps(idata, "warmup_sample_stats").sum(axis=1)
    cumulative = warm[:, None] + np.cumsum(_nuts_steps(idata, "sample_stats"), axis=1)
    keep = int(max(2, np.min(np.sum(cumulative <= share, axis=1))))
    evaluations = int(np.sum(cumulative[:, keep - 1]))
    sampling_time = float(idata["posterior"].attrs.get("sampling_time", seconds))
    idata = idata.isel(draw=slice(0, keep))
    fraction = (tune + keep) / (tune + draws)
    return {
        "idata": idata,
        "evaluations": evaluations,
        "counted": evaluations,
        "seconds": seconds * fraction,
        "own_seconds_per_iteration": sampling_time / (s.chains * (tune + draws)),
        "iterations": s.chains * (tune + keep),
        "tune": tune,
    }


def _run_smc(sampler: Sampler, model, seed, s: _Settings) -> dict:
    ops = _counting_ops(model)
    options = dict(sampler.options)
    prior_scale = options.pop("prior_scale", s.smc_prior_scale)
    if "smc" not in s.pilots:
        n = s.smc_pilot_particles
        pilot = run_smc(model, n, prior_scale=prior_scale, random_seed=seed + 7919, **options)
        s.pilots["smc"] = [pilot["evaluations"] / n]
    # evaluations per particle: running mean over the pilot and the earlier replicates
    particles = max(2, round(s.budget / float(np.mean(s.pilots["smc"]))))
    _reset(ops)
    start = time.perf_counter()
    out = run_smc(model, particles, prior_scale=prior_scale, random_seed=seed, **options)
    seconds = time.perf_counter() - start
    measured, inside = _measured(ops)
    s.pilots["smc"].append(out["evaluations"] / particles)
    return {
        "idata": out["idata"],
        "evaluations": measured if measured is not None else out["evaluations"],
        "counted": out["evaluations"],
        "seconds": seconds,
        "own_seconds_per_iteration": math.nan,
        "iterations": particles,
        "tune": out["stages"],
    }


def _run_emcee(sampler: Sampler, model, seed, s: _Settings) -> dict:
    ops = _counting_ops(model)
    options = {"n_walkers": s.emcee_walkers, "tune_fraction": s.tune_fraction}
    options.update(sampler.options)
    _reset(ops)
    start = time.perf_counter()
    out = run_emcee(model, s.budget, random_seed=seed, **options)
    seconds = time.perf_counter() - start
    measured, inside = _measured(ops)
    iterations = out["walkers"] * out["iterations"]
    return {
        "idata": out["idata"],
        "evaluations": measured if measured is not None else out["evaluations"],
        "counted": out["evaluations"],
        "seconds": seconds,
        "own_seconds_per_iteration": (seconds - inside) / iterations if ops else math.nan,
        "iterations": iterations,
        "tune": out["tune"],
    }


def _run_custom(sampler: Sampler, model, seed, s: _Settings) -> dict:
    start = time.perf_counter()
    out = dict(sampler.run(model, s.budget, seed))
    out.setdefault("seconds", time.perf_counter() - start)
    out.setdefault("counted", out["evaluations"])
    out.setdefault("own_seconds_per_iteration", math.nan)
    out.setdefault("iterations", math.nan)
    out.setdefault("tune", 0)
    return out


_RUNNERS = {
    "step": _run_step,
    "nuts": _run_nuts,
    "smc": _run_smc,
    "emcee": _run_emcee,
    "custom": _run_custom,
}


# ------------------------------------------------------------------------------------ analysis
def _estimation_draws(sampler: Sampler, idata):
    if sampler.estimates is not None:
        return sampler.estimates(idata)
    stats = idata["sample_stats"] if "sample_stats" in idata.children else None
    if stats is not None and "exploring" in stats.data_vars:
        from .steps.ckam import sampling_phase

        return sampling_phase(idata)
    return idata


def _arviz_diagnostics(draws: np.ndarray) -> dict[str, np.ndarray]:
    """Rank-normalised bulk/tail ESS and R-hat of x and x² for draws ``(chain, draw, k)``."""
    from arviz import ess, rhat

    k = draws.shape[-1]
    out = {}
    if draws.shape[1] < 4:
        nan = np.full(2 * k, math.nan)
        return {"ess_bulk": nan, "ess_tail": nan, "r_hat": nan}
    both = np.concatenate([draws, draws**2], axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["ess_bulk"] = np.asarray(ess(both, method="bulk"), dtype=float)
        out["ess_tail"] = np.asarray(ess(both, method="tail", prob=(0.05, 0.95)), dtype=float)
        out["r_hat"] = np.asarray(rhat(both, method="rank"), dtype=float)
    return out


def _labels(idata, var_names) -> list[str]:
    posterior = idata["posterior"]
    names = list(posterior.data_vars) if var_names is None else list(var_names)
    labels = []
    for name in names:
        shape = posterior[name].shape[2:]
        if not shape:
            labels.append(name)
        else:
            labels.extend(f"{name}[{','.join(map(str, i))}]" for i in np.ndindex(*shape))
    return labels


def _check_count(name, replicate, result, budget, kind):
    evaluations, counted = result["evaluations"], result["counted"]
    if kind in ("step", "emcee") and evaluations != counted:
        warnings.warn(
            f"{name} replicate {replicate}: the counting op saw {evaluations} evaluations, the "
            f"{kind} formula gives {counted}",
            UserWarning,
            stacklevel=3,
        )
    tolerance = 0.25 if kind == "smc" else 0.01  # SMC's count is not fixed in advance
    if evaluations > (1 + tolerance) * budget:
        warnings.warn(
            f"{name} replicate {replicate}: {evaluations} evaluations exceed the budget {budget} "
            f"by more than {tolerance:.0%}",
            UserWarning,
            stacklevel=3,
        )


def compare_samplers(
    model,
    samplers,
    budget: int = 12_000,
    replicates: int = 10,
    reference=None,
    *,
    var_names: Sequence[str] | None = None,
    gradient_model=None,
    tune_fraction: float = 0.5,
    chains: int = 1,
    random_seed: int = 0,
    smc_pilot_particles: int = 200,
    smc_prior_scale: float = 10.0,
    emcee_walkers: int = 32,
    keep_draws: int = 20_000,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Run every sampler ``replicates`` times at an equal budget of counted target evaluations.

    See the module documentation for how the budget maps to tuning and draws per sampler kind.

    Parameters
    ----------
    model : pymc.Model
        The model as the samplers see it; count evaluations by putting the likelihood behind a
        :class:`~pymc_kernel_steps.targets.CountingLogp` (a black box without gradient).
    samplers : mapping, sequence or single specification
        ``{name: spec}``, a list of specs or ``(name, spec)`` pairs, where a spec is anything
        :func:`as_sampler` accepts: ``"nuts"``, ``"smc"``, ``"emcee"``, ``"demetropolisz"``,
        ``"metropolis"``, a step class, a step factory, or a :class:`Sampler`.
    budget : int
        Target evaluations per replicate (gradient evaluations for NUTS), tuning included.
    replicates : int
        Independent runs per sampler (seeds from ``random_seed``; replicate ``r`` of every
        sampler gets the same seed). At least 2 when a reference is given.
    reference : Reference, dict, Target, array of draws, optional
        The truth (see :meth:`Reference.coerce`), over the flattened, concatenated ``var_names``
        (the order of :func:`~pymc_kernel_steps.diagnostics.posterior_draws`). Without it only
        the ArviZ diagnostics are computed.
    var_names : list of str, optional
        Variables to assess (default: every posterior variable).
    gradient_model : pymc.Model, optional
        A differentiable twin of ``model`` (same variables and density), needed for ``"nuts"``.
    tune_fraction : float
        Fraction of each budget spent tuning (burn-in for emcee), in ``[0, 1)``.
    chains : int
        Chains per replicate for PyMC step methods and NUTS (the budget is split between them).
    random_seed : int
    smc_pilot_particles : int
        Particles of the (uncharged) pilot run that calibrates the SMC particle count.
    smc_prior_scale : float
        Prior scale for SMC on a model with a flat prior (see :func:`run_smc`).
    emcee_walkers : int
        Minimum number of emcee walkers (at least ``2 × dim`` are used).
    keep_draws : int
        Draws per sampler kept (thinned, pooled over replicates) in ``df.attrs["draws"]`` for
        :func:`plot_comparison`; 0 keeps none.
    progress : callable, optional
        Called with a short message after every run (e.g. ``print``).

    Returns
    -------
    pandas.DataFrame
        Tidy: one row per (sampler, replicate, statistic, coordinate), columns

        ``sampler``, ``kind``, ``replicate``, ``seed``, ``statistic`` (``"mean"`` of ``x_i`` or
        ``"second_moment"``, the mean of ``x_i²``), ``coordinate`` (int), ``label``,
        ``estimate``, ``truth``, ``var_f`` (``Var_π(f)``), ``var_f_estimated`` (True when
        ``Var_π(f)`` came from the pooled draws), ``sq_error``,
        ``ess_err`` and ``ess_err_per_1000`` (per sampler, statistic and coordinate: over the
        replicates, ``Var_π(f) / MSE`` and that per 1000 mean measured evaluations),
        ``ess_bulk``, ``ess_tail``, ``r_hat`` (ArviZ, within the replicate, of ``f``),
        ``ess_bulk_pooled``, ``ess_tail_pooled``, ``r_hat_pooled`` (ArviZ with every chain of
        every replicate of the sampler as one multi-chain run: R-hat then sees replicates that
        disagree), ``evaluations`` (measured), ``counted`` (implied by the kind), ``budget``,
        ``seconds`` (wall time), ``own_seconds_per_iteration`` (wall time outside the counting
        ops per iteration; NaN where not measurable), ``iterations``, ``draws`` (per chain,
        used for estimates), ``chains``. ``df.attrs`` holds ``reference`` (a dict),
        ``budget``, ``replicates`` and ``draws`` (per sampler, pooled thinned draws).

    Raises
    ------
    ValueError
        For a budget below 1, fewer than 2 replicates with a reference, an unknown sampler, a
        bad ``tune_fraction`` or ``chains``, NUTS without ``gradient_model``.
    """
    import numbers

    if not isinstance(budget, numbers.Integral) or budget < 1:
        raise ValueError(f"budget must be a positive integer of evaluations, got {budget!r}")
    if not isinstance(replicates, numbers.Integral) or replicates < 1:
        raise ValueError(f"replicates must be a positive integer, got {replicates!r}")
    if not 0 <= tune_fraction < 1:
        raise ValueError(f"tune_fraction must lie in [0, 1), got {tune_fraction!r}")
    if not isinstance(chains, numbers.Integral) or chains < 1:
        raise ValueError(f"chains must be a positive integer, got {chains!r}")
    ref = Reference.coerce(reference)
    if ref is not None and replicates < 2:
        raise ValueError(
            f"replicates must be at least 2 to estimate an error-based ESS, got {replicates}"
        )
    specs = _as_samplers(samplers)
    if any(s.kind == "nuts" for s in specs) and gradient_model is None:
        raise ValueError("gradient_model: 'nuts' needs a differentiable twin of the model")
    seeds = [
        int(s.generate_state(1)[0] % (2**31))
        for s in np.random.SeedSequence(random_seed).spawn(replicates)
    ]
    settings = _Settings(
        budget=int(budget),
        tune_fraction=float(tune_fraction),
        chains=int(chains),
        gradient_model=gradient_model,
        smc_pilot_particles=int(smc_pilot_particles),
        smc_prior_scale=float(smc_prior_scale),
        emcee_walkers=int(emcee_walkers),
    )

    runs: dict[str, list[dict]] = {}
    labels = None
    for sampler in specs:
        settings.pilots.clear()
        runs[sampler.name] = []
        for r, seed in enumerate(seeds):
            result = _RUNNERS[sampler.kind](sampler, model, seed, settings)
            _check_count(sampler.name, r, result, budget, sampler.kind)
            idata = _estimation_draws(sampler, result.pop("idata"))
            result["draws_array"] = posterior_draws(idata, var_names)
            if labels is None:
                labels = _labels(idata, var_names)
            runs[sampler.name].append(result)
            if progress is not None:
                progress(
                    f"{sampler.name} replicate {r + 1}/{replicates}: "
                    f"{result['evaluations']} evaluations, {result['seconds']:.1f} s"
                )
    return _tidy(specs, runs, seeds, labels, ref, budget, replicates, keep_draws)


def _tidy(specs, runs, seeds, labels, ref, budget, replicates, keep_draws) -> pd.DataFrame:
    k = len(labels)
    var_f = np.full(2 * k, math.nan)
    truth = np.full(2 * k, math.nan)
    estimated = np.zeros(2 * k, dtype=bool)
    if ref is not None:
        if ref.mean.size != k:
            raise ValueError(
                f"reference: {ref.mean.size} coordinates, but the variables have {k} ({labels})"
            )
        truth = np.concatenate([ref.mean, ref.mean_sq])
        var_f[:k] = ref.var
        if ref.var_sq is not None:
            var_f[k:] = ref.var_sq
        else:  # Var(x²) from the pooled draws of every sampler: one scale for all
            pooled = np.concatenate(
                [res["draws_array"].reshape(-1, k) for rs in runs.values() for res in rs]
            )
            var_f[k:] = (pooled**2).var(axis=0, ddof=1)
            estimated[k:] = True

    frames, kept = [], {}
    for sampler in specs:
        results = runs[sampler.name]
        estimates = np.array(
            [
                np.concatenate([d.mean(axis=(0, 1)), (d**2).mean(axis=(0, 1))])
                for d in (res["draws_array"] for res in results)
            ]
        )
        sq_error = (estimates - truth) ** 2
        mse = sq_error.mean(axis=0) if len(results) > 1 else np.full(2 * k, math.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            ess_err = var_f / mse
        mean_evals = float(np.mean([res["evaluations"] for res in results]))
        ess_err_per_1000 = 1000.0 * ess_err / mean_evals
        n_draws = min(res["draws_array"].shape[1] for res in results)
        pooled_chains = np.concatenate([res["draws_array"][:, :n_draws] for res in results])
        pooled = _arviz_diagnostics(pooled_chains)
        if sampler.kind == "smc":  # particles are not a chain: no autocorrelation-based ESS
            pooled = {key: np.full(2 * k, math.nan) for key in pooled}
        if keep_draws:
            flat = pooled_chains.reshape(-1, k)
            step = max(1, math.ceil(len(flat) / keep_draws))
            kept[sampler.name] = flat[::step]
        for r, res in enumerate(results):
            draws = res["draws_array"]
            within = _arviz_diagnostics(draws)
            if sampler.kind == "smc":
                within = {key: np.full(2 * k, math.nan) for key in within}
            frames.append(
                pd.DataFrame(
                    {
                        "sampler": sampler.name,
                        "kind": sampler.kind,
                        "replicate": r,
                        "seed": seeds[r],
                        "statistic": np.repeat(STATISTICS, k),
                        "coordinate": np.tile(np.arange(k), 2),
                        "label": labels * 2,
                        "estimate": estimates[r],
                        "truth": truth,
                        "var_f": var_f,
                        "var_f_estimated": estimated,
                        "sq_error": sq_error[r],
                        "ess_err": ess_err,
                        "ess_err_per_1000": ess_err_per_1000,
                        "ess_bulk": within["ess_bulk"],
                        "ess_tail": within["ess_tail"],
                        "r_hat": within["r_hat"],
                        "ess_bulk_pooled": pooled["ess_bulk"],
                        "ess_tail_pooled": pooled["ess_tail"],
                        "r_hat_pooled": pooled["r_hat"],
                        "evaluations": int(res["evaluations"]),
                        "counted": int(res["counted"]),
                        "budget": int(budget),
                        "seconds": float(res["seconds"]),
                        "own_seconds_per_iteration": float(res["own_seconds_per_iteration"]),
                        "iterations": float(res["iterations"]),
                        "draws": int(draws.shape[1]),
                        "chains": int(draws.shape[0]),
                    }
                )
            )
    df = pd.concat(frames, ignore_index=True)
    df["sampler"] = pd.Categorical(df["sampler"], categories=[s.name for s in specs])
    df.attrs = {
        "budget": int(budget),
        "replicates": int(replicates),
        "reference": None
        if ref is None
        else {"mean": ref.mean, "var": ref.var, "var_sq": ref.var_sq, "draws": ref.draws},
        "labels": list(labels),
        "draws": kept,
    }
    return df


# ------------------------------------------------------------------------------------ summary
def _bootstrap_ess(sq_error, var_f, evaluations, n_boot, rng, level):
    """Percentile interval of the ESS_err per 1000 over replicates resampled with replacement."""
    replicates = sq_error.shape[0]
    idx = rng.integers(replicates, size=(n_boot, replicates))
    mse = sq_error[idx].mean(axis=1)  # (n_boot, coords)
    evals = evaluations[idx].mean(axis=1)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ess = 1000.0 * var_f[None, :] / mse / evals
    lo, hi = (1 - level) / 2, 1 - (1 - level) / 2
    return ess, lo, hi


def ess_err_table(
    df: pd.DataFrame, *, level: float = 0.9, n_boot: int = 1000, random_seed: int = 0
) -> pd.DataFrame:
    """One row per sampler: error-based ESS per 1000 evaluations next to ArviZ's figures.

    Parameters
    ----------
    df : pandas.DataFrame
        From :func:`compare_samplers`.
    level : float
        Coverage of the bootstrap intervals (replicates resampled with replacement).
    n_boot : int
        Bootstrap resamples.
    random_seed : int

    The ESS_err figures are computed from ``sq_error`` over the replicates in ``df``, so frames
    of separate runs of one sampler can be concatenated first (with distinct ``replicate``
    numbers); the pooled ArviZ figures are then those of the first replicate's run.

    Returns
    -------
    pandas.DataFrame
        Indexed by sampler: ``evaluations`` (mean measured), ``budget``, and for
        ``stat`` in (``mean``, ``second_moment``): ``{stat}_worst`` (smallest ESS_err per 1000
        over coordinates), its interval ``{stat}_worst_lo``/``_hi``, ``{stat}_median``;
        ``ess_bulk_per_1000`` and ``ess_tail_per_1000`` (smallest pooled multi-chain ArviZ
        ESS of ``x`` and ``x²`` per 1000 evaluations of the pooled replicates), ``max_r_hat``
        (pooled), ``ess_bulk_within_per_1000`` (median over replicates of the smallest
        within-run bulk ESS per 1000 evaluations: what a single run would report),
        ``seconds`` (median wall time per replicate), ``own_ms_per_iteration`` (median).
    """
    rng = np.random.default_rng(random_seed)
    rows = {}
    for name, group in df.groupby("sampler", observed=True, sort=False):
        per_run = group.drop_duplicates("replicate").set_index("replicate").sort_index()
        evaluations = per_run["evaluations"].to_numpy(float)
        row = {"evaluations": evaluations.mean(), "budget": int(per_run["budget"].iloc[0])}
        for stat in STATISTICS:
            sub = group[group["statistic"] == stat]
            wide = sub.pivot(index="replicate", columns="coordinate", values="sq_error")
            var_f = sub.groupby("coordinate")["var_f"].first().to_numpy()
            with np.errstate(divide="ignore", invalid="ignore"):  # from sq_error: frames merge
                mse = wide.to_numpy().mean(axis=0) if len(wide) > 1 else np.nan
                ess = 1000.0 * var_f / mse / evaluations.mean()
            row[f"{stat}_worst"] = float(np.nanmin(ess)) if np.any(np.isfinite(ess)) else math.nan
            row[f"{stat}_median"] = (
                float(np.nanmedian(ess)) if np.any(np.isfinite(ess)) else (math.nan)
            )
            if len(wide) > 1 and np.all(np.isfinite(var_f)):
                boot, lo, hi = _bootstrap_ess(
                    wide.to_numpy(), var_f, evaluations, n_boot, rng, level
                )
                worst = np.nanmin(boot, axis=1)
                row[f"{stat}_worst_lo"] = float(np.quantile(worst, lo))
                row[f"{stat}_worst_hi"] = float(np.quantile(worst, hi))
            else:
                row[f"{stat}_worst_lo"] = row[f"{stat}_worst_hi"] = math.nan
        pooled_evals = evaluations.sum()
        first = group[group["replicate"] == group["replicate"].min()]
        for key in ("ess_bulk", "ess_tail"):
            values = first[f"{key}_pooled"].to_numpy(float)
            row[f"{key}_per_1000"] = (
                1000.0 * float(np.nanmin(values)) / pooled_evals
                if np.any(np.isfinite(values))
                else math.nan
            )
        within = group.groupby("replicate")["ess_bulk"].min().to_numpy(float)
        within = 1000.0 * within / evaluations
        row["ess_bulk_within_per_1000"] = (
            float(np.nanmedian(within)) if np.any(np.isfinite(within)) else math.nan
        )
        r_hat = first["r_hat_pooled"].to_numpy(float)
        row["max_r_hat"] = float(np.nanmax(r_hat)) if np.any(np.isfinite(r_hat)) else math.nan
        row["seconds"] = float(per_run["seconds"].median())
        row["own_ms_per_iteration"] = 1000.0 * float(per_run["own_seconds_per_iteration"].median())
        rows[name] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "sampler"
    return table


# -------------------------------------------------------------------------------------- plots
def _density(values, grid, max_points: int = 5000):
    """Gaussian kernel density estimate of ``values`` on ``grid`` (thinned to ``max_points``)."""
    from scipy.stats import gaussian_kde

    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)][:: max(1, len(values) // max_points)]
    if len(values) < 2 or np.ptp(values) == 0:
        return np.zeros_like(grid)
    return gaussian_kde(values)(grid)


def plot_comparison(
    df: pd.DataFrame,
    *,
    statistic: str = "mean",
    coordinates: Sequence[int] | None = None,
    n_boot: int = 1000,
    level: float = 0.9,
    random_seed: int = 0,
    figsize: tuple[float, float] | None = None,
):
    """ESS_err per 1000 evaluations with its spread over replicates, and marginals vs the truth.

    Left panel: per sampler the worst-coordinate ESS_err per 1000 evaluations of ``statistic``
    (a bar), the bootstrap interval over replicates (a line, ``level`` coverage) and the
    worst-coordinate value of each bootstrap resample as faint points; log scale. The other
    panels: the marginal density (Gaussian KDE) of each selected coordinate from each sampler's
    draws pooled over replicates (``df.attrs["draws"]``) against the reference draws (black,
    when the reference has draws) or the reference mean ± sd (black lines).

    Parameters
    ----------
    df : pandas.DataFrame
        From :func:`compare_samplers`.
    statistic : {"mean", "second_moment"}
    coordinates : sequence of int, optional
        Coordinates whose marginals are drawn (default: the first two, at most).
    n_boot, level, random_seed
        Bootstrap settings of the interval.
    figsize : tuple, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"plot_comparison needs matplotlib: {BENCH_EXTRA}") from err
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    labels = df.attrs.get("labels") or sorted(df["label"].unique())
    draws = df.attrs.get("draws") or {}
    reference = df.attrs.get("reference")
    if coordinates is None:
        coordinates = list(range(min(2, len(labels)))) if draws else []
    samplers = list(df["sampler"].cat.categories if hasattr(df["sampler"], "cat") else [])
    samplers = [s for s in samplers if s in set(df["sampler"])] or list(df["sampler"].unique())
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {s: colors[i % len(colors)] for i, s in enumerate(samplers)}
    panels = 1 + len(coordinates)
    width = max(4.2, 0.75 * len(samplers)) + 4.2 * len(coordinates)
    fig, axes = plt.subplots(1, panels, figsize=figsize or (width, 3.8), squeeze=False)
    ax = axes[0, 0]
    rng = np.random.default_rng(random_seed)
    for i, name in enumerate(samplers):
        group = df[(df["sampler"] == name) & (df["statistic"] == statistic)]
        wide = group.pivot(index="replicate", columns="coordinate", values="sq_error")
        var_f = group.groupby("coordinate")["var_f"].first().to_numpy()
        evaluations = (
            group.drop_duplicates("replicate").sort_values("replicate")["evaluations"].to_numpy()
        )
        point = float(np.nanmin(group.groupby("coordinate")["ess_err_per_1000"].first()))
        ax.bar(i, point, color=color[name], alpha=0.6)
        if len(wide) > 1 and np.all(np.isfinite(var_f)):
            boot, lo, hi = _bootstrap_ess(
                wide.to_numpy(), var_f, evaluations.astype(float), n_boot, rng, level
            )
            worst = np.nanmin(boot, axis=1)
            jitter = rng.uniform(-0.25, 0.25, size=min(200, len(worst)))
            ax.plot(i + jitter, worst[: len(jitter)], ".", color=color[name], alpha=0.15, ms=3)
            ax.vlines(i, np.quantile(worst, lo), np.quantile(worst, hi), color="k", lw=1.5)
    ax.set_xticks(range(len(samplers)), samplers, rotation=30, ha="right")
    ax.set_yscale("log")
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    pretty = "E[x]" if statistic == "mean" else "E[x²]"
    ax.set_ylabel(f"ESS_err of {pretty} per 1000 evaluations\n(worst coordinate)")
    budget = df.attrs.get("budget")
    if budget is None and "budget" in df:  # a frame read back from its CSV
        budget = int(df["budget"].iloc[0])
    budget_text = "?" if budget is None else f"{int(budget):,}"
    ax.set_title(
        f"{budget_text} evaluations per run, {df['replicate'].nunique()} runs per sampler",
        fontsize="medium",
    )
    ref_draws = None if reference is None else reference.get("draws")
    for j, c in enumerate(coordinates, start=1):
        ax = axes[0, j]
        source = (
            ref_draws[:, c]
            if ref_draws is not None
            else np.concatenate([d[:, c] for d in draws.values()])
        )
        grid = np.linspace(*np.quantile(source, [0.002, 0.998]), 200)
        for name in samplers:
            if name in draws:
                ax.plot(grid, _density(draws[name][:, c], grid), color=color[name], lw=1.2)
        if ref_draws is not None:
            ax.plot(grid, _density(ref_draws[:, c], grid), color="k", lw=2.0)
        elif reference is not None:
            m, s = reference["mean"][c], math.sqrt(reference["var"][c])
            for x in (m - s, m, m + s):
                ax.axvline(x, color="k", lw=1.0 if x != m else 1.5, ls="--" if x != m else "-")
        ax.set_title(f"{labels[c]} (pooled replicates)")
        ax.set_yticks([])
    if not coordinates:  # the bars are labelled on their axis: no legend needed
        fig.tight_layout()
        return fig
    handles = [plt.Line2D([], [], color=color[s], label=s) for s in samplers]
    if reference is not None:
        handles.append(plt.Line2D([], [], color="k", label="reference"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig
