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
    each chain's initial point and its second differences (``i = 1 + 2–6 d``, the deterministic
    count of ``KernelStep.start_evaluations``, measured before the run and not charged; ``i = 0``
    for PyMC's). Each replicate runs ``c``
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
    it for exact i.i.d. draws; :mod:`~pymc_kernel_steps_bench.peers` for emcee, NUTS on finite
    differences and the field's samplers). An importance-weighted sampler (nautilus, pocoMC,
    dynesty) adds ``weights``, one per draw of its single chain: its estimates are weighted
    moments, and ArviZ's ESS and R-hat are not computed (weighted draws are not a chain). A
    sampler that cannot stop at the budget (pocoMC) adds ``at_budget=False``: it is scored at its
    own count, without the over-budget warning, and its rows say ``at_budget`` False.

The measured count (the calls seen by every
:class:`~pymc_kernel_steps_bench.targets.CountingLogp` in the model; everything runs in this
process, ``cores=1``) is checked against the count each kind implies
(:func:`~pymc_kernel_steps.diagnostics.count_evaluations`, or the formulas above) and against
the budget: a mismatch warns; the measured count is the one reported and used.
"""

from __future__ import annotations

import inspect
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pymc_kernel_steps.diagnostics import count_evaluations, posterior_draws

from ._util import _counting_ops, _measured, _quiet, _reset, sample_quietly
from .metrics import _tidy
from .population import run_emcee, run_smc
from .references import Reference

__all__ = [
    "SAMPLER_KINDS",
    "SAMPLER_NAMES",
    "Sampler",
    "as_sampler",
    "compare_samplers",
    "replicate_seeds",
]

#: sampler kinds understood by :func:`compare_samplers`
SAMPLER_KINDS = ("step", "nuts", "smc", "emcee", "custom")
#: names accepted as sampler specifications
SAMPLER_NAMES = ("nuts", "smc", "emcee", "demetropolisz", "metropolis")


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
        (a step class or ``lambda: KMCLite(trajectory=Trajectory(n_steps=20))``).
    run : callable, optional
        ``"custom"``: ``run(model, budget, seed) -> {"idata": ..., "evaluations": int}``; a
        ``run`` that takes a keyword ``chains`` is given the comparison's ``chains``.
    options : dict
        Keyword arguments for the kind: ``pm.sample`` (step), ``pm.NUTS`` (nuts, e.g.
        ``target_accept``), :func:`~.population.run_smc` keywords (smc: ``prior_scale``, IMH
        kernel keywords), :func:`~.population.run_emcee` keywords (emcee: ``n_walkers``,
        ``init_jitter``, ``moves``).
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
        returning a step (``lambda: KMCLite(trajectory=Trajectory(n_steps=20))``).
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

    from pymc_kernel_steps.steps.base import KernelStep

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


def _run_step(sampler: Sampler, model, seed, s: _Settings) -> dict:
    ops = _counting_ops(model)
    with model, _quiet():
        step = sampler.factory()
    kind, per_iteration = _step_cost(step, model)
    # this package's steps evaluate the initial point and its second differences once per chain
    # (a deterministic count, measured here before the counters are reset)
    initial = s.chains * step.start_evaluations(model.initial_point()) if kind == "kernel" else 0
    iterations = (s.budget - initial) // (per_iteration * s.chains)
    if iterations < 2:
        raise ValueError(f"budget: {s.budget} evaluations give fewer than 2 iterations per chain")
    tune = min(round(s.tune_fraction * iterations), iterations - 1)
    _reset(ops)
    start = time.perf_counter()
    idata = sample_quietly(model, step, tune, iterations - tune, s.chains, seed, **sampler.options)
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
        pilot = sample_quietly(twin, step, pilot_tune, pilot_draws, 1, seed + 7919)
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
    idata = sample_quietly(twin, step, tune, draws, s.chains, seed)
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
    takes_chains = "chains" in inspect.signature(sampler.run).parameters
    chains = {"chains": s.chains} if takes_chains else {}
    out = dict(sampler.run(model, s.budget, seed, **chains))
    out.setdefault("seconds", time.perf_counter() - start)
    out.setdefault("counted", out["evaluations"])
    out.setdefault("own_seconds_per_iteration", math.nan)
    out.setdefault("iterations", math.nan)
    out.setdefault("tune", 0)
    out.setdefault("weights", None)
    out.setdefault("at_budget", True)
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
        from pymc_kernel_steps.steps.ckam import sampling_phase

        return sampling_phase(idata)
    return idata


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
    if not result.get("at_budget", True):  # scored at its own count, marked in the frame
        return
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


def replicate_seeds(random_seed: int, replicates: int) -> list[int]:
    """The seed of each replicate in :func:`compare_samplers` (replicate ``r`` of every sampler
    gets ``replicate_seeds(random_seed, replicates)[r]``), to re-run one replicate alone."""
    return [
        int(s.generate_state(1)[0] % (2**31))
        for s in np.random.SeedSequence(random_seed).spawn(replicates)
    ]


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
    only_replicates: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Run every sampler ``replicates`` times at an equal budget of counted target evaluations.

    See the module documentation for how the budget maps to tuning and draws per sampler kind.

    Parameters
    ----------
    model : pymc.Model
        The model as the samplers see it; count evaluations by putting the likelihood behind a
        :class:`~pymc_kernel_steps_bench.targets.CountingLogp` (a black box without gradient).
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
        The truth (see :meth:`~.references.Reference.coerce`), over the flattened, concatenated
        ``var_names`` (the order of :func:`~pymc_kernel_steps.diagnostics.posterior_draws`).
        Without it only the ArviZ diagnostics are computed.
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
        Prior scale for SMC on a model with a flat prior (see :func:`~.population.run_smc`).
    emcee_walkers : int
        Minimum number of emcee walkers (at least ``2 × dim`` are used).
    keep_draws : int
        Draws per sampler kept (thinned, pooled over replicates) in ``df.attrs["draws"]`` for
        :func:`~.plots.plot_comparison`; 0 keeps none.
    progress : callable, optional
        Called with a short message after every run (e.g. ``print``).
    only_replicates : sequence of int, optional
        Run only these of the ``replicates`` (each with its seed in the whole study), so that a
        long study can be split between processes: the frames of its parts, concatenated, have
        the whole study's rows per replicate (the columns over replicates, ``ess_err``,
        ``ess_err_per_1000`` and the pooled diagnostics, are then each part's own).

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
        ``mcse`` (ArviZ's Monte Carlo standard error of the replicate's estimate; NaN for SMC,
        whose particles are not a chain),
        ``ess_bulk_pooled``, ``ess_tail_pooled``, ``r_hat_pooled`` (ArviZ with every chain of
        every replicate of the sampler as one multi-chain run: R-hat then sees replicates that
        disagree), ``evaluations`` (measured), ``counted`` (implied by the kind), ``budget``,
        ``at_budget`` (False for a sampler scored at its own count, which cannot stop at the
        budget), ``weighted`` (its estimates are weighted moments),
        ``seconds`` (wall time), ``own_seconds_per_iteration`` (wall time outside the counting
        ops per iteration; NaN where not measurable), ``iterations``, ``draws`` (per chain,
        used for estimates), ``chains``. ``df.attrs`` holds ``reference`` (a dict),
        ``budget``, ``replicates`` and ``draws`` (per sampler, pooled thinned draws).

    Raises
    ------
    ValueError
        For a budget below 1, fewer than 2 replicates with a reference, an unknown sampler, a
        bad ``tune_fraction`` or ``chains``, NUTS without ``gradient_model``, a replicate of
        ``only_replicates`` outside ``range(replicates)``.
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
    seeds = replicate_seeds(random_seed, replicates)
    indices = _replicate_indices(replicates, only_replicates)
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
        for r in indices:
            result = _RUNNERS[sampler.kind](sampler, model, seeds[r], settings)
            result.setdefault("weights", None)
            result.setdefault("at_budget", True)
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
    return _tidy(specs, runs, seeds, indices, labels, ref, budget, replicates, keep_draws)


def _replicate_indices(replicates: int, only_replicates) -> list[int]:
    """The replicates a study runs: all, or ``only_replicates`` (checked, in order)."""
    if only_replicates is None:
        return list(range(replicates))
    chosen = sorted(set(only_replicates))
    if not chosen or any(not 0 <= int(r) < replicates or int(r) != r for r in chosen):
        raise ValueError(
            f"only_replicates must name replicates in range({replicates}) (the study's "
            f"replicates), got {list(only_replicates)!r}"
        )
    return [int(r) for r in chosen]
