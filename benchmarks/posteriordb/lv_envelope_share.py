"""``KAMH`` on the suite's Lotka–Volterra ODE with the learned mixture's envelope at another
``product_share``: which half of the defensive mixture takes the chain out of the local mode?

Runs the suite's protocol (``suite.py --run hudson_lynx_hare-lotka_volterra --samplers KAMH``,
seed set 0) with every learned mixture's :class:`~pymc_kernel_steps.core.moves.Envelope` built
with ``product_share=SHARE`` (0: the former multivariate t alone; 1: independent t's along the
whitened axes alone; the default is 0.5), and writes the frame to
``runs-lv-envelope/product-share-<SHARE>/``.

Usage::

    python benchmarks/posteriordb/lv_envelope_share.py 0
    python benchmarks/posteriordb/lv_envelope_share.py 1
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pymc_kernel_steps.steps._moves as learned_moves
from pymc_kernel_steps.core.moves import Envelope

HERE = Path(__file__).parent


def main(share: str) -> None:
    value = float(share)
    learned_moves.Envelope = lambda: Envelope(product_share=value)
    out = HERE / "runs-lv-envelope" / f"product-share-{share}"
    sys.argv = [
        "suite.py", "--run", "hudson_lynx_hare-lotka_volterra", "--samplers", "KAMH",
        "--runs-dir", str(out),
    ]  # fmt: skip
    runpy.run_path(str(HERE / "suite.py"), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1])
