"""Does the quartic trend hurt on heavy tails? ``KMCLite`` with ``trend="auto"`` (the default)
against ``trend="quadratic"`` on a correlated 6-d Student-t black box.

A quartic trend decays faster than any Student-t; ``"auto"`` should keep the quadratic one
there. Each trend runs ``--runs`` single chains of ``--tune`` + ``--draws`` iterations (seeds
0, 1, ...); the script prints, per coordinate, the root mean square over the runs of the
relative error of E[x²] against the exact ``ν/(ν − 2) Σ_ii``, the share of diverging (aborted)
trajectories, and the trend each run ended with. With ``ν ≤ 4`` the fourth moment is infinite
and the errors are dominated by single extreme draws.

Example
-------
``python benchmarks/heavy_tails/heavy_tails.py --nu 6 --runs 12``
"""

from __future__ import annotations

import argparse
import functools

import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps.options import Regression
from pymc_kernel_steps_bench.targets.blackbox import CountingLogp

DIM = 6


def student_t_logp(x, precision, nu):
    return float(-(nu + len(x)) / 2 * np.log1p(x @ precision @ x / nu))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nu", type=float, default=6.0)
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--tune", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--trends", default="auto,quadratic")
    args = parser.parse_args(argv)
    if args.nu <= 2:
        parser.error("--nu must exceed 2 (E[x²] is infinite otherwise)")
    rng = np.random.default_rng(0)
    A = rng.normal(size=(DIM, DIM))
    covariance = A @ A.T / DIM + 0.2 * np.eye(DIM)
    logp = functools.partial(student_t_logp, precision=np.linalg.inv(covariance), nu=args.nu)
    truth = np.diag(covariance) * args.nu / (args.nu - 2)
    print(f"6-d Student-t, ν = {args.nu:g}, {args.runs} runs of {args.tune} + {args.draws}\n")
    print(
        "| trend | rms relative error of E[x²] per coordinate | worst | diverging "
        "| trend at the end |"
    )
    print("|:--|:--|--:|--:|:--|")
    for trend in args.trends.split(","):
        errors, diverging, chosen = [], [], []
        for seed in range(args.runs):
            with pm.Model():
                x = pm.Flat("x", shape=DIM)
                pm.Potential("student_t", CountingLogp(logp)(x))
                step = pks.KMCLite(surrogate=Regression(trend=trend))
                idata = pm.sample(
                    step=step, tune=args.tune, draws=args.draws, chains=1, random_seed=seed,
                    progressbar=False, compute_convergence_checks=False,
                )  # fmt: skip
            draws = idata.posterior["x"].values[0]
            errors.append((draws**2).mean(axis=0) / truth - 1)
            diverging.append(float(idata.sample_stats.diverging.values.mean()))
            final = step.chain.trend
            chosen.append("quadratic" if final is None or final.is_standard_gaussian else "quartic")
        rms = np.sqrt(np.mean(np.square(errors), axis=0))
        ends = ", ".join(f"{chosen.count(k)} {k}" for k in ("quadratic", "quartic") if k in chosen)
        print(
            f"| {trend} | {' '.join(f'{e:.2f}' for e in rms)} | {rms.max():.2f} | "
            f"{np.mean(diverging):.3f} | {ends} |"
        )


if __name__ == "__main__":
    main()
