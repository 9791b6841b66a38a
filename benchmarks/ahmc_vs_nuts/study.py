"""Why AdaptiveHMC trails NUTS and HamiltonianMC on a correlated logistic regression (issue 24, 4).

Target: a Bayesian logistic regression with gradients, 6 coefficients (an intercept and five
equicorrelated covariates, correlation ``--rho``), ``--n`` rows from a fixed seed, prior
``N(0, 5²)``. Each sampler runs ``--runs`` single chains of ``--tune`` + ``--draws`` iterations
from the model's initial point (seeds 0, 1, ...). Per run: the smallest ArviZ ESS over the
coefficients (``method="mean"``) per 1000 gradient evaluations of the kept draws (NUTS and
HamiltonianMC: the ``n_steps`` stat; AdaptiveHMC: ``logp_evals``), the mean gradients per
iteration, the acceptance, the step size and (AdaptiveHMC) the chosen ``L``; and how far the
diagonal mass matrix is from the posterior's variances (``mass error``: the largest ratio, either
way, of the step's inverse mass to NUTS's posterior variance; AdaptiveHMC only).

Variants of AdaptiveHMC, each changing one thing through its public options:

``AdaptiveHMC``
    the defaults;
``AdaptiveHMC L ≤ K``
    ``n_steps_bounds=(1, K)`` for each ``K`` of ``--max-steps``: the box's range of ``L`` cut;
``AdaptiveHMC fixed (ε, L)``
    ``step_size_bounds=(ε, ε)`` and ``n_steps_bounds=(L, L)`` for each pair of ``--grid``: the
    kernel without the optimiser, to see what the box holds.

Three more variants were measured by patching the package's internals and are retired (the
reward ``ESJD / L``, a third mass-matrix estimate at 75 % of tuning, full-length trajectories
``L_r = L``): their findings are in this study's README.

Usage::

    python benchmarks/ahmc_vs_nuts/study.py --runs 4
    python benchmarks/ahmc_vs_nuts/study.py --runs 2 --variants grid --grid 0.5:2 0.5:4 0.8:3
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
from pymc_kernel_steps.options import BayesianTuning


def correlated_logistic_model(n: int = 200, rho: float = 0.9, seed: int = 24) -> pm.Model:
    """Logistic regression on an intercept and five equicorrelated standard normal covariates."""
    rng = np.random.default_rng(seed)
    k = 5
    corr = np.full((k, k), rho) + (1 - rho) * np.eye(k)
    covariates = rng.standard_normal((n, k)) @ np.linalg.cholesky(corr).T
    X = np.column_stack([np.ones(n), covariates])
    w_true = np.array([0.5, 1.0, -0.5, 0.8, 0.0, -1.0])
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ w_true))).astype(int)
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 5.0, shape=X.shape[1])
        pm.Bernoulli("y", logit_p=pm.math.dot(X, w), observed=y)
    return model


def _run(label, factory, model, tune, draws, seed, reference_var):
    with model:
        step = factory()
        start = time.perf_counter()
        idata = pm.sample(
            tune=tune,
            draws=draws,
            chains=1,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    seconds = time.perf_counter() - start
    stats = idata["sample_stats"]
    gradient_stat = "logp_evals" if "logp_evals" in stats else "n_steps"
    accept_stat = "accept" if "accept" in stats else "acceptance_rate"
    gradients = float(np.asarray(stats[gradient_stat]).sum())
    ess = np.asarray(az.ess(idata, var_names=["w"], method="mean")["w"].values, dtype=float)
    row = {
        "sampler": label,
        "seed": seed,
        "min_ess_per_1000": 1000 * ess.min() / gradients,
        "gradients_per_iteration": gradients / draws,
        "accept": float(np.asarray(stats[accept_stat]).mean()),
        "step_size": float(np.asarray(stats["step_size"]).mean()),
        "L": float(np.asarray(stats["max_n_steps"]).mean()) if "max_n_steps" in stats else np.nan,
        "seconds": seconds,
        "variance": np.asarray(idata["posterior"]["w"]).reshape(-1, 6).var(axis=0),
    }
    chain = getattr(step, "chain", None)  # diagnosis only: the frozen mass matrix of the run
    if chain is not None and reference_var is not None:
        ratio = np.asarray(chain.inv_mass) / reference_var
        row["mass_error"] = float(np.max(np.maximum(ratio, 1 / ratio)))
    else:
        row["mass_error"] = np.nan
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--rho", type=float, default=0.9)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--variants", nargs="*", default=["NUTS", "HamiltonianMC", "AdaptiveHMC"])
    parser.add_argument("--grid", nargs="*", default=[], help="ε:L pairs for the 'grid' variant")
    parser.add_argument("--max-steps", nargs="*", type=int, default=[], help="K of 'L ≤ K'")
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    model = correlated_logistic_model(args.n, args.rho)

    factories = {
        "NUTS": lambda: pm.NUTS(),
        "HamiltonianMC": lambda: pm.HamiltonianMC(),
        "AdaptiveHMC": lambda: pks.AdaptiveHMC(),
    }
    reference_var = None
    runs = []
    variants = list(args.variants)
    if "grid" in variants:
        variants.remove("grid")
        for pair in args.grid:
            eps, n_steps = pair.split(":")
            factories[f"fixed ({eps}, {n_steps})"] = lambda e=float(eps), L=int(n_steps): (
                pks.AdaptiveHMC(
                    tuning=BayesianTuning(step_size_bounds=(e, e), n_steps_bounds=(L, L))
                )
            )
            variants.append(f"fixed ({eps}, {n_steps})")
    for k in args.max_steps:
        factories[f"L ≤ {k}"] = lambda k=k: pks.AdaptiveHMC(
            tuning=BayesianTuning(n_steps_bounds=(1, k))
        )
        variants.append(f"L ≤ {k}")
    print("sampler | seed | min ESS/1000 grads | grads/iter | accept | ε | L | mass error | s")
    unknown = sorted(set(variants) - set(factories))
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {sorted(factories)} or 'grid'")
    for label in variants:
        for seed in range(args.runs):
            row = _run(label, factories[label], model, args.tune, args.draws, seed, reference_var)
            runs.append(row)
            print(
                f"{label} | {seed} | {row['min_ess_per_1000']:.1f} | "
                f"{row['gradients_per_iteration']:.2f} | {row['accept']:.2f} | "
                f"{row['step_size']:.3f} | {row['L']:.0f} | {row['mass_error']:.2f} | "
                f"{row['seconds']:.0f}",
                flush=True,
            )
        if label == "NUTS":
            reference_var = np.mean([r["variance"] for r in runs if r["sampler"] == "NUTS"], 0)
    print("\nmedian over runs: sampler | min ESS/1000 grads | grads/iter")
    for label in variants:
        rows = [r for r in runs if r["sampler"] == label]
        print(
            f"{label} | {np.median([r['min_ess_per_1000'] for r in rows]):.1f} | "
            f"{np.median([r['gradients_per_iteration'] for r in rows]):.2f}"
        )


if __name__ == "__main__":
    main()
