"""Error-based ESS per 1000 target evaluations on targets with exact moments.

Every sampler gets the same budget of target evaluations per run (``--budget``, tuning included:
ours and AdaptiveMetropolis evaluate once per iteration, DEMetropolisZ twice, so it gets half the
iterations); each of ``--reps`` independent runs (one chain, seeds ``--seed0 + r``) estimates
E[x_i] and E[x_i²] for every coordinate, and the error of those estimates against the exact
values over the runs gives, per function f,

    ESS_err(f) = Var_π(f) / MSE(f),   reported per 1000 evaluations,

the number of independent draws that would be as accurate. ``worst`` is the smallest over the
2d functions, ``median`` the median. This measures what a user gets — including a chain that has
not yet reached part of the posterior, which within-run ESS cannot see — and the ArviZ bulk ESS
of the runs (median over runs of the minimum over coordinates) is printed beside it.

Targets: ``banana`` (8-d, b = 0.03, V = 100; Var_π(x²) from 400,000 exact draws) and
``rotated`` (10-d Gaussian, random rotation, Gamma(1, 1) eigenvalues; exact moments).

``python benchmarks/error_ess/error_ess.py --target banana KMCLite KMCFinite KAMH DEMetropolisZ``
(a spec ``Name:key=value,...`` passes options, e.g. ``KMCLite:whiten=False``).
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps_bench.targets import (
    banana_model,
    banana_moments,
    banana_sample,
    gaussian_model,
)


def rotated_covariance(dim: int = 10, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rotation = np.linalg.qr(rng.normal(size=(dim, dim)))[0]
    return rotation @ np.diag(rng.gamma(1.0, 1.0, size=dim)) @ rotation.T


def target(name: str):
    """(model builder, exact E[f], Var_π(f)) for f = (x, x²)."""
    if name == "banana":
        mean, var = banana_moments(8)
        reference = banana_sample(0, 400_000)
        values = np.concatenate([reference, reference**2], axis=1)
        return (lambda: banana_model(8)), np.concatenate([mean, var + mean**2]), values.var(0)
    if name == "rotated":
        cov = rotated_covariance()
        var = np.diag(cov)
        # x ~ N(0, Σ): Var(x_i) = Σ_ii, Var(x_i²) = 2 Σ_ii²
        return (
            (lambda: gaussian_model(cov)),
            np.concatenate([np.zeros(10), var]),
            np.concatenate([var, 2 * var**2]),
        )
    raise ValueError(f"unknown target {name!r}")


def parse(spec: str):
    name, _, options = spec.partition(":")
    kwargs = {}
    for item in filter(None, options.split(",")):
        key, value = item.split("=")
        kwargs[key] = eval(value, {"pks": pks, "np": np})  # noqa: S307 - benchmark CLI
    cls = getattr(pks, name, None) or getattr(pm, name)
    return cls, kwargs, (2 if name == "DEMetropolisZ" else 1)


def run(spec, build, truth, var_f, args) -> dict:
    cls, kwargs, per_iteration = parse(spec)
    estimates, bulk, start = [], [], time.perf_counter()
    for r in range(args.reps):
        with build():
            idata = pm.sample(
                step=cls(**kwargs),
                tune=args.tune // per_iteration,
                draws=(args.budget - args.tune) // per_iteration,
                chains=1,
                cores=1,
                random_seed=args.seed0 + r,
                progressbar=False,
                compute_convergence_checks=False,
            )
        x = idata.posterior["x"].values[0]
        estimates.append(np.concatenate([x.mean(0), (x**2).mean(0)]))
        bulk.append(float(az.ess(idata, method="bulk")["x"].values.min()))
    mse = ((np.array(estimates) - truth) ** 2).mean(0)
    per_1000 = var_f / mse / (args.budget / 1000)
    return {
        "spec": spec,
        "worst": float(per_1000.min()),
        "median": float(np.median(per_1000)),
        "bulk": float(np.median(bulk)) / (args.budget / 1000),
        "seconds": (time.perf_counter() - start) / args.reps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--target", default="banana", choices=["banana", "rotated"])
    parser.add_argument("--budget", type=int, default=12000)
    parser.add_argument("--tune", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed0", type=int, default=100)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    build, truth, var_f = target(args.target)
    print(
        f"{args.target}: {args.budget} evaluations per run ({args.tune} tuning), "
        f"{args.reps} runs; ESS_err per 1000 evaluations (worst, median over E[x], E[x²]); "
        "ArviZ min bulk ESS per 1000 evaluations (median over runs); seconds per run"
    )
    print("| sampler | ESS_err worst | ESS_err median | within-run bulk ESS | s/run |")
    print("|:--|--:|--:|--:|--:|")
    for spec in args.specs:
        row = run(spec, build, truth, var_f, args)
        print(
            f"| {row['spec']} | {row['worst']:.2f} | {row['median']:.1f} | {row['bulk']:.1f} | "
            f"{row['seconds']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
