"""What a warm start costs in wall time: the example of ``docs/usage.md`` (KMC: start from an
earlier run), ``KMCLite(history=pilot)`` with ``tune=200`` and ``draws=10``.

Per chain (2 chains, ``cores=1``, so that each chain is timed in this process): the time
before its first iteration (``setup_chain``, where the warm start fits the surrogate), to its
first draw (that and the 200 tuning iterations) and for the whole chain; once per step: the
time to build ``KMCLite(history=pilot)``; and the wall time of the docs' ``pm.sample`` call as a
user runs it, ``cores=2``. Each figure is the median over ``--repeats`` runs (the maximum
beside it): the machine may be shared, so a timing is noisy.

It imports only the installed packages: run it with ``PYTHONPATH`` set to a checkout to time
that code (the figures in ``README.md`` say which).

Usage::

    python benchmarks/kmc_warm_start/warm_start_time.py --repeats 5
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pymc as pm

import pymc_kernel_steps
from pymc_kernel_steps import KMCLite

TUNE, DRAWS, CHAINS = 200, 10, 2
QUIET = {"progressbar": False, "compute_convergence_checks": False}


def docs_model() -> pm.Model:
    """The model of the docs' example."""
    model = pm.Model()
    with model:
        s = pm.HalfNormal("s", 2.0)
        pm.Normal("x", 0.0, s, shape=3)
    return model


def timed_chains(step) -> list[dict]:
    """Wraps ``step``'s ``setup_chain`` and ``astep`` (``cores=1`` only: the instance is the
    one that samples) to record, per chain, the seconds of set-up, to the first draw and of the
    whole chain."""
    chains: list[dict] = []
    setup_chain, astep = step.setup_chain, step.astep

    def timed_setup(*args, **kwargs):
        began = time.perf_counter()
        setup_chain(*args, **kwargs)
        chains.append({"began": began, "setup_end": time.perf_counter(), "ends": []})

    def timed_astep(*args, **kwargs):
        result = astep(*args, **kwargs)
        chains[-1]["ends"].append(time.perf_counter())
        return result

    step.setup_chain, step.astep = timed_setup, timed_astep
    return chains


def one_repeat(model, pilot) -> dict[str, float]:
    with model:
        began = time.perf_counter()
        step = KMCLite(history=pilot)
        build = time.perf_counter() - began
        chains = timed_chains(step)
        pm.sample(step=step, tune=TUNE, draws=DRAWS, chains=CHAINS, cores=1, random_seed=2, **QUIET)
        began = time.perf_counter()
        pm.sample(
            step=KMCLite(history=pilot),
            tune=TUNE,
            draws=DRAWS,
            chains=CHAINS,
            cores=2,
            random_seed=2,
            **QUIET,
        )
        parallel = time.perf_counter() - began
    figures = {"build the step (once)": build}
    for name, end in (
        ("per chain: before the first iteration", lambda c: c["setup_end"]),
        ("per chain: to the first draw", lambda c: c["ends"][TUNE]),
        ("per chain: whole chain", lambda c: c["ends"][-1]),
    ):
        figures[name] = max(end(c) - c["began"] for c in chains)  # the slower chain
    figures["pm.sample, 2 chains, cores=2 (build included)"] = parallel
    return figures


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    model = docs_model()
    with model:
        pilot = pm.sample(
            step=KMCLite(), tune=500, draws=500, chains=2, cores=1, random_seed=1, **QUIET
        )
    runs = [one_repeat(model, pilot) for _ in range(args.repeats)]
    try:
        commit = subprocess.run(
            [
                "git",
                "-C",
                os.path.dirname(pymc_kernel_steps.__file__),
                "rev-parse",
                "--short",
                "HEAD",
            ],
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:  # pragma: no cover
        commit = "?"
    print(f"- code: {pymc_kernel_steps.__file__} (git {commit or '?'})")
    print(f"- OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    print(f"- load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"- {args.repeats} repeats, seconds, median (max)\n")
    print("| | seconds |\n|:--|--:|")
    for name in runs[0]:
        values = np.array([run[name] for run in runs])
        print(f"| {name} | {np.median(values):.2f} ({values.max():.2f}) |")


if __name__ == "__main__":
    sys.exit(main())
