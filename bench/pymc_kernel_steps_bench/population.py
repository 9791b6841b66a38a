"""The population peers at a budget of counted evaluations: ``emcee``'s affine-invariant
ensemble (:func:`run_emcee`) and PyMC's SMC (:func:`run_smc`), in this process."""

from __future__ import annotations

import numpy as np

from ._util import BENCH_EXTRA, _datatree, _unconstrained

__all__ = ["run_emcee", "run_smc"]


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


#: rounds of prior draws :func:`prior_population` makes before giving up
PRIOR_POPULATION_ROUNDS = 20


def prior_population(model, particles: int, random_seed=None) -> dict[str, np.ndarray]:
    """``particles`` draws from the prior of ``model``'s free variables, as values of its value
    variables (transformed), ignoring the variables' ``initval``.

    ``pm.sample_smc`` (PyMC 6.4) starts every particle of a variable that has an ``initval`` at
    that value instead of drawing it from the prior: its IMH kernel then never moves that
    variable. This population is drawn from the prior. A draw outside a transform's support
    (an unordered draw of an ``ordered`` variable) is rejected: the model's prior is the prior
    restricted to that support, and rejection samples it exactly.

    Raises
    ------
    ValueError
        If :data:`PRIOR_POPULATION_ROUNDS` rounds of ``particles`` draws give too few valid ones.
    """
    import pymc as pm
    from pymc.initial_point import make_initial_point_expression

    expression = make_initial_point_expression(
        free_rvs=model.free_RVs,
        rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies={},
        default_strategy="prior",
        return_transformed=True,
    )
    names = [model.rvs_to_values[rv].name for rv in model.free_RVs]
    rng = np.random.default_rng(random_seed)
    kept: dict[str, list] = {name: [] for name in names}
    valid = 0
    for _ in range(PRIOR_POPULATION_ROUNDS):
        n = max(2, int(particles))
        values = pm.draw(expression, draws=n, random_seed=rng)
        finite = np.all([np.isfinite(v.reshape(n, -1)).all(axis=1) for v in values], axis=0)
        for name, value in zip(names, values, strict=True):
            kept[name].append(value[finite])
        valid += int(finite.sum())
        if valid >= particles:
            return {name: np.concatenate(parts)[:particles] for name, parts in kept.items()}
    raise ValueError(
        f"model: {valid} of {PRIOR_POPULATION_ROUNDS * particles} prior draws lie in the "
        "support of the variables' transforms; too few for an SMC population"
    )


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
    if any(value is not None for value in sampled.rvs_to_initial_values.values()):
        # PyMC's SMC would start every particle at the initval: a population from the prior
        seed = np.random.SeedSequence(random_seed).spawn(1)[0]
        kernel_kwargs = {**kernel_kwargs, "start": prior_population(sampled, particles, seed)}
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
