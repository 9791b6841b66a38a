"""Diagnostics: evaluation counts against the counting black box, summaries, tables."""

from __future__ import annotations

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_kernel_steps as pks
from pymc_kernel_steps import diagnostics as D
from pymc_kernel_steps_bench import targets as T

COV = np.array([[1.0, 0.5], [0.5, 2.0]])


def _sample(model, step_factory, tune=100, draws=200, chains=2, seed=1, **kwargs):
    with model:
        step = step_factory() if step_factory is not None else None
        return pm.sample(
            tune=tune,
            draws=draws,
            chains=chains,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=kwargs.pop("discard_tuned_samples", False),
            **kwargs,
        )


@pytest.fixture(scope="module")
def metropolis_run():
    model = T.gaussian_model(COV)
    [op] = T.counting_ops(model)
    op.reset()
    idata = _sample(model, pm.Metropolis, tune=200, draws=1000)
    return idata, op.n_calls


def test_idata_is_a_datatree_with_warmup(metropolis_run):
    idata, _ = metropolis_run
    assert {"posterior", "sample_stats", "warmup_posterior", "warmup_sample_stats"} <= set(
        idata.children
    )
    draws = D.posterior_draws(idata)
    assert draws.shape == (2, 1000, 2)


@pytest.mark.parametrize(
    ("kind", "factory", "rel"),
    [
        ("metropolis", None, 0.0),  # from the fixture
        ("demetropolisz", pm.DEMetropolisZ, 0.0),
        ("slice", pm.Slice, 0.02),
    ],
)
def test_count_evaluations_matches_the_counter(kind, factory, rel, metropolis_run):
    if factory is None:
        idata, calls = metropolis_run
    else:
        model = T.gaussian_model(COV)
        [op] = T.counting_ops(model)
        op.reset()
        idata = _sample(model, factory)
        calls = op.n_calls
    counted = D.count_evaluations(idata, kind)
    if rel == 0.0:
        assert counted == calls
    else:
        assert counted == pytest.approx(calls, rel=rel)
        assert counted >= calls  # the formula can only over-count


def test_metropolis_costs_two_evaluations_per_element(metropolis_run):
    idata, calls = metropolis_run
    assert calls == 2 * 2 * 2 * (200 + 1000)  # 2 per test, 2 elements, 2 chains


@pytest.mark.skipif(not hasattr(pks, "AdaptiveMetropolis"), reason="no AdaptiveMetropolis yet")
def test_count_evaluations_of_our_steps_matches_the_counter():
    model = T.gaussian_model(COV)
    [op] = T.counting_ops(model)
    op.reset()
    idata = _sample(model, pks.AdaptiveMetropolis)
    assert D.count_evaluations(idata, "kernel") == op.n_calls


def test_count_evaluations_nuts_sums_n_steps():
    idata = _sample(T.gaussian_model(COV, black_box=False), None, tune=50, draws=50, chains=1)
    expected = int(idata.sample_stats.n_steps.sum() + idata.warmup_sample_stats.n_steps.sum())
    assert D.count_evaluations(idata, "nuts") == expected > 100


def test_count_evaluations_warns_without_tuning_and_rejects_unknown_kinds():
    model = T.gaussian_model(COV)
    idata = _sample(model, pm.DEMetropolisZ, tune=20, draws=30, discard_tuned_samples=True)
    with pytest.warns(UserWarning, match="tuning"):
        assert D.count_evaluations(idata, "demetropolisz") == 2 * 2 * 30
    with pytest.raises(ValueError, match="sampler_kind"):
        D.count_evaluations(idata, "hmc")
    with pytest.raises(KeyError, match="logp_evals"), pytest.warns(UserWarning):
        D.count_evaluations(idata, "kernel")


def test_count_evaluations_counts_the_sampled_variables_not_the_deterministics():
    """A Deterministic in the posterior is not sampled: `var_names` says which are."""
    model = T.gaussian_model(COV)
    with model:
        pm.Deterministic("x_sum", model["x"].sum())
        pm.Deterministic("x_big", pm.math.ones(40) * model["x"][0])
    [op] = T.counting_ops(model)
    op.reset()
    idata = _sample(model, pm.Metropolis, tune=50, draws=100)
    assert D.count_evaluations(idata, "metropolis", var_names=["x"]) == op.n_calls
    assert D.count_evaluations(idata, "metropolis") > op.n_calls  # the documented default


def test_count_evaluations_refuses_what_it_cannot_count():
    model = T.gaussian_model(COV)
    idata = _sample(model, pks.AdaptiveMetropolis, tune=20, draws=30)
    with pytest.raises(TypeError, match="`idata` must be the result of pm.sample"):
        D.count_evaluations(idata.posterior, "kernel")
    with pytest.raises(TypeError, match="`idata` must be the result of pm.sample"):
        D.count_evaluations({}, "kernel")
    with pytest.raises(TypeError, match="`sampler_kind` must be a string"):
        D.count_evaluations(idata, 42)
    with pytest.raises(ValueError, match="use sampler_kind='kernel'"):
        D.count_evaluations(idata, "nuts")
    with pytest.raises(ValueError, match="`var_names` is for 'metropolis' and 'slice'"):
        D.count_evaluations(idata, "kernel", var_names=["x"])


def test_summarize_on_metropolis(metropolis_run):
    idata, calls = metropolis_run
    run = D.SamplerRun("Metropolis", idata, target_evaluations=calls, seconds=2.0)
    out = D.summarize(run, true_mean=np.zeros(2), true_var=np.diag(COV))
    assert out["chains"] == 2 and out["draws"] == 1000
    assert 50 < out["min_ess_bulk"] < 2000
    assert out["ess_per_1000_evals"] == pytest.approx(1000 * out["min_ess_bulk"] / calls)
    assert out["ess_per_second"] == pytest.approx(out["min_ess_bulk"] / 2.0)
    assert 0.99 < out["max_rhat"] < 1.1
    assert out["max_mean_error"] < 0.5
    assert out["max_var_error"] < 0.5
    assert 0.1 < out["accept_rate"] < 0.9
    assert out["mean_norm"] < 1.0
    # without references the errors are NaN, ESS the same
    bare = D.summarize(run)
    assert math.isnan(bare["max_mean_error"]) and math.isnan(bare["max_var_error"])
    assert bare["min_ess_bulk"] == out["min_ess_bulk"]


def test_summarize_on_exact_draws_and_var_selection():
    rng = np.random.default_rng(0)
    idata = az.from_dict(
        {
            "posterior": {
                "a": rng.normal(1.0, 2.0, size=(4, 500)),
                "b": rng.normal(0.0, 1.0, size=(4, 500, 3)),
            },
            "sample_stats": {"accept": np.full((4, 500), 2.0)},
        }
    )
    run = D.SamplerRun("iid", idata, target_evaluations=2000, seconds=None, extra={"k": 1})
    out = D.summarize(run, true_mean=[1.0, 0, 0, 0], true_var=[4.0, 1, 1, 1])
    assert out["min_ess_bulk"] > 1000  # independent draws
    assert out["max_rhat"] < 1.02
    assert out["max_mean_error"] < 4 / np.sqrt(2000)
    assert out["accept_rate"] == 1.0  # min(1, accept)
    assert math.isnan(out["ess_per_second"])
    assert out["k"] == 1
    only_a = D.summarize(run, true_mean=1.0, true_var=4.0, var_names=["a"])
    assert only_a["mean_norm"] == pytest.approx(1.0, abs=0.1)
    with pytest.raises(KeyError):
        D.summarize(run, var_names=["c"])
    with pytest.raises(ValueError):
        D.SamplerRun("x", idata, evaluation_kind="gradients")


def test_single_chain_rhat_is_split():
    rng = np.random.default_rng(1)
    idata = az.from_dict({"posterior": {"x": rng.normal(size=(1, 400))}})
    out = D.summarize(D.SamplerRun("one", idata))
    assert 0.98 < out["max_rhat"] < 1.05
    assert math.isnan(out["accept_rate"]) and math.isnan(out["ess_per_1000_evals"])


def test_comparison_table_is_aligned():
    rows = [
        {"name": "A", "evaluations": 1000, "min_ess_bulk": 12.3456, "max_rhat": 1.001},
        {"name": "longer name", "evaluations": 12, "min_ess_bulk": math.nan},
    ]
    text = D.comparison_table(rows)
    lines = text.splitlines()
    assert len(lines) == 4
    assert len({len(line) for line in lines}) == 1
    assert "12.3" in text and "nan" in text and "-" in lines[3]
    md = D.comparison_table(rows, columns=["name", ("evaluations", "evals")], markdown=True)
    md_lines = md.splitlines()
    assert md_lines[0].startswith("| name") and "evals" in md_lines[0]
    assert set(md_lines[1]) <= set("|:-")
    assert all(line.startswith("|") and line.endswith("|") for line in md_lines)


def test_summarize_and_the_table_name_what_they_take(metropolis_run):
    idata, calls = metropolis_run
    with pytest.raises(TypeError, match="`run` must be a SamplerRun.*wrap"):
        D.summarize(idata)
    row = D.summarize(D.SamplerRun("Metropolis", idata, calls))
    assert "Metropolis" in D.comparison_table([row])
    with pytest.raises(TypeError, match="got one: pass \\[row\\]"):
        D.comparison_table(row)
    with pytest.raises(TypeError, match="iterable of dicts"):
        D.comparison_table(["Metropolis"])
