"""Lotka–Volterra black box (fixed-step RK4,
:mod:`pymc_kernel_steps_bench.targets.lotka_volterra_rk4`): convergence and where the model is
evaluated, 4 chains × (tune + draws), one process so that every evaluation point is recorded.

Prints per sampler: max R-hat, whether the true (α, β, γ, δ) lie in the 99 % intervals, the share
of evaluations more than 10 prior standard deviations (of the log parameters) from the prior
mean, acceptance, wall time, and each chain's mean model log density and mean σ over its draws
(a chain in the posterior's main mode has a mean log density near 43 and σ near 0.2; a local
mode with σ ≈ 0.7 sits about 58 below).

``python benchmarks/ode_check/ode_check.py KAMH AdaptiveMetropolis KMCLite KMCFinite
[--tune 2000]``; a
sampler with keyword arguments: ``KMCLite:surrogate=regression``.
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
from pymc_kernel_steps_bench.targets import lotka_volterra_rk4 as helpers

PRIOR_LOG_MEAN = np.log([1.0, 0.05, 1.0, 0.05, 0.3])
PRIOR_LOG_SD = 0.5
NAMES = ["alpha", "beta", "gamma", "delta", "sigma"]


def make_step(spec: str):
    """``"KMCLite"`` or, with keyword arguments, ``"KMCLite:surrogate=regression,n_steps=20"``."""
    name, _, options = spec.partition(":")
    kwargs = {}
    for option in filter(None, options.split(",")):
        key, _, value = option.partition("=")
        try:
            kwargs[key] = int(value)
        except ValueError:
            kwargs[key] = value
    return (getattr(pks, name, None) or getattr(pm, name))(**kwargs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("samplers", nargs="+")
    parser.add_argument("--tune", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=4)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    loglik = helpers.lotka_volterra_loglik
    print(
        "| sampler | max R-hat | truth in 99 % intervals | evals > 10 prior sd | accept | s | "
        "per chain: mean log density (mean σ) |"
    )
    print("|:--|--:|:--|--:|--:|--:|:--|")
    for name in args.samplers:
        points = []

        def recording(theta, points=points):
            points.append(np.array(theta, copy=True))
            return loglik(theta)

        helpers.lotka_volterra_loglik = recording
        try:
            with helpers.lotka_volterra_model():
                start = time.perf_counter()
                idata = pm.sample(
                    step=make_step(name), tune=args.tune, draws=args.draws, chains=4, cores=1,
                    random_seed=args.seed, progressbar=False, compute_convergence_checks=False,
                )  # fmt: skip
                seconds = time.perf_counter() - start
        finally:
            helpers.lotka_volterra_loglik = loglik
        rhat = float(max(az.rhat(idata)[v].values.max() for v in NAMES))
        covered = []
        for i, v in enumerate(NAMES[:4]):
            low, high = np.quantile(idata.posterior[v].values, [0.005, 0.995])
            covered.append(low <= helpers.LV_TRUE[i] <= high)
        theta = np.array(points)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.abs((np.log(theta) - PRIOR_LOG_MEAN) / PRIOR_LOG_SD)
        far = float(np.mean(np.any(~(z <= 10), axis=1)))
        accept = (
            float(idata.sample_stats.accepted.mean())
            if "accepted" in idata.sample_stats
            else np.nan
        )
        per_chain = ", ".join(
            f"{lp:.0f} ({sigma:.2f})"
            for lp, sigma in zip(
                idata.sample_stats["lp"].mean("draw").values
                if "lp" in idata.sample_stats
                else np.full(4, np.nan),
                idata.posterior["sigma"].mean("draw").values,
                strict=True,
            )
        )
        print(
            f"| {name} | {rhat:.3f} | {'all' if all(covered) else covered} | {100 * far:.2f} % | "
            f"{accept:.2f} | {seconds:.0f} | {per_chain} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
