"""The same seed gives the same draws, bit for bit, whatever the caches and the machine's load.

Each check samples in fresh Python processes: one with cold numba and PyTensor caches (temporary
``NUMBA_CACHE_DIR`` and ``PYTENSOR_FLAGS=base_compiledir=...``: PyTensor keeps its numba cache in
``base_compiledir/numba``, which ``compiledir=`` does not move), one while another process keeps
a core busy, or one on the caches the first filled, and compares every step class's draws
exactly. The processes import this checkout's package (``PYTHONPATH``), not an installed one.
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
    import pymc_kernel_steps as pks
    from pymc_kernel_steps_bench.targets import banana_model


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


ROOT = Path(__file__).resolve().parents[2]


def _env(env_extra=None):
    """The environment of a sampling process: this checkout's package first on the path."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **(env_extra or {})}


def _cold_caches(directory):
    """Empty numba and PyTensor caches (PyTensor's numba cache is ``base_compiledir/numba``)."""
    return {
        "NUMBA_CACHE_DIR": str(directory / "numba_cache"),
        "PYTENSOR_FLAGS": f"base_compiledir={directory / 'pytensor'}",
    }


def _run(tmp_path, tag, cores, env_extra=None, mp_ctx=""):
    script = tmp_path / "sample.py"
    script.write_text(SCRIPT)
    out = tmp_path / f"{tag}.npz"
    env = _env(env_extra)
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
def test_same_seed_same_draws_cold_caches_and_loaded_machine(tmp_path):
    """A run in one process on cold caches against runs while another process keeps a core
    busy, in one process and in two (the platform's default start method), and against a run in
    two processes started by ``spawn``, which import everything afresh and get the steps by
    pickling. ``pm.sample`` seeds each chain alike whatever the number of processes, so all four
    give the same draws. The cold run is shared by the runs it is compared with; the spawned run
    (five times the imports of the others) runs without the busy process, so that the test does
    not hold a core idle-busy for half a minute beside the suite's other tests."""
    first = _run(tmp_path, "cold", 1, _cold_caches(tmp_path))
    for second_cores, second_ctx, loaded in [(1, "", True), (2, "", True), (2, "spawn", False)]:
        busy = _busy_process() if loaded else None
        try:
            if busy is not None:
                time.sleep(0.5)
            second = _run(tmp_path, "loaded", second_cores, mp_ctx=second_ctx)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        assert first.keys() == second.keys()
        for name in first:
            np.testing.assert_array_equal(
                first[name], second[name], err_msg=f"{name}, {second_cores} {second_ctx}"
            )


EVERY_STEP_SCRIPT = textwrap.dedent(
    """
    import sys, warnings, logging
    import numpy as np
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt
    import pymc_kernel_steps as pks

    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    arrays = {}
    for noisy in (False, True):
        for name in ("KAMH", "AdaptiveMetropolis", "KMCLite", "KMCFinite", "CKAM", "AdaptiveHMC"):
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
    np.savez(sys.argv[1], **arrays)
    """
)


def _cold_then_cached(tmp_path, script_text):
    """Run ``script_text`` (which saves a ``.npz`` to its first argument) in a fresh process on
    empty numba and PyTensor caches, then in another on the caches the first filled: both
    outputs, as dicts of arrays."""
    script = tmp_path / "script.py"
    script.write_text(script_text)
    caches = _cold_caches(tmp_path)
    runs = []
    for tag in ("cold", "cached"):
        out = tmp_path / f"{tag}.npz"
        subprocess.run(
            [sys.executable, str(script), str(out)],
            check=True,
            env=_env(caches),
            timeout=900,
            capture_output=True,
        )
        with np.load(out) as data:
            runs.append({k: data[k] for k in data.files})
    return runs


def test_a_cold_cache_and_a_filled_one_give_the_same_draws(tmp_path):
    """A first run on a machine (empty PyTensor and numba caches) and the next one, which loads
    what the first compiled, give the same draws for every step, with and without random
    variables in the log density. PyTensor's numba fast-math flags made a freshly compiled log
    density and its cached copy differ in the last bit (the steps now compile without them)."""
    cold, cached = _cold_then_cached(tmp_path, EVERY_STEP_SCRIPT)
    assert (tmp_path / "pytensor" / "numba").is_dir()  # the cache PyTensor filled and reused
    assert len(cold) == 22 and cold.keys() == cached.keys()
    for name in cold:
        np.testing.assert_array_equal(cold[name], cached[name], err_msg=name)


BLACK_BOX_SCRIPT = textwrap.dedent(
    """
    import sys, warnings, logging
    import numpy as np
    import pymc as pm
    import pymc_kernel_steps as pks
    from pymc_kernel_steps_bench.blackbox import black_box
    from pymc_kernel_steps_bench.suite import SUITE

    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    with black_box(SUITE.posterior("kidiq-kidscore_momiq").model):
        idata = pm.sample(
            step=pks.CKAM(), tune=1000, draws=1000, chains=1, cores=1, random_seed=3,
            progressbar=False, compute_convergence_checks=False,
        )
    np.savez(sys.argv[1], beta=idata.posterior["beta"].values)
    """
)


@pytest.mark.slow
def test_a_black_box_gives_the_same_draws_on_a_cold_cache_and_a_filled_one(tmp_path):
    """The benchmarks' black box (``bench.black_box``) compiles the likelihood as the steps do,
    without numba's fast-math flags: with them, `CKAM`'s draws on this suite posterior differed
    by up to 3.9 between a first run on empty caches and the next run on the caches it filled,
    so a study's first run on a machine did not reproduce."""
    cold, cached = _cold_then_cached(tmp_path, BLACK_BOX_SCRIPT)
    np.testing.assert_array_equal(cold["beta"], cached["beta"])
