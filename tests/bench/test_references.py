"""The references every target is scored against (``benchmarks/compare/compare.py``,
``make bench``)."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_kernel_steps_bench import targets as T
from pymc_kernel_steps_bench.references import (
    EXACT_SAMPLERS,
    Reference,
    reference_for,
    reference_run_var_sq,
)

WITH_REFERENCE = [n for n, t in T.TARGETS.items() if t.true_mean is not None]


@pytest.mark.parametrize("name", WITH_REFERENCE)
def test_every_benchmark_target_has_the_variance_of_its_second_moments(name):
    reference = reference_for(name, T.TARGETS[name])
    np.testing.assert_array_equal(reference.mean, T.TARGETS[name].true_mean)
    assert reference.var_sq is not None, "E[x²] errors would be scaled by the samplers' draws"
    assert np.all(np.isfinite(reference.var_sq)) and np.all(reference.var_sq > 0)


@pytest.mark.parametrize("name", sorted(["banana", "bimodal"]))
def test_exact_benchmark_samplers_have_the_exact_moments(name):
    target = T.TARGETS[name]
    draws = EXACT_SAMPLERS[name](np.random.default_rng(3), 200_000)
    standard_error = np.sqrt(target.true_var / len(draws))
    z = (draws.mean(axis=0) - target.true_mean) / standard_error
    assert np.all(np.abs(z) < 4.5), z
    np.testing.assert_allclose(draws.var(axis=0), target.true_var, rtol=0.03)


def test_var_sq_of_a_reference_run_is_the_variance_behind_its_mcse():
    # MCSE = sqrt(Var / ESS): a reference run with Var(x²) = 2 and ESS 800 reports MCSE 0.05
    var_sq = reference_run_var_sq(
        {"mcse_second_moment": [0.05, 0.1], "ess_second_moment": [800.0, 200.0]}
    )
    np.testing.assert_allclose(var_sq, [2.0, 2.0])
    assert reference_run_var_sq({"mean": [0.0]}) is None
    assert reference_run_var_sq(None) is None


@pytest.mark.parametrize("name", ["ode", "glass", "pima"])
def test_a_target_as_reference_brings_its_reference_runs_var_sq(name):
    reference = Reference.coerce(T.TARGETS[name])
    np.testing.assert_allclose(reference.var_sq, reference_run_var_sq(T.TARGETS[name].reference))
