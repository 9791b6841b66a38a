"""The field's peers against ``KMCLite`` at one budget: the tables of ``README.md``.

Reads every frame in ``runs/`` (written by ``benchmarks/posteriordb/suite.py --runs-dir
benchmarks/peers_new/runs``, see the README for the command) and prints, per posterior and
statistic, each sampler's worst-coordinate ESS_err per 1000 evaluations with its 90 % bootstrap
interval (the suite's metric, :func:`pymc_kernel_steps_bench.suite.suite_table`), its mean
evaluations, and its ratio to ``KMCLite`` with the interval of the paired resamples.

Usage::

    python benchmarks/peers_new/table.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pymc_kernel_steps_bench.suite import STATISTIC_LABELS, read_runs, suite_table

HERE = Path(__file__).parent
OURS = "KMCLite"


def _fmt(value: float) -> str:
    if not np.isfinite(value):
        return "–"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def main() -> None:
    frames = pd.concat([read_runs(p) for p in sorted((HERE / "runs").glob("*.csv.gz"))])
    table = suite_table(frames, level=0.9)
    for stat, label in STATISTIC_LABELS.items():
        print(f"\n### {label}, worst coordinate\n")
        print(
            "| posterior | sampler | ESS_err / 1000 evals [90 %] | evaluations | ÷ KMCLite [90 %] |"
        )
        print("|:--|:--|--:|--:|--:|")
        for posterior, group in table[table["statistic"] == stat].groupby("posterior", sort=False):
            ours = group[group["sampler"] == OURS].iloc[0]
            for _, row in group.iterrows():
                cell = ("≥ " if row["capped"] else "") + (
                    f"{_fmt(row['ess'])} [{_fmt(row['lo'])}, {_fmt(row['hi'])}]"
                )
                mark = "" if row["at_budget"] else " ‡"
                if row["sampler"] == OURS:
                    ratio = ""
                else:
                    with np.errstate(divide="ignore", invalid="ignore"):
                        boot = row["boot"] / ours["boot"]
                    lo, hi = np.nanquantile(boot, [0.05, 0.95])
                    ratio = f"{_fmt(row['ess'] / ours['ess'])} [{_fmt(lo)}, {_fmt(hi)}]"
                print(
                    f"| {posterior} | {row['sampler']}{mark} | {cell} | "
                    f"{row['evaluations']:,.0f} | {ratio} |"
                )


if __name__ == "__main__":
    main()
