"""Where the climb ends on the suite's Lotka–Volterra ODE, from PyMC's initial point and from
eight starts jittered by U(−1, 1) around it in the unconstrained coordinates (as PyMC's NUTS
initialisation jitters). The posterior's main mode peaks near −132.6, a local mode near −172.5.

    python benchmarks/climb/lv_jittered_climbs.py

Output of 2026-11-27 (code of 7fa3f8d) in ``lv_jittered_climbs.txt``.
"""

from __future__ import annotations

import warnings

import numpy as np

from pymc_kernel_steps.core import climb, climb_budget
from pymc_kernel_steps_bench import posteriordb
from pymc_kernel_steps_bench._util import _unconstrained


def main() -> None:
    warnings.filterwarnings("ignore")
    model = posteriordb.model("hudson_lynx_hare-lotka_volterra", gradient=False)
    x0, logp, _ = _unconstrained(model)
    dim = x0.size
    rng = np.random.default_rng(0)
    starts = [("initial point", x0)] + [
        (f"jitter {k}", x0 + rng.uniform(-1.0, 1.0, dim)) for k in range(8)
    ]
    print("start | log density there | climb ends at | highest found | evaluations")
    for label, start in starts:
        value = logp(start)
        found = climb(logp, start, value, climb_budget(dim))
        print(
            f"{label} | {value:.1f} | {found.value:.2f} | {found.peak_value:.2f} | "
            f"{found.evaluations}"
        )


if __name__ == "__main__":
    main()
