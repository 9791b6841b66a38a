"""The posteriordb suite: every posterior a black box, our samplers against the peers.

Runs :func:`pymc_kernel_steps_bench.suite.run_posterior` (budget, replicates) on each posterior and
writes its tidy frame to ``runs/<posterior>.csv.gz`` beside this script; ``--report`` reads every
committed frame and writes the suite page ``docs/benchmarks/posteriordb.md`` and its figure.

Usage::

    python benchmarks/posteriordb/suite.py --run all              # every posterior (hours)
    python benchmarks/posteriordb/suite.py --run arK-arK sblrc-blr --replicates 3 --budget 2000
    python benchmarks/posteriordb/suite.py --report
    python benchmarks/posteriordb/suite.py --run diamonds-diamonds --samplers pocoMC \
        --replicates 2 --only-replicates 1 --runs-dir scratch-1   # one part of a split study
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

from pymc_kernel_steps_bench import posteriordb
from pymc_kernel_steps_bench.report import write_suite_page
from pymc_kernel_steps_bench.suite import OURS, PEERS, run_posterior

HERE = Path(__file__).parent
RUNS = HERE / "runs"
RUNS_PATH = "benchmarks/posteriordb/runs"
DOCS = HERE.parents[1] / "docs" / "benchmarks"


def _git_commit() -> str:
    """The checkout's commit, with ``+changes`` when files other than the runs differ from it."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":/",
                f":(exclude,top){RUNS_PATH}",
            ],
            capture_output=True,
            text=True,
            cwd=HERE,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{commit}+changes" if dirty else commit or "unknown"


def _machine() -> str:
    """The machine's fingerprint for a frame: CPU, cores, OpenBLAS kernels and the numerical
    packages' versions (what the figures and the draws depend on)."""
    import os
    import platform
    from importlib.metadata import version

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(
                (line.split(":", 1)[1].strip() for line in info if line.startswith("model name")),
                cpu,
            )
    except OSError:
        pass
    kernels = os.environ.get("OPENBLAS_CORETYPE", "auto")
    packages = " ".join(f"{p} {version(p)}" for p in ("numpy", "scipy", "pytensor", "pymc"))
    python = platform.python_version()
    return f"{cpu}, {os.cpu_count()} cores, OpenBLAS {kernels}, Python {python}, {packages}"


def _read_frames(runs_dir: Path) -> pd.DataFrame:
    frames = [
        pd.read_csv(path, dtype={"git_commit": str, "machine": str})
        for path in sorted(runs_dir.glob("*.csv.gz"))
    ]
    return pd.concat(frames, ignore_index=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", nargs="*", default=[], help="posteriors to run, or 'all'")
    parser.add_argument("--budget", type=int, default=10_000)
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--samplers",
        nargs="*",
        default=None,
        help="run only these samplers and replace their rows in the posterior's existing frame",
    )
    parser.add_argument(
        "--chains", type=int, default=1, help="chains per run of the step methods (budget shared)"
    )
    parser.add_argument(
        "--only-replicates",
        nargs="*",
        type=int,
        default=None,
        help="run only these of the --replicates (each with its seed in the whole study) and "
        "replace only their rows: a long study split between processes (give each its own "
        "--runs-dir and concatenate the frames)",
    )
    parser.add_argument("--runs-dir", type=Path, default=RUNS)
    parser.add_argument("--report", action="store_true", help="write the suite page")
    parser.add_argument("--page", type=Path, default=DOCS / "posteriordb.md")
    parser.add_argument(
        "--populations-from",
        type=Path,
        default=None,
        help="runs directory whose rows of samplers absent from --runs-dir join the report "
        "(the four-chain page takes the populations' one-chain rows: they run no chains)",
    )
    args = parser.parse_args(argv)
    names = list(posteriordb.POSTERIORS) if args.run == ["all"] else args.run
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    for name in names:
        start = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = run_posterior(
                name,
                budget=args.budget,
                replicates=args.replicates,
                samplers=tuple(args.samplers or OURS + PEERS),
                random_seed=args.seed,
                chains=args.chains,
                progress=lambda m, s=start: print(f"  {time.time() - s:6.0f} s {m}", flush=True),
                only_replicates=args.only_replicates,
            )
        df["run_date"] = datetime.date.today().isoformat()
        df["command"] = " ".join(["python", *sys.argv])
        df["git_commit"] = _git_commit()
        df["machine"] = _machine()
        path = args.runs_dir / f"{name}.csv.gz"
        if (args.samplers or args.only_replicates is not None) and path.exists():
            earlier = pd.read_csv(path, dtype={"git_commit": str})
            replaced = earlier["sampler"].isin(df["sampler"].unique())
            if args.only_replicates is not None:
                replaced &= earlier["replicate"].isin(args.only_replicates)
            df = pd.concat([earlier[~replaced], df], ignore_index=True)
        df.to_csv(path, index=False)
        print(f"{name}: {time.time() - start:.0f} s", flush=True)
    if args.report:
        frames = _read_frames(args.runs_dir)
        if args.populations_from is not None:
            others = _read_frames(args.populations_from)
            keys = set(zip(frames["posterior"], frames["sampler"], strict=True))
            absent = np.array(
                [
                    key not in keys
                    for key in zip(others["posterior"], others["sampler"], strict=True)
                ]
            )
            population = others["kind"].isin(["smc", "custom"]) & (others["sampler"] != "NUTS-FD")
            frames = pd.concat([frames, others[absent & population]], ignore_index=True)
        runs = args.runs_dir.resolve()
        root = HERE.parents[1].resolve()
        shown = runs.relative_to(root) if runs.is_relative_to(root) else runs
        write_suite_page(frames, args.page, runs=str(shown))
        print(f"wrote {args.page}")


if __name__ == "__main__":
    main()
