"""Accuracy per evaluation from d = 10 to 50 (issue 24, scope point 5): where each sampler stops
helping.

Each target is a correlated Gaussian ``N(0, Σ)``, ``Σ_ij = 0.5^|i−j|``, of dimension ``d`` (named
``gauss<d>``), run as a counted black box without gradient through the same machinery as the
robustness study (:class:`pymc_kernel_steps_bench.suite.Study`): ``--replicates`` runs of
``--budget`` counted evaluations per sampler, scored against the exact moments (``E[x] = 0``,
``E[x²] = 1``, ``Var(x²) = 2``). Frames go to ``runs/gauss<d>.csv.gz`` beside this script
(``--samplers`` replaces those samplers' rows in an existing frame); ``--report`` writes
``accuracy.md`` from every frame there.

Usage::

    python benchmarks/dimension/accuracy.py --dims 10 20 50 --replicates 10 --budget 10000
    python benchmarks/dimension/accuracy.py --report
"""

from __future__ import annotations

import argparse
import datetime
import logging
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from pymc_kernel_steps_bench.references import Reference
from pymc_kernel_steps_bench.robustness import ROBUSTNESS_PEERS, robustness_page
from pymc_kernel_steps_bench.suite import OURS, Posterior, Study
from pymc_kernel_steps_bench.targets import gaussian_model

HERE = Path(__file__).parent
RUNS = HERE / "runs"
CORRELATION = 0.5


def covariance(dim: int) -> np.ndarray:
    index = np.arange(dim)
    return CORRELATION ** np.abs(index[:, None] - index[None, :])


def _gaussian_posterior(name: str) -> Posterior:
    dim = int(name.removeprefix("gauss"))
    reference = Reference(np.zeros(dim), np.ones(dim), var_sq=np.full(dim, 2.0))
    model = gaussian_model(covariance(dim), black_box=False)
    return Posterior(model, reference, np.zeros(2 * dim))


GAUSSIANS = Study(_gaussian_posterior, OURS + ROBUSTNESS_PEERS)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", nargs="*", type=int, default=[])
    parser.add_argument("--budget", type=int, default=10_000)
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samplers", nargs="*", default=None)
    parser.add_argument("--runs-dir", type=Path, default=RUNS)
    parser.add_argument("--report", action="store_true", help="write accuracy.md")
    parser.add_argument("--page", type=Path, default=HERE / "accuracy.md")
    args = parser.parse_args(argv)
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    for dim in args.dims:
        name, start = f"gauss{dim}", time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = GAUSSIANS.run(
                name,
                budget=args.budget,
                replicates=args.replicates,
                samplers=tuple(args.samplers or GAUSSIANS.samplers),
                random_seed=args.seed,
                progress=lambda m, s=start: print(f"  {time.time() - s:6.0f} s {m}", flush=True),
            )
        df["run_date"] = datetime.date.today().isoformat()
        df["command"] = " ".join(["python", *sys.argv])
        df["git_commit"] = subprocess.run(
            ["git", "describe", "--always", "--dirty=+changes"],
            capture_output=True,
            text=True,
            cwd=HERE,
        ).stdout.strip()
        path = args.runs_dir / f"{name}.csv.gz"
        if args.samplers and path.exists():
            old = pd.read_csv(path, dtype={"git_commit": str})
            df = pd.concat([old[~old["sampler"].isin(args.samplers)], df], ignore_index=True)
        df.to_csv(path, index=False)
        print(f"{name}: {time.time() - start:.0f} s", flush=True)
    if args.report:
        paths = sorted(args.runs_dir.glob("*.csv.gz"))
        frames = [pd.read_csv(p, dtype={"git_commit": str}) for p in paths]
        page = robustness_page(
            pd.concat(frames, ignore_index=True), title="Accuracy per evaluation from d = 10 to 50"
        )
        args.page.write_text(page)
        print(f"wrote {args.page}")


if __name__ == "__main__":
    main()
