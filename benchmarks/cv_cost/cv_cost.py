"""What the cross-validation of KMC's surrogate costs, next to the time per iteration.

Runs one chain of each sampler on the black-box banana (8-d by default; ``pm.sample``,
``cores=1``) with the step's hyper-parameter selection (``KMCLite``'s default regression
surrogate: the greedy search of per-coordinate lengthscales on held-out squared error;
``KMCFinite``: ``select_hyperparameters``, 5-fold CV of the score-matching objective over ℓ × λ)
and its surrogate fits timed from inside the step, and
prints a markdown table: selections made, seconds per selection, their share of the run, and
the step's own time per iteration with and without them. KAMH and AdaptiveMetropolis run too, as
the per-iteration reference (they have no CV).

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

import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps.bench.targets import banana_model
from pymc_kernel_steps.core.transitions import kmc

SAMPLERS = ("KMCLite", "KMCFinite", "KAMH", "AdaptiveMetropolis")


class _Timer:
    """Wraps a function and accumulates its wall time and call count."""

    def __init__(self):
        self.seconds = 0.0
        self.calls = 0

    def wrap(self, method):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1

        return timed


def run(name: str, tune: int, draws: int, seed: int, dim: int) -> dict:
    model = banana_model(dim, black_box=True)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = getattr(pks, name)()
        selection, fits = _Timer(), _Timer()
        # the KMC steps' surrogate: its fitter's selection and the transition's fits, timed
        fitter_class = type(getattr(step, "fitter", None))
        patched = [(kmc, "_fit"), (fitter_class, "select")] if hasattr(step, "fitter") else []
        originals = [getattr(owner, attribute) for owner, attribute in patched]
        for (owner, attribute), timer in zip(patched, (fits, selection), strict=False):
            setattr(owner, attribute, timer.wrap(getattr(owner, attribute)))
        start = time.perf_counter()
        try:
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
        finally:
            for (owner, attribute), original in zip(patched, originals, strict=True):
                setattr(owner, attribute, original)
        total = time.perf_counter() - start
    iterations = tune + draws
    return {
        "sampler": name,
        "selections": selection.calls,
        "s_per_selection": selection.seconds / selection.calls if selection.calls else 0.0,
        "selection_s": selection.seconds,
        "fits": fits.calls,
        "fit_s": fits.seconds,
        "total_s": total,
        "ms_per_iteration": 1e3 * total / iterations,
        "ms_per_iteration_without_cv": 1e3 * (total - selection.seconds) / iterations,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dim", type=int, default=8, help="dimension of the banana (default 8)")
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    args = parser.parse_args(argv)
    names = args.samplers.split(",")
    rows = [run(name, args.tune, args.draws, args.seed, args.dim) for name in names]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{args.dim}-d banana (black box), 1 chain of {args.tune} tune + {args.draws} draws, seed "
        f"{args.seed}; Python {platform.python_version()}, PyMC {pm.__version__}; load average "
        f"at the end {load}.\n"
    )
    print(
        "| sampler | CV selections | s per selection | CV s (share of run) | fits (incl. CV) s "
        "| run s | own ms / iteration | without CV |"
    )
    print("|:--|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        share = r["selection_s"] / r["total_s"]
        print(
            f"| {r['sampler']} | {r['selections']} | {r['s_per_selection']:.2f} | "
            f"{r['selection_s']:.1f} ({share:.0%}) | {r['fit_s']:.1f} | {r['total_s']:.1f} | "
            f"{r['ms_per_iteration']:.2f} | {r['ms_per_iteration_without_cv']:.2f} |"
        )


if __name__ == "__main__":
    main()
