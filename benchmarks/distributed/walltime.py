"""Wall time of :func:`pymc_kernel_steps.distributed.sample` against the number of Dask workers.

The target is a 4-d Gaussian posterior (prior N(0, 3²) per coordinate, likelihood a standard
Gaussian) whose likelihood is a black-box ``Op`` without gradient that sleeps ``--cost`` seconds
per evaluation (``CountingLogp(..., sleep=True)``): an expensive model that leaves the core free,
so that the development machine's 2 cores can stand in for a cluster of up to 8 workers. Each
configuration runs ``KAMH`` chains of ``--tune`` + ``--draws`` iterations (equal per chain) on a
fresh ``LocalCluster`` of single-threaded worker processes: 1, 2 and 4 workers with 4 chains, 8
workers with 8 chains; the time is the whole ``sample`` call (pickling, each chain's compilation
on its worker, sampling, assembling the DataTree), not the cluster's start. The 4-chain runs
share one seed, and their draws must be bit-identical whatever the number of workers (checked
here, and in ``tests/test_distributed.py`` with short runs). One more point at ``--slow-cost``
(200 ms) compares 1 and 4 workers with fewer iterations.

``python benchmarks/distributed/walltime.py`` (about 4 minutes) writes ``walltime.csv`` and
``walltime.md`` beside this script and the figure ``docs/benchmarks/distributed-walltime.png``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

import distributed
import numpy as np
import pandas as pd
import pymc as pm

from pymc_kernel_steps import KAMH
from pymc_kernel_steps.distributed import sample
from pymc_kernel_steps_bench.pages import context_lines
from pymc_kernel_steps_bench.targets import CountingLogp

HERE = Path(__file__).resolve().parent
FIGURE = HERE.parent.parent / "docs" / "benchmarks" / "distributed-walltime.png"
DIM = 4


def standard_gaussian_logp(x: np.ndarray) -> float:
    return -0.5 * float(x @ x)


def sleeping_gaussian(cost: float) -> pm.Model:
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 3.0, shape=DIM)
        pm.Potential("likelihood", CountingLogp(standard_gaussian_logp, cost=cost, sleep=True)(x))
    return model


def timed_run(workers: int, chains: int, cost: float, tune: int, draws: int, seed: int):
    """Seconds of one ``sample`` call on a fresh cluster of ``workers``, and its draws."""
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
        sleeping_gaussian(cost),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        idata = sample(
            draws,
            tune=tune,
            chains=chains,
            step=KAMH(),
            random_seed=seed,
            client=client,
            progressbar=False,
            compute_convergence_checks=False,
            quiet=True,
        )
        seconds = time.perf_counter() - start
    return seconds, np.asarray(idata.posterior["x"].values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cost", type=float, default=0.02)
    parser.add_argument("--tune", type=int, default=250)
    parser.add_argument("--draws", type=int, default=250)
    parser.add_argument("--slow-cost", type=float, default=0.2)
    parser.add_argument("--slow-iterations", type=int, default=50, help="tune and draws each")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()

    rows, reference = [], None
    plan = [(w, 4 if w < 8 else 8, args.cost, args.tune, args.draws) for w in (1, 2, 4, 8)]
    plan += [(w, 4, args.slow_cost, args.slow_iterations, args.slow_iterations) for w in (1, 4)]
    for workers, chains, cost, tune, draws in plan:
        seconds, draws_array = timed_run(workers, chains, cost, tune, draws, args.seed)
        identical = None
        if chains == 4 and cost == args.cost:
            if reference is None:
                reference = draws_array
            identical = bool(np.array_equal(draws_array, reference))
        rows.append(
            {
                "cost_ms": round(1000 * cost),
                "workers": workers,
                "chains": chains,
                "iterations_per_chain": tune + draws,
                "seconds": round(seconds, 2),
                "evaluation_seconds_per_chain": round((tune + draws) * cost, 2),
                "identical_draws": identical,
            }
        )
        print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    for _, group in frame.groupby("cost_ms"):
        one = float(group.loc[group.workers == 1, "seconds"].iloc[0])
        per_chain = group.seconds / group.chains
        one_per_chain = one / 4
        frame.loc[group.index, "speedup_per_chain"] = (one_per_chain / per_chain).round(2)
    frame.to_csv(HERE / "walltime.csv", index=False)
    write_page(frame, args)
    plot(frame)


def write_page(frame: pd.DataFrame, args) -> None:
    fast = frame[frame.cost_ms == round(1000 * args.cost)]
    four = float(fast.loc[fast.workers == 4, "speedup_per_chain"].iloc[0])
    identical = fast.identical_draws.dropna()
    lines = [
        "# Wall time against Dask workers",
        "",
        "Generated by `python benchmarks/distributed/walltime.py` (see its docstring for the "
        "protocol): a 4-d Gaussian whose black-box likelihood sleeps per evaluation, `KAMH` "
        "chains on a fresh `LocalCluster` of single-threaded workers, equal iterations per "
        "chain; the time of the whole `sample` call.",
        "",
        *context_lines(" ".join(["python benchmarks/distributed/walltime.py", *sys.argv[1:]])),
        f"- distributed {distributed.__version__}",
        "",
        frame.to_markdown(index=False),
        "",
        "`speedup_per_chain`: seconds per chain with 1 worker (4 chains in turn) over seconds "
        "per chain with this many workers (so the 8-chain run counts per chain).",
        "",
        f"- {args.cost * 1000:.0f} ms per evaluation, 4 chains: 4 workers are **{four:.2f}x** "
        "faster than 1 (done criterion: at least 3x).",
        f"- The 4-chain runs' draws are bit-identical across 1, 2 and 4 workers: "
        f"**{bool(identical.all())}**.",
    ]
    (HERE / "walltime.md").write_text("\n".join(lines) + "\n")


def plot(frame: pd.DataFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for cost_ms, group in frame.groupby("cost_ms"):
        per_chain = group.seconds / group.chains
        ax.plot(group.workers, per_chain, "o-", label=f"{cost_ms} ms per evaluation")
        ideal = per_chain.iloc[0] / group.workers  # every configuration has a chain per worker
        ax.plot(group.workers, ideal, ":", color=ax.lines[-1].get_color(), alpha=0.6)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks([1, 2, 4, 8], labels=["1", "2", "4", "8"])
    ax.set_yticks([1, 2, 5, 10, 20], labels=["1", "2", "5", "10", "20"])
    ax.minorticks_off()
    ax.set_xlabel("Dask workers (single-threaded processes on 2 cores)")
    ax.set_ylabel("wall seconds per chain")
    ax.set_title("distributed.sample: 4 chains (8 with 8 workers)", fontsize=10)
    ax.legend(fontsize=8, title="dotted: 1 worker's time / workers", title_fontsize=7)
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=120)


if __name__ == "__main__":
    main()
