"""The robustness study with every learned mixture's envelope at another ``product_share``.

On the suite's Lotka–Volterra ODE the envelope's product half alone (``product_share=1``) took
``KAMH`` out of the local mode in every run (``benchmarks/posteriordb/lv_envelope_share.py``).
This runs the robustness targets with that envelope, so that the share is judged on more than one
posterior: ``study.py``'s arguments after the share, every learned
:class:`~pymc_kernel_steps.core.moves.Envelope` built with ``product_share=SHARE`` (default 0.5).

Usage::

    python benchmarks/robustness/envelope_share.py 1 --run all \\
        --samplers KMCLite KMCFinite KAMH --runs-dir benchmarks/robustness/runs-product-share-1
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pymc_kernel_steps.steps._moves as learned_moves
from pymc_kernel_steps.core.moves import Envelope

HERE = Path(__file__).parent


def main(share: str, study_arguments: list[str]) -> None:
    value = float(share)
    learned_moves.Envelope = lambda: Envelope(product_share=value)
    sys.argv = ["study.py", *study_arguments]
    runpy.run_path(str(HERE / "study.py"), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
