"""The same seed gives the same draws, bit for bit, whatever the caches and the machine's load.

One script samples three workloads in a fresh Python process: every step class on a banana
(two chains, in one process or two), every step class with and without a random variable in
the log density, and the benchmarks' black box. It runs first on cold numba and PyTensor
caches (temporary ``NUMBA_CACHE_DIR`` and ``PYTENSOR_FLAGS=base_compiledir=...``: PyTensor
keeps its numba cache in ``base_compiledir/numba``, which ``compiledir=`` does not move), then
on the caches that run filled while another process keeps a core busy, then in two processes
(the platform's default start method, loaded) and in two processes started by ``spawn``; every
run's draws must equal the cold run's exactly. The processes import this checkout's package
(``PYTHONPATH``), not an installed one. One cold run serves every comparison: compiling on
empty caches is most of each process's cost.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

SCRIPT = textwrap.dedent(
    """
    import sys, warnings, logging
    import numpy as np
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt
    import pymc_kernel_steps as pks

    # the harness is imported where it is used: processes started by spawn import this file
    # and need only what unpickles a step (the harness's suite costs 1-2 s per process)
    STEPS = ("KAMH", "AdaptiveMetropolis", "KMCLite", "KMCFinite", "CKAM")


    def banana(cores, mp_ctx):
        from pymc_kernel_steps_bench.targets import banana_model

        arrays = {}
        for name in STEPS:
            with banana_model(4, black_box=False):
                idata = pm.sample(
                    step=getattr(pks, name)(), tune=400, draws=200, chains=2, cores=cores,
                    random_seed=11, progressbar=False, compute_convergence_checks=False,
                    mp_ctx=mp_ctx,
                )
            arrays[f"banana_{name}"] = idata.posterior["x"].values
        return arrays


    def every_step():
        arrays = {}
        for noisy in (False, True):
            for name in STEPS + ("AdaptiveHMC",):
                if noisy and name == "AdaptiveHMC":  # it needs an exact log density
                    continue
                with pm.Model():
                    x = pm.Normal("x", 0.0, 1.0, shape=2)
                    s = pm.HalfNormal("s", 1.0)
                    pm.Normal("y", x.sum(), s, observed=[0.3, -0.2, 0.5])
                    if noisy:  # a pt.random variable in the log-density graph
                        rng = pytensor.shared(np.random.default_rng(0))
                        pm.Potential("noise", pt.random.normal(-0.02, 0.2, rng=rng))
                    idata = pm.sample(
                        step=getattr(pks, name)(), tune=200, draws=200, chains=1, cores=1,
                        random_seed=7, progressbar=False, compute_convergence_checks=False,
                    )
                key = name + ("_noisy" if noisy else "")
                arrays[key + "_x"] = idata.posterior["x"].values
                arrays[key + "_s"] = idata.posterior["s"].values
        return arrays


    def black_box_ckam():
        from pymc_kernel_steps_bench.blackbox import black_box
        from pymc_kernel_steps_bench.suite import SUITE

        with black_box(SUITE.posterior("kidiq-kidscore_momiq").model):
            idata = pm.sample(
                step=pks.CKAM(), tune=1000, draws=1000, chains=1, cores=1, random_seed=3,
                progressbar=False, compute_convergence_checks=False,
            )
        return {"black_box_beta": idata.posterior["beta"].values}


    def main(out, cores, mp_ctx, everything):
        logging.getLogger("pymc").setLevel(logging.ERROR)
        warnings.simplefilter("ignore")
        arrays = banana(cores, mp_ctx)
        if everything:
            arrays.update(every_step())
            arrays.update(black_box_ckam())
        np.savez(out, **arrays)


    if __name__ == "__main__":  # spawned workers import this file
        main(sys.argv[1], int(sys.argv[2]), sys.argv[3] or None, sys.argv[4] == "all")
    """
)


ROOT = Path(__file__).resolve().parents[2]


def _env(env_extra=None):
    """The environment of a sampling process: this checkout's package first on the path."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **(env_extra or {})}


def _caches(directory):
    """numba and PyTensor caches in ``directory`` (PyTensor's numba cache is
    ``base_compiledir/numba``): empty for the first run, filled by it for the next."""
    return {
        "NUMBA_CACHE_DIR": str(directory / "numba_cache"),
        "PYTENSOR_FLAGS": f"base_compiledir={directory / 'pytensor'}",
    }


def _run(tmp_path, tag, cores, *, mp_ctx="", everything=False):
    script = tmp_path / "sample.py"
    script.write_text(SCRIPT)
    out = tmp_path / f"{tag}.npz"
    subprocess.run(
        [sys.executable, str(script), str(out), str(cores), mp_ctx, "all" if everything else ""],
        check=True,
        env=_env(_caches(tmp_path)),
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
def test_same_seed_same_draws_on_cold_and_filled_caches_loaded_and_spawned(tmp_path):
    """The cold run against: a run on the caches it filled while another process keeps a core
    busy (every workload: with numba's fast-math flags a freshly compiled log density and its
    cached copy differed in the last bit, and `CKAM`'s draws on the black box by up to 3.9, so a
    study's first run on a machine did not reproduce); the banana's two chains in two processes,
    loaded; and in two processes started by ``spawn``, which import everything afresh and get
    the steps by pickling. ``pm.sample`` seeds each chain alike whatever the number of
    processes, so all give the same draws. The spawned run (five times the imports of the
    others) runs without the busy process, so that the test does not hold a core idle-busy for
    half a minute beside the suite's other tests."""
    cold = _run(tmp_path, "cold", 1, everything=True)
    assert (tmp_path / "pytensor" / "numba").is_dir()  # the cache PyTensor filled, reused next
    assert len(cold) == 5 + 22 + 1
    runs = [("cached, loaded", 1, "", True, True), ("two processes, loaded", 2, "", True, False)]
    runs.append(("two processes, spawn", 2, "spawn", False, False))
    for label, cores, mp_ctx, loaded, everything in runs:
        busy = _busy_process() if loaded else None
        try:
            if busy is not None:
                time.sleep(0.5)
            second = _run(tmp_path, "second", cores, mp_ctx=mp_ctx, everything=everything)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        expected = cold if everything else {k: v for k, v in cold.items() if k.startswith("banana")}
        assert second.keys() == expected.keys(), label
        for name in expected:
            np.testing.assert_array_equal(expected[name], second[name], err_msg=f"{name}: {label}")
