"""One run of the default ``KMCLite`` on the 8-d banana that sits at the tip of an arm.

``benchmarks/compare/compare.py --targets banana`` (12,000 evaluations, 10 runs, seed 0) gives the
default ``KMCLite`` (``moves="learned"``) a worst-coordinate error-based ESS of 0.021 per 1000
evaluations: replicate 6 (index 5) spends two thirds of its draws at the tip of an arm. This
script re-runs such a replicate as the benchmark does (same seed, same black box, half the
iterations tuning) and prints what the chain did: each coordinate's error in posterior sds, where
it stayed longest and which move took it there, and per move the acceptance and the share of
proposals evaluated while it was far out (``|x1| > 30``, 3 posterior sds).

Usage::

    python benchmarks/robustness/banana_tip.py --replicates 5 4
"""

from __future__ import annotations

import argparse
import logging
import warnings

import numpy as np

import pymc_kernel_steps as pks
from pymc_kernel_steps.steps._moves import MOVE_KINDS
from pymc_kernel_steps_bench import replicate_seeds
from pymc_kernel_steps_bench import targets as T
from pymc_kernel_steps_bench._util import sample_quietly

BUDGET = 12_000
FAR = 30.0  # |x1| beyond 3 posterior sds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, nargs="*", default=[5])
    parser.add_argument("--seed", type=int, default=0, help="compare.py's --seed")
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    seeds = replicate_seeds(args.seed, 10)
    target = T.TARGETS["banana"]
    sd = np.sqrt(target.true_var)
    for replicate in args.replicates:
        model = target.build(black_box=True)
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            step = pks.KMCLite()
            iterations = BUDGET - step.start_evaluations(model.initial_point())
            tune = round(0.5 * iterations)
            idata = sample_quietly(model, step, tune, iterations - tune, 1, seeds[replicate])
        x = idata.posterior["x"].values[0]
        stats = idata.sample_stats
        move = stats["move"].values[0]
        accepted = stats["accepted"].values[0]
        evaluated = stats["logp_evals"].values[0] > 0
        error = (x.mean(axis=0) - target.true_mean) / sd
        print(f"replicate {replicate} (seed {seeds[replicate]}): error in sds {np.round(error, 2)}")
        far = np.abs(x[:, 0]) > FAR
        print(f"  draws with |x1| > {FAR:g}: {far.sum()} of {len(x)} (exact: 0.27 %)")
        if far.any():
            first = int(np.argmax(far))
            print(
                f"  first there at draw {first}, by a {MOVE_KINDS[move[first]]} move from "
                f"{np.round(x[first - 1, :2], 1)} to {np.round(x[first, :2], 1)}"
            )
            for code in np.unique(move[far]):
                here = far & (move == code)
                print(
                    f"    {MOVE_KINDS[code]:>22}: {here.sum():5d} proposals, acceptance "
                    f"{accepted[here].mean():.3f}, evaluated {evaluated[here].mean():.3f}"
                )
        weights = step.chain.learned_moves.weights
        print("  weights", {kind: round(w, 3) for kind, w in weights.items()})


if __name__ == "__main__":
    main()
