"""An experiment, not the package: the robustness study with JumpRateWeights giving weights
∝ rate**POWER (monkeypatched; the package uses POWER = 1).

Usage::

    python benchmarks/robustness/learned_power.py 2 --run mixed4 --samplers "KMCLite[learned]" \\
        "KAMH[learned]" "KMCFinite[learned]" --runs-dir benchmarks/robustness/runs-learned-power2
"""

import runpy
import sys
from pathlib import Path

import numpy as np

from pymc_kernel_steps.core import move_weights as mw

POWER = float(sys.argv[1])
sys.argv = ["study.py", *sys.argv[2:]]


def _weights_from(self, rates):
    rates = np.asarray(rates, float) ** POWER
    total = rates.sum()
    if not np.isfinite(total) or total <= 0.0:
        return self.initial.copy()
    return self.floor + (1.0 - self.floor * rates.size) * rates / total


mw.JumpRateWeights._weights_from = _weights_from
runpy.run_path(str(Path(__file__).parent / "study.py"), run_name="__main__")
