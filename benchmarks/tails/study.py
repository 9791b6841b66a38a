"""Acceptance of KMCLite's and KMCFinite's surrogate moves from the tails (issue 24, item 3).

For each target and tail, ``--draws`` exact draws of the target with one coordinate moved to
``mean + k sd`` (``k`` of ``--distances``, posterior mean and sd exact); each step is tuned for
``--tune`` iterations from the initial point, frozen, and makes ``--repeats`` transitions from
every starting point (:func:`pymc_kernel_steps_bench.tails.tail_acceptance`). Printed per
sampler, target, coordinate and ``k``: the mean acceptance probability of all transitions and of
the surrogate trajectories alone, the share of surrogate moves that diverged, the mean jump of
the moved coordinate towards the mean (in sds), and the acceptance of the last quarter of tuning.

Targets: a product of four t₅ (a heavy tail without a ridge), ``mixed4`` of
:mod:`pymc_kernel_steps_bench.targets.robustness` (``x1`` a t₅ with a sine ridge on it, ``x4`` a
Gumbel with right tail ``e^{−x}``) and a 4-d standard Gaussian (the same machinery, a light tail).
A start in ``mixed4``'s ``x1`` tail has ``x2`` redrawn from its conditional given the new ``x1``,
so that it is on the sine ridge.

The ``[learned]`` variants (``moves="learned"``) also report the acceptance of their envelope
moves (an independence proposal from a multivariate t fitted to the history).

Usage::

    python benchmarks/tails/study.py --draws 20 --repeats 10 --tune 2000
"""

from __future__ import annotations

import argparse
import functools
import logging
import warnings

import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps.steps._moves import MOVE_KINDS
from pymc_kernel_steps_bench.blackbox import black_box
from pymc_kernel_steps_bench.tails import tail_acceptance, tail_starts
from pymc_kernel_steps_bench.targets.robustness import robustness_model, robustness_reference

SAMPLERS = {
    "KMCLite": pks.KMCLite,
    "KMCFinite": pks.KMCFinite,
    "AdaptiveMetropolis": pks.AdaptiveMetropolis,
    "KMCLite[fixed]": functools.partial(pks.KMCLite, moves="fixed"),
    "KMCLite[learned]": functools.partial(pks.KMCLite, moves="learned"),
    "KMCFinite[learned]": functools.partial(pks.KMCFinite, moves="learned"),
    "KAMH[learned]": functools.partial(pks.KAMH, moves="learned"),
}
#: the ``move`` stat's code of the envelope (an independence proposal of ``moves="learned"``)
ENVELOPE = MOVE_KINDS.index("envelope")


def _gaussian():
    with pm.Model() as model:
        x = pm.Flat("x", shape=4)
        pm.Potential("gaussian", -0.5 * pm.math.sum(x**2))
    draws = lambda rng, n: rng.standard_normal((n, 4))  # noqa: E731
    return model, np.zeros(4), np.ones(4), draws


def _student4():
    """Four independent t₅ coordinates: a heavy tail without a ridge."""
    nu = 5.0
    with pm.Model() as model:
        x = pm.Flat("x", shape=4)
        pm.Potential("student", -(nu + 1) / 2 * pm.math.sum(pm.math.log1p(x**2 / nu)))
    draws = lambda rng, n: rng.standard_t(nu, (n, 4))  # noqa: E731
    return model, np.zeros(4), np.full(4, np.sqrt(nu / (nu - 2))), draws


def _mixed4():
    from pymc_kernel_steps_bench.targets.robustness import ROBUSTNESS_TARGETS

    ref = robustness_reference("mixed4")
    target = ROBUSTNESS_TARGETS["mixed4"]
    return robustness_model("mixed4"), ref.mean, np.sqrt(ref.var), target.sample


def _on_the_ridge(starts, rng):
    """``mixed4``'s ``x2`` redrawn from its conditional ``N(1.5 sin(1.5 x1), 0.4²)`` given the
    moved ``x1``: the start is in the t₅ tail, not off the sine ridge as well."""
    from pymc_kernel_steps_bench.targets.robustness import MIXED4_RIDGE

    amplitude, frequency, sd = MIXED4_RIDGE
    starts = starts.copy()
    noise = sd * rng.standard_normal(len(starts))
    starts[:, 1] = amplitude * np.sin(frequency * starts[:, 0]) + noise
    return starts


CASES = [  # (target, coordinate, label, adjust the other coordinates)
    ("mixed4", 3, "Gumbel x4", None),
    ("mixed4", 0, "t5 x1", _on_the_ridge),
    ("gaussian", 0, "Gaussian x1", None),
    ("student4", 0, "t5 alone x1", None),
]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--tune", type=int, default=2000)
    parser.add_argument("--distances", nargs="*", type=float, default=[3.0, 5.0, -3.0])
    parser.add_argument("--samplers", nargs="*", default=list(SAMPLERS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", nargs="*", default=None, help="tails to run (default all)")
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    builders = {"mixed4": _mixed4, "gaussian": _gaussian, "student4": _student4}
    print(
        "sampler | tail | k | accept (all) | accept (surrogate) | surrogate share | "
        "diverged (surrogate) | accept (envelope) | jump towards mean (sd) | tuning accept"
    )
    for name in args.samplers:
        for target, coordinate, label, adjust in CASES:
            if args.cases and label not in args.cases:
                continue
            model, mean, sd, sample = builders[target]()
            rng = np.random.default_rng(args.seed)
            draws = sample(rng, args.draws)
            starts, ks = tail_starts(draws, mean, sd, coordinate, args.distances)
            if adjust is not None:
                starts = adjust(starts, rng)
            frame = tail_acceptance(
                black_box(model),
                SAMPLERS[name],
                starts,
                tune=args.tune,
                repeats=args.repeats,
                random_seed=args.seed,
            )
            frame["k"] = ks[frame["start"]]
            direction = -np.sign(frame["k"])
            frame["towards"] = [
                d * j[coordinate] / sd[coordinate]
                for d, j in zip(direction, frame["jump"], strict=True)
            ]
            for k, group in frame.groupby("k", sort=False):
                surrogate = group[group["surrogate"]]
                envelope = group[group["move"] == ENVELOPE]
                print(
                    f"{name} | {label} | {k:+.0f} | {group['accept'].mean():.3f} | "
                    f"{surrogate['accept'].mean():.3f} | {len(surrogate) / len(group):.2f} | "
                    f"{surrogate['diverging'].mean():.2f} | {envelope['accept'].mean():.3f} | "
                    f"{group['towards'].mean():.2f} | "
                    f"{group['tuned_accept'].iloc[0]:.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
