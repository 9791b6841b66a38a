"""Set-up for the whole test session.

One BLAS thread, in this process and in the processes the tests start (unless the environment
already chooses). The tests' matrices are small, and `make test` runs two pytest workers on two
cores: with OpenBLAS's default of a thread per core, four threads spun on two cores and a loaded
machine made some linear-algebra tests 10-40 times slower in CPU time (a score-matching
cross-validation: 41 s instead of 1 s). The steps already run their transitions with one BLAS
thread (``pymc_kernel_steps/steps/_threads.py``), so their draws do not change.

One OpenBLAS kernel on every x86-64 machine with AVX2: ``Haswell``, unless the environment
chooses one. OpenBLAS picks its kernels by CPU (``SkylakeX`` on an Intel machine with AVX-512,
``Haswell`` where the environment says so, as on the AMD EPYC machines this project runs on), and
their results differ in the last bits. The golden draws (``tests/steps/test_golden_draws.py``)
compare chains bit for bit, and a last-bit difference in a Cholesky factor changes an
accept/reject decision a few dozen iterations in: recorded with ``SkylakeX`` kernels, they failed
on a machine with ``Haswell`` ones. They are recorded with ``Haswell`` kernels, which every
x86-64 machine with AVX2 can run.

Another random stream for every ``pm.sample`` call: ``PKS_TEST_SEED_OFFSET=k`` (an integer) adds
``k`` to each integer ``random_seed`` given to ``pymc.sample`` (an autouse fixture wraps it), so
the statistical tests run on streams they were not written on, as they do on another machine
(``benchmarks/test_seeds/run.py`` runs the ``slow`` ones so). Unset or 0, nothing is wrapped.
Bit-for-bit tests (``tests/steps/test_golden_draws.py``) fail under an offset, by design; seeds
given otherwise (a ``Generator``, a list, ``np.random.default_rng(seed)`` in a test) are left.
"""

from __future__ import annotations

import os

import pytest
from threadpoolctl import threadpool_limits

_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


if "OPENBLAS_CORETYPE" not in os.environ and "avx2" in _cpu_flags():
    # read by OpenBLAS when it is loaded: numpy must not be imported before this file
    os.environ["OPENBLAS_CORETYPE"] = "Haswell"

if not any(name in os.environ for name in _BLAS_THREADS):
    for name in _BLAS_THREADS:
        os.environ[name] = "1"  # libraries loaded later, and the tests' subprocesses
    threadpool_limits(1, user_api="blas")  # the libraries this process has loaded already


#: added to every integer ``random_seed`` of ``pymc.sample`` (see the module's docstring)
SEED_OFFSET_VARIABLE = "PKS_TEST_SEED_OFFSET"


@pytest.fixture(autouse=True)
def _offset_random_seeds(monkeypatch):
    """``pymc.sample`` with ``PKS_TEST_SEED_OFFSET`` added to an integer ``random_seed``; nothing
    when the variable is unset or 0."""
    offset = int(os.environ.get(SEED_OFFSET_VARIABLE, "0") or 0)
    if not offset:
        yield
        return
    import numbers

    import pymc

    sample = pymc.sample

    def offset_sample(*args, random_seed=None, **kwargs):
        if isinstance(random_seed, numbers.Integral) and not isinstance(random_seed, bool):
            random_seed = int(random_seed) + offset
        return sample(*args, random_seed=random_seed, **kwargs)

    monkeypatch.setattr(pymc, "sample", offset_sample)
    yield


#: the longest tests, moved to the front of the run in this order (the others keep pytest's
#: order): `make test` runs two workers with ``--dist worksteal``, and a long test left to the end
#: kept one worker busy for a minute after the other had finished
_LONGEST_FIRST = (
    "tests/test_examples.py::test_example_runs_at_reduced_size_and_its_claim_holds[lotka_volterra_dask]",
    "tests/steps/test_reproducibility.py::",
    "tests/test_distributed.py::",
    "tests/test_examples.py::test_example_runs_at_reduced_size_and_its_claim_holds[",
    "tests/bench/test_posteriordb.py::test_translation_agrees_with_the_reference_draws[",
    "tests/steps/test_ckam.py::test_bimodal_",
)


def pytest_collection_modifyitems(config, items):
    def rank(item):
        for i, prefix in enumerate(_LONGEST_FIRST):
            if item.nodeid.startswith(prefix):
                return i
        return len(_LONGEST_FIRST)

    items.sort(key=rank)  # stable
