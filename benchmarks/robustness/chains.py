"""One chain or four at the same budget on a robustness target (``flower8``'s rings).

The study runs one chain of 10,000 counted evaluations per run. PyMC's default is four chains
(on a machine with four or more cores), which start apart and so cover more of a posterior whose
single-chain history covers only part of it (``flower8``: an arc of each ring). This script
splits the same 10,000 evaluations over 4 chains: ours through
:func:`pymc_kernel_steps.distributed.sample` on a ``LocalCluster`` of 4 single-threaded workers,
1,250 tuning and 1,250 kept iterations each, with ``pooled_tuning`` off and on;
``DEMetropolisZ`` (two evaluations per iteration) through ``pm.sample``, 625 + 625. Per run, the
estimates of E[x] and E[x²] from all four chains' draws; over the runs, the worst coordinate's
error-based ESS (``Var_π(f) / MSE``) per 1000 evaluations against the exact moments.

Usage::

    python benchmarks/robustness/chains.py --target flower8 --replicates 10
"""

from __future__ import annotations

import argparse
import logging
import warnings

import distributed
import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps.distributed import sample
from pymc_kernel_steps_bench._util import sample_quietly
from pymc_kernel_steps_bench.blackbox import black_box
from pymc_kernel_steps_bench.targets.robustness import ROBUSTNESS_TARGETS, robustness_model

CHAINS = 4
BUDGET = 10_000


def _errors(draws: np.ndarray, m1: np.ndarray, m2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = draws.reshape(-1, len(m1))
    return x.mean(axis=0) - m1, (x**2).mean(axis=0) - m2


def _ess_per_1000(errors: list[np.ndarray], variance: np.ndarray) -> float:
    mse = np.mean(np.square(errors), axis=0)
    return float(np.min(variance / mse) * 1000 / BUDGET)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="flower8")
    parser.add_argument("--samplers", nargs="*", default=["KMCLite", "KAMH"])
    parser.add_argument("--replicates", type=int, default=10)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    m1, m2, m4 = ROBUSTNESS_TARGETS[args.target].raw_moments()
    var_x, var_sq = m2 - m1**2, m4 - m2**2
    model = black_box(robustness_model(args.target))
    per_chain = BUDGET // CHAINS // 2  # tuning and kept iterations of each chain

    def report(label, runs):
        e1 = [e for e, _ in runs]
        e2 = [e for _, e in runs]
        print(
            f"{args.target} {label}: ESS_err per 1000 evaluations, E[x] "
            f"{_ess_per_1000(e1, var_x):.3f}, E[x²] {_ess_per_1000(e2, var_sq):.3f}",
            flush=True,
        )

    runs = []
    for seed in range(args.replicates):
        with model:
            step = pm.DEMetropolisZ()
        idata = sample_quietly(model, step, per_chain // 2, per_chain // 2, CHAINS, seed)
        runs.append(_errors(idata.posterior["x"].values, m1, m2))
    report(f"DEMetropolisZ, {CHAINS} chains", runs)

    with (
        distributed.LocalCluster(
            n_workers=CHAINS, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        for name in args.samplers:
            for pooled in (False, True):
                runs = []
                for seed in range(args.replicates):
                    with model, warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        idata = sample(
                            per_chain,
                            tune=per_chain,
                            chains=CHAINS,
                            step=getattr(pks, name)(),
                            random_seed=seed,
                            client=client,
                            pooled_tuning=pooled,
                            progressbar=False,
                        )
                    runs.append(_errors(idata.posterior["x"].values, m1, m2))
                tuning = "pooled tuning" if pooled else "independent"
                report(f"{name}, {CHAINS} chains, {tuning}", runs)


if __name__ == "__main__":
    main()
