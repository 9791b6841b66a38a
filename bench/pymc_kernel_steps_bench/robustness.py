"""The robustness study: the robustness targets as black boxes, every sampler at one budget.

:func:`run_target` runs this package's samplers and the gradient-free peers (configured as in
:mod:`.peers` and :mod:`.suite`) ``replicates`` times on
:func:`~pymc_kernel_steps_bench.blackbox.black_box` of a target of
:data:`~pymc_kernel_steps_bench.targets.robustness.ROBUSTNESS_TARGETS`, against its exact
moments. Its frame has the suite's columns (the reference error ``mcse_ref`` is 0: the moments are
exact), so :func:`~.suite.suite_table` and :func:`~.suite.ratios` score it.
:func:`z_table` asks the other question: does a run's own Monte Carlo standard error cover its
error?
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .suite import OURS, Posterior, Study, step_chains
from .targets.robustness import robustness_model, robustness_reference

__all__ = [
    "ROBUSTNESS",
    "ROBUSTNESS_PEERS",
    "error_in_mcse",
    "robustness_page",
    "run_target",
    "z_table",
]

#: the peers of the robustness study (NUTS on finite differences is left out: see the study page)
ROBUSTNESS_PEERS = ("SMC", "emcee", "DEMetropolisZ")


def _robustness_posterior(name: str) -> Posterior:
    reference = robustness_reference(name)
    return Posterior(robustness_model(name), reference, np.zeros(2 * len(reference.mean)))


#: the robustness study: its targets against their exact moments (``mcse_ref`` is 0)
ROBUSTNESS = Study(_robustness_posterior, OURS + ROBUSTNESS_PEERS)
#: run the samplers on a robustness target (:meth:`~.suite.Study.run`)
run_target = ROBUSTNESS.run


def error_in_mcse(errors: np.ndarray, mcse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Errors ``e_ri`` and within-run MCSEs ``s_ri``, ``(replicates, coordinates)``, in units of
    the MCSE: per coordinate the pooled ``Σ_r e_ri / √(Σ_r s_ri²)`` (signed), and every single
    ``e_ri / s_ri``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return errors.sum(axis=0) / np.sqrt((mcse**2).sum(axis=0)), errors / mcse


def z_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Whether the runs' own Monte Carlo standard errors cover their errors.

    Per (posterior, sampler, statistic), over coordinates ``i`` and replicates ``r`` with error
    ``e_ri = estimate − truth`` and within-run MCSE ``s_ri`` (ArviZ's):

    ``z_pooled``
        The largest over coordinates of ``|Σ_r e_ri| / √(Σ_r s_ri²)``: the error of the average
        of the replicates' estimates in units of its MCSE (what R runs' MCSEs claim together);
        ``coordinate`` is the coordinate where it is reached.
    ``z_max``
        The largest single-run ``|e_ri| / s_ri``.
    ``z_rms``
        The root mean square of ``e_ri / s_ri`` over runs and coordinates: near 1 when the MCSE is
        honest, above it when the runs are more wrong than they say.
    ``t_seeds``
        At that same coordinate, ``mean_r e_ri / (sd_r e_ri / √R)``: the bias over seeds in units
        of the seeds' spread (no MCSE involved).

    SMC rows are NaN (particles are not a chain; no within-run MCSE).
    """
    rows = []
    keys = ["posterior", "sampler", "statistic"]
    for (posterior, sampler, stat), group in frame.groupby(keys, sort=False, observed=True):
        error = (group["estimate"] - group["truth"]).to_numpy()
        wide_error = (
            group.assign(error=error)
            .pivot(index="replicate", columns="coordinate", values="error")
            .to_numpy()
        )
        wide_mcse = group.pivot(index="replicate", columns="coordinate", values="mcse").to_numpy()
        signed, single = error_in_mcse(wide_error, wide_mcse)
        pooled = np.abs(signed)
        with np.errstate(divide="ignore", invalid="ignore"):
            replicates = wide_error.shape[0]
            t_seeds = wide_error.mean(axis=0) / (
                wide_error.std(axis=0, ddof=1) / np.sqrt(replicates)
            )
        finite = np.isfinite(pooled)
        worst = int(np.nanargmax(pooled)) if finite.any() else 0
        rows.append(
            {
                "posterior": posterior,
                "sampler": str(sampler),
                "statistic": stat,
                "coordinate": worst,
                "z_pooled": float(pooled[worst]) if finite.any() else np.nan,
                "z_max": float(np.nanmax(np.abs(single))) if finite.any() else np.nan,
                "z_rms": float(np.sqrt(np.nanmean(single**2))) if finite.any() else np.nan,
                "t_seeds": float(t_seeds[worst]),
            }
        )
    return pd.DataFrame(rows)


def _figure(value: float, lo: float, hi: float) -> str:
    return f"{value:.3g} [{lo:.3g}, {hi:.3g}]"


def robustness_page(frame: pd.DataFrame, *, title: str = "Robustness targets") -> str:
    """A markdown page of the study's runs: per target, our best against the best peer (error-based
    ESS per 1000 evaluations of ``E[x]`` and ``E[x²]``, worst coordinate, 90 % bootstrap
    intervals), then every sampler's figures beside its :func:`z_table` entries."""
    from .suite import geometric_mean, ratios, suite_table

    table = suite_table(frame)
    ratio = ratios(table)
    zs = z_table(frame).set_index(["posterior", "sampler", "statistic"])
    runs = frame.drop_duplicates(["posterior", "sampler", "replicate"])
    lines = [f"# {title}", ""]
    budget = int(frame["budget"].iloc[0])
    replicates = int(frame["replicate"].nunique())
    lines += [
        f"{replicates} runs of {budget:,} counted evaluations per sampler and target; figures are "
        "the worst coordinate's error-based ESS per 1000 evaluations against the exact moments, "
        "with 90 % bootstrap intervals over the runs.",
        "",
    ]
    chains = step_chains(frame)
    if chains > 1:
        lines += [
            f"Every run of a step method is {chains} chains sharing the budget (PyMC's default); "
            "its estimates pool the chains' draws and its MCSE is ArviZ's over the chains. SMC "
            "and `emcee` are populations and run as in the one-chain study.",
            "",
        ]
    lines += [
        "| target | d | statistic | ours: best | best peer | ratio |",
        "|:--|--:|:--|:--|:--|:--|",
    ]
    for _, row in ratio.iterrows():
        lines.append(
            f"| {row['posterior']} | {row['dim']} | {row['statistic']} | `{row['ours']}` "
            f"{_figure(row['ours_ess'], row['ours_lo'], row['ours_hi'])} | `{row['peer']}` "
            f"{_figure(row['peer_ess'], row['peer_lo'], row['peer_hi'])} | "
            f"{_figure(row['ratio'], row['ratio_lo'], row['ratio_hi'])} |"
        )
    for stat in ("mean", "second_moment"):
        values = ratio.loc[ratio["statistic"] == stat, "ratio"]
        lines.append("")
        lines.append(
            f"Geometric mean of the ratios, {stat}: {geometric_mean(values):.3g} over "
            f"{len(values)} targets."
        )
    lines += [
        "",
        "## Every sampler",
        "",
        "`z_pooled`: the largest over coordinates of |Σ errors| / √(Σ MCSE²) over the runs "
        "(ArviZ's within-run MCSE); `z_max`: the largest single-run |error| / MCSE; `z_rms`: "
        "their root mean square (1 when the MCSE is honest); `t`: the mean error over seeds in "
        "units of its spread, at the `z_pooled` coordinate.",
        "",
    ]
    for posterior, group in table.groupby("posterior", sort=False):
        lines += [
            f"### {posterior}",
            "",
            "| sampler | ESS_err/1000 E[x] | ESS_err/1000 E[x²] | z_pooled E[x] (coord) | "
            "z_pooled E[x²] (coord) | z_max E[x], E[x²] | z_rms E[x], E[x²] | t E[x], E[x²] | "
            "s/run |",
            "|:--|:--|:--|--:|--:|:--|:--|:--|--:|",
        ]
        for sampler, rows in group.groupby("sampler", sort=False):
            by_stat = rows.set_index("statistic")
            m, s = by_stat.loc["mean"], by_stat.loc["second_moment"]
            zm = zs.loc[(posterior, sampler, "mean")]
            zs2 = zs.loc[(posterior, sampler, "second_moment")]
            seconds = runs[(runs["posterior"] == posterior) & (runs["sampler"] == sampler)][
                "seconds"
            ].median()
            lines.append(
                f"| `{sampler}` | {_figure(m['ess'], m['lo'], m['hi'])} | "
                f"{_figure(s['ess'], s['lo'], s['hi'])} | "
                f"{zm['z_pooled']:.2f} ({int(zm['coordinate'])}) | "
                f"{zs2['z_pooled']:.2f} ({int(zs2['coordinate'])}) | "
                f"{zm['z_max']:.2f}, {zs2['z_max']:.2f} | {zm['z_rms']:.2f}, {zs2['z_rms']:.2f} | "
                f"{zm['t_seeds']:.2f}, {zs2['t_seeds']:.2f} | {seconds:.1f} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"
