"""Does ``cores=2`` cost a chain more wall time than ``cores=1``?

For each target and sampler, ``pm.sample(chains=2)`` runs with ``cores=1`` (the chains one after
the other in this process) and with ``cores=2`` (one worker process per chain), alternating the
two ``--repeats`` times so that a change of the machine's load hits both. The time of a chain is
PyMC's sampling loop (``idata.posterior.attrs["sampling_time"]``, no compilation): the loop's
wall time divided by 2 for ``cores=1``, the whole wall time for ``cores=2``. On an idle machine
with two cores the two should match; the ratio ``cores=2 / cores=1`` is printed with the median
of the repeats and their range.

Targets: ``banana`` (8-d, a log density that costs microseconds: PyMC's per-draw cost of
passing draws between processes shows) and ``ode`` (the Lotka–Volterra black box solved by
``scipy.integrate.solve_ivp``, milliseconds per evaluation: what a user of a black box pays).

``python benchmarks/cores/cores.py --targets banana,ode KMCLite KMCFinite DEMetropolisZ``
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from pathlib import Path

import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps_bench.pages import context_lines
from pymc_kernel_steps_bench.targets import TARGETS


def make_step(name: str):
    return pm.DEMetropolisZ() if name == "DEMetropolisZ" else getattr(pks, name)()


def chain_seconds(target: str, sampler: str, cores: int, tune: int, draws: int, seed: int):
    """Sampling-loop seconds per chain of ``pm.sample(chains=2, cores=cores)``."""
    with TARGETS[target].build(black_box=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(
            step=make_step(sampler),
            tune=tune,
            draws=draws,
            chains=2,
            cores=cores,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    loop = float(idata["posterior"].attrs["sampling_time"])
    return loop / 2 if cores == 1 else loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("samplers", nargs="+")
    parser.add_argument("--targets", default="banana,ode")
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--out",
        default=str(Path(__file__).parent / "cores.md"),
        help="the page to write (default benchmarks/cores/cores.md)",
    )
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    lines = [
        "# Wall time per chain: `cores=2` against `cores=1`",
        "",
        *context_lines(f"python benchmarks/cores/cores.py {' '.join(sys.argv[1:])}"),
        f"- 2 chains × ({args.tune} tune + {args.draws} draws); seconds of PyMC's sampling loop "
        f"per chain, median [min, max] over {args.repeats} alternating repeats",
        "",
        "| target | sampler | cores=1 (s/chain) | cores=2 (s/chain) | ratio cores=2 / cores=1 |",
        "|:--|:--|--:|--:|--:|",
    ]
    print("\n".join(lines), flush=True)
    for target in args.targets.split(","):
        for sampler in args.samplers:
            times = {1: [], 2: []}
            for repeat in range(args.repeats):
                for cores in (1, 2) if repeat % 2 == 0 else (2, 1):
                    times[cores].append(
                        chain_seconds(target, sampler, cores, args.tune, args.draws, repeat)
                    )
            one, two = np.array(times[1]), np.array(times[2])
            ratios = two / one
            row = (
                f"| {target} | {sampler} | {np.median(one):.2f} [{one.min():.2f}, {one.max():.2f}]"
                f" | {np.median(two):.2f} [{two.min():.2f}, {two.max():.2f}]"
                f" | {np.median(ratios):.2f} [{ratios.min():.2f}, {ratios.max():.2f}] |"
            )
            lines.append(row)
            print(row, flush=True)
    out = Path(args.out)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
