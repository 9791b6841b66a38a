"""Do the committed frames still describe today's code? Re-run one replicate and compare.

A study's figures are read from committed frames (``benchmarks/posteriordb/runs/``,
``benchmarks/robustness/runs*/``), each row written by the code of its day. A later change of a
sampler's random stream (a new move, a proposal no longer evaluated) leaves those rows describing
code that no longer ships, and a before/after table that takes its "before" from them compares two
changes at once. This script re-runs replicates 0 and 1 (the fewest a study runs) of every
one of our samplers in each frame, with the frame's seeds
(:func:`~pymc_kernel_steps_bench.replicate_seeds` spawns each replicate's seed independently of
how many there are), and compares replicate 0's estimates with the frame's. The peers are
skipped unless ``--peers``. Exit status 1 if any differs.

The draws depend on OpenBLAS's kernels in their last bits, and so, a few dozen iterations in,
on which accept/reject decisions fall which way: compare with the kernels the frames were written
with. The frames re-run on 2026-11-26 used ``OPENBLAS_CORETYPE=Haswell`` (the environment of the
AMD EPYC machines this project runs on; ``tests/conftest.py`` chooses the same for the golden
draws, which until then were recorded with ``SkylakeX`` ones). And until 2026-11-26 the black box
compiled the likelihood with numba's fast-math flags, whose fresh compile and cached copy round
differently: every frame written before then reports as differing here, even from the code that
wrote it, and is statistically, not bitwise, today's.

Usage::

    python benchmarks/check_frames.py benchmarks/robustness/runs benchmarks/robustness/runs-seed1
    python benchmarks/check_frames.py benchmarks/posteriordb/runs --only arK-arK sblrc-blr
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from pymc_kernel_steps_bench import replicate_seeds
from pymc_kernel_steps_bench.robustness import run_target
from pymc_kernel_steps_bench.suite import is_ours, read_runs, run_posterior
from pymc_kernel_steps_bench.targets.robustness import ROBUSTNESS_TARGETS

KEY = ["statistic", "coordinate"]
#: the largest study seed searched for the one whose replicate 0 has a frame's seed
MAX_STUDY_SEED = 1000


def study_seed(frame: pd.DataFrame) -> int:
    """The ``--seed`` of the study that wrote ``frame``: the one whose replicate 0 has its seed."""
    first = int(frame.loc[frame["replicate"] == 0, "seed"].iloc[0])
    for seed in range(MAX_STUDY_SEED):
        if replicate_seeds(seed, 1)[0] == first:
            return seed
    raise ValueError(f"no study seed below {MAX_STUDY_SEED} gives replicate 0 the seed {first}")


def check(path: Path, samplers=None, peers: bool = False) -> list[dict]:
    """Re-run replicate 0 of the frame's samplers; one row per sampler."""
    frame = read_runs(path)
    name = str(frame["posterior"].iloc[0])
    run = run_target if name in ROBUSTNESS_TARGETS else run_posterior
    seed = study_seed(frame)
    budget = int(frame["budget"].iloc[0])
    chosen = [
        s
        for s in frame["sampler"].unique()
        if (peers or is_ours(s)) and (samplers is None or s in samplers)
    ]
    rows = []
    for sampler in chosen:
        old = frame[(frame["sampler"] == sampler) & (frame["replicate"] == 0)].sort_values(KEY)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # two replicates, the fewest a study runs; replicate 0 is compared
            new = run(name, budget=budget, replicates=2, samplers=(sampler,), random_seed=seed)
        new = new[new["replicate"] == 0].sort_values(KEY)
        difference = float(np.max(np.abs(old["estimate"].to_numpy() - new["estimate"].to_numpy())))
        commit = ", ".join(sorted(frame.loc[frame["sampler"] == sampler, "git_commit"].unique()))
        rows.append(
            {
                "frame": f"{path.parent.name}/{path.name}",
                "sampler": sampler,
                "written by": commit,
                "max |Δ estimate|": difference,
                "today": "same" if difference <= 1e-9 else "DIFFERS",
            }
        )
        print(f"{path.parent.name}/{name} {sampler}: {rows[-1]['today']} ({difference:.3g})")
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs_dirs", nargs="+", type=Path)
    parser.add_argument("--only", nargs="*", default=None, help="posteriors or targets")
    parser.add_argument("--samplers", nargs="*", default=None)
    parser.add_argument("--peers", action="store_true", help="check the peers' rows too")
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    rows = []
    for directory in args.runs_dirs:
        for path in sorted(directory.glob("*.csv.gz")):
            if args.only is None or path.name.removesuffix(".csv.gz") in args.only:
                rows += check(path, args.samplers, args.peers)
    table = pd.DataFrame(rows)
    print(table.to_markdown(index=False) if len(table) else "no frames")
    sys.exit(int(bool(len(table)) and bool((table["today"] != "same").any())))


if __name__ == "__main__":
    main()
