"""Our samplers' own time per iteration: what one ``pm.sample`` iteration costs beyond the
model's log density (issue 50: ``KMCLite`` at most 0.2 ms per iteration at d <= 20).

The target is a correlated Gaussian ``N(0, Σ)``, ``Σ_ij = 0.5^|i−j|``, of dimension ``d``, as a
black-box PyTensor Op (no gradient) whose ``perform`` counts its calls and times itself with
``time.process_time``. One chain of ``--tune`` tuning iterations and ``--draws`` draws
(``pm.sample``, ``cores=1``, no progress bar); a ``callback`` reads the process's CPU time after
every iteration. A phase's own time per iteration is its CPU time minus the time spent inside the
Op, over its iterations: the sampler's work, PyMC's loop and trace, and PyTensor's call of the
compiled function around the Op (the same for every step). CPU time, not wall time, so that a
busy second core costs little; each figure is the median over ``--repeats`` runs (different
seeds), the samplers interleaved within a repeat, after one untimed short run of each that
compiles (or loads) their compiled code.

Usage::

    python benchmarks/own_time/own_time.py
    python benchmarks/own_time/own_time.py --dims 5 10 20 --repeats 5 --samplers KMCLite
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time
import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph import Apply, Op

import pymc_kernel_steps as pks

CORRELATION = 0.5


class TimedGaussian(Op):
    """``log N(x; 0, Σ)`` (up to a constant) of a vector, timing its own evaluations."""

    itypes = [pt.dvector]
    otypes = [pt.dscalar]

    def __init__(self, dim: int):
        index = np.arange(dim)
        self.precision = np.linalg.inv(CORRELATION ** np.abs(index[:, None] - index[None, :]))
        self.calls = 0
        self.seconds = 0.0

    def make_node(self, x):
        return Apply(self, [pt.as_tensor_variable(x)], [pt.dscalar()])

    def perform(self, node, inputs, outputs):
        start = time.process_time()
        (x,) = inputs
        outputs[0][0] = np.asarray(-0.5 * x @ self.precision @ x)
        self.calls += 1
        self.seconds += time.process_time() - start


def _steps():
    return {
        "KMCLite": pks.KMCLite,
        "KMCFinite": pks.KMCFinite,
        "KAMH": pks.KAMH,
        "DEMetropolisZ": pm.DEMetropolisZ,
    }


def own_time(sampler: str, dim: int, tune: int, draws: int, seed: int) -> dict:
    """One chain's own CPU milliseconds per iteration, tuning and after tuning."""
    op = TimedGaussian(dim)
    marks: list[tuple[float, float, bool]] = []

    def callback(trace, draw):
        marks.append((time.process_time(), op.seconds, draw.tuning))

    with pm.Model(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba runs the Op's perform in object mode
        x = pm.Flat("x", shape=dim, initval=np.zeros(dim))
        pm.Potential("logp", op(x))
        step = _steps()[sampler]()
        pm.sample(
            draws=draws,
            tune=tune,
            chains=1,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            callback=callback,
        )
    cpu = np.diff([m[0] for m in marks])
    inside = np.diff([m[1] for m in marks])
    tuning = np.array([m[2] for m in marks[1:]])
    own = cpu - inside
    return {
        "tuning": 1e3 * own[tuning].mean(),
        "draws": 1e3 * own[~tuning].mean(),
        "logp_us": 1e6 * op.seconds / max(op.calls, 1),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", nargs="*", type=int, default=[5, 10, 20])
    parser.add_argument("--samplers", nargs="*", default=list(_steps()))
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    print(
        f"# {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}; tune={args.tune}, draws={args.draws}, "
        f"median of {args.repeats}"
    )
    # compile (or load from numba's cache) every sampler's compiled code before timing
    for sampler in args.samplers:
        own_time(sampler, 2, 300, 10, args.seed)
    results: dict = {}
    for repeat in range(args.repeats):
        for dim in args.dims:
            for sampler in args.samplers:
                r = own_time(sampler, dim, args.tune, args.draws, args.seed + repeat)
                results.setdefault((sampler, dim), []).append(r)
    print("sampler | d | own ms / iteration, tuning | after tuning | log density µs")
    for (sampler, dim), runs in results.items():
        tuning = np.median([r["tuning"] for r in runs])
        draws = np.median([r["draws"] for r in runs])
        logp = np.median([r["logp_us"] for r in runs])
        print(f"{sampler} | {dim} | {tuning:.3f} | {draws:.3f} | {logp:.1f}", flush=True)


if __name__ == "__main__":
    main()
