"""What to expect beyond 20 dimensions: do the samplers mix at d = 20 and d = 50?

For each dimension, two black-box targets: a Gaussian with a random rotation and Gamma(1, 1)
eigenvalues (as ``error_ess.py --target rotated``, at dimension d) and Haario's banana
(b = 0.03, V = 100, the remaining coordinates standard normal). Each sampler runs 2 chains of
``tune`` + ``draws`` iterations (sequential, ``cores=1``) from PyMC's initial point, and the script
prints a markdown table with ArviZ's max R-hat and min bulk ESS over the coordinates, and the
largest error of the posterior mean in posterior standard deviations. "Mixed" means
max R-hat < 1.05 and min bulk ESS ≥ 100.

Example
-------
``python benchmarks/high_dim/high_dim.py --dims 20,50 --tune 1000 --draws 1000``
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps_bench.targets import banana_model, banana_moments, gaussian_model

SAMPLERS = ("KAMH", "AdaptiveMetropolis", "KMCLite", "KMCFinite", "DEMetropolisZ")
RHAT_MAX = 1.05
ESS_MIN = 100


def rotated_covariance(dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rotation = np.linalg.qr(rng.normal(size=(dim, dim)))[0]
    return rotation @ np.diag(rng.gamma(1.0, 1.0, size=dim)) @ rotation.T


def targets(dim: int):
    """(name, model builder, exact mean, exact variance) per target."""
    cov = rotated_covariance(dim)
    mean, var = banana_moments(dim)
    return [
        ("rotated Gaussian", lambda: gaussian_model(cov), np.zeros(dim), np.diag(cov)),
        ("banana", lambda: banana_model(dim), mean, var),
    ]


def run(sampler: str, build, mean, var, tune: int, draws: int, seed: int) -> dict:
    with build(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = getattr(pm, sampler)() if sampler == "DEMetropolisZ" else getattr(pks, sampler)()
        start = time.perf_counter()
        idata = pm.sample(
            tune=tune,
            draws=draws,
            chains=2,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
        seconds = time.perf_counter() - start
    x = idata.posterior["x"]
    rhat = float(np.max(az.rhat(idata, var_names=["x"])["x"].values))
    ess = float(np.min(az.ess(idata, var_names=["x"], method="bulk")["x"].values))
    error = np.abs(x.mean(("chain", "draw")).values - mean) / np.sqrt(var)
    return {"rhat": rhat, "ess": ess, "error": float(error.max()), "seconds": seconds}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="20,50")
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    args = parser.parse_args(argv)
    print(
        f"2 chains × ({args.tune} tune + {args.draws} draws) per run, seed {args.seed}; Python "
        f"{platform.python_version()}, PyMC {pm.__version__}, ArviZ {az.__version__}. "
        f"Mixed: max R-hat < {RHAT_MAX} and min bulk ESS ≥ {ESS_MIN}.\n"
    )
    print("| d | target | sampler | max R-hat | min bulk ESS | max mean error / sd | mixed | s |")
    print("|--:|:--|:--|--:|--:|--:|:--|--:|")
    for dim in (int(d) for d in args.dims.split(",")):
        for name, build, mean, var in targets(dim):
            for sampler in args.samplers.split(","):
                r = run(sampler, build, mean, var, args.tune, args.draws, args.seed)
                mixed = "yes" if r["rhat"] < RHAT_MAX and r["ess"] >= ESS_MIN else "no"
                print(
                    f"| {dim} | {name} | {sampler} | {r['rhat']:.2f} | {r['ess']:.0f} | "
                    f"{r['error']:.2f} | {mixed} | {r['seconds']:.0f} |",
                    flush=True,
                )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nLoad average at the end: {load}.")


if __name__ == "__main__":
    main()
