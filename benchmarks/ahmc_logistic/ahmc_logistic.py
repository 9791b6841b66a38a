"""AdaptiveHMC against NUTS and PyMC's HamiltonianMC on Bayesian logistic regressions (paper 003,
section 5.1 protocol: runs from dispersed starts, min / median / max ESS per gradient evaluation).

Targets (all ship offline): MASS ``Pima.tr`` (8 coefficients, with a reference posterior),
MASS ``synth.tr`` (Ripley; intercept and the two standardised coordinates, 3 coefficients) and the
package's synthetic 5-d logistic regression (with a reference posterior). Each run samples one
chain from a start ``w ~ N(0, 2² I)`` (the same starts for every sampler), with ``--tune`` tuning
and ``--draws`` kept iterations.

Per run: ArviZ's ESS of every coordinate (``method="mean"``, Geyer's initial monotone sequence,
as the paper's monotone estimator) divided by the gradient evaluations of the kept draws (NUTS
and HamiltonianMC: the ``n_steps`` stat; AdaptiveHMC: ``logp_evals``, each one log density and
gradient); min, median and max over coordinates. Over the runs: the median of each, and where a
reference exists the error-based ESS of the posterior mean, ``Var_π(w_j) / MSE_j`` per 1000
gradient evaluations (worst coordinate), which also counts a run that has not converged.

Usage::

    python benchmarks/ahmc_logistic/ahmc_logistic.py --runs 10 --tune 1000 --draws 1000 \\
        --out docs/benchmarks/ahmc-logistic.md
"""

from __future__ import annotations

import argparse
import datetime
import functools
import logging
import os
import platform
import subprocess
import sys
import time
import warnings

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps_bench.targets import TARGETS
from pymc_kernel_steps_bench.targets._data import rdataset, standardise
from pymc_kernel_steps_bench.targets.blackbox import _potential
from pymc_kernel_steps_bench.targets.synthetic import _logistic_logp_pt, logistic_regression_logp

SAMPLERS = {
    "AdaptiveHMC": lambda: pks.AdaptiveHMC(),
    "NUTS": lambda: pm.NUTS(),
    "HamiltonianMC": lambda: pm.HamiltonianMC(),
}


def synth_model(prior_sd: float = 5.0) -> pm.Model:
    """Logistic regression of ``yc`` on the standardised ``xs, ys`` of MASS ``synth.tr``."""
    frame = rdataset("MASS", "synth.tr")
    X = np.column_stack([np.ones(len(frame)), standardise(frame[["xs", "ys"]].to_numpy(float))])
    y = frame["yc"].to_numpy(dtype=float)
    with pm.Model() as model:
        w = pm.Flat("w", shape=X.shape[1])
        fn = functools.partial(logistic_regression_logp, X=X, y=y, prior_sd=prior_sd)
        pt_fn = functools.partial(_logistic_logp_pt, X=X, y=y, prior_sd=prior_sd)
        _potential("logistic", fn, w, False, pt_fn, 0.0)
    return model


def targets():
    """(name, model builder, reference mean, reference variance)."""
    return [
        ("pima", lambda: TARGETS["pima"].build(black_box=False), TARGETS["pima"]),
        ("synth", synth_model, None),
        ("logistic", lambda: TARGETS["logistic"].build(black_box=False), TARGETS["logistic"]),
    ]


def gradient_evaluations(stats, sampler: str) -> np.ndarray:
    name = "logp_evals" if sampler == "AdaptiveHMC" else "n_steps"
    return np.asarray(stats[name].values[0], dtype=float)


def one_run(model, sampler, start, seed, tune, draws) -> dict:
    with model:
        step = SAMPLERS[sampler]()
        began = time.perf_counter()
        idata = pm.sample(
            step=step, tune=tune, draws=draws, chains=1, cores=1, random_seed=seed,
            initvals={"w": start}, discard_tuned_samples=False, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
        seconds = time.perf_counter() - began
    w = idata.posterior["w"].values  # (1, draws, d)
    ess = np.asarray(az.ess(w, method="mean"), dtype=float)
    grads = gradient_evaluations(idata.sample_stats, sampler).sum()
    warm = gradient_evaluations(idata.warmup_sample_stats, sampler).sum()
    row = {
        "grad_evals": grads,
        "grad_evals_tuning": warm,
        "seconds": seconds,
        "accept": float(np.mean(idata.sample_stats["accept"].values))
        if "accept" in idata.sample_stats
        else float(np.mean(idata.sample_stats["acceptance_rate"].values)),
        "step_size": float(np.median(idata.sample_stats["step_size"].values)),
        "mean_steps": float(np.mean(gradient_evaluations(idata.sample_stats, sampler))),
        "ess_min": ess.min(),
        "ess_median": float(np.median(ess)),
        "ess_max": ess.max(),
    }
    if sampler == "AdaptiveHMC":
        row["max_n_steps"] = int(idata.sample_stats["max_n_steps"].values[0, 0])
    for j, value in enumerate(w[0].mean(axis=0)):
        row[f"w_mean_{j}"] = value
    return row


def summarise(frame: pd.DataFrame, references: dict) -> pd.DataFrame:
    rows = []
    for (target, sampler), group in frame.groupby(["target", "sampler"], sort=False):
        per_grad = group[["ess_min", "ess_median", "ess_max"]].div(group["grad_evals"], axis=0)
        row = {
            "target": target,
            "sampler": sampler,
            "runs": len(group),
            "min ESS/grad": per_grad["ess_min"].median(),
            "median ESS/grad": per_grad["ess_median"].median(),
            "max ESS/grad": per_grad["ess_max"].median(),
            "min ESS/grad (worst run)": per_grad["ess_min"].min(),
            "grads/iter": (group["grad_evals"] / group["draws"]).median(),
            "tuning grads": group["grad_evals_tuning"].median(),
            "accept": group["accept"].median(),
            "step size": group["step_size"].median(),
            "seconds/run": group["seconds"].median(),
        }
        reference = references.get(target)
        if reference is not None:
            mean_cols = [c for c in group.columns if c.startswith("w_mean_")]
            means = group[mean_cols].dropna(axis=1).to_numpy()
            mse = np.mean((means - reference.true_mean) ** 2, axis=0)
            ess_err = reference.true_var / mse
            row["error ESS/1000 grads (worst coord)"] = (
                1000 * ess_err.min() / group["grad_evals"].mean()
            )
        rows.append(row)
    return pd.DataFrame(rows)


def environment(command: str) -> str:
    def version(module):
        return getattr(sys.modules.get(module), "__version__", "?")

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "?"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    import pytensor

    return "\n".join(
        [
            f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            f"- machine: {cpu}, {os.cpu_count()} cores (shared with other jobs), "
            f"{platform.system()} {platform.release()}",
            f"- versions: Python {platform.python_version()}, PyMC {pm.__version__}, "
            f"PyTensor {pytensor.__version__}, NumPy {np.__version__}, ArviZ {version('arviz')}, "
            f"pymc_kernel_steps {pks.__version__} (commit {commit})",
            f"- command: `{command}`",
        ]
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--targets", default="pima,synth,logistic")
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", default="docs/benchmarks/ahmc-logistic.md")
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    command = "python " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:])
    wanted = args.targets.split(",")
    samplers = args.samplers.split(",")
    csv_path = os.path.splitext(args.out)[0] + "-runs.csv"
    rows, references = [], {}
    began = time.perf_counter()
    for name, build, reference in targets():
        if name not in wanted:
            continue
        references[name] = reference
        model = build()
        dim = model.initial_point()["w"].shape[0]
        rng = np.random.default_rng([args.seed, len(name)])
        starts = rng.normal(0.0, 2.0, size=(args.runs, dim))
        for run in range(args.runs):
            for sampler in samplers:
                seed = args.seed * 1000 + run
                row = one_run(model, sampler, starts[run], seed, args.tune, args.draws)
                row.update(target=name, sampler=sampler, run=run, draws=args.draws)
                rows.append(row)
                print(
                    f"{name:9s} run {run} {sampler:14s} min ESS/grad "
                    f"{row['ess_min'] / row['grad_evals']:.4f}  {row['seconds']:.1f}s",
                    flush=True,
                )
            pd.DataFrame(rows).to_csv(csv_path, index=False)
    frame = pd.DataFrame(rows)
    table = summarise(frame, references)
    elapsed = time.perf_counter() - began
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("# AdaptiveHMC vs NUTS vs HamiltonianMC: Bayesian logistic regression\n\n")
        f.write(environment(command) + f"\n- total wall time: {elapsed / 60:.1f} min\n\n")
        f.write(table.to_markdown(index=False, floatfmt=".4g") + "\n")
    print(table.to_string())
    return table


if __name__ == "__main__":
    main()
