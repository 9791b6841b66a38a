"""The posteriordb suite as a benchmark: every posterior a black box, every sampler at one budget.

:func:`run_posterior` runs this package's samplers and the peers (as :mod:`.peers` configures
them) ``replicates`` times on :func:`~pymc_kernel_steps_bench.blackbox.black_box` of a suite
posterior at a budget of counted likelihood evaluations, through
:func:`~pymc_kernel_steps_bench.runners.compare_samplers`, and returns its tidy frame.
:func:`suite_table` turns the frames into the suite's figures.

The metric
----------
For each sampler, statistic (``E[x_i]`` and ``E[x_i²]``) and coordinate, over the replicates,

    ESS_err per 1000 = 1000 Var_π(f) / MSE_adj / (mean evaluations),
    MSE_adj = max(MSE − mcse_ref², mcse_ref²),

``mcse_ref`` the reference draws' own Monte Carlo standard error of ``E[f]`` (ArviZ's ``mcse``):
the reference's error, which every squared error contains on average, is subtracted, and no
figure claims more accuracy than the reference can resolve (``capped`` marks a figure at that
floor: the sampler may be better still). ``Var_π(f)`` comes from the reference draws. A sampler's
figure is its worst coordinate's; intervals are percentiles of bootstrap resamples of the
replicates.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from . import posteriordb
from .blackbox import black_box
from .peers import FIELD_PEERS, field_peer, nuts_finite_differences_sampler, run_emcee_expert

__all__ = [
    "OURS",
    "OUR_VARIANTS",
    "FIELD",
    "PEERS",
    "STATISTIC_LABELS",
    "SUITE",
    "Posterior",
    "Study",
    "is_ours",
    "read_runs",
    "reference",
    "run_posterior",
    "step_chains",
    "suite_table",
]

#: this package's samplers in the suite, by label
OURS = ("KMCLite", "KMCFinite", "KAMH", "AdaptiveMetropolis", "CKAM")
#: variants of our samplers a study can run by label, ``"<sampler>[<moves>]"`` (not run by
#: default): ``moves="learned"`` (the default since issue 24) and ``moves="fixed"`` (the former
#: default, the papers' form)
OUR_VARIANTS = (
    "KMCLite[learned]",
    "KMCFinite[learned]",
    "KAMH[learned]",
    "KMCLite[fixed]",
    "KMCFinite[fixed]",
    "KAMH[fixed]",
)


def is_ours(label: str) -> bool:
    """Whether a sampler's label is one of ours (a variant ``"KMCLite[learned]"`` included)."""
    return str(label).split("[", 1)[0] in OURS


#: the field's samplers for expensive black boxes in the suite (issue 49; the ``peers`` extra)
FIELD = tuple(FIELD_PEERS)
#: the peers in the suite, by label
PEERS = ("SMC", "emcee", "DEMetropolisZ", "NUTS-FD", *FIELD)
STATISTICS = ("mean", "second_moment")
#: how a study's tables name its statistics
STATISTIC_LABELS = {"mean": "E[x]", "second_moment": "E[x²]"}


def read_runs(path) -> pd.DataFrame:
    """A study's tidy frame of runs as written (``git_commit`` stays text: ``"14e5781"`` is not a
    number)."""
    return pd.read_csv(path, dtype={"git_commit": str})


def reference(name: str):
    """The :class:`~pymc_kernel_steps_bench.references.Reference` of a suite posterior (moments and
    ``Var(x²)`` from posteriordb's draws) and the draws' Monte Carlo standard errors of ``E[x]``
    and ``E[x²]``, ``(2 k,)``."""
    import arviz as az

    from .references import Reference

    draws = posteriordb.reference_draws(name)
    flat = draws.reshape(-1, draws.shape[-1])
    ref = Reference.from_draws(flat)
    mcse = np.concatenate([az.mcse(draws, method="mean"), az.mcse(draws**2, method="mean")])
    return ref, np.asarray(mcse, dtype=float)


def _samplers(fd_model, dim: int, names) -> list:
    import pymc as pm

    import pymc_kernel_steps as pks

    from .runners import Sampler

    available = {
        "KMCLite": Sampler("KMCLite", "step", factory=pks.KMCLite),
        "KMCFinite": Sampler("KMCFinite", "step", factory=pks.KMCFinite),
        "KAMH": Sampler("KAMH", "step", factory=pks.KAMH),
        "AdaptiveMetropolis": Sampler("AdaptiveMetropolis", "step", factory=pks.AdaptiveMetropolis),
        "CKAM": Sampler("CKAM", "step", factory=pks.CKAM),
        "SMC": Sampler("SMC", "smc"),
        "emcee": Sampler("emcee", "custom", run=run_emcee_expert),
        "DEMetropolisZ": Sampler("DEMetropolisZ", "step", factory=pm.DEMetropolisZ),
        "NUTS-FD": nuts_finite_differences_sampler(fd_model, dim),
        **{label: field_peer(label) for label in FIELD},
    }
    for label in OUR_VARIANTS:
        base, moves = label[:-1].split("[")
        factory = functools.partial(getattr(pks, base), moves=moves)
        available[label] = Sampler(label, "step", factory=factory)
    unknown = set(names) - set(available)
    if unknown:
        raise ValueError(f"samplers: unknown {sorted(unknown)}; known {sorted(available)}")
    return [available[n] for n in names]


class Posterior(NamedTuple):
    """A study's posterior: its model, reference and the reference's Monte Carlo standard errors
    of ``E[x]`` and ``E[x²]`` (``(2 k,)``; zeros for exact moments), the model with
    finite-difference gradients (for ``NUTS-FD``; None: not offered) and the variables in the
    reference's order (None: the model's)."""

    model: Any
    reference: Any
    mcse: np.ndarray
    fd_model: Any = None
    var_names: list[str] | None = None


@dataclass(frozen=True)
class Study:
    """A benchmark study: a black box of each of its posteriors (``posterior(name)``, a
    :class:`Posterior`), every sampler at one budget of counted evaluations."""

    posterior: Callable[[str], Posterior]
    #: the samplers the study runs by default, by label
    samplers: tuple[str, ...]

    def run(
        self,
        name: str,
        *,
        budget: int = 10_000,
        replicates: int = 10,
        samplers=None,
        random_seed: int = 0,
        progress=None,
        chains: int = 1,
    ) -> pd.DataFrame:
        """Run ``samplers`` (labels; default: the study's) ``replicates`` times on the black box
        of posterior ``name``, each run ``chains`` chains of the step methods sharing the budget
        (population samplers ignore it).

        Returns
        -------
        pandas.DataFrame
            :func:`~pymc_kernel_steps_bench.runners.compare_samplers`'s tidy frame with the
            columns ``posterior``, ``dim`` and ``mcse_ref`` (the reference's Monte Carlo error of
            the row's statistic and coordinate) added.
        """
        from .runners import compare_samplers

        posterior = self.posterior(name)
        model = posterior.model
        dim = int(sum(np.size(v) for v in model.initial_point().values()))
        df = compare_samplers(
            black_box(model),
            _samplers(posterior.fd_model, dim, self.samplers if samplers is None else samplers),
            budget=budget,
            replicates=replicates,
            reference=posterior.reference,
            var_names=posterior.var_names,
            random_seed=random_seed,
            keep_draws=0,
            progress=progress,
            chains=chains,
        )
        k = len(posterior.reference.mean)
        df.insert(0, "posterior", name)
        df.insert(1, "dim", dim)
        index = np.where(df["statistic"] == "mean", 0, k) + df["coordinate"].to_numpy()
        df["mcse_ref"] = posterior.mcse[index]
        return df


def step_chains(frame: pd.DataFrame) -> int:
    """The chains per run of the PyMC step methods in ``frame`` (rows of kind ``"step"``; 1
    when it does not say). Populations and custom runners (SMC, ``emcee``, ``NUTS-FD``) are
    not counted: populations run no chains, and ``NUTS-FD`` runs the step methods' count."""
    if "chains" not in frame or "kind" not in frame:
        return 1
    steps = frame.loc[frame["kind"] == "step", "chains"]
    return int(steps.max()) if len(steps) else 1


def _suite_posterior(name: str) -> Posterior:
    model = posteriordb.model(name, gradient=False)
    ref, mcse = reference(name)
    return Posterior(
        model,
        ref,
        mcse,
        fd_model=black_box(model, finite_differences=True),
        var_names=list(posteriordb.POSTERIORS[name].var_names),
    )


#: the posteriordb suite: its posteriors against posteriordb's reference draws
SUITE = Study(_suite_posterior, OURS + PEERS)
#: run the samplers on a suite posterior (:meth:`Study.run`)
run_posterior = SUITE.run


def _ess(sq_error, var_f, mcse_ref, evaluations):
    """Worst-coordinate ESS_err per 1000 (and whether it sits at the reference's floor) from
    squared errors ``(replicates, k)``; see the module notes."""
    mse = sq_error.mean(axis=0)
    floor = mcse_ref**2
    adjusted = np.maximum(mse - floor, floor)
    ess = 1000.0 * var_f / adjusted / evaluations
    worst = int(np.argmin(ess))
    return float(ess[worst]), bool(adjusted[worst] <= floor[worst])


def _per_sampler(group: pd.DataFrame, stat: str):
    sub = group[group["statistic"] == stat]
    wide = sub.pivot(index="replicate", columns="coordinate", values="sq_error").to_numpy()
    firsts = sub.groupby("coordinate")[["var_f", "mcse_ref"]].first()
    evaluations = group.drop_duplicates("replicate").sort_values("replicate")["evaluations"]
    return (
        wide,
        firsts["var_f"].to_numpy(),
        firsts["mcse_ref"].to_numpy(),
        evaluations.to_numpy(float),
    )


def suite_table(
    frames: pd.DataFrame, *, n_boot: int = 1000, level: float = 0.9, random_seed: int = 0
) -> pd.DataFrame:
    """One row per (posterior, sampler, statistic): the worst-coordinate ESS_err per 1000
    evaluations with its bootstrap interval and draws (for ratios), whether it is capped by the
    reference, the mean evaluations and the median wall time per run.

    Returns
    -------
    pandas.DataFrame
        Columns ``posterior``, ``dim``, ``sampler``, ``ours`` (bool), ``statistic``, ``ess``,
        ``lo``, ``hi``, ``capped``, ``evaluations``, ``at_budget`` (False: a sampler that
        cannot stop at the budget, scored at its own count), ``seconds``, ``boot`` (the bootstrap
        values, an array, same resampled replicates for every sampler of a posterior).
    """
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    rows = []
    for posterior, frame in frames.groupby("posterior", sort=False):
        replicates = frame["replicate"].nunique()
        # a posterior's resamples depend on its name alone, not on which others the table has
        rng = np.random.default_rng([random_seed, zlib.crc32(str(posterior).encode())])
        resamples = rng.integers(replicates, size=(n_boot, replicates))
        for sampler, group in frame.groupby("sampler", sort=False, observed=True):
            for stat in STATISTICS:
                sq_error, var_f, mcse_ref, evaluations = _per_sampler(group, stat)
                ess, capped = _ess(sq_error, var_f, mcse_ref, evaluations.mean())
                boot = np.array(
                    [
                        _ess(sq_error[r], var_f, mcse_ref, evaluations[r].mean())[0]
                        for r in resamples
                    ]
                )
                rows.append(
                    {
                        "posterior": posterior,
                        "dim": int(group["dim"].iloc[0]),
                        "sampler": str(sampler),
                        "ours": is_ours(sampler),
                        "statistic": stat,
                        "ess": ess,
                        "lo": float(np.quantile(boot, lo_q)),
                        "hi": float(np.quantile(boot, hi_q)),
                        "capped": capped,
                        "evaluations": float(evaluations.mean()),
                        "at_budget": bool(group["at_budget"].all())
                        if "at_budget" in group
                        else True,
                        "seconds": float(group.drop_duplicates("replicate")["seconds"].median()),
                        "boot": boot,
                    }
                )
    return pd.DataFrame(rows)


def ratios(table: pd.DataFrame, *, level: float = 0.9, variants: bool = False) -> pd.DataFrame:
    """Per posterior and statistic: our best sampler against the best peer (by point estimate),
    the ratio of their ESS_err and its bootstrap interval (ratios of the paired resamples).
    Our best is among our defaults, or also among the variants (``"KMCLite[fixed]"``) with
    ``variants``."""
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    rows = []
    for (posterior, stat), group in table.groupby(["posterior", "statistic"], sort=False):
        ours = group[group["ours"]]
        if not variants:
            ours = ours[~ours["sampler"].astype(str).str.contains("[", regex=False)]
        peers = group[~group["ours"]]
        if ours.empty or peers.empty:
            continue
        best = ours.loc[ours["ess"].idxmax()]
        peer = peers.loc[peers["ess"].idxmax()]
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = best["boot"] / peer["boot"]
            ratio = best["ess"] / peer["ess"]
        rows.append(
            {
                "posterior": posterior,
                "dim": int(group["dim"].iloc[0]),
                "statistic": stat,
                "ours": best["sampler"],
                "ours_ess": best["ess"],
                "ours_lo": best["lo"],
                "ours_hi": best["hi"],
                "ours_capped": bool(best["capped"]),
                "peer": peer["sampler"],
                "peer_ess": peer["ess"],
                "peer_lo": peer["lo"],
                "peer_hi": peer["hi"],
                "peer_capped": bool(peer["capped"]),
                "ratio": float(ratio),
                "ratio_lo": float(np.nanquantile(boot, lo_q)),
                "ratio_hi": float(np.nanquantile(boot, hi_q)),
            }
        )
    return pd.DataFrame(rows)


def geometric_mean(values) -> float:
    values = np.asarray(values, dtype=float)
    return float(math.exp(np.mean(np.log(values)))) if values.size else math.nan
