"""The same seed gives the same draws, bit for bit, whatever the caches and the machine's load.

Each check samples in fresh Python processes: one with cold numba and PyTensor caches (temporary
``NUMBA_CACHE_DIR`` and ``PYTENSOR_FLAGS=compiledir=...``), one while another process keeps a
core busy, and compares every step class's draws exactly.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

SCRIPT = textwrap.dedent(
    """
    import sys, warnings, logging
    import numpy as np
    import pymc as pm
    import pymc_kernel_steps as pks
    from pymc_kernel_steps.bench.targets import banana_model


    def main(out, cores, mp_ctx):
        logging.getLogger("pymc").setLevel(logging.ERROR)
        warnings.simplefilter("ignore")
        arrays = {}
        for name in ("KAMH", "AdaptiveMetropolis", "KMCLite", "KMCFinite", "CKAM"):
            with banana_model(4, black_box=False):
                idata = pm.sample(
                    step=getattr(pks, name)(), tune=400, draws=200, chains=2, cores=cores,
                    random_seed=11, progressbar=False, compute_convergence_checks=False,
                    mp_ctx=mp_ctx,
                )
            arrays[name] = idata.posterior["x"].values
        np.savez(out, **arrays)


    if __name__ == "__main__":  # spawned workers import this file
        main(sys.argv[1], int(sys.argv[2]), sys.argv[3] or None)
    """
)


def _run(tmp_path, tag, cores, env_extra=None, mp_ctx=""):
    script = tmp_path / "sample.py"
    script.write_text(SCRIPT)
    out = tmp_path / f"{tag}.npz"
    env = {**os.environ, **(env_extra or {})}
    subprocess.run(
        [sys.executable, str(script), str(out), str(cores), mp_ctx],
        check=True,
        env=env,
        timeout=900,
        capture_output=True,
    )
    with np.load(out) as data:
        return {k: data[k] for k in data.files}


def _busy_process():
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend = time.time() + 600\nwhile time.time() < end: pass",
        ]
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "cores, second_cores, second_ctx",
    [(1, 1, ""), (2, 2, ""), (1, 2, "spawn")],
    ids=["cores1", "cores2", "cores1-vs-spawn"],
)
def test_same_seed_same_draws_cold_caches_and_loaded_machine(
    tmp_path, cores, second_cores, second_ctx
):
    cold = {
        "NUMBA_CACHE_DIR": str(tmp_path / "numba_cache"),
        "PYTENSOR_FLAGS": f"compiledir={tmp_path / 'pytensor_compiledir'}",
    }
    first = _run(tmp_path, "cold", cores, cold)
    busy = _busy_process()
    try:
        time.sleep(0.5)
        second = _run(tmp_path, "loaded", second_cores, mp_ctx=second_ctx)
    finally:
        busy.kill()
        busy.wait()
    assert first.keys() == second.keys()
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
