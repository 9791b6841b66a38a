"""NUTS with the exact gradient on a robustness target: how fast can gradient HMC mix there?

The rings (``flower8``, ``flower8r``) are a miss for every sampler of ours at 10,000 evaluations.
A sampler that follows them with trajectories needs a surrogate as good as the true gradient;
this script measures what the true gradient gives NUTS: its within-run ESS of ``x`` (ArviZ, bulk,
the worst and the median coordinate) per 1000 gradient evaluations (leapfrog steps), with its step
size and trajectory length. One chain per seed, PyMC's defaults otherwise.

Usage::

    python benchmarks/robustness/nuts_rings.py --target flower8 --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import logging
import warnings

import arviz as az
import numpy as np
import pymc as pm

from pymc_kernel_steps_bench.targets.robustness import robustness_model


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="flower8")
    parser.add_argument("--seeds", type=int, nargs="*", default=[1, 2, 3])
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=5000)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    model = robustness_model(args.target)
    print(f"# NUTS on {args.target}: {args.tune} tuning + {args.draws} draws, one chain per seed")
    for seed in args.seeds:
        with model:
            idata = pm.sample(
                tune=args.tune,
                draws=args.draws,
                chains=1,
                random_seed=seed,
                progressbar=False,
                compute_convergence_checks=False,
            )
        stats = idata.sample_stats
        gradients = int(stats["n_steps"].values.sum())
        ess = np.asarray(az.ess(idata, var_names=["x"])["x"].values)
        print(
            f"seed {seed}: ESS of x min {ess.min():.0f}, median {np.median(ess):.0f} of "
            f"{args.draws} draws; {gradients} gradients in the draws; per 1000 gradients "
            f"min {1000 * ess.min() / gradients:.2f}, "
            f"median {1000 * np.median(ess) / gradients:.2f}; "
            f"step size {float(stats['step_size'].values.mean()):.3f}, mean leapfrog steps "
            f"{float(stats['n_steps'].values.mean()):.1f}, acceptance "
            f"{float(stats['acceptance_rate'].values.mean()):.2f}"
        )


if __name__ == "__main__":
    main()
