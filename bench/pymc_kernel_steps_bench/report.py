"""The suite page (``posteriordb.md`` of the benchmarks documentation) and its figure, from the
committed runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from . import posteriordb
from .suite import OURS, PEERS, geometric_mean, ratios, step_chains, suite_table

__all__ = ["plot_ratios", "write_suite_page"]

LEVEL = 0.9


def _fmt(value: float) -> str:
    if not math.isfinite(value):
        return "–"
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.3g}"
    return f"{value:.2g}"


def _cell(value, lo, hi, capped=False) -> str:
    mark = "≥ " if capped else ""
    return f"{mark}{_fmt(value)} [{_fmt(lo)}, {_fmt(hi)}]"


#: effective draws per run below which a figure says only that the sampler did not converge
MEANINGFUL_DRAWS = 1.0


def _verdict(row) -> str:
    if not row["meaningful"]:
        return "no sampler converges"
    if row["ratio_lo"] > 1:
        return "ahead"
    if row["ratio_hi"] < 1:
        return "**behind**"
    return "level"


def plot_ratios(table: pd.DataFrame, path: Path) -> None:
    """Ratios (our best / the best peer) on a log axis with their intervals, E[x] and E[x²]."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mean = table[table["statistic"] == "mean"].sort_values("ratio").reset_index(drop=True)
    second = table[table["statistic"] == "second_moment"].set_index("posterior")
    fig, ax = plt.subplots(figsize=(8.0, 0.38 * len(mean) + 1.6))
    y = np.arange(len(mean))
    for offset, frame, color, label in (
        (0.13, mean, "C0", "E[x]"),
        (-0.13, second.loc[mean["posterior"]].reset_index(), "C1", "E[x²]"),
    ):
        lo = frame["ratio"] - frame["ratio_lo"]
        hi = frame["ratio_hi"] - frame["ratio"]
        ax.errorbar(
            frame["ratio"],
            y + offset,
            xerr=[lo.clip(lower=0), hi.clip(lower=0)],
            fmt="o",
            color=color,
            ms=4,
            lw=1,
            label=label,
        )
    ax.axvline(1.0, color="k", lw=1)
    ax.set_xscale("log")
    meaningful = mean["meaningful"] if "meaningful" in mean else pd.Series(True, index=mean.index)
    labels = [
        f"{p} (d={d})" + ("" if ok else ": no sampler converges")
        for p, d, ok in zip(mean["posterior"], mean["dim"], meaningful, strict=True)
    ]
    ax.set_yticks(y, labels)
    ax.set_xlabel("ESS_err per evaluation, our best / the best peer")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _within_run_ess(frames: pd.DataFrame) -> pd.Series:
    """Median over replicates of the smallest within-run bulk ESS (of x) per 1000 evaluations."""
    mean = frames[frames["statistic"] == "mean"]
    per_run = mean.groupby(["posterior", "sampler", "replicate"]).agg(
        ess=("ess_bulk", "min"), evaluations=("evaluations", "first")
    )
    per_run["per_1000"] = 1000.0 * per_run["ess"] / per_run["evaluations"]
    return per_run.groupby(["posterior", "sampler"])["per_1000"].median()


def _chains_text(frames: pd.DataFrame) -> str:
    """How many chains a run of a step method was (the budget is shared among them)."""
    chains = step_chains(frames)
    if chains == 1:
        return (
            "Step methods (ours, `DEMetropolisZ`, `NUTS-FD`): one chain per run, so each tunes "
            "for half the budget. Four chains (PyMC's default on a machine with four or more "
            "cores) split it four ways; "
            "`benchmarks/posteriordb/four-chains.md` measures that."
        )
    return f"Step methods: {chains} chains per run, sharing the budget."


def write_suite_page(frames: pd.DataFrame, path: Path, *, n_boot: int = 1000) -> None:
    """Write the suite page and its figure (``<path stem>.png``) from the runs' frames."""
    path = Path(path)
    table = suite_table(frames, n_boot=n_boot, level=LEVEL)
    summary = ratios(table, level=LEVEL)
    order = [p for p in posteriordb.POSTERIORS if p in set(summary["posterior"])]
    summary["order"] = summary["posterior"].map(order.index)
    summary = summary.sort_values(["order", "statistic"])
    budget_of = frames.groupby("posterior")["budget"].first()
    best_draws = summary[["ours_ess", "peer_ess"]].max(axis=1) * summary["posterior"].map(budget_of)
    summary["meaningful"] = best_draws / 1000.0 >= MEANINGFUL_DRAWS
    plot_ratios(summary, path.with_suffix(".png"))
    within = _within_run_ess(frames)
    mean = summary[summary["statistic"] == "mean"]
    second = summary[summary["statistic"] == "second_moment"].set_index("posterior")
    budgets = sorted(frames["budget"].unique())
    replicates = sorted(frames.groupby("posterior")["replicate"].nunique().unique())
    dates = sorted(frames["run_date"].dropna().unique()) if "run_date" in frames else []
    commits = sorted(frames["git_commit"].dropna().unique()) if "git_commit" in frames else []
    scored = mean[mean["meaningful"]]
    scored2 = second[second["meaningful"]]
    unscored = mean[~mean["meaningful"]]
    won = int((scored["ratio_lo"] > 1).sum())
    lost = int((scored["ratio_hi"] < 1).sum())
    won2 = int((scored2["ratio_lo"] > 1).sum())
    lost2 = int((scored2["ratio_hi"] < 1).sum())
    missing = [p for p in posteriordb.POSTERIORS if p not in set(summary["posterior"])]

    lines = [
        "# The posteriordb suite",
        "",
        "Posteriors no one here wrote: fifteen of",
        "[posteriordb](https://github.com/stan-dev/posteriordb)'s, translated to PyMC (each",
        "translation checked against posteriordb's reference draws by the test suite) and run as",
        "**black boxes**: the priors stay PyMC distributions, the likelihood is one counted `Op`",
        "without a gradient. Every sampler gets the same budget of counted likelihood evaluations,",
        "tuning included, and runs independently several times; the figure is the **error-based",
        "effective sample size per 1000 evaluations** of the worst coordinate's E[x] (and E[x²]),",
        f"against posteriordb's reference draws, with {LEVEL:.0%} bootstrap intervals over the",
        "runs.",
        "",
        f"- Budget: {', '.join(f'{b:,}' for b in budgets)} evaluations per run; "
        f"{', '.join(map(str, replicates))} runs per sampler and posterior; run on "
        f"{', '.join(dates) or 'unrecorded dates'} (2-core development machine), code at "
        f"{', '.join(f'`{c}`' for c in commits) or 'an unrecorded commit'}.",
        "- Ours: "
        + ", ".join(f"`{s}`" for s in OURS)
        + " (defaults). Peers: "
        + ", ".join(f"`{s}`" for s in PEERS)
        + ", configured as described below.",
        f"- {_chains_text(frames)}",
        "- Made by `make bench-suite` (`benchmarks/posteriordb/suite.py`), from the frames in "
        "`benchmarks/posteriordb/runs/`.",
        "",
        "## Headline",
        "",
        f"Over {len(scored)} posteriors, our best sampler's ESS_err per evaluation of E[x] is "
        f"**{_fmt(geometric_mean(scored['ratio']))}×** the best peer's (geometric mean of the "
        f"ratios); the interval excludes 1 in our favour on **{won}** and against us on "
        f"**{lost}** (level on the rest). On E[x²]: "
        f"{_fmt(geometric_mean(scored2['ratio']))}×, ahead on {won2}, behind on {lost2}."
        + (
            f" Not scored: {', '.join(unscored['posterior'])}, where no sampler, ours or the "
            f"peers, reaches {MEANINGFUL_DRAWS:g} effective draw per run at this budget (a "
            "ratio of two failures says nothing)."
            if len(unscored)
            else ""
        ),
        "",
        "![ratios](posteriordb.png)",
        "",
        "## Per posterior",
        "",
        "Our best and the best peer are chosen per posterior by their E[x] figure (E[x²]",
        "likewise, separately; picking the best of several favours both sides alike). `≥` marks",
        "a figure at the reference's floor (see the metric below): the sampler may be better",
        "still, so a ratio involving it is a bound. Within-run ESS: the median over runs of",
        "ArviZ's smallest bulk ESS per 1000 evaluations of our best, beside the error-based",
        "figure, never instead of it.",
        "",
        "| posterior | d | ours: best (E[x]) | best peer (E[x]) | ratio E[x] | ratio E[x²] | "
        "within-run ESS | result |",
        "|:--|--:|:--|:--|:--|:--|--:|:--|",
    ]
    for _, row in mean.iterrows():
        sec = second.loc[row["posterior"]]
        lines.append(
            f"| {row['posterior']} | {row['dim']} | `{row['ours']}` "
            f"{_cell(row['ours_ess'], row['ours_lo'], row['ours_hi'], row['ours_capped'])} | "
            f"`{row['peer']}` "
            f"{_cell(row['peer_ess'], row['peer_lo'], row['peer_hi'], row['peer_capped'])} | "
            f"{_cell(row['ratio'], row['ratio_lo'], row['ratio_hi'])} | "
            f"{_cell(sec['ratio'], sec['ratio_lo'], sec['ratio_hi'])} (`{sec['ours']}`/"
            f"`{sec['peer']}`) | "
            f"{_fmt(within.get((row['posterior'], row['ours']), math.nan))} | "
            f"{_verdict(row)} |"
        )
    behind = scored[scored["ratio_hi"] < 1]
    behind2 = scored2[scored2["ratio_hi"] < 1]
    lines += ["", "## Where we lose", ""]
    if behind.empty and behind2.empty:
        lines.append("No interval of a scored posterior lies below 1. Closest to it:")
    explained: set[str] = set()

    def note(posterior: str) -> str:
        """The posterior's loss note, at its first mention only."""
        if posterior not in LOSS_NOTES or posterior in explained:
            return ""
        explained.add(posterior)
        return f" {LOSS_NOTES[posterior]}"

    for _, row in scored[(scored["ratio"] < 1) & (scored["ratio_hi"] >= 1)].iterrows():
        lines.append(
            f"- **{row['posterior']}** (E[x]): behind on the point estimate, level within the "
            f"interval: `{row['peer']}` {_fmt(row['peer_ess'])} against our best "
            f"`{row['ours']}` {_fmt(row['ours_ess'])} ({_fmt(row['ratio'])}× "
            f"[{_fmt(row['ratio_lo'])}, {_fmt(row['ratio_hi'])}])." + note(row["posterior"])
        )
    for _, row in behind.iterrows():
        lines.append(
            f"- **{row['posterior']}** (E[x]): `{row['peer']}` {_fmt(row['peer_ess'])} against "
            f"our best `{row['ours']}` {_fmt(row['ours_ess'])} ({_fmt(row['ratio'])}× "
            f"[{_fmt(row['ratio_lo'])}, {_fmt(row['ratio_hi'])}])." + note(row["posterior"])
        )
    for posterior, row in behind2.iterrows():
        lines.append(
            f"- **{posterior}** (E[x²]): `{row['peer']}` {_fmt(row['peer_ess'])} against our "
            f"best `{row['ours']}` {_fmt(row['ours_ess'])} ({_fmt(row['ratio'])}× "
            f"[{_fmt(row['ratio_lo'])}, {_fmt(row['ratio_hi'])}])." + note(posterior)
        )
    if len(unscored):
        lines += ["", "Not scored, because no sampler converges at this budget:"]
    for _, row in unscored.iterrows():
        lines.append(
            f"- **{row['posterior']}**: the best are our "
            f"`{row['ours']}` {_fmt(row['ours_ess'])} and the peers' `{row['peer']}` "
            f"{_fmt(row['peer_ess'])} per 1000 evaluations."
        )
    if missing:
        lines += ["", "Not yet run: " + ", ".join(missing) + "."]
    noted = [posterior for posterior in order if posterior in POSTERIOR_NOTES]
    if noted:
        lines += ["", "## Notes on single posteriors", ""]
        lines += [f"- **{posterior}**: {POSTERIOR_NOTES[posterior]}" for posterior in noted]
    lines += [
        "",
        "## Every sampler",
        "",
        "ESS_err per 1000 evaluations of E[x], worst coordinate (`≥`: at the reference's floor;",
        "`‡`: a sampler that cannot stop at the budget, scored per 1000 of its own evaluations,",
        "whose mean count follows in brackets).",
        "",
        "| posterior | " + " | ".join(OURS + PEERS) + " |",
        "|:--|" + "--:|" * len(OURS + PEERS),
    ]
    first_moment = table[table["statistic"] == "mean"].set_index(["posterior", "sampler"])
    for posterior in order:
        cells = []
        for sampler in OURS + PEERS:
            if (posterior, sampler) in first_moment.index:
                row = first_moment.loc[(posterior, sampler)]
                cell = ("≥ " if row["capped"] else "") + _fmt(row["ess"])
                if not row.get("at_budget", True):
                    cell += f" ‡ ({row['evaluations']:,.0f})"
                cells.append(cell)
            else:
                cells.append("–")
        lines.append(f"| {posterior} | " + " | ".join(cells) + " |")
    lines += ["", *_METHOD_NOTES]
    path.write_text("\n".join(lines) + "\n")


#: why we lose where we do, by posterior (measured; see ``benchmarks/posteriordb/learned.md``)
LOSS_NOTES = {
    "gp_pois_regr-gp_pois_regr": (
        "Every sampler's worst coordinates are the GP's amplitude `alpha` and lengthscale "
        "`rho`, which enter the 11 latent values through the Cholesky factor of their "
        "covariance: per 1000 evaluations `AdaptiveMetropolis` has 0.77 and 0.44 on them "
        "(6.2 on its median coordinate), `KMCLite` 0.39 and 0.60, `KAMH` 0.97 and 0.38 (before "
        "its walkers; 0.73 on its worst coordinate since), "
        "emcee 0.08 and 0.81, and "
        "SMC 1.06 and 2.63. With this coupling in 13 dimensions a single chain gets about "
        "five effective draws of the hyperparameters from 10,000 evaluations, and SMC, whose "
        "particles start from the prior and are reweighted, about twice as many. At this "
        "budget SMC is the better choice here."
    ),
    "eight_schools-eight_schools_noncentered": (
        "At 10 runs a figure here moves about 2x with the random stream. Over three seed sets "
        "(30 runs; `benchmarks/posteriordb/runs-eight-schools/`) `KMCLite` has 55.2 on E[x] "
        "and `KAMH` 45.4 on E[x²] per 1000 evaluations, against SMC's 51.9 and 73.2 on its 10 "
        "runs: level on E[x], behind on E[x²]. `KMCLite`'s worst coordinate is `tau` on both "
        "moments (27.5 on E[tau²], its other coordinates 115 and up), `KAMH`'s a `theta` "
        "(45-57), before its walkers (2026-11-27; on seed set 0 they took `KAMH` from 27 to "
        "32.8 on E[x²] and from 44.9 to 24 on E[x]). Before the "
        "envelope's defensive mixture (2026-11-27) the same 30 runs gave 73.3 on E[x] (`KMCLite`) "
        'and 42.7 on E[x²] (`KMCFinite`). `KMCLite(moves="fixed")` had 85.9 on seed set 0.'
    ),
}

#: what a posterior's ratio means where it is not a loss (measured)
POSTERIOR_NOTES = {
    "hudson_lynx_hare-lotka_volterra": (
        "every sampler starts in a local mode 40 nats below the main one "
        "(`benchmarks/lotka_volterra_modes/`), and no peer leaves it at this budget (SMC 0.016 "
        "and 0.022 over two seed sets). Since the climb before tuning (`climb=True`, "
        "2026-11-27) our chains start at the local mode's bulk instead of climbing to it by "
        "random walk. `KAMH`'s four walkers (`walkers=4`, 2026-11-27, `benchmarks/walkers/`) "
        "explore from there in turn for half of tuning and the chain goes on from the highest: "
        "`KAMH` has 1.29 per 1000 evaluations on E[x] with all 10 runs within 0.8 posterior sds "
        "on every coordinate, against 0.17 and 2 runs 1.2 and 2.0 sds off with the climb alone. "
        "`KMCLite` and `KMCFinite` (no walkers by default) end 4 of 10 runs off; with "
        "`walkers=4` `KMCLite` had 1.26 and no run off, `KMCFinite` 3 runs off. Those walker "
        "figures were measured while the walkers' acceptance ratio compared a proposal with the "
        "walker that had moved last; with that fixed (2026-12-07, `benchmarks/verify/`) "
        "`KAMH` with four walkers had 0.15 and one run of 10 2.6 sds off, without walkers "
        "1.10 and every run within 0.93 sds, and no step runs walkers by default. The table's "
        "`KAMH` rows are still the walkers' (the suite is re-run at one commit in issue 49). "
        "Before the climb "
        "`KAMH` converged in every run (1.17, and 15.1 on seed set 1, "
        "`benchmarks/posteriordb/runs-lv-seed1/`, not re-run). The half of `KAMH`'s envelope "
        "that proposes independent t's along the whitened axes also takes it out: with that "
        "half alone all 10 runs of seed set 0 converged before the climb (16.5), with the "
        "former multivariate t alone 8 (0.013; `benchmarks/posteriordb/lv_envelope_share.py`). "
        "The ratio measures the peers' failure "
        "more than a rate. Without this posterior the headline is 11.7× on E[x] (13 posteriors)."
    ),
}

_METHOD_NOTES = [
    "## How it is measured",
    "",
    "- **The black box.** `pymc_kernel_steps_bench.blackbox.black_box(model)`: the model's",
    "  priors, transforms and deterministics are kept; every observed term and potential is",
    "  compiled into one function of the free variables' values behind a counting `Op` without a",
    "  gradient. The Lotka–Volterra posterior's ODE is solved by `scipy.integrate.solve_ivp`",
    "  (RK45 at the Stan program's tolerances).",
    "- **Budgets.** Our steps evaluate once per iteration (plus the initial point); half the",
    "  budget tunes. `DEMetropolisZ` evaluates twice per iteration (it re-evaluates the current",
    "  point). SMC's particle count is sized to the budget from a pilot run (not charged) and",
    "  the measured count is used. emcee's walkers are charged one evaluation per step, and its",
    "  optimisation too. NUTS on finite differences is charged `2 d + 1` per leapfrog step.",
    "- **Peers as an expert runs them** (`pymc_kernel_steps_bench.peers`): `pm.sample_smc`",
    "  with its default IMH kernel (a model with a flat prior is sampled through an equivalent",
    "  model with a N(initial point, 10²) prior in the unconstrained space divided back out of",
    "  the likelihood); emcee after a short L-BFGS-B optimisation (at most a fifth of the budget),",
    "  walkers in a Gaussian ball around the optimum whose sd is 0.01 times each coordinate's",
    "  conditional sd there (from central second differences of the log density, `2 d`",
    "  evaluations, charged), burn-in `3 τ` and not before the walkers' mean log density",
    "  reaches its typical level; `DEMetropolisZ` with its",
    "  own tuning; NUTS on central differences (`NUTS-FD`). Everyone else starts at PyMC's",
    "  initial point.",
    "- **The field's samplers for expensive black boxes** (issue 49; the module's docstring",
    "  gives each choice and its reason): nautilus (`n_live` = budget / 10 within [200, 2000],",
    "  stopped at the budget), pocoMC (its defaults, `n_total=512`, no evidence samples; it",
    "  cannot stop at a budget and is scored at its own count, `‡`), dynesty (its static",
    "  sampler's defaults, 500 live points, stopped by `maxcall`) and zeus (2 d walkers, at",
    "  least 8, started as emcee, half discarded). The nested samplers and pocoMC draw from the",
    "  model's priors through their inverse CDFs, or from the stand-in SMC gets where a prior",
    "  is flat or has none; their importance weights give weighted moments.",
    "- **The metric.** For each coordinate, over the runs, `ESS_err = Var_π(f) / MSE_adj` per",
    "  1000 mean evaluations, with `MSE_adj = max(MSE − mcse_ref², mcse_ref²)`: the reference's",
    "  own Monte Carlo error (ArviZ's MCSE of posteriordb's 10,000 draws) is subtracted from the",
    "  mean squared error, and no figure claims more accuracy than the reference resolves",
    "  (`≥` marks a figure at that floor). A sampler's figure is its worst coordinate's.",
    "- **Intervals.** Percentiles of 1000 bootstrap resamples of the runs; a ratio's interval",
    "  resamples the same runs for both samplers.",
]
