"""A single chain whose history already covers the posterior: an upper bound for a start phase.

On ``flower8`` (four thin rings) one chain's history covers an arc of each ring, and the
study's samplers trail SMC 2-3x. A population or annealed start phase would give the chain a
history that covers more of the rings, at a cost in evaluations. This script asks what such a
phase could gain at best: it warm-starts ``KMCLite`` and ``KMCFinite`` (``history=``) with
``--history`` exact independent draws of the target, *not charged* to the budget, then runs one
chain of ``--tune`` tuning and ``budget − tune`` kept iterations (one evaluation each). With
``--history 0`` it is the study's setting (half the budget tuning, no warm start). Per run, the
estimates of E[x] and E[x²] from the kept draws; over the runs, the worst coordinate's
error-based ESS (``Var_π(f) / MSE``) per 1000 evaluations against the exact moments, and the
largest ``z_pooled`` (the study's: the summed errors over the root summed squared within-run
MCSEs). The evaluations counted are the sum of the ``logp_evals`` sample stat (the warm start
spends none).

Usage::

    python benchmarks/robustness/oracle_history.py --target flower8 --history 2000 --tune 500
    python benchmarks/robustness/oracle_history.py --target flower8 --history 0 --tune 5000
"""

from __future__ import annotations

import argparse
import logging
import warnings

import arviz as az
import numpy as np

import pymc_kernel_steps as pks
from pymc_kernel_steps_bench import worst_ess_err
from pymc_kernel_steps_bench._util import sample_quietly
from pymc_kernel_steps_bench.robustness import error_in_mcse
from pymc_kernel_steps_bench.targets.robustness import ROBUSTNESS_TARGETS, robustness_model

BUDGET = 10_000


def _warm_history(sampler: str, states: np.ndarray, model):
    """``states`` as ``history=``: ``KMCLite``'s default regression surrogate is fitted to log
    densities, so it gets them as the ``lp`` sample stat ``pm.sample`` would have recorded."""
    if sampler != "KMCLite":
        return states
    logp = model.compile_logp()
    lp = np.array([logp({"x": state}) for state in states])
    return az.from_dict({"posterior": {"x": states[None]}, "sample_stats": {"lp": lp[None]}})


def _ess_per_1000(errors, variance, evaluations) -> str:
    """The worst coordinate's error-based ESS per 1000 evaluations with its 90 % interval (the
    bench's :func:`~pymc_kernel_steps_bench.worst_ess_err`)."""
    worst, low, high = worst_ess_err(np.square(errors), variance, evaluations)
    return f"{worst:.3f} [{low:.3f}, {high:.3f}]"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="flower8")
    parser.add_argument("--samplers", nargs="*", default=["KMCLite", "KMCFinite"])
    parser.add_argument("--history", type=int, default=2000, help="exact draws (0: none)")
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--replicates", type=int, default=10)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    target = ROBUSTNESS_TARGETS[args.target]
    m1, m2, m4 = target.raw_moments()
    var_x, var_sq = m2 - m1**2, m4 - m2**2
    model = robustness_model(args.target)
    for name in args.samplers:
        errors_mean, errors_square, evaluations, mcse = [], [], [], []
        for seed in range(args.replicates):
            options = {}
            if args.history:
                states = target.sample(10_000 + seed, args.history)
                options["history"] = _warm_history(name, states, model)
            with model, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                step = getattr(pks, name)(**options)
                idata = sample_quietly(model, step, args.tune, BUDGET - args.tune, 1, seed)
            x = idata.posterior["x"].values.reshape(-1, target.dim)
            errors_mean.append(x.mean(axis=0) - m1)
            errors_square.append((x**2).mean(axis=0) - m2)
            both = np.concatenate([x, x**2], axis=-1)[None]  # the study's: ArviZ's, of x and x²
            mcse.append(np.asarray(az.mcse(both, method="mean"), dtype=float))
            counted = idata.sample_stats["logp_evals"].sum()
            if "warmup_sample_stats" in idata.children:
                counted += idata["warmup_sample_stats"]["logp_evals"].sum()
            evaluations.append(float(counted))
        ess_mean = _ess_per_1000(errors_mean, var_x, evaluations)
        ess_square = _ess_per_1000(errors_square, var_sq, evaluations)
        mcse = np.array(mcse)
        z_pooled = [
            np.max(np.abs(error_in_mcse(np.array(errors), mcse[:, part])[0]))
            for errors, part in (
                (errors_mean, slice(0, target.dim)),
                (errors_square, slice(target.dim, None)),
            )
        ]
        print(
            f"{args.target} {name}, history {args.history} exact draws, tune {args.tune}, "
            f"{args.replicates} runs: "
            f"{np.mean(evaluations):.0f} evaluations, ESS_err per 1000 evaluations, "
            f"E[x] {ess_mean}, E[x²] {ess_square}; z_pooled E[x] {z_pooled[0]:.2f}, "
            f"E[x²] {z_pooled[1]:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
