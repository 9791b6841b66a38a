"""What the cross-validation of KMC's surrogate costs, next to the time per iteration.

Runs one chain of each KMC step on the black-box banana (8-d by default; ``pm.sample``,
``cores=1``) twice, through public options only: with its defaults (``KMCLite``'s regression
surrogate: the greedy search of per-coordinate lengthscales and of the trend on held-out squared
error; ``KMCFinite``: 5-fold CV of the score-matching objective over ℓ × λ), and with the
surrogate's hyper-parameters fixed (``Regression(lengthscale=1, regularization=1e-3,
trend=...)``, ``FiniteFeatures(lengthscale=1, regularization=1e-3)``; ℓ in the whitened
coordinates the fit uses), which leaves the search a single candidate. The two runs alternate
(``--repeats``) in one process; the difference of their times is the search's cost (the fixed
kernel also changes the chain a little: read it as an estimate). KAMH and AdaptiveMetropolis run
once, as the per-iteration reference (they have no CV). Prints a markdown table.

Until 2026-12 this script timed the selection from inside the step by wrapping its private
methods; a study uses public options, never a patch (issue 49), so it now measures the search by
switching it off. ``docs/tuning.md``'s table is from the earlier method.

Example
-------
``python benchmarks/cv_cost/cv_cost.py --tune 2000 --draws 2000 --dim 8``
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps.options import FiniteFeatures, Regression
from pymc_kernel_steps_bench.targets import banana_model

SAMPLERS = ("KMCLite", "KMCFinite", "KAMH", "AdaptiveMetropolis")

#: the fixed hyper-parameters of the runs without the search (whitened coordinates)
FIXED_LENGTHSCALE, FIXED_REGULARIZATION = 1.0, 1e-3


def _fixed(name: str, dim: int):
    """The step ``name`` with its surrogate's hyper-parameters fixed, or None (no surrogate)."""
    if name == "KMCLite":  # the quartic trend where "auto" may choose it (d <= 19)
        trend = "quartic" if dim <= 19 else "quadratic"
        return pks.KMCLite(
            surrogate=Regression(
                lengthscale=FIXED_LENGTHSCALE, regularization=FIXED_REGULARIZATION, trend=trend
            )
        )
    if name == "KMCFinite":
        return pks.KMCFinite(
            surrogate=FiniteFeatures(
                lengthscale=FIXED_LENGTHSCALE, regularization=FIXED_REGULARIZATION
            )
        )
    return None


def _seconds(model, step, tune: int, draws: int, seed: int) -> float:
    start = time.perf_counter()
    with model:
        pm.sample(
            tune=tune,
            draws=draws,
            chains=1,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return time.perf_counter() - start


def run(name: str, tune: int, draws: int, seed: int, dim: int, repeats: int) -> dict:
    model = banana_model(dim, black_box=True)
    default, fixed = [], []
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # untimed: the first run in a process pays for compiling the model's log density
        _seconds(model, getattr(pks, name)(), 50, 10, seed)
        for _ in range(repeats if name in ("KMCLite", "KMCFinite") else 1):
            default.append(_seconds(model, getattr(pks, name)(), tune, draws, seed))
            step = _fixed(name, dim)
            if step is not None:
                fixed.append(_seconds(model, step, tune, draws, seed))
    iterations = tune + draws
    total = float(np.median(default))
    without = float(np.median(fixed)) if fixed else total
    return {
        "sampler": name,
        "total_s": total,
        "search_s": total - without,
        "ms_per_iteration": 1e3 * total / iterations,
        "ms_per_iteration_without_cv": 1e3 * without / iterations,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dim", type=int, default=8, help="dimension of the banana (default 8)")
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    parser.add_argument("--repeats", type=int, default=2, help="alternating runs of each KMC step")
    args = parser.parse_args(argv)
    names = args.samplers.split(",")
    rows = [run(name, args.tune, args.draws, args.seed, args.dim, args.repeats) for name in names]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{args.dim}-d banana (black box), 1 chain of {args.tune} tune + {args.draws} draws, seed "
        f"{args.seed}; Python {platform.python_version()}, PyMC {pm.__version__}; load average "
        f"at the end {load}.\n"
    )
    print(
        "| sampler | run s (median) | search s (share of run) | own ms / iteration "
        "| with fixed hyper-parameters |"
    )
    print("|:--|--:|--:|--:|--:|")
    for r in rows:
        share = r["search_s"] / r["total_s"]
        print(
            f"| {r['sampler']} | {r['total_s']:.1f} | {r['search_s']:.1f} ({share:.0%}) | "
            f"{r['ms_per_iteration']:.2f} | {r['ms_per_iteration_without_cv']:.2f} |"
        )


if __name__ == "__main__":
    main()
