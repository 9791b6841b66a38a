"""KMCLite / KMCFinite with ``trajectory_tuning="bayesopt"`` (paper 003's tuner) against their
default tuning, at an equal budget of counted target evaluations on a target with a reference (the
8-d banana by default, or ``--target glass``): error-based ESS per 1000 evaluations over independent
replicates (the protocol and references of ``benchmarks/compare/compare.py``).

Usage::

    python benchmarks/kmc_bayesopt/kmc_bayesopt.py --budget 12000 --replicates 10 \\
        --out docs/benchmarks/kmc-bayesopt-banana.md
    python benchmarks/kmc_bayesopt/kmc_bayesopt.py --target glass --budget 4000 --replicates 6 \\
        --out docs/benchmarks/kmc-bayesopt-glass.md
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time

import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps.options import Trajectory
from pymc_kernel_steps_bench import compare_samplers, ess_err_table
from pymc_kernel_steps_bench import targets as T
from pymc_kernel_steps_bench.references import reference_for


def lite_bayesopt():
    return pks.KMCLite(trajectory=Trajectory(tuning="bayesopt"))


def finite_bayesopt():
    return pks.KMCFinite(trajectory=Trajectory(tuning="bayesopt"))


SAMPLERS = {
    "KMCLite": pks.KMCLite,
    "KMCLite-bayesopt": lite_bayesopt,
    "KMCFinite": pks.KMCFinite,
    "KMCFinite-bayesopt": finite_bayesopt,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--replicates", type=int, default=6)
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", default="banana", help="a target with a reference")
    parser.add_argument("--out", default="docs/benchmarks/kmc-bayesopt-banana.md")
    args = parser.parse_args(argv)
    command = "python " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:])
    target = T.TARGETS[args.target]
    reference = reference_for(args.target, target)
    if reference is None:
        raise SystemExit(f"target {args.target!r} has no reference")
    samplers = {name: SAMPLERS[name] for name in args.samplers.split(",")}
    began = time.perf_counter()
    frame = compare_samplers(
        target.build(),
        samplers,
        budget=args.budget,
        replicates=args.replicates,
        reference=reference,
        random_seed=args.seed,
        progress=lambda line: print(line, flush=True),
    )
    table = ess_err_table(frame)
    minutes = (time.perf_counter() - began) / 60
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    columns = [
        "evaluations", "mean_worst", "mean_worst_lo", "mean_worst_hi", "mean_median",
        "second_moment_worst", "second_moment_median", "ess_bulk_within_per_1000", "seconds",
    ]  # fmt: skip
    with open(args.out, "w") as f:
        title = "8-d banana" if args.target == "banana" else args.target
        f.write(f"# KMC trajectories tuned by Bayesian optimisation: {title}\n\n")
        f.write(
            f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC\n"
            f"- machine: {os.cpu_count()} cores (shared), {platform.system()} "
            f"{platform.release()}\n"
            f"- versions: Python {platform.python_version()}, PyMC {pm.__version__}, "
            f"NumPy {np.__version__}, pymc_kernel_steps {pks.__version__} (commit {commit})\n"
            f"- command: `{command}`\n- wall time: {minutes:.1f} min\n\n"
        )
        f.write("Error-based ESS per 1000 evaluations (worst coordinate with its 90 % bootstrap\n")
        f.write("interval over replicates, and median), within-run ArviZ bulk ESS beside it.\n\n")
        f.write(table[columns].to_markdown(floatfmt=".3g") + "\n")
    print(table[columns].to_string())


if __name__ == "__main__":
    main()
