"""CKAM vs KAMH, AdaptiveMetropolis and DEMetropolisZ on paper 004's bimodal target, started in
either mode.

Target ``0.5 N([−8, 0], 0.5 I) + 0.5 N([8, 0], 2 I)``
(:func:`~pymc_kernel_steps_bench.targets.bimodal_model`, a black-box log density whose calls are
counted). One chain per run, started at the centre of the left or the right mode.

Every sampler gets the same number of target evaluations: ``tune + draws`` iterations for ours
(one evaluation per iteration), half the tuning and half the draws for DEMetropolisZ (two
evaluations per iteration: the proposal and the current point). The evaluations are *measured*
by the black box's call counter (:func:`~pymc_kernel_steps_bench.targets.counting_ops`) and checked
against :func:`~pymc_kernel_steps.diagnostics.count_evaluations`; the table shows the measured
count. For CKAM the estimates use :func:`~pymc_kernel_steps.steps.ckam.sampling_phase` (its
sampling-phase draws, as the paper does); the others use all their post-tuning draws.

Printed per (start, sampler): median and [min, max] over seeds of the right mode's weight (truth
0.5), of the KL divergence KL(truth ‖ histogram) of the first coordinate's marginal on 200 bins
over [−14, 14] (histogram floored at 1e-6 per bin), and of the mean first coordinate of each
mode's draws (truth −8 and 8; NaN when a mode is never visited).

``python benchmarks/bimodal/bimodal.py [--seeds 4] [--tune 4000] [--draws 8000] [--start left,right]
[--samplers CKAM,KAMH,...] [--out benchmarks/bimodal/bimodal.md]`` prints the table and writes it
to ``--out``.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pymc as pm
from scipy import stats

from pymc_kernel_steps import CKAM, KAMH, AdaptiveMetropolis, sampling_phase
from pymc_kernel_steps.diagnostics import count_evaluations
from pymc_kernel_steps_bench.targets import bimodal_model, counting_ops
from pymc_kernel_steps_bench.targets.synthetic import (
    BIMODAL_MEANS,
    BIMODAL_VARIANCES,
    BIMODAL_WEIGHTS,
)

#: name -> (step class, ``count_evaluations`` kind, target evaluations per iteration)
SAMPLERS = {
    "CKAM": (CKAM, "kernel", 1),
    "KAMH": (KAMH, "kernel", 1),
    "AdaptiveMetropolis": (AdaptiveMetropolis, "kernel", 1),
    "DEMetropolisZ": (pm.DEMetropolisZ, "demetropolisz", 2),
}
#: start name -> index of the mode whose centre is the initial point
STARTS = {"left": 0, "right": 1}
COLUMNS = ("w_right", "KL", "left_x", "right_x")
RESULTS = Path(__file__).resolve().parent
EDGES = np.linspace(-14.0, 14.0, 201)


def true_bin_mass() -> np.ndarray:
    """Probability of each histogram bin under the true first-coordinate marginal.

    Returns
    -------
    numpy.ndarray
        Shape ``(len(EDGES) - 1,)``, normalised to sum to one over ``[EDGES[0], EDGES[-1]]``.
    """
    cdf = sum(
        w * stats.norm(m, math.sqrt(v)).cdf(EDGES)
        for w, m, v in zip(BIMODAL_WEIGHTS, BIMODAL_MEANS[:, 0], BIMODAL_VARIANCES, strict=True)
    )
    mass = np.diff(cdf)
    return mass / mass.sum()


def metrics(draws: np.ndarray) -> dict[str, float]:
    """Mode weights, per-mode means and marginal KL of a set of draws.

    Parameters
    ----------
    draws : numpy.ndarray
        Shape ``(n, 2)``.

    Returns
    -------
    dict
        ``w_right`` (fraction of draws with ``x[0] > 0``), ``left_x`` and ``right_x`` (mean first
        coordinate of the draws on each side; NaN if there are none), ``KL`` (KL(truth ‖
        histogram) of the first coordinate, histogram floored at 1e-6 per bin) and ``n``.
    """
    right = draws[:, 0] > 0
    hist = np.histogram(draws[:, 0], bins=EDGES)[0].astype(float)
    q = np.maximum(hist / max(len(draws), 1), 1e-6)
    q /= q.sum()
    p = true_bin_mass()
    return {
        "w_right": float(right.mean()),
        "left_x": float(draws[~right, 0].mean()) if (~right).any() else math.nan,
        "right_x": float(draws[right, 0].mean()) if right.any() else math.nan,
        "KL": float(np.sum(p * np.log(p / q))),
        "n": len(draws),
    }


def run(sampler: str, seed: int, tune: int, draws: int, start: str) -> dict[str, float]:
    """Sample one chain from the centre of the ``start`` mode at an equal evaluation budget.

    Parameters
    ----------
    sampler : str
        A key of :data:`SAMPLERS`.
    seed : int
        ``random_seed`` of ``pm.sample``.
    tune, draws : int
        Budget in target evaluations; divided by the sampler's evaluations per iteration.
    start : str
        A key of :data:`STARTS`.

    Returns
    -------
    dict
        :func:`metrics` of the draws used (CKAM: sampling-phase draws), plus ``evals`` (target
        evaluations counted by the black box, tuning included) and ``seconds`` (wall time).

    Raises
    ------
    RuntimeError
        If the counted evaluations disagree with :func:`count_evaluations`.
    """
    cls, kind, evaluations_per_iteration = SAMPLERS[sampler]
    model = bimodal_model(black_box=True)
    ops = counting_ops(model)
    began = time.perf_counter()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(
            step=cls(),
            tune=tune // evaluations_per_iteration,
            draws=draws // evaluations_per_iteration,
            chains=1,
            cores=1,
            random_seed=seed,
            initvals={"x": BIMODAL_MEANS[STARTS[start]]},
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
        )
    seconds = time.perf_counter() - began
    evaluations = sum(op.n_calls for op in ops)
    from_stats = count_evaluations(idata, kind)
    if abs(evaluations - from_stats) > 1:  # ours also evaluate the initial point once
        raise RuntimeError(
            f"{sampler}: {evaluations} counted evaluations but {from_stats} from sample stats"
        )
    if sampler == "CKAM":
        idata = sampling_phase(idata)
    out = metrics(idata.posterior["x"].values.reshape(-1, 2))
    out.update(evals=evaluations, seconds=seconds)
    return out


def summary_cell(values: list[float], fmt: str = ".3g") -> str:
    """``median [min, max]`` of the finite values (a single value if they are all equal).

    Parameters
    ----------
    values : list of float
        One value per seed.
    fmt : str
        Format specification of each number.

    Returns
    -------
    str
        With `` (k nan)`` appended when ``k`` values are not finite; ``nan`` if none is.
    """
    values = np.asarray(values, dtype=float)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return "nan"
    if finite.min() == finite.max():
        cell = format(finite[0], fmt)
    else:
        cell = f"{np.median(finite):{fmt}} [{finite.min():{fmt}}, {finite.max():{fmt}}]"
    if finite.size < values.size:
        cell += f" ({values.size - finite.size} nan)"
    return cell


def main() -> None:
    """Parse the options, run every (start, sampler, seed), print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="seeds 0, 1, ... (default 4)")
    parser.add_argument("--tune", type=int, default=4000, help="tuning evaluations per run")
    parser.add_argument("--draws", type=int, default=8000, help="draw evaluations per run")
    parser.add_argument(
        "--start", default="left,right", help="comma list of left, right (default both)"
    )
    parser.add_argument(
        "--samplers", default=",".join(SAMPLERS), help=f"comma list of {', '.join(SAMPLERS)}"
    )
    parser.add_argument("--out", default=str(RESULTS / "bimodal.md"), help="markdown file")
    args = parser.parse_args()
    samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    if not samplers or set(samplers) - set(SAMPLERS):
        parser.error(
            f"--samplers takes a comma list of {', '.join(SAMPLERS)}, got {args.samplers!r}"
        )
    starts = [s.strip() for s in args.start.split(",") if s.strip()]
    unknown = sorted(set(starts) - set(STARTS))
    if unknown or not starts:
        parser.error(f"--start takes a comma list of {', '.join(STARTS)}, got {args.start!r}")
    logging.getLogger("pymc").setLevel(logging.ERROR)

    rows = []
    began = time.perf_counter()
    for start in starts:
        for sampler in samplers:
            results = []
            for seed in range(args.seeds):
                r = run(sampler, seed, args.tune, args.draws, start)
                results.append(r)
                print(
                    f"{start:5} {sampler:18} seed {seed}: evals {r['evals']}, "
                    f"w_right {r['w_right']:.3f}, KL {r['KL']:.3f}, {r['seconds']:.1f} s",
                    flush=True,
                )
            cells = [start, sampler, summary_cell([r["evals"] for r in results], ".6g")]
            cells.append(summary_cell([r["n"] for r in results], ".6g"))
            cells += [summary_cell([r[column] for r in results]) for column in COLUMNS]
            within = sum(abs(r["w_right"] - 0.5) <= 0.1 for r in results)
            cells.append(f"{within}/{len(results)}")
            rows.append("| " + " | ".join(cells) + " |")
    wall = time.perf_counter() - began

    lines = [
        "# Bimodal target (paper 004)",
        "",
        f"0.5 N([-8,0], 0.5I) + 0.5 N([8,0], 2I), one chain per run started at the centre of the "
        f"left or right mode. Budget {args.tune} tune + {args.draws} draws = "
        f"{args.tune + args.draws} target evaluations per run: our samplers do one per "
        "iteration, DEMetropolisZ two, so it gets half the tune and half the draws. `evals` is "
        "the count measured by the black-box log density (ours also evaluate the initial point "
        f"once). {args.seeds} seeds; median [min, max]. Truth: w_right 0.5, KL 0, left_x -8, "
        "right_x 8. `n used`: draws behind the estimates (CKAM: sampling-phase draws only, "
        f"others: all post-tuning draws). Wall time {wall / 60:.1f} min (2 shared cores).",
        "",
        f"Command: `python benchmarks/bimodal/bimodal.py {' '.join(sys.argv[1:])}`.",
        "",
        "| start | sampler | evals | n used | " + " | ".join(COLUMNS) + " | runs with w_right in "
        "0.5 ± 0.1 |",
        "|:--|:--|--:|--:|" + "--:|" * (len(COLUMNS) + 1),
        *rows,
    ]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print()
    print(text)


if __name__ == "__main__":
    main()
