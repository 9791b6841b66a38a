"""How far the history that the draws' moves freeze spreads, against the posterior's.

At the end of tuning the learned mixture freezes its population (differential evolution,
snooker), its envelope and its surrogate's training states on the most recent half of the chain's
history. ``oracle_history.py`` found that a history of exact draws lifts ``curved6`` and the rings
to or past SMC: the misses are where the chain's own history has been. This measures that
history directly: for each run (the study's seeds; ``tune`` and ``draws`` of half the budget
each) and coordinate ``i``, ``s_i = mean((x_i − E[x_i])²) / Var(x_i)`` with the exact moments,
over the second half of the tuning draws (the frozen history) and over the draws. ``s < 1`` is a
history narrower than the posterior in that coordinate. Printed per target and sampler, for the
coordinate whose median ``s`` over the runs' histories is smallest: the median and range over
runs of its ``s`` in the history and in the draws.

Usage::

    python benchmarks/robustness/tuning_spread.py --targets curved6 flower8 skewed5 \\
        --samplers KMCLite KAMH
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import pymc_kernel_steps as pks
from pymc_kernel_steps_bench._util import sample_quietly
from pymc_kernel_steps_bench.blackbox import black_box
from pymc_kernel_steps_bench.robustness import _robustness_posterior
from pymc_kernel_steps_bench.runners import replicate_seeds
from pymc_kernel_steps_bench.targets.robustness import ROBUSTNESS_TARGETS


def spreads(target: str, sampler: str, replicates: int, seed: int, budget: int) -> np.ndarray:
    """``(replicates, 2, dim)``: ``s_i`` of the history (second half of tuning) and the draws."""
    posterior = _robustness_posterior(target)
    model = black_box(posterior.model)
    mean, var = posterior.reference.mean, posterior.reference.var
    half = budget // 2
    out = []
    for run_seed in replicate_seeds(seed, replicates):
        with model:
            step = getattr(pks, sampler)()
        idata = sample_quietly(model, step, half, half, 1, run_seed)
        parts = []
        for group in ("warmup_posterior", "posterior"):
            variables = idata[group].data_vars.values()
            values = np.concatenate(
                [np.asarray(v.values)[0].reshape(half, -1) for v in variables], axis=1
            )
            if group == "warmup_posterior":
                values = values[half // 2 :]
            parts.append(np.mean((values - mean) ** 2, axis=0) / var)
        out.append(parts)
    return np.asarray(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=list(ROBUSTNESS_TARGETS))
    parser.add_argument("--samplers", nargs="+", default=["KMCLite", "KMCFinite", "KAMH"])
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=10_000)
    args = parser.parse_args(argv)
    header = (
        "| target | sampler | coordinate | history: s, median [range] | draws: s, median [range] |"
    )
    print(header)
    print("|:--|:--|:--|:--|:--|")
    for target in args.targets:
        for sampler in args.samplers:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = spreads(target, sampler, args.replicates, args.seed, args.budget)
            narrowest = int(np.argmin(np.median(s[:, 0], axis=0)))
            history, draws = s[:, 0, narrowest], s[:, 1, narrowest]
            print(
                f"| `{target}` | `{sampler}` | x{narrowest + 1} | {np.median(history):.2f} "
                f"[{history.min():.2f}, {history.max():.2f}] | "
                f"{np.median(draws):.2f} [{draws.min():.2f}, {draws.max():.2f}] |",
                flush=True,
            )


if __name__ == "__main__":
    main()
