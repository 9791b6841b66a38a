"""``KMCLite[learned]`` against ``KMCLite`` and the peers on the posteriordb suite (issue 24).

Reads ``runs/`` (the committed suite: every default and the peers), ``runs-default-rerun/``
(where present, the default's runs again with the branch's code, which replace the committed ones:
several of those ran code from before the golden draws were last re-recorded) and
``runs-learned/`` (the
learned variants, same seeds and budget) and prints, per posterior and statistic, the error-based
ESS per 1000 evaluations (worst coordinate, 90 % bootstrap interval) of each learned variant, of
its default, of the best peer, and the paired ratios; then the geometric means.

Usage::

    python benchmarks/posteriordb/suite.py --run <names> --replicates 10 --budget 10000 \\
        --samplers "KMCLite[learned]" --runs-dir benchmarks/posteriordb/runs-learned --seed 0
    python benchmarks/posteriordb/learned.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from pymc_kernel_steps_bench.suite import geometric_mean, suite_table

HERE = Path(__file__).parent


def _ratio(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = a["boot"] / b["boot"]
    lo, hi = np.nanquantile(boot, [0.05, 0.95])
    return a["ess"] / b["ess"], lo, hi


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learned", type=Path, default=HERE / "runs-learned")
    args = parser.parse_args(argv)
    rows = []
    for path in sorted(args.learned.glob("*.csv.gz")):
        after = pd.read_csv(path, dtype={"git_commit": str})
        before = pd.read_csv(HERE / "runs" / path.name, dtype={"git_commit": str})
        rerun = HERE / "runs-default-rerun" / path.name
        if rerun.exists():
            again = pd.read_csv(rerun, dtype={"git_commit": str})
            before = pd.concat(
                [before[~before["sampler"].isin(again["sampler"].unique())], again],
                ignore_index=True,
            )
        table = suite_table(pd.concat([before, after], ignore_index=True))
        for stat, group in table.groupby("statistic", sort=False):
            by = group.set_index("sampler")
            peers = group[~group["ours"]]
            peer = peers.loc[peers["ess"].idxmax()]
            ours_before = group[group["ours"] & ~group["sampler"].str.contains("learned")]
            adopted = {s.removesuffix("[fixed]") for s in by.index if s.endswith("[fixed]")}
            # the former defaults: the [fixed] rows where learned was adopted, not the new ones
            ours_before = ours_before[~ours_before["sampler"].isin(adopted)]
            best_before = ours_before.loc[ours_before["ess"].idxmax()]
            for name in [s for s in by.index if s.endswith("[learned]")]:
                base = name.split("[")[0]
                if f"{base}[fixed]" in by.index:  # the former default, once learned was adopted
                    base = f"{base}[fixed]"
                r_def = _ratio(by.loc[name], by.loc[base])
                r_peer = _ratio(by.loc[name], peer)
                rows.append(
                    {
                        "posterior": group["posterior"].iloc[0],
                        "d": int(group["dim"].iloc[0]),
                        "stat": "E[x]" if stat == "mean" else "E[x²]",
                        "sampler": name.split("[")[0] + (" (rerun)" if rerun.exists() else ""),
                        "default (fixed)": f"{by.loc[base, 'ess']:.3g}",
                        "learned": f"{by.loc[name, 'ess']:.3g} [{by.loc[name, 'lo']:.3g}, "
                        f"{by.loc[name, 'hi']:.3g}]",
                        "learned/default": f"{r_def[0]:.2f} [{r_def[1]:.2f}, {r_def[2]:.2f}]",
                        "best peer": f"{peer['sampler']} {peer['ess']:.3g}",
                        "learned/peer": f"{r_peer[0]:.2f} [{r_peer[1]:.2f}, {r_peer[2]:.2f}]",
                        "ours best, former defaults": f"{best_before['sampler']} "
                        f"{best_before['ess']:.3g}",
                        "_r_def": r_def[0],
                        "_r_peer": r_peer[0],
                        "_r_best": by.loc[name, "ess"] / best_before["ess"],
                    }
                )
    frame = pd.DataFrame(rows)
    print(frame.drop(columns=[c for c in frame if c.startswith("_")]).to_markdown(index=False))
    frame["sampler"] = frame["sampler"].str.replace(" (rerun)", "")
    for (sampler, stat), group in frame.groupby(["sampler", "stat"]):
        print(
            f"{sampler}[learned] {stat}: geometric mean over {len(group)} posteriors of "
            f"learned/default {geometric_mean(group['_r_def']):.2f}, learned/best peer "
            f"{geometric_mean(group['_r_peer']):.2f}, learned/our best former default "
            f"{geometric_mean(group['_r_best']):.2f}; learned >= default on "
            f"{int((group['_r_def'] >= 1).sum())}"
        )


if __name__ == "__main__":
    main()
