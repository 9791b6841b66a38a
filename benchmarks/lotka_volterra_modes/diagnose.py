"""Why no sampler converged on posteriordb's Lotka-Volterra ODE: local modes, the start, the cost.

For ``hudson_lynx_hare-lotka_volterra`` as the suite runs it (the black box of
:func:`pymc_kernel_steps_bench.posteriordb.model`), prints

1. the log density at L-BFGS-B optima reached from the model's initial point (the prior centre,
   where every sampler of the suite starts) and from a reference draw;
2. the cost of one evaluation at the initial point, at that local optimum and at reference draws;
3. for each sampler and start (the initial point, a reference draw), ``--runs`` chains of
   ``--budget`` counted evaluations (half tuning): the mean of ``sigma`` over the draws, which
   tells the modes apart (the reference posterior has ``sigma ≈ 0.25``, the local mode ``≈ 0.6``).

Usage::

    python benchmarks/lotka_volterra_modes/diagnose.py --runs 3 --budget 4000
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps_bench import posteriordb
from pymc_kernel_steps_bench._util import _unconstrained
from pymc_kernel_steps_bench.blackbox import black_box
from pymc_kernel_steps_bench.peers import optimise_start

NAME = "hudson_lynx_hare-lotka_volterra"
SAMPLERS = {
    "KMCLite": (pks.KMCLite, 1),
    "AdaptiveMetropolis": (pks.AdaptiveMetropolis, 1),
    "DEMetropolisZ": (pm.DEMetropolisZ, 2),
}


def _point(draw: np.ndarray) -> dict:
    return {"theta": draw[:4], "z_init": draw[4:6], "sigma": draw[6:8]}


def _unconstrained_value(model, point: dict) -> np.ndarray:
    """The raveled value variables (the samplers' space) of a point of the free variables."""
    parts = []
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        value = point[rv.name]
        if transform is not None:
            value = transform.forward(value, *rv.owner.inputs).eval()
        parts.append(np.ravel(value))
    return np.concatenate(parts)


def _seconds_per_evaluation(logp, xs, repeats: int = 5) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        for x in xs:
            logp(x)
    return (time.perf_counter() - start) / (repeats * len(xs))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--samplers", nargs="*", default=list(SAMPLERS))
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")

    model = posteriordb.model(NAME, gradient=False)
    twin = black_box(model)
    reference = posteriordb.reference_draws(NAME).reshape(-1, 8)
    print("reference mean", np.round(reference.mean(axis=0), 4))
    x0, logp, to_posterior = _unconstrained(twin)
    rng = np.random.default_rng(0)
    picks = reference[rng.choice(len(reference), 20, replace=False)]
    unconstrained_refs = np.array([_unconstrained_value(twin, _point(d)) for d in picks])
    print(f"log density at the initial point {logp(x0):.2f}")
    at_references = np.median([logp(u) for u in unconstrained_refs])
    print(f"log density at 20 reference draws: median {at_references:.2f}")
    optima = {}
    for label, start in (("initial point", x0), ("a reference draw", unconstrained_refs[0])):
        best, _, calls = optimise_start(logp, start, 3000)
        optima[label] = best
        constrained = to_posterior(best[None, None])
        summary = {k: np.round(np.ravel(v), 4) for k, v in constrained.items()}
        print(f"L-BFGS-B from {label}: log density {logp(best):.2f} after {calls} evaluations")
        print(f"    at {summary}")
    for label, xs in (
        ("the initial point", [x0]),
        ("the local optimum", [optima["initial point"]]),
        ("reference draws", list(unconstrained_refs)),
    ):
        logp(xs[0])  # compiled already; first-call effects out
        print(f"seconds per evaluation at {label}: {_seconds_per_evaluation(logp, xs):.4f}")

    starts = {"initial point": None, "reference draw": _point(picks[1])}
    print(
        "\nsampler | start | run | evaluations | mean sigma[0], sigma[1] | mean theta[0] | seconds"
    )
    for name in args.samplers:
        factory, per_iteration = SAMPLERS[name]
        for start_label, initvals in starts.items():
            for run in range(args.runs):
                iterations = args.budget // per_iteration
                with twin:
                    step = factory()
                    begin = time.perf_counter()
                    idata = pm.sample(
                        tune=iterations // 2,
                        draws=iterations - iterations // 2,
                        chains=1,
                        cores=1,
                        step=step,
                        initvals=initvals,
                        random_seed=run,
                        progressbar=False,
                        compute_convergence_checks=False,
                    )
                seconds = time.perf_counter() - begin
                sigma = idata["posterior"]["sigma"].values.reshape(-1, 2).mean(axis=0)
                theta0 = float(idata["posterior"]["theta"].values.reshape(-1, 4)[:, 0].mean())
                print(
                    f"{name} | {start_label} | {run} | {args.budget} | {sigma.round(3)} | "
                    f"{theta0:.3f} | {seconds:.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
