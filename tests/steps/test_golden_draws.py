"""Golden draws: every public step's draws and key sample stats, bit for bit, on fixed seeds.

The arrays in ``tests/steps/golden/`` were recorded from the code of the commit named in their
``recorded_at`` entry. A refactoring of the samplers must leave them unchanged; a change that is
meant to change the draws re-records them (and says why in the CHANGELOG)::

    python -m tests.steps.test_golden_draws          # from the repository's root
    python -m tests.steps.test_golden_draws KMCLite  # only these configurations

They are bit for bit only in the floating-point environment they were recorded in: the same
OpenBLAS kernels (``Haswell``, which ``tests/conftest.py`` selects on every x86-64 machine with
AVX2 unless the environment chooses; recording refuses other kernels), the same SIMD paths of
numpy's CPU dispatch, the same CPU features numba compiles for, the same C library and the same
versions of the numerical libraries. A last-bit difference in any of them changes an accept/reject
decision some dozens of iterations in. ``golden/fingerprint.json`` records that environment beside
the draws (:func:`fingerprint`); where this process's differs, the comparison is skipped with the
difference named, so that ``make test`` passes on any machine and still guards every refactoring
on a machine like the recording one.

Each run is one chain (``cores=1``) of a few hundred tuning iterations and draws, long enough
that the random-walk phase, the fits of the surrogates and kernels, the step-size tuning and the
mixtures' other moves all happen. The tuning iterations are kept and compared too.
"""

from __future__ import annotations

import json
import logging
import platform
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

GOLDEN = Path(__file__).parent / "golden"
FINGERPRINT = GOLDEN / "fingerprint.json"
#: the OpenBLAS kernels the golden draws were recorded with
OPENBLAS_KERNEL = "Haswell"
SEEDS = (1, 2, 3)
#: the sample stats compared with the draws (every step emits them)
STATS = ("accepted", "logp_evals")

#: name -> (step class, constructor arguments, tune, draws); the variants of KMCLite and
#: KMCFinite are the code paths their options select (surrogate, step-size tuning). The options'
#: variants run ``moves="fixed"``, whose draws were recorded before ``moves="learned"`` became
#: the default (``<class>-fixed`` are the former default files); ``<class>`` is the default.
CONFIGS = {
    "KAMH": ("KAMH", {}, 300, 200),
    "KAMH-fixed": ("KAMH", {"moves": "fixed"}, 300, 200),
    "KAMH-scouts": ("KAMH", {"moves": "fixed", "scouts": 2}, 1000, 100),
    "AdaptiveMetropolis": ("AdaptiveMetropolis", {}, 300, 200),
    "CKAM": ("CKAM", {}, 300, 200),
    "KMCLite": ("KMCLite", {}, 300, 200),
    "KMCLite-fixed": ("KMCLite", {"moves": "fixed"}, 300, 200),
    "KMCLite-walkers": ("KMCLite", {"walkers": 4}, 300, 200),
    "KMCLite-score_matching": (
        "KMCLite",
        {"moves": "fixed", "surrogate": "score_matching"},
        300,
        200,
    ),
    "KMCLite-bayesopt": ("KMCLite", {"moves": "fixed", "trajectory_tuning": "bayesopt"}, 300, 200),
    "KMCFinite": ("KMCFinite", {}, 300, 200),
    "KMCFinite-fixed": ("KMCFinite", {"moves": "fixed"}, 300, 200),
    "KMCFinite-dual_averaging": (
        "KMCFinite",
        {"moves": "fixed", "step_size_adaptation": "dual_averaging"},
        300,
        200,
    ),
    "KMCLite-warm": (
        "KMCLite",
        {"moves": "fixed", "surrogate": "score_matching", "history": "warm"},
        300,
        200,
    ),
    "KAMH-adapt_after_tuning": ("KAMH", {"moves": "fixed", "adapt_after_tuning": True}, 300, 200),
    "KMCFinite-adapt_after_tuning": (
        "KMCFinite",
        {"moves": "fixed", "adapt_after_tuning": True},
        300,
        200,
    ),
    "AdaptiveHMC": ("AdaptiveHMC", {}, 300, 200),
}
#: the states of ``history="warm"``: a fixed Gaussian cloud around the origin
WARM_STATES = 100


def correlated_normal():
    """A 2-d Gaussian with correlation 0.9."""
    import pymc as pm

    model = pm.Model()
    with model:
        pm.MvNormal("x", mu=np.zeros(2), cov=np.array([[1.0, 0.9], [0.9, 1.0]]))
    return model


def bounded():
    """A location, a log-transformed scale and a logit-transformed probability (3-d)."""
    import pymc as pm

    model = pm.Model()
    with model:
        mu = pm.Normal("mu", 0.0, 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=np.array([0.3, -0.4, 1.1, 0.8, 0.2]))
        pm.Beta("p", 2.0, 5.0)
    return model


MODELS = {"correlated_normal": correlated_normal, "bounded": bounded}


def sample(model_name: str, config: str, seed: int) -> dict[str, np.ndarray]:
    """One chain's draws (tuning included, the model's value variables raveled side by side)
    and its ``STATS``, as arrays of ``tune + draws`` rows."""
    import pymc as pm

    import pymc_kernel_steps as pks

    class_name, kwargs, tune, draws = CONFIGS[config]
    logging.getLogger("pymc").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with MODELS[model_name]() as model:
            if kwargs.get("history") == "warm":
                dim = sum(np.size(value) for value in model.initial_point().values())
                states = np.random.default_rng(0).normal(size=(WARM_STATES, dim))
                kwargs = {**kwargs, "history": states}
            step = getattr(pks, class_name)(**kwargs)
            idata = pm.sample(
                step=step,
                tune=tune,
                draws=draws,
                chains=1,
                cores=1,
                random_seed=seed,
                progressbar=False,
                compute_convergence_checks=False,
                discard_tuned_samples=False,
                idata_kwargs={"include_transformed": True},
            )
    names = [v.name for v in model.value_vars]
    columns = []
    for name in names:
        values = np.concatenate(
            [idata.warmup_posterior[name].values[0], idata.posterior[name].values[0]]
        )
        columns.append(values.reshape(values.shape[0], -1))
    result = {"draws": np.concatenate(columns, axis=1)}
    for stat in STATS:
        result[stat] = np.concatenate(
            [idata.warmup_sample_stats[stat].values[0], idata.sample_stats[stat].values[0]]
        )
    return result


def _golden_path(model_name: str, config: str) -> Path:
    return GOLDEN / f"{model_name}--{config}.npz"


def _commit() -> str:
    root = Path(__file__).resolve().parents[2]
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "pymc_kernel_steps"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return head + ("+uncommitted-package-changes" if dirty else "")


def openblas_kernels() -> list[str]:
    """The kernels (``architecture``) of the OpenBLAS libraries this process has loaded."""
    from threadpoolctl import threadpool_info

    return sorted(
        {
            str(lib.get("architecture"))
            for lib in threadpool_info()
            if lib["internal_api"] == "openblas"
        }
    )


#: the packages whose versions enter the fingerprint (their arithmetic or the graphs they build)
FINGERPRINT_PACKAGES = ("numpy", "scipy", "pytensor", "pymc", "numba", "llvmlite")
#: the prefixes of the CPU features numba compiles for that change floating-point code
NUMBA_FLOAT_FEATURES = ("+avx", "+fma", "+sse", "+f16c")


def fingerprint() -> dict[str, object]:
    """What decides this process's floating-point results, as plain data: the machine's
    architecture and C library, OpenBLAS's kernels, the SIMD targets numpy dispatches to, the CPU
    numba compiles for (its name and the vector and fused-multiply-add features), PyTensor's mode
    and the numerical libraries' versions."""
    from importlib.metadata import version

    import llvmlite.binding as llvm
    import numba.core.config as numba_config
    import pytensor
    from numpy._core import _multiarray_umath as umath

    numba_cpu = numba_config.CPU_NAME or llvm.get_host_cpu_name()
    features = (numba_config.CPU_FEATURES or llvm.get_host_cpu_features().flatten()).split(",")
    return {
        "machine": platform.machine(),
        "libc": " ".join(platform.libc_ver()),
        "openblas_kernels": openblas_kernels(),
        "numpy_simd": [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)],
        "numba_cpu": numba_cpu,
        "numba_float_features": sorted(f for f in features if f.startswith(NUMBA_FLOAT_FEATURES)),
        "pytensor_mode": str(pytensor.config.mode),
        "versions": {name: version(name) for name in FINGERPRINT_PACKAGES},
    }


def fingerprint_differences(recorded: dict, current: dict) -> list[str]:
    """The entries in which ``current`` differs from ``recorded``, each named with both values
    (a list of one line each; empty where the environments match)."""
    differences = []
    for key in sorted(set(recorded) | set(current)):
        old, new = recorded.get(key), current.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            differences += [
                f"{key}.{name}: recorded {old.get(name)!r}, here {new.get(name)!r}"
                for name in sorted(set(old) | set(new))
                if old.get(name) != new.get(name)
            ]
        elif isinstance(old, list) and isinstance(new, list):
            gone, added = sorted(set(old) - set(new)), sorted(set(new) - set(old))
            differences.append(
                f"{key}: recorded {old!r}, here {new!r}"
                if not (gone or added)  # the same items in another order
                else f"{key}: only recorded {gone}, only here {added}"
            )
        else:
            differences.append(f"{key}: recorded {old!r}, here {new!r}")
    return differences


def skip_unless_recording_environment(recorded_path: Path = FINGERPRINT) -> None:
    """Skip the calling test, naming every difference, unless this process's floating-point
    environment is the one the golden draws were recorded in."""
    if not recorded_path.exists():
        pytest.fail(f"{recorded_path} is missing: run `python -m tests.steps.test_golden_draws`.")
    recorded = json.loads(recorded_path.read_text())
    differences = fingerprint_differences(recorded, fingerprint())
    if differences:
        pytest.skip(
            "golden draws are bit for bit only in the floating-point environment they were "
            "recorded in (tests/steps/golden/fingerprint.json); here: " + "; ".join(differences)
        )


def record(configs=None) -> None:
    """Re-record the golden files of ``configs`` (default: every one) from this checkout's
    code."""
    if openblas_kernels() != [OPENBLAS_KERNEL]:
        raise SystemExit(
            f"record with OpenBLAS's {OPENBLAS_KERNEL} kernels (OPENBLAS_CORETYPE="
            f"{OPENBLAS_KERNEL}); this process has {openblas_kernels()}."
        )
    GOLDEN.mkdir(exist_ok=True)
    if configs and FINGERPRINT.exists():
        differences = fingerprint_differences(json.loads(FINGERPRINT.read_text()), fingerprint())
        if differences:
            raise SystemExit(
                "re-recording some configurations in another floating-point environment would "
                "mix environments; record them all (no arguments), or here: "
                + "; ".join(differences)
            )
    FINGERPRINT.write_text(json.dumps(fingerprint(), indent=2) + "\n")
    commit = _commit()
    for model_name in MODELS:
        for config in configs or CONFIGS:
            arrays = {}
            for seed in SEEDS:
                for key, value in sample(model_name, config, seed).items():
                    arrays[f"{key}-{seed}"] = value
            np.savez_compressed(
                _golden_path(model_name, config),
                recorded_at=np.array(f"{commit} (OpenBLAS {OPENBLAS_KERNEL} kernels)"),
                **arrays,
            )
            print(f"recorded {model_name} {config}", flush=True)


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("model_name", list(MODELS))
def test_golden_draws(model_name, config):
    skip_unless_recording_environment()
    path = _golden_path(model_name, config)
    assert path.exists(), f"{path} is missing: run `python -m tests.steps.test_golden_draws`."
    golden = np.load(path)
    recorded_at = str(golden["recorded_at"])
    for seed in SEEDS:
        result = sample(model_name, config, seed)
        for key, value in result.items():
            expected = golden[f"{key}-{seed}"]
            assert value.shape == expected.shape, (key, seed)
            differ = np.flatnonzero(
                ~np.all((value == expected).reshape(value.shape[0], -1), axis=1)
            )
            assert differ.size == 0, (
                f"{config} on {model_name}, seed {seed}: `{key}` differs from the golden run "
                f"(recorded at {recorded_at}) first at iteration {differ[0]} of "
                f"{value.shape[0]} ({differ.size} iterations differ)"
            )


def test_a_different_environment_skips_and_names_the_difference(monkeypatch, tmp_path):
    """On a machine like the one that failed the golden draws (AMD EPYC: AVX2 without AVX-512,
    so other numpy SIMD paths and another numba target), the comparison is skipped, and the
    skip names what differs; in the recorded environment it is not skipped."""
    recorded = fingerprint()
    path = tmp_path / "fingerprint.json"
    path.write_text(json.dumps(recorded))
    skip_unless_recording_environment(path)  # the same environment: no skip

    other = json.loads(json.dumps(recorded))
    other["numba_cpu"] = "znver3"
    other["numpy_simd"] = ["X86_V3"]
    other["versions"]["numpy"] = "0.0.1"
    monkeypatch.setitem(globals(), "fingerprint", lambda: other)
    with pytest.raises(pytest.skip.Exception) as skipped:
        skip_unless_recording_environment(path)
    message = str(skipped.value)
    assert "numba_cpu: recorded " in message and "here 'znver3'" in message
    assert "numpy_simd: only recorded" in message
    assert "versions.numpy: recorded" in message and "here '0.0.1'" in message
    assert "openblas_kernels" not in message  # what matches is not named


def test_a_missing_fingerprint_fails(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="fingerprint.json is missing"):
        skip_unless_recording_environment(tmp_path / "fingerprint.json")


def test_the_recorded_fingerprint_has_every_entry_of_today():
    """An entry added to :func:`fingerprint` without re-recording would make every comparison
    skip, silently ending the guard: the recorded fingerprint must hold the same entries."""
    recorded = json.loads(FINGERPRINT.read_text())
    assert recorded.keys() == fingerprint().keys(), "re-record the golden draws"
    assert recorded["versions"].keys() == set(FINGERPRINT_PACKAGES)


if __name__ == "__main__":
    record(sys.argv[1:])
    sys.exit(0)
