"""The main job of ``make demo``: sample the 8-d banana with our samplers, PyMC's DEMetropolisZ and
NUTS, and print the comparison; then redraw the figure of accuracy per evaluation on the banana
from the benchmark's runs (``--runs``, the tidy frame ``benchmarks/compare/compare.py`` writes)
and say where. Run from a source checkout, ``--runs`` defaults to the committed runs the checkout's
``pyproject.toml`` names (``[tool.pymc-kernel-steps] demo-runs``); an installed package
refers to no file outside itself.

The gradient-free samplers see the banana as a black box (a counting Op without a gradient, the
way a user's external likelihood is called); NUTS samples the differentiable twin of the same
density. Run ``python -m pymc_kernel_steps_bench.demo --help`` for the options.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from functools import partial
from pathlib import Path

import pymc as pm

from pymc_kernel_steps.diagnostics import (
    DEFAULT_COLUMNS,
    SamplerRun,
    comparison_table,
    count_evaluations,
    summarize,
)
from pymc_kernel_steps.steps import (
    CKAM,
    KAMH,
    AdaptiveMetropolis,
    KMCFinite,
    KMCLite,
    sampling_phase,
)

from ._util import sample_quietly
from .targets import TARGETS, counting_ops

SAMPLERS = {
    "KMCLite": KMCLite,
    "KMCFinite": KMCFinite,
    "KMCFinite+adapt": partial(KMCFinite, adapt_after_tuning=True),
    "KAMH": KAMH,
    "AdaptiveMetropolis": AdaptiveMetropolis,
    "CKAM": CKAM,
    "DEMetropolisZ": pm.DEMetropolisZ,
    "NUTS": None,  # pm.sample's default on the differentiable twin
}

_ERRORS = [key for key, _ in DEFAULT_COLUMNS].index("max_mean_error")
#: the comparison table's columns, with the norm of the posterior mean (the banana's is 0)
COLUMNS = (*DEFAULT_COLUMNS[:_ERRORS], ("mean_norm", "‖mean‖"), *DEFAULT_COLUMNS[_ERRORS:])


def run(name: str, tune: int, draws: int, chains: int, seed: int) -> dict:
    """Sample the banana with one sampler and summarise the run."""
    target = TARGETS["banana"]
    gradient = SAMPLERS[name] is None
    model = target.build(black_box=not gradient)
    ops = counting_ops(model)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = None if gradient else SAMPLERS[name]()
    start = time.perf_counter()
    idata = sample_quietly(model, step, tune, draws, chains, seed)
    seconds = time.perf_counter() - start
    # NUTS: one log density and gradient per leapfrog step; both counts include tuning
    evaluations = count_evaluations(idata, "nuts") if gradient else sum(op.n_calls for op in ops)
    kind = "gradient" if gradient else "target"
    if name == "CKAM":  # estimates come from its sampling phases (evaluations count all draws)
        idata = sampling_phase(idata)
    return summarize(
        SamplerRun(name, idata, evaluations, seconds, kind), target.true_mean, target.true_var
    )


PROJECT = "pymc-kernel-steps"


def repository_runs(start: Path | None = None) -> Path | None:
    """The banana benchmark runs of the source checkout at ``start`` (default: the working
    directory) or one of its parents: the path its ``pyproject.toml`` (of project
    ``pymc-kernel-steps``) gives as ``[tool.pymc-kernel-steps] demo-runs``, relative to that
    file; None outside a checkout."""
    import tomllib

    start = Path.cwd() if start is None else Path(start)
    for directory in (start.resolve(), *start.resolve().parents):
        config = directory / "pyproject.toml"
        if not config.is_file():
            continue
        try:
            data = tomllib.loads(config.read_text())
        except (OSError, tomllib.TOMLDecodeError):
            return None
        if data.get("project", {}).get("name") != PROJECT:
            return None
        runs = data.get("tool", {}).get(PROJECT, {}).get("demo-runs")
        return directory / runs if runs else None
    return None


def write_benchmark_figure(runs: Path, out: Path) -> Path | None:
    """Draw the error-based ESS per 1000 evaluations of the committed banana benchmark (every
    sampler at 12,000 counted evaluations, over independent replicates) into ``out``.

    Returns None, after saying why, when there are no runs (an installed package has none:
    give ``--runs``) or matplotlib is missing (it is in the ``bench`` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import pandas as pd
    except ImportError:
        print("\n(no figure: matplotlib is not installed; pip install pymc-kernel-steps-bench)")
        return None
    if runs is None:
        print(
            "\n(no figure: no benchmark runs given; run from a source checkout or pass --runs "
            "<banana-runs.csv.gz written by benchmarks/compare/compare.py --csv>)"
        )
        return None
    runs = Path(runs)
    if not runs.exists():
        print(f"\n(no figure: {runs} is not there; it comes with a source checkout)")
        return None
    from .plots import plot_comparison

    fig = plot_comparison(pd.read_csv(runs), statistic="mean")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--samplers", default=",".join(SAMPLERS), help="comma list")
    parser.add_argument(
        "--figure",
        default="demo-output/accuracy-per-evaluation.png",
        help="where to write the benchmark figure ('' for none)",
    )
    parser.add_argument(
        "--runs",
        type=Path,
        default=None,
        help="the banana benchmark's runs (benchmarks/compare/compare.py --csv) to draw the "
        "figure from "
        "(default: the committed runs, when run from a source checkout)",
    )
    args = parser.parse_args(argv)
    names = args.samplers.split(",")
    unknown = sorted(set(names) - set(SAMPLERS))
    if unknown:
        parser.error(f"unknown samplers {unknown}; choose from {list(SAMPLERS)}")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    print(
        f"8-d banana (b = 0.03, V = 100), {args.chains} chains × ({args.tune} tune + "
        f"{args.draws} draws), seed {args.seed}.\nGradient-free samplers call the log density "
        "as a black box; NUTS uses the gradient of the twin model (its evals are gradient "
        "evaluations, tuning included). CKAM's figures use its sampling-phase draws (its evals "
        "count every draw). +adapt: vanishing adaptation through the draws (the papers' "
        "setting) instead of a kernel frozen after tuning.\n",
        flush=True,
    )
    rows = []
    for name in names:
        print(f"  sampling with {name} ...", flush=True)
        rows.append(run(name, args.tune, args.draws, args.chains, args.seed))
    table = comparison_table(rows, COLUMNS)
    print(
        "\n"
        + table
        + "\n\nmin ESS: smallest bulk ESS over the 8 coordinates; ‖mean‖: norm of the posterior "
        "mean (truth 0); mean err / var err: largest "
        "|mean − truth| / sd and |var / true var − 1| over the coordinates (the banana's long "
        "arms make the variance of x₁, x₂ hard for every sampler at this budget)."
    )
    if args.figure:
        runs = args.runs if args.runs is not None else repository_runs()
        figure = write_benchmark_figure(runs, Path(args.figure))
        if figure is not None:
            print(
                "\nThe within-run ESS above is what one run shows; it cannot see a chain that has "
                "not yet reached the banana's arms. The benchmark measures accuracy against the "
                "exact moments over 10 independent runs per sampler at 12,000 counted evaluations "
                f"(benchmarks/compare/compare.py; its runs: {runs}). Its figure, the README's: "
                f"{figure.resolve()}"
            )
    return table


if __name__ == "__main__":
    main()
