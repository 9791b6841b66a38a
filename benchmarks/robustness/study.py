"""The robustness study: curved, heavy-tailed, skewed and funnel targets as black boxes.

Runs :func:`pymc_kernel_steps_bench.robustness.run_target` (budget, replicates) on each target of
:data:`pymc_kernel_steps_bench.targets.robustness.ROBUSTNESS_TARGETS` and writes its tidy frame to
``runs/<target>.csv.gz`` beside this script; ``--report`` reads every committed frame and writes
``results.md`` beside it.

Usage::

    python benchmarks/robustness/study.py --run all --report      # every target (about an hour)
    python benchmarks/robustness/study.py --run mixed4 --replicates 3 --budget 2000
    python benchmarks/robustness/study.py --report
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

import pandas as pd

from pymc_kernel_steps_bench.robustness import ROBUSTNESS_PEERS, robustness_page, run_target
from pymc_kernel_steps_bench.suite import OURS
from pymc_kernel_steps_bench.targets.robustness import ROBUSTNESS_TARGETS

HERE = Path(__file__).parent
RUNS = HERE / "runs"


def _git_commit() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ":/", ":(exclude)runs"],
            capture_output=True,
            text=True,
            cwd=HERE,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{commit}+changes" if dirty else commit or "unknown"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", nargs="*", default=[], help="targets to run, or 'all'")
    parser.add_argument("--budget", type=int, default=10_000)
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samplers", nargs="*", default=None)
    parser.add_argument(
        "--chains", type=int, default=1, help="chains per run of the step methods (budget shared)"
    )
    parser.add_argument("--runs-dir", type=Path, default=RUNS)
    parser.add_argument("--report", action="store_true", help="write results.md")
    parser.add_argument("--page", type=Path, default=HERE / "results.md")
    args = parser.parse_args(argv)
    names = list(ROBUSTNESS_TARGETS) if args.run == ["all"] else args.run
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    for name in names:
        start = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = run_target(
                name,
                budget=args.budget,
                replicates=args.replicates,
                samplers=tuple(args.samplers or OURS + ROBUSTNESS_PEERS),
                random_seed=args.seed,
                chains=args.chains,
                progress=lambda m, s=start: print(f"  {time.time() - s:6.0f} s {m}", flush=True),
            )
        df["run_date"] = datetime.date.today().isoformat()
        df["command"] = " ".join(["python", *sys.argv])
        df["git_commit"] = _git_commit()
        df.to_csv(args.runs_dir / f"{name}.csv.gz", index=False)
        print(f"{name}: {time.time() - start:.0f} s", flush=True)
    if args.report:
        frames = [
            pd.read_csv(path, dtype={"git_commit": str})  # "14e5781" is not a float
            for path in sorted(args.runs_dir.glob("*.csv.gz"))
        ]
        args.page.write_text(robustness_page(pd.concat(frames, ignore_index=True)))
        print(f"wrote {args.page}")


if __name__ == "__main__":
    main()
