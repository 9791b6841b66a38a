"""A warm-started second run (``KMCLite(history=pilot)``) against one run, at the same total
budget of counted target evaluations, on a target with a reference (the 8-d banana by default).

- **one run**: ``KMCLite()`` with half the budget for tuning (``benchmarks/compare/compare.py``'s
  protocol);
- **pilot + warm start**: a pilot ``KMCLite()`` run of ``--pilot`` evaluations (half tuning),
  then ``KMCLite(history=pilot)`` with ``--warm-tune`` tuning iterations and the rest of the
  budget as draws; the estimates use the second run's draws only (the workflow of a user who
  restarts a run without repeating its random-walk phase);
- **pilot + warm start, frozen**: the same with ``tune=0`` (the kernel fitted to the pilot's
  draws is fixed from the first draw);
- **pilot + fresh run**: the same pilot, then a fresh ``KMCLite()`` run (half tuning) instead of
  the warm start: what a restart costs without ``history=``.

Error-based ESS per 1000 evaluations (the pilot's evaluations included) over independent
replicates, as in ``benchmarks/compare/compare.py``.

Usage::

    python benchmarks/kmc_warm_start/kmc_warm_start.py --replicates 10 \
        --out benchmarks/kmc_warm_start/kmc-warm-start.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps.diagnostics import count_evaluations
from pymc_kernel_steps_bench import Sampler, compare_samplers, ess_err_table
from pymc_kernel_steps_bench import targets as T
from pymc_kernel_steps_bench.pages import context_lines, markdown_table
from pymc_kernel_steps_bench.references import reference_for

QUIET = {
    "progressbar": False,
    "compute_convergence_checks": False,
    "discard_tuned_samples": False,  # count_evaluations counts the tuning iterations too
    "cores": 1,
    "chains": 1,
}


def pilot_then(pilot_budget: int, warm_tune: int | None):
    """``run(model, budget, seed)``: a pilot run, then a run warm-started from its draws with
    ``warm_tune`` tuning iterations, or (``warm_tune=None``) a fresh run with half its iterations
    for tuning."""

    def run(model, budget, seed):
        pilot_iterations = pilot_budget - 1  # the initial point is evaluated once
        with model:
            pilot = pm.sample(
                step=pks.KMCLite(),
                tune=pilot_iterations // 2,
                draws=pilot_iterations - pilot_iterations // 2,
                random_seed=seed,
                idata_kwargs={"include_transformed": True},
                **QUIET,
            )
            remaining = budget - count_evaluations(pilot, "kernel") - 1
            warm = warm_tune is not None
            tune = warm_tune if warm else remaining // 2
            idata = pm.sample(
                step=pks.KMCLite(history=pilot) if warm else pks.KMCLite(),
                tune=tune,
                draws=remaining - tune,
                random_seed=seed + 1,
                **QUIET,
            )
        evaluations = count_evaluations(pilot, "kernel") + count_evaluations(idata, "kernel")
        return {"idata": idata, "evaluations": evaluations}

    return run


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="banana")
    parser.add_argument("--budget", type=int, default=12_000)
    parser.add_argument("--pilot", type=int, default=6_000, help="evaluations of the pilot")
    parser.add_argument("--warm-tune", type=int, default=1_000)
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="markdown file (default: print only)")
    args = parser.parse_args(argv)
    target = T.TARGETS[args.target]
    samplers = {
        "KMCLite, one run": pks.KMCLite,
        "KMCLite, pilot + warm start": Sampler(
            "KMCLite, pilot + warm start",
            kind="custom",
            run=pilot_then(args.pilot, args.warm_tune),
        ),
        "KMCLite, pilot + warm start, frozen": Sampler(
            "KMCLite, pilot + warm start, frozen", kind="custom", run=pilot_then(args.pilot, 0)
        ),
        "KMCLite, pilot + fresh run": Sampler(
            "KMCLite, pilot + fresh run",
            kind="custom",
            run=pilot_then(args.pilot, None),
        ),
    }
    began = time.perf_counter()
    frame = compare_samplers(
        target.build(),
        samplers,
        budget=args.budget,
        replicates=args.replicates,
        reference=reference_for(args.target, target),
        var_names=[target.var_name],
        random_seed=args.seed,
        progress=lambda line: print(line, flush=True),
    )
    command = "python benchmarks/kmc_warm_start/kmc_warm_start.py " + " ".join(argv or sys.argv[1:])
    text = "\n".join(
        [
            f"# KMCLite warm-started from a pilot run: {args.target}",
            "",
            *context_lines(command),
            f"- budget {args.budget} evaluations per replicate (pilot {args.pilot} of them, "
            f"then {args.warm_tune} tuning iterations of the warm-started run), "
            f"{args.replicates} replicates, {(time.perf_counter() - began) / 60:.1f} min",
            "",
            markdown_table(ess_err_table(frame)),
            "",
        ]
    )
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
