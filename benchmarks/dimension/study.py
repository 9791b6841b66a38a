"""Our samplers' own time per iteration from d = 10 to 50 (issue 24, item 5).

Each sampler of this package runs one chain of ``--budget`` counted evaluations (half tuning) on a
correlated Gaussian black box (``N(0, Σ)``, ``Σ_ij = 0.5^|i−j|``, the log density a few
microseconds), through :func:`pymc_kernel_steps_bench.runners.compare_samplers`, which measures the
wall time outside the counted log density per iteration (``own_seconds_per_iteration``). On a
loaded machine wall time measures the load, so the script also reports the marginal CPU time per
iteration: the process's CPU time of a run at ``2 × --budget`` minus that of a run at ``--budget``,
over the extra iterations (compilation cancels; the log density, a few microseconds, is included).
Printed per sampler and dimension: own wall milliseconds per iteration (the ``--budget`` run),
marginal CPU milliseconds per iteration, and the load average at the end.

Usage::

    python benchmarks/dimension/study.py --dims 10 20 50 --budget 2000
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import time
import warnings

import numpy as np

import pymc_kernel_steps as pks
from pymc_kernel_steps_bench.runners import compare_samplers
from pymc_kernel_steps_bench.targets import gaussian_model

SAMPLERS = {
    "KMCLite": pks.KMCLite,
    "KMCFinite": pks.KMCFinite,
    "KAMH": pks.KAMH,
    "AdaptiveMetropolis": pks.AdaptiveMetropolis,
    "CKAM": pks.CKAM,
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", nargs="*", type=int, default=[10, 20, 50])
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--samplers", nargs="*", default=list(SAMPLERS))
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    print("sampler | d | own wall ms / iteration | marginal CPU ms / iteration | load average")
    for dim in args.dims:
        index = np.arange(dim)
        cov = 0.5 ** np.abs(index[:, None] - index[None, :])
        model = gaussian_model(cov)
        for name in args.samplers:
            cpu, own = [], math.nan
            for budget in (args.budget, 2 * args.budget):
                start = time.process_time()
                df = compare_samplers(
                    model, {name: SAMPLERS[name]}, budget=budget, replicates=1, keep_draws=0
                )
                cpu.append(time.process_time() - start)
                if budget == args.budget:
                    own = 1000 * float(df["own_seconds_per_iteration"].iloc[0])
            marginal = 1000 * (cpu[1] - cpu[0]) / args.budget
            print(
                f"{name} | {dim} | {own:.2f} | {marginal:.2f} | {os.getloadavg()[0]:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
