"""CKAM vs KAMH vs AdaptiveMetropolis on paper 004's bimodal target, started in the left mode.

Target ``0.5 N([−8, 0], 0.5 I) + 0.5 N([8, 0], 2 I)``. Every sampler gets the same number of target
evaluations (``tune + draws`` per chain, one evaluation per iteration). For CKAM the estimates use
:func:`~pymc_kernel_steps.steps.ckam.sampling_phase` (its sampling-phase draws, as the paper does);
the others use all their draws. Printed per sampler: median and range over seeds of the right
mode's weight (truth 0.5), the mean of each component's draws (truth [−8, 0] and [8, 0]; NaN when
a mode is never visited) and the KL divergence KL(truth ‖ histogram) of the first coordinate's
marginal on 200 bins over [−14, 14] (draws smoothed by a floor of 1e-6 per bin).

``python benchmarks/bimodal.py [--seeds 4] [--tune 4000] [--draws 8000]``
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from scipy import stats  # noqa: E402

from pymc_kernel_steps import KAMH, AdaptiveMetropolis  # noqa: E402
from pymc_kernel_steps.steps.ckam import CKAM, sampling_phase  # noqa: E402

MEANS = np.array([[-8.0, 0.0], [8.0, 0.0]])
VARIANCES = np.array([0.5, 2.0])
EDGES = np.linspace(-14.0, 14.0, 201)


def bimodal_model() -> pm.Model:
    with pm.Model() as model:
        x = pm.Flat("x", shape=2)
        sq = pt.sum((x[None, :] - MEANS) ** 2, axis=1)
        pm.Potential("mixture", pt.logsumexp(-0.5 * sq / VARIANCES - pt.log(VARIANCES)))
    return model


def true_bin_mass() -> np.ndarray:
    cdf = sum(
        0.5 * stats.norm(m, math.sqrt(v)).cdf(EDGES)
        for m, v in zip(MEANS[:, 0], VARIANCES, strict=True)
    )
    return np.diff(cdf)


def metrics(draws: np.ndarray) -> dict:
    right = draws[:, 0] > 0
    hist = np.histogram(draws[:, 0], bins=EDGES)[0].astype(float)
    q = np.maximum(hist / max(len(draws), 1), 1e-6)
    q /= q.sum()
    p = true_bin_mass()
    p /= p.sum()
    with np.errstate(all="ignore"):
        left_mean = draws[~right].mean(axis=0) if (~right).any() else np.full(2, np.nan)
        right_mean = draws[right].mean(axis=0) if right.any() else np.full(2, np.nan)
    return {
        "w_right": right.mean(),
        "left_x": left_mean[0],
        "left_y": left_mean[1],
        "right_x": right_mean[0],
        "right_y": right_mean[1],
        "KL": float(np.sum(p * np.log(p / q))),
        "n": len(draws),
    }


def run(sampler: str, seed: int, tune: int, draws: int) -> dict:
    with bimodal_model():
        step = {"CKAM": CKAM, "KAMH": KAMH, "AdaptiveMetropolis": AdaptiveMetropolis}[sampler]()
        idata = pm.sample(
            step=step,
            tune=tune,
            draws=draws,
            chains=1,
            cores=1,
            random_seed=seed,
            initvals={"x": MEANS[0]},
            progressbar=False,
            compute_convergence_checks=False,
        )
    if sampler == "CKAM":
        idata = sampling_phase(idata)
    return metrics(idata.posterior["x"].values.reshape(-1, 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--tune", type=int, default=4000)
    parser.add_argument("--draws", type=int, default=8000)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    columns = ["w_right", "left_x", "left_y", "right_x", "right_y", "KL"]
    print(
        f"bimodal 0.5 N([-8,0], 0.5I) + 0.5 N([8,0], 2I), start [-8, 0], {args.tune} tune + "
        f"{args.draws} draws = {args.tune + args.draws} evaluations per run, {args.seeds} seeds"
    )
    print("truth: w_right 0.5, left (-8, 0), right (8, 0), KL 0")
    print(f"{'sampler':<20}{'n used':>8}" + "".join(f"{c:>28}" for c in columns))
    for sampler in ("CKAM", "KAMH", "AdaptiveMetropolis"):
        results = [run(sampler, seed, args.tune, args.draws) for seed in range(args.seeds)]
        row = f"{sampler:<20}{int(np.median([r['n'] for r in results])):>8}"
        for column in columns:
            values = np.array([r[column] for r in results])
            finite = values[np.isfinite(values)]
            if finite.size == 0:
                cell = "nan"
            else:
                cell = f"{np.median(finite):.3g} [{finite.min():.3g}, {finite.max():.3g}]"
                if finite.size < values.size:
                    cell += f" ({values.size - finite.size} nan)"
            row += f"{cell:>28}"
        print(row)


if __name__ == "__main__":
    main()
