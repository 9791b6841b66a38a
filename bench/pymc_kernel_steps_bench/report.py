"""The suite page (``posteriordb.md`` of the benchmarks documentation) and its figure, from the
committed runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from . import posteriordb
from .suite import (
    DEFAULT,
    OURS,
    PEERS,
    geometric_mean,
    geometric_mean_interval,
    held_out_best,
    ratios,
    step_chains,
    suite_table,
)

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
    """Ratios (ours / the best peer) on a log axis with their intervals, E[x] and E[x²]."""
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
    ours = " / ".join(dict.fromkeys(mean["ours"].astype(str)))
    ax.set_xlabel(f"ESS_err per evaluation, {ours} / the best peer")
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
            "cores) split it four ways: [the suite with four chains](posteriordb-four-chains.md)."
        )
    return (
        f"Step methods: {chains} chains per run, sharing the budget. The populations (SMC, "
        "emcee and the field's samplers) run no chains: theirs are the one-chain page's rows."
    )


def _meaningful(table: pd.DataFrame, frames: pd.DataFrame) -> pd.Series:
    """Per (posterior, statistic): whether any sampler, ours or a peer, reaches
    :data:`MEANINGFUL_DRAWS` effective draws per run (a ratio of two failures says nothing)."""
    budget_of = frames.groupby("posterior")["budget"].first()
    best = table.groupby(["posterior", "statistic"])["ess"].max()
    budgets = best.index.get_level_values("posterior").map(budget_of).to_numpy(float)
    return best * budgets / 1000.0 >= MEANINGFUL_DRAWS


def _headline_counts(scored: pd.DataFrame) -> tuple[int, int]:
    return int((scored["ratio_lo"] > 1).sum()), int((scored["ratio_hi"] < 1).sum())


#: a sampler scored at its own count beyond this multiple of the budget is marked and left out
#: of the headline's figure at the budget
OVER_BUDGET = 1.05


def _posteriors(n: int) -> str:
    return f"{n} posterior" + ("" if n == 1 else "s")


def _geomean_text(scored: pd.DataFrame) -> str:
    lo, hi = geometric_mean_interval(list(scored["boot"]), LEVEL)
    return f"{_fmt(geometric_mean(scored['ratio']))}× [{_fmt(lo)}, {_fmt(hi)}]"


def write_suite_page(
    frames: pd.DataFrame,
    path: Path,
    *,
    n_boot: int = 1000,
    default: str = DEFAULT,
    runs: str = "benchmarks/posteriordb/runs",
) -> None:
    """Write the suite page and its figure (``<path stem>.png``) from the runs' frames.

    The headline scores one sampler fixed in advance, ``default`` (the one the README
    recommends), against the best peer of each posterior; the best of ours is a second figure,
    chosen on half of the runs and scored on the other half (:func:`~.suite.held_out_best`).
    ``runs`` names the frames' directory on the page.
    """
    path = Path(path)
    table = suite_table(frames, n_boot=n_boot, level=LEVEL)
    meaningful = _meaningful(table, frames)
    order = [p for p in posteriordb.POSTERIORS if p in set(table["posterior"])]

    def prepared(summary: pd.DataFrame) -> pd.DataFrame:
        if summary.empty:
            return summary
        summary = summary.copy()
        summary["order"] = summary["posterior"].map(order.index)
        summary["meaningful"] = [
            bool(meaningful.get((p, s), False))
            for p, s in zip(summary["posterior"], summary["statistic"], strict=True)
        ]
        return summary.sort_values(["order", "statistic"])

    summary = prepared(ratios(table, level=LEVEL, ours=default))
    raw = prepared(ratios(table, level=LEVEL, ours=default, raw=True))
    # the same against the peers at the budget: a sampler scored at its own count that spent
    # more than OVER_BUDGET times the budget (pocoMC: up to 16 times) is left out, since its
    # figure per evaluation does not show what it spent (dynesty's last iteration passing the
    # budget by a few calls stays in)
    budget_of = frames.groupby("posterior")["budget"].max()
    over_budget = table[
        ~table["at_budget"]
        & (table["evaluations"] > OVER_BUDGET * table["posterior"].map(budget_of))
    ]
    at_budget = prepared(ratios(table.drop(over_budget.index), level=LEVEL, ours=default))
    counts = over_budget.drop_duplicates(["posterior", "sampler"]).set_index(
        ["posterior", "sampler"]
    )["evaluations"]
    over = set(counts.index)

    def peer_name(posterior: str, peer: str) -> str:
        """A peer's name, marked ``‡`` with its mean count where it ran past the budget."""
        if (posterior, peer) not in over:
            return f"`{peer}`"
        return f"`{peer}` ‡ ({counts.loc[(posterior, peer)]:,.0f} evaluations)"

    held_out = prepared(held_out_best(frames, level=LEVEL, n_boot=n_boot))
    if not summary.empty:
        plot_ratios(summary, path.with_suffix(".png"))
    within = _within_run_ess(frames)
    by_stat = {
        stat: (
            summary[summary["statistic"] == stat].set_index("posterior"),
            raw[raw["statistic"] == stat].set_index("posterior") if len(raw) else raw,
            held_out[held_out["statistic"] == stat].set_index("posterior")
            if len(held_out)
            else held_out,
        )
        for stat in ("mean", "second_moment")
    }
    mean, mean_raw, mean_held = by_stat["mean"]
    second, second_raw, second_held = by_stat["second_moment"]
    budgets = sorted(frames["budget"].unique())
    replicates = sorted(frames.groupby("posterior")["replicate"].nunique().unique())
    dates = sorted(frames["run_date"].dropna().unique()) if "run_date" in frames else []
    commits = sorted(frames["git_commit"].dropna().unique()) if "git_commit" in frames else []
    machines = sorted(frames["machine"].dropna().unique()) if "machine" in frames else []
    scored = mean[mean["meaningful"]] if len(mean) else mean
    scored2 = second[second["meaningful"]] if len(second) else second
    unscored = mean[~mean["meaningful"]] if len(mean) else mean
    missing = [p for p in posteriordb.POSTERIORS if p not in set(table["posterior"])]
    not_default = [p for p in order if p not in set(mean.index)]

    lines = [
        "# The posteriordb suite"
        + ("" if step_chains(frames) == 1 else f", {step_chains(frames)} chains per run"),
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
        f"{', '.join(dates) or 'unrecorded dates'}, code at "
        f"{', '.join(f'`{c}`' for c in commits) or 'an unrecorded commit'}"
        + (
            f"; the machine, where the frames record it: {'; '.join(machines)}"
            if machines
            else " (2-core development machine)"
        )
        + ".",
        "- Ours: "
        + ", ".join(f"`{s}`" for s in OURS)
        + " (defaults). Peers: "
        + ", ".join(f"`{s}`" for s in PEERS)
        + ", configured as described below.",
        f"- {_chains_text(frames)}",
        "- Made by `make bench-suite` (`benchmarks/posteriordb/suite.py`), from the frames in "
        f"`{runs}/`.",
        "",
        "## Headline",
        "",
    ]
    if len(scored):
        won, lost = _headline_counts(scored)
        won2, lost2 = _headline_counts(scored2)
        raw_scored = mean_raw.loc[scored.index]
        raw_scored2 = second_raw.loc[scored2.index]
        lines.append(
            f"`{default}`, the sampler the README recommends, with its defaults, against the "
            f"best peer of each posterior: over {len(scored)} posteriors its ESS_err per "
            f"evaluation of E[x] is **{_geomean_text(scored)}** the best peer's (geometric mean "
            f"of the ratios, {LEVEL:.0%} interval); the ratio's interval excludes 1 in its "
            f"favour on **{won}** and against it on **{lost}** (level on the rest). On E[x²]: "
            f"**{_geomean_text(scored2)}**, ahead on {won2}, behind on {lost2}. Raw, with the "
            f"reference's own error left in the squared error: {_geomean_text(raw_scored)} on "
            f"E[x] and {_geomean_text(raw_scored2)} on E[x²]."
        )
        if over:
            within_budget = at_budget[at_budget["meaningful"]]
            lines += [
                "",
                "Against the peers at the budget (left out, marked ‡ below: "
                + ", ".join(
                    f"`{s}` on {_posteriors(sum(1 for _, t in over if t == s))}"
                    for s in sorted({s for _, s in over})
                )
                + f", which cannot stop at the budget and spent more than {OVER_BUDGET:g} times "
                "it there, each scored per 1000 of its own evaluations): "
                f"{_geomean_text(within_budget[within_budget['statistic'] == 'mean'])} on E[x] "
                "and "
                f"{_geomean_text(within_budget[within_budget['statistic'] == 'second_moment'])}"
                " on E[x²].",
            ]
        if len(mean_held):
            held = mean_held.loc[[p for p in scored.index if p in mean_held.index]]
            held2 = second_held.loc[[p for p in scored2.index if p in second_held.index]]
            lines += [
                "",
                f"The best of our {len(OURS)} samplers, chosen per posterior on the "
                "even-numbered runs and scored on the odd-numbered ones against the best peer "
                f"chosen the same way: {_geomean_text(held)} on E[x] and "
                f"{_geomean_text(held2)} on E[x²] (half the runs, so wider intervals).",
            ]
        if len(unscored):
            lines += [
                "",
                f"Not scored: {', '.join(unscored.index)}, where no sampler, ours or the "
                f"peers, reaches {MEANINGFUL_DRAWS:g} effective draw per run at this budget.",
            ]
    else:
        lines.append(f"`{default}` is not in the runs: no headline.")
    lines += [
        "",
        f"![ratios]({path.with_suffix('.png').name})",
        "",
        "## Per posterior",
        "",
        f"`{default}` against the best peer, chosen per posterior by its E[x] figure (E[x²]",
        "likewise, separately; picking the best of eight favours the peers). `≥` marks a figure",
        "at the reference's floor (see the metric below): the sampler may be better still, so a",
        "ratio involving it is a bound. Raw: the same ratio with the reference's error left in.",
        "Held out: the best of ours against the best peer, both chosen on the even-numbered",
        "runs, scored on the odd-numbered ones. Within-run ESS: the median over runs of ArviZ's",
        f"smallest bulk ESS per 1000 evaluations of `{default}`, beside the error-based figure,",
        "never instead of it.",
        "",
        f"| posterior | d | `{default}` (E[x]) | best peer (E[x]) | ratio E[x] | raw | "
        "ratio E[x²] | held out: best of ours / best peer (E[x]) | within-run ESS | result |",
        "|:--|--:|:--|:--|:--|:--|:--|:--|--:|:--|",
    ]
    for posterior, row in mean.iterrows():
        sec = second.loc[posterior]
        raw_row = mean_raw.loc[posterior]
        held_cell = "–"
        if len(mean_held) and posterior in mean_held.index:
            held = mean_held.loc[posterior]
            held_cell = (
                f"{_cell(held['ratio'], held['ratio_lo'], held['ratio_hi'])} "
                f"(`{held['ours']}`/`{held['peer']}`)"
            )
        lines.append(
            f"| {posterior} | {row['dim']} | "
            f"{_cell(row['ours_ess'], row['ours_lo'], row['ours_hi'], row['ours_capped'])} | "
            f"{peer_name(posterior, row['peer'])} "
            f"{_cell(row['peer_ess'], row['peer_lo'], row['peer_hi'], row['peer_capped'])} | "
            f"{_cell(row['ratio'], row['ratio_lo'], row['ratio_hi'])} | "
            f"{_fmt(raw_row['ratio'])} | "
            f"{_cell(sec['ratio'], sec['ratio_lo'], sec['ratio_hi'])} "
            f"({peer_name(posterior, sec['peer'])}) | "
            f"{held_cell} | "
            f"{_fmt(within.get((posterior, default), math.nan))} | "
            f"{_verdict(row)} |"
        )
    lines += ["", "## Where we lose", ""]
    explained: set[str] = set()

    def note(posterior: str) -> str:
        """The posterior's loss note, at its first mention only."""
        if posterior not in LOSS_NOTES or posterior in explained:
            return ""
        explained.add(posterior)
        return f" {LOSS_NOTES[posterior]}"

    losses = []
    for label, frame in (("E[x]", scored), ("E[x²]", scored2)):
        for posterior, row in frame[frame["ratio"] < 1].iterrows():
            how = (
                "behind"
                if row["ratio_hi"] < 1
                else "behind on the point estimate, level within the interval"
            )
            losses.append(
                f"- **{posterior}** ({label}): {how}: {peer_name(posterior, row['peer'])} "
                f"{_fmt(row['peer_ess'])} against `{default}`'s {_fmt(row['ours_ess'])} "
                f"({_fmt(row['ratio'])}× [{_fmt(row['ratio_lo'])}, {_fmt(row['ratio_hi'])}], "
                f"the peer {_fmt(1 / row['ratio'])}× ahead)." + note(posterior)
            )
    lines += losses or [f"`{default}` is ahead of or level with the best peer everywhere."]
    if len(unscored):
        lines += ["", "Not scored, because no sampler converges at this budget:"]
    for posterior, row in unscored.iterrows():
        lines.append(
            f"- **{posterior}**: `{default}` {_fmt(row['ours_ess'])} and the best peer "
            f"`{row['peer']}` {_fmt(row['peer_ess'])} per 1000 evaluations."
        )
    if not_default:
        lines += ["", f"Without `{default}` in the runs: " + ", ".join(not_default) + "."]
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
        "covariance: per 1000 evaluations (frames of 2026-12-07) `AdaptiveMetropolis` has 1.06 "
        "and 0.49 on them (4.9 on its median coordinate), `KMCLite` 0.11 and 0.62, `KAMH` 0.49 "
        "and 0.44, emcee 0.08 and 0.75, SMC 1.06 and 2.63, and pocoMC 2.7 and 17.9 at about "
        "48,000 evaluations a run. With this coupling in 13 dimensions a single chain gets a "
        "few effective draws of the hyperparameters from 10,000 evaluations; SMC and pocoMC, "
        "whose particles start from the prior and are tempered towards the posterior, get "
        "more. At this budget SMC is the better choice here (pocoMC at about five times it). "
        "`KMCLite`'s 0.11 (0.39 in November, at fc01e82) is set by one run of the ten: with "
        "seed 323638680 its mean of `alpha` ended 2.6 posterior sds from the truth; the other "
        "nine ended at most 0.86 sds off, with a root-mean-square error of 0.50 sds against "
        "November's 0.40 over its ten, a difference nine runs do not resolve."
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
    "diamonds-diamonds": (
        "pocoMC's two runs (2026-12-07, 5a5ada9, one per core) took 105 and 110 minutes "
        "and 904,704 and 984,576 evaluations, 90-98 times the budget, where every other "
        "sampler takes at most a minute a run; sampling its stack showed it in its flow "
        "training and its flow-preconditioned MCMC."
    ),
    "hudson_lynx_hare-lotka_volterra": (
        "every sampler starts in a local mode 40 nats below the main one "
        "(`benchmarks/lotka_volterra_modes/`), and no peer leaves it at this budget (SMC 0.016 "
        "and 0.022 over two seed sets). pocoMC, which cannot stop at a budget, does at about "
        "four times it (39,680 evaluations a run, 2 runs, 2026-12-07): 7.62 per 1000 of its "
        "evaluations; it tempers from the prior. Since the climb before tuning (`climb=True`, "
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
        "`KAMH` rows are still the walkers': this posterior's re-run at one commit (4cdb56b) "
        "was stopped for time, so its rows of every sampler but `KMCLite`, the field's four "
        "peers and emcee are November's. "
        "Before the climb "
        "`KAMH` converged in every run (1.17, and 15.1 on seed set 1, "
        "`benchmarks/posteriordb/runs-lv-seed1/`, not re-run). The half of `KAMH`'s envelope "
        "that proposes independent t's along the whitened axes also takes it out: with that "
        "half alone all 10 runs of seed set 0 converged before the climb (16.5), with the "
        "former multivariate t alone 8 (0.013; `benchmarks/lotka_volterra_modes/README.md`). "
        "The ratio measures the peers' failure "
        "more than a rate."
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
