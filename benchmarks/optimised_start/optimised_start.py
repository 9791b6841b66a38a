"""Experiment (not the package's behaviour): start each chain of this package's steps at an
optimum of the log density found from PyMC's initial point, before tuning.

The posteriordb suite with four chains (`benchmarks/posteriordb/four-chains.md`) lost its lead
because each chain climbs from PyMC's initial point for most of a short tuning phase. This
wraps a study script (``suite.py`` or ``study.py``) and, for every chain of ``KernelStep``
(``KMCLite``, ``KMCFinite``, ``KAMH``, ...) whose start it measures (not for a noisy log density
or after a warm start), first runs :func:`pymc_kernel_steps.bench.peers.optimise_start` (L-BFGS-B
on finite differences, restarted in its own scaled coordinates; the peers' expert ``emcee``
start) within ``min(60 (d + 1), 600)`` evaluations, and starts the chain (its scouts too) at the
optimum. Those evaluations are part of tuning: the draws' kernel is unchanged, so the draws stay
exact. The runner's budget includes them (``start_evaluations`` adds the optimiser's count at the
initial point: the optimiser is deterministic, so the count is exact when PyMC starts the chain
there); every figure is per measured evaluation either way.

Usage::

    python benchmarks/optimised_start/optimised_start.py benchmarks/posteriordb/suite.py \\
        --run all --chains 4 --samplers KMCLite KMCFinite KAMH --runs-dir DIR
"""

from __future__ import annotations

import math
import runpy
import sys

import numpy as np
from pymc.blocking import DictToArrayBijection, RaveledVars

from pymc_kernel_steps.bench.peers import optimise_start
from pymc_kernel_steps.steps.base import KernelStep


def _budget(step) -> int:
    return int(min(60 * (step.dim + 1), 600))


def _optimum(step, x: np.ndarray, record: bool) -> tuple[np.ndarray, int]:
    if step.noisy_logp or getattr(step, "warm_history", None) is not None:
        return x, 0

    def logp(point):
        try:
            return step._evaluate_logp(point, step._point_map_info, record=record)
        except Exception:  # noqa: BLE001 - the model failed here: outside
            return -math.inf

    best, _, evaluations = optimise_start(logp, np.asarray(x, dtype=float), _budget(step))
    return np.asarray(best, dtype=float), int(evaluations)


_astep = KernelStep._astep


def astep(self, q0):
    chain = self.chain
    if chain.current_point is None and chain.iteration == 0 and self.tune:
        self._point_map_info = q0.point_map_info
        best, _ = _optimum(self, q0.data, record=True)
        q0 = RaveledVars(best, q0.point_map_info)
    return _astep(self, q0)


_start_evaluations = KernelStep.start_evaluations


def start_evaluations(self, point):
    count = _start_evaluations(self, point)
    x = DictToArrayBijection.map({v.name: point[v.name] for v in self.vars})
    self._point_map_info = x.point_map_info
    _, evaluations = _optimum(self, np.asarray(x.data, dtype=float), record=False)
    return count + evaluations


KernelStep._astep = astep
KernelStep.start_evaluations = start_evaluations

if __name__ == "__main__":
    script, sys.argv = sys.argv[1], sys.argv[1:]
    runpy.run_path(script, run_name="__main__")
