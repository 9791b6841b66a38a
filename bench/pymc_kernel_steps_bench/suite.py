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
    "DEFAULT",
    "OURS",
    "OUR_VARIANTS",
    "FIELD",
    "PEERS",
    "STATISTIC_LABELS",
    "SUITE",
    "Posterior",
    "Study",
    "geometric_mean_interval",
    "held_out_best",
    "is_ours",
    "read_runs",
    "reference",
    "run_posterior",
    "step_chains",
    "suite_table",
]

#: this package's samplers in the suite, by label
OURS = ("KMCLite", "KMCFinite", "KAMH", "AdaptiveMetropolis", "CKAM")
#: the sampler the README tells users to start with: the suite's headline is its figure alone
DEFAULT = "KMCLite"
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
        only_replicates=None,
    ) -> pd.DataFrame:
        """Run ``samplers`` (labels; default: the study's) ``replicates`` times on the black box
        of posterior ``name``, each run ``chains`` chains of the step methods sharing the budget
        (population samplers ignore it); ``only_replicates``: only those of the replicates
        (see :func:`~pymc_kernel_steps_bench.runners.compare_samplers`).

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
            only_replicates=only_replicates,
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


def _ess(sq_error, var_f, mcse_ref, evaluations, *, adjusted: bool = True):
    """Worst-coordinate ESS_err per 1000 (and whether it sits at the reference's floor) from
    squared errors ``(replicates, k)``; see the module notes. ``adjusted=False``: the raw
    figure, the mean squared error with the reference's error left in (never capped)."""
    mse = sq_error.mean(axis=0)
    if not adjusted:
        ess = 1000.0 * var_f / mse / evaluations
        return float(np.min(ess)), False
    floor = mcse_ref**2
    mse_adjusted = np.maximum(mse - floor, floor)
    ess = 1000.0 * var_f / mse_adjusted / evaluations
    worst = int(np.argmin(ess))
    return float(ess[worst]), bool(mse_adjusted[worst] <= floor[worst])


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


def _resamples(posterior, replicates: int, most: int, n_boot: int, random_seed: int):
    """Bootstrap resamples of a sampler's runs on ``posterior``. They depend on the posterior's
    name and the sampler's number of runs alone, not on which other posteriors the table has:
    samplers with as many runs resample the same runs (paired ratios); a sampler with fewer runs
    than the posterior's most (``most``) is resampled independently."""
    seed = [random_seed, zlib.crc32(str(posterior).encode())]
    if replicates != most:
        seed.append(replicates)
    return np.random.default_rng(seed).integers(replicates, size=(n_boot, replicates))


def suite_table(
    frames: pd.DataFrame, *, n_boot: int = 1000, level: float = 0.9, random_seed: int = 0
) -> pd.DataFrame:
    """One row per (posterior, sampler, statistic): the worst-coordinate ESS_err per 1000
    evaluations with its bootstrap interval and draws (for ratios), whether it is capped by the
    reference, the same raw (the reference's error not subtracted), the mean evaluations and
    the median wall time per run.

    Returns
    -------
    pandas.DataFrame
        Columns ``posterior``, ``dim``, ``sampler``, ``ours`` (bool), ``statistic``, ``ess``,
        ``lo``, ``hi``, ``capped``, ``evaluations``, ``at_budget`` (False: a sampler that
        cannot stop at the budget, scored at its own count), ``seconds``, ``boot`` (the bootstrap
        values, an array, same resampled replicates for every sampler of a posterior), and
        ``ess_raw``, ``lo_raw``, ``hi_raw``, ``boot_raw``, the raw figures.
    """
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    rows = []
    for posterior, frame in frames.groupby("posterior", sort=False):
        most = int(frame.groupby("sampler", observed=True)["replicate"].nunique().max())
        for sampler, group in frame.groupby("sampler", sort=False, observed=True):
            resamples = _resamples(
                posterior, group["replicate"].nunique(), most, n_boot, random_seed
            )
            for stat in STATISTICS:
                sq_error, var_f, mcse_ref, evaluations = _per_sampler(group, stat)
                ess, capped = _ess(sq_error, var_f, mcse_ref, evaluations.mean())
                boot = np.array(
                    [
                        _ess(sq_error[r], var_f, mcse_ref, evaluations[r].mean())[0]
                        for r in resamples
                    ]
                )
                ess_raw = _ess(sq_error, var_f, mcse_ref, evaluations.mean(), adjusted=False)[0]
                boot_raw = np.array(
                    [
                        _ess(sq_error[r], var_f, mcse_ref, evaluations[r].mean(), adjusted=False)[0]
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
                        "ess_raw": ess_raw,
                        "lo_raw": float(np.quantile(boot_raw, lo_q)),
                        "hi_raw": float(np.quantile(boot_raw, hi_q)),
                        "boot_raw": boot_raw,
                    }
                )
    return pd.DataFrame(rows)


def ratios(
    table: pd.DataFrame,
    *,
    level: float = 0.9,
    variants: bool = False,
    ours: str | None = None,
    raw: bool = False,
) -> pd.DataFrame:
    """Per posterior and statistic: one of our samplers against the best peer (by point
    estimate), the ratio of their ESS_err and its bootstrap interval (ratios of the paired
    resamples).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`suite_table`'s rows.
    level : float
        The intervals' coverage.
    variants : bool
        Our best is chosen among the variants (``"KMCLite[fixed]"``) too.
    ours : str, optional
        The sampler of ours to score (e.g. :data:`DEFAULT`); posteriors without its rows are
        left out. None: our best by point estimate, per posterior and statistic.
    raw : bool
        Score the raw figures (the reference's error left in).

    Returns
    -------
    pandas.DataFrame
        Columns ``posterior``, ``dim``, ``statistic``, ``ours``, ``ours_ess``, ``ours_lo``,
        ``ours_hi``, ``ours_capped``, ``peer`` (and its four), ``ratio``, ``ratio_lo``,
        ``ratio_hi`` and ``boot`` (the ratio's paired bootstrap values).
    """
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    suffix = "_raw" if raw else ""
    ess, lo, hi, boot_of = f"ess{suffix}", f"lo{suffix}", f"hi{suffix}", f"boot{suffix}"
    rows = []
    for (posterior, stat), group in table.groupby(["posterior", "statistic"], sort=False):
        mine = group[group["ours"]]
        if ours is not None:
            mine = mine[mine["sampler"] == ours]
        elif not variants:
            mine = mine[~mine["sampler"].astype(str).str.contains("[", regex=False)]
        peers = group[~group["ours"]]
        if mine.empty or peers.empty:
            continue
        best = mine.loc[mine[ess].idxmax()]
        peer = peers.loc[peers[ess].idxmax()]
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = best[boot_of] / peer[boot_of]
            ratio = best[ess] / peer[ess]
        rows.append(
            {
                "posterior": posterior,
                "dim": int(group["dim"].iloc[0]),
                "statistic": stat,
                "ours": best["sampler"],
                "ours_ess": best[ess],
                "ours_lo": best[lo],
                "ours_hi": best[hi],
                "ours_capped": bool(best["capped"]) and not raw,
                "peer": peer["sampler"],
                "peer_ess": peer[ess],
                "peer_lo": peer[lo],
                "peer_hi": peer[hi],
                "peer_capped": bool(peer["capped"]) and not raw,
                "ratio": float(ratio),
                "ratio_lo": float(np.nanquantile(boot, lo_q)),
                "ratio_hi": float(np.nanquantile(boot, hi_q)),
                "boot": boot,
            }
        )
    return pd.DataFrame(rows)


def held_out_best(
    frames: pd.DataFrame, *, level: float = 0.9, n_boot: int = 1000, random_seed: int = 0
) -> pd.DataFrame:
    """Our best sampler, and the best peer, chosen per posterior and statistic on the
    even-numbered runs and scored on the odd-numbered ones: a figure for "the best of ours"
    that the choice after the fact does not flatter.

    Returns
    -------
    pandas.DataFrame
        :func:`ratios`'s columns, the figures those of the held-out runs; posteriors with fewer
        than two runs are left out.
    """
    choose = frames[frames["replicate"] % 2 == 0]
    score = frames[frames["replicate"] % 2 == 1]
    if choose.empty or score.empty:
        return pd.DataFrame()
    chosen = suite_table(choose, n_boot=1, random_seed=random_seed)
    chosen = chosen[~chosen["sampler"].astype(str).str.contains("[", regex=False)]
    scored = suite_table(score, n_boot=n_boot, level=level, random_seed=random_seed)
    rows = []
    for (posterior, stat), group in chosen.groupby(["posterior", "statistic"], sort=False):
        mine, peers = group[group["ours"]], group[~group["ours"]]
        if mine.empty or peers.empty:
            continue
        labels = {
            mine.loc[mine["ess"].idxmax(), "sampler"],
            peers.loc[peers["ess"].idxmax(), "sampler"],
        }
        held_out = scored[
            (scored["posterior"] == posterior)
            & (scored["statistic"] == stat)
            & scored["sampler"].isin(labels)
        ]
        if len(held_out) == 2:
            rows.append(ratios(held_out, level=level))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def geometric_mean_interval(boots, level: float = 0.9) -> tuple[float, float]:
    """The interval of a geometric mean of ratios over posteriors from their bootstrap values
    (``boots``: one array per posterior, the same number of resamples each; each posterior's
    runs resampled independently)."""
    logs = np.log(np.vstack([np.asarray(b, dtype=float) for b in boots]))
    means = np.exp(np.nanmean(logs, axis=0))
    return (
        float(np.nanquantile(means, (1 - level) / 2)),
        float(np.nanquantile(means, 1 - (1 - level) / 2)),
    )


def geometric_mean(values) -> float:
    values = np.asarray(values, dtype=float)
    return float(math.exp(np.mean(np.log(values)))) if values.size else math.nan
