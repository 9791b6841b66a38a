"""A change of a default, before and after: the whole study's table (issue 24 asks it of every
change of a default).

``--after`` holds runs of the changed samplers (same posteriors, seeds and budget as the
committed ``--runs-dir``, made with the new code under the samplers' own labels). For each
posterior and statistic it prints each changed sampler's error-based ESS per 1000 evaluations
(worst coordinate) before and after with the paired ratio, and our best against the best peer
before and after (the study's headline); with ``--z``, the largest ``z_pooled`` (within-run
MCSE) of our best too. Then the geometric means over the posteriors.

Usage (the posteriordb suite, then the robustness targets)::

    python benchmarks/before_after.py --runs-dir benchmarks/posteriordb/runs --after RUNS \\
        --samplers KMCLite KMCFinite KAMH
    python benchmarks/before_after.py --runs-dir benchmarks/robustness/runs --after RUNS \\
        --samplers KMCLite KMCFinite KAMH --z
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from pymc_kernel_steps_bench.robustness import z_table
from pymc_kernel_steps_bench.suite import (
    STATISTIC_LABELS,
    geometric_mean,
    ratios,
    read_runs,
    suite_table,
)


def _z(frame: pd.DataFrame, sampler: str, stat: str) -> float:
    table = z_table(frame[frame["sampler"] == sampler])
    row = table[table["statistic"] == stat]
    return float(row["z_pooled"].iloc[0]) if len(row) else float("nan")


def compare(before: pd.DataFrame, after: pd.DataFrame, samplers, with_z: bool) -> pd.DataFrame:
    """One row per statistic of one posterior: ``samplers`` before and after, our best default
    against the best peer before and after (:func:`~pymc_kernel_steps_bench.suite.ratios`)."""
    changed = before["sampler"].isin(samplers)
    new = pd.concat([before[~changed], after[after["sampler"].isin(samplers)]], ignore_index=True)
    old_table, new_table = suite_table(before), suite_table(new)
    old_ratios, new_ratios = ratios(old_table), ratios(new_table)
    rows = []
    for stat, old_group in old_table.groupby("statistic", sort=False):
        new_group = new_table[new_table["statistic"] == stat]
        row = {
            "posterior": old_group["posterior"].iloc[0],
            "stat": STATISTIC_LABELS.get(stat, stat),
        }
        for sampler in samplers:
            was = old_group.set_index("sampler")["ess"].get(sampler, np.nan)
            now = new_group.set_index("sampler")["ess"].get(sampler, np.nan)
            row[sampler] = f"{was:.3g} → {now:.3g}"
            row[f"_{sampler}"] = now / was
        for label, table, frame in (("before", old_ratios, before), ("after", new_ratios, new)):
            best = table[table["statistic"] == stat].iloc[0]
            text = f"{best['ours']} {best['ours_ess']:.3g}, **{best['ratio']:.2f}**"
            if with_z:
                text += f" (z {_z(frame, best['ours'], stat):.1f})"
            row[f"ours/peer {label}"] = text
            row[f"_ratio_{label}"] = best["ratio"]
        row["best peer"] = f"{best['peer']} {best['peer_ess']:.3g}"
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", type=Path, required=True, help="the committed frames")
    parser.add_argument("--after", type=Path, required=True, help="runs of the new code")
    parser.add_argument("--samplers", nargs="+", required=True)
    parser.add_argument("--z", action="store_true", help="add our best's z_pooled")
    args = parser.parse_args(argv)
    frames = [
        compare(read_runs(args.runs_dir / p.name), read_runs(p), args.samplers, args.z)
        for p in sorted(args.after.glob("*.csv.gz"))
    ]
    table = pd.concat(frames, ignore_index=True)
    print(table.drop(columns=[c for c in table if c.startswith("_")]).to_markdown(index=False))
    print()
    for stat, group in table.groupby("stat", sort=False):
        per_sampler = ", ".join(f"{s} {geometric_mean(group[f'_{s}']):.2f}×" for s in args.samplers)
        print(
            f"{stat}, {len(group)} posteriors: after ÷ before {per_sampler}; our best ÷ best "
            f"peer {geometric_mean(group['_ratio_before']):.2f} → "
            f"{geometric_mean(group['_ratio_after']):.2f} (ahead on "
            f"{int((group['_ratio_before'] >= 1).sum())} → "
            f"{int((group['_ratio_after'] >= 1).sum())})"
        )


if __name__ == "__main__":
    main()
