"""Pooled against independent tuning at equal wall time, on two posteriordb posteriors.

Each posterior (``arK-arK``, 7 parameters; ``eight_schools-eight_schools_noncentered``, 10)
is black-boxed (``bench.blackbox.black_box``, its likelihood one ``Op`` without gradient that
sleeps ``--cost`` seconds per evaluation, so wall time is set by the evaluations and 4 workers
fit on 2 cores). ``--replicates`` independent runs (seeds 0, 1, ...) of ``distributed.sample``
with 4 ``KMCLite`` chains on a ``LocalCluster`` of 4 single-threaded workers, ``--tune`` +
``--draws`` iterations per chain, once with ``pooled_tuning=False`` (every chain tunes on its
own evaluations) and once with ``pooled_tuning=True`` (4 exchanges; each chain's surrogate is
fitted on every chain's evaluations), alternating so that a change of the machine's load hits
both. Both use the same iterations, so the same wall time up to the exchanges' waits, which
are measured.

The score: for ``E[x_i]`` and ``E[x_i²]`` of every coordinate, the squared error of the run's
estimate (all 4 chains' draws) against posteriordb's reference, over the runs;
``ESS_err = Var_π(f) / MSE_adj`` with ``MSE_adj = max(MSE − mcse_ref², mcse_ref²)`` as in the
suite (``bench.suite``), for the worst coordinate, per wall second (mean wall time of the runs),
with a 90 % bootstrap interval over the runs.

``python benchmarks/distributed/pooled_tuning.py`` writes ``pooled_tuning.csv`` (one row per run
and coordinate) and ``pooled_tuning.md`` beside this script.
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

from pymc_kernel_steps import KMCLite
from pymc_kernel_steps.diagnostics import posterior_draws
from pymc_kernel_steps.distributed import sample
from pymc_kernel_steps_bench import posteriordb
from pymc_kernel_steps_bench.blackbox import black_box
from pymc_kernel_steps_bench.pages import context_lines
from pymc_kernel_steps_bench.suite import reference

HERE = Path(__file__).resolve().parent
POSTERIORS = ("arK-arK", "eight_schools-eight_schools_noncentered")
CHAINS = 4


def one_run(client, model, name, pooled, tune, draws, seed) -> tuple[np.ndarray, float]:
    """The run's estimates of E[x] and E[x²] ``(2 k,)`` and its wall seconds."""
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        idata = sample(
            draws,
            tune=tune,
            chains=CHAINS,
            step=KMCLite(),
            random_seed=seed,
            client=client,
            pooled_tuning=pooled,
            progressbar=False,
            compute_convergence_checks=False,
            quiet=True,
        )
        seconds = time.perf_counter() - start
    flat = posterior_draws(idata, list(posteriordb.POSTERIORS[name].var_names))
    flat = flat.reshape(-1, flat.shape[-1])
    return np.concatenate([flat.mean(axis=0), (flat**2).mean(axis=0)]), seconds


def worst_ess(sq_error, var_f, mcse_ref) -> np.ndarray:
    """Worst coordinate's ESS_err of ``E[x]`` and of ``E[x²]`` from squared errors
    ``(runs, 2 k)``."""
    floor = mcse_ref**2
    ess = var_f / np.maximum(sq_error.mean(axis=0) - floor, floor)
    k = len(var_f) // 2
    return np.array([ess[:k].min(), ess[k:].min()])


def score(frame: pd.DataFrame, n_boot=1000, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for (name, pooled), group in frame.groupby(["posterior", "pooled"], sort=False):
        wide = group.pivot(index="replicate", columns="index", values="sq_error").to_numpy()
        firsts = group.groupby("index")[["var_f", "mcse_ref"]].first()
        var_f, mcse_ref = firsts["var_f"].to_numpy(), firsts["mcse_ref"].to_numpy()
        seconds = group.drop_duplicates("replicate")["seconds"].to_numpy()
        ess = worst_ess(wide, var_f, mcse_ref)
        point = ess / seconds.mean()
        picks = rng.integers(len(wide), size=(n_boot, len(wide)))
        boot = np.array([worst_ess(wide[p], var_f, mcse_ref) / seconds[p].mean() for p in picks])
        for i, stat in enumerate(("E[x]", "E[x²]")):  # worst coordinate of each
            rows.append(
                {
                    "posterior": name,
                    "tuning": "pooled" if pooled else "independent",
                    "statistic": stat,
                    "ESS_err": round(float(ess[i]), 1),
                    "ESS_err per wall second": round(float(point[i]), 3),
                    "90% interval": f"[{np.quantile(boot[:, i], 0.05):.3f}, "
                    f"{np.quantile(boot[:, i], 0.95):.3f}]",
                    "mean wall seconds": round(float(seconds.mean()), 1),
                    "runs": len(wide),
                }
            )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cost", type=float, default=0.005)
    parser.add_argument("--tune", type=int, default=1500)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--posteriors", nargs="+", default=list(POSTERIORS))
    args = parser.parse_args()

    rows = []
    with (
        distributed.LocalCluster(
            n_workers=CHAINS,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        for name in args.posteriors:
            model = black_box(posteriordb.model(name, gradient=False), cost=args.cost, sleep=True)
            ref, mcse = reference(name)
            truth = np.concatenate([ref.mean, ref.mean_sq])
            var_f = np.concatenate([ref.var, ref.var_sq])
            one_run(client, model, name, True, 20, 10, 10_000)  # warm-up: imports, compilation
            for replicate in range(args.replicates):
                order = (False, True) if replicate % 2 == 0 else (True, False)
                for pooled in order:
                    estimate, seconds = one_run(
                        client, model, name, pooled, args.tune, args.draws, replicate
                    )
                    for index in range(len(truth)):
                        rows.append(
                            {
                                "posterior": name,
                                "pooled": pooled,
                                "replicate": replicate,
                                "index": index,
                                "sq_error": float((estimate[index] - truth[index]) ** 2),
                                "var_f": float(var_f[index]),
                                "mcse_ref": float(mcse[index]),
                                "seconds": seconds,
                            }
                        )
                    print(
                        name,
                        replicate,
                        "pooled" if pooled else "independent",
                        f"{seconds:.1f} s",
                        flush=True,
                    )
                pd.DataFrame(rows).to_csv(HERE / "pooled_tuning.csv", index=False)
    frame = pd.DataFrame(rows)
    table = score(frame)
    command = " ".join(["python benchmarks/distributed/pooled_tuning.py", *sys.argv[1:]])
    lines = [
        "# Pooled against independent tuning at equal wall time",
        "",
        "Generated by `python benchmarks/distributed/pooled_tuning.py` (protocol in its "
        "docstring).",
        "",
        *context_lines(command),
        f"- distributed {distributed.__version__}; cost {args.cost * 1000:g} ms per evaluation "
        f"(sleeping); {CHAINS} KMCLite chains on {CHAINS} workers, {args.tune} + {args.draws} "
        "iterations per chain",
        "",
        table.to_markdown(index=False),
        "",
    ]
    (HERE / "pooled_tuning.md").write_text("\n".join(lines) + "\n")
    print(table.to_string())


if __name__ == "__main__":
    main()
