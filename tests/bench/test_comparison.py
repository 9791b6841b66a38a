"""compare_samplers: counted budgets per sampler kind, error-based ESS, the frame, the plot."""

from __future__ import annotations

import sys

import arviz as az
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pymc_kernel_steps as pks
import pymc_kernel_steps_bench as C
from pymc_kernel_steps.options import Trajectory
from pymc_kernel_steps_bench import targets as T

COV = np.array([[1.0, 0.5], [0.5, 2.0]])
GAUSS_REF = C.Reference(np.zeros(2), np.diag(COV), var_sq=2 * np.diag(COV) ** 2)


def _model():
    return T.gaussian_model(COV)


# ---------------------------------------------------------------------------- exact draws
def _iid_run(mean, sd, n):
    """A 'sampler' returning ``n`` exact i.i.d. draws of N(mean, sd²) per coordinate."""

    def run(model, budget, seed):
        rng = np.random.default_rng(seed)
        draws = mean + sd * rng.standard_normal((1, n, len(mean)))
        return {"idata": az.from_dict({"posterior": {"x": draws}}), "evaluations": n}

    return run


IID_MEAN = np.array([0.0, 1.0])
IID_SD = np.array([1.0, 2.0])
IID_REF = C.Reference(IID_MEAN, IID_SD**2, var_sq=2 * IID_SD**4 + 4 * IID_MEAN**2 * IID_SD**2)


@pytest.fixture(scope="module")
def iid_frame():
    n, replicates = 1000, 200
    samplers = {
        "iid": C.Sampler("iid", "custom", run=_iid_run(IID_MEAN, IID_SD, n)),
        # biased: the means are off by half a standard deviation
        "biased": C.Sampler("biased", "custom", run=_iid_run(IID_MEAN + IID_SD / 2, IID_SD, n)),
    }
    df = C.compare_samplers(
        None, samplers, budget=n, replicates=replicates, reference=IID_REF, keep_draws=2000
    )
    return df, n, replicates


def test_ess_err_is_n_for_exact_draws(iid_frame):
    df, n, replicates = iid_frame
    iid = df[(df["sampler"] == "iid") & (df["replicate"] == 0)]
    ratio = iid["ess_err"].to_numpy() / n
    # N · MSE / Var(f) ~ χ²_R / R for a Gaussian estimate (the second moments are close to
    # Gaussian at n = 1000): ESS_err / N = R / χ²_R. Two-sided, Bonferroni over 4 checks.
    alpha = 1e-3 / len(ratio)
    lo = replicates / stats.chi2.ppf(1 - alpha / 2, replicates)
    hi = replicates / stats.chi2.ppf(alpha / 2, replicates)
    assert 0.7 < lo and hi < 1.6  # the tolerance 200 replicates give
    assert np.all((lo < ratio) & (ratio < hi)), ratio
    np.testing.assert_allclose(iid["ess_err_per_1000"], 1000 * iid["ess_err"] / n)


def test_within_run_mcse_matches_the_spread_of_the_errors_of_exact_draws(iid_frame):
    df, n, replicates = iid_frame
    iid = df[df["sampler"] == "iid"]
    z = (iid["estimate"] - iid["truth"]) / iid["mcse"]
    # the MCSE of n exact draws is sd(f)/√n up to ArviZ's autocorrelation estimate: the
    # standardised errors have unit variance (a two-sided χ² bound at level 0.1 %)
    assert np.isfinite(z).all()
    alpha = 1e-3
    count = len(z)
    lo, hi = stats.chi2.ppf(alpha / 2, count) / count, stats.chi2.ppf(1 - alpha / 2, count) / count
    assert lo < np.mean(z**2) < hi, np.mean(z**2)
    biased = df[(df["sampler"] == "biased") & (df["statistic"] == "mean")]
    assert np.all(np.abs(biased["estimate"] - biased["truth"]) / biased["mcse"] > 5)


def test_worst_ess_err_is_the_tables_worst_and_interval(iid_frame):
    """The helper for frames of one's own (a benchmark script's) reports what ess_err_table
    does from the same squared errors, with the same random numbers; and the table's worst
    lies in its interval."""
    df, n, replicates = iid_frame
    table = C.ess_err_table(df[df["sampler"] == "iid"], n_boot=300, random_seed=4)
    rng = np.random.default_rng(4)
    for stat in ("mean", "second_moment"):
        sub = df[(df["sampler"] == "iid") & (df["statistic"] == stat)]
        wide = sub.pivot(index="replicate", columns="coordinate", values="sq_error").to_numpy()
        var_f = sub.groupby("coordinate")["var_f"].first().to_numpy()
        evaluations = np.full(replicates, float(n))
        worst, low, high = C.worst_ess_err(wide, var_f, evaluations, n_boot=300, rng=rng)
        row = table.loc["iid"]
        assert worst == pytest.approx(row[f"{stat}_worst"])
        assert (low, high) == pytest.approx((row[f"{stat}_worst_lo"], row[f"{stat}_worst_hi"]))
        assert low < worst < high


def test_replicate_seeds_are_compare_samplers_seeds(iid_frame):
    df, _, replicates = iid_frame
    seeds = df.drop_duplicates("replicate").sort_values("replicate")["seed"].to_numpy()
    np.testing.assert_array_equal(seeds, C.replicate_seeds(0, replicates))


def test_ess_err_is_small_for_a_biased_sampler(iid_frame):
    df, n, _ = iid_frame
    biased = df[(df["sampler"] == "biased") & (df["statistic"] == "mean")]
    # MSE ≈ bias² = Var/4: ESS_err ≈ 4 whatever the number of draws
    assert np.all(biased["ess_err"] < 5)
    table = C.ess_err_table(df)
    assert table.loc["biased", "mean_worst"] < 0.01 * table.loc["iid", "mean_worst"]
    assert table.loc["iid", "mean_worst_lo"] < table.loc["iid", "mean_worst"]
    assert table.loc["iid", "mean_worst"] < table.loc["iid", "mean_worst_hi"]
    # the within-run ArviZ ESS cannot see the bias: both look like n independent draws
    assert table.loc["biased", "ess_bulk_per_1000"] > 500


COLUMNS = {
    "sampler": "category",
    "kind": "O",
    "replicate": "i",
    "seed": "i",
    "statistic": "O",
    "coordinate": "i",
    "label": "O",
    "estimate": "f",
    "truth": "f",
    "var_f": "f",
    "var_f_estimated": "b",
    "sq_error": "f",
    "ess_err": "f",
    "ess_err_per_1000": "f",
    "ess_bulk": "f",
    "ess_tail": "f",
    "r_hat": "f",
    "mcse": "f",
    "ess_bulk_pooled": "f",
    "ess_tail_pooled": "f",
    "r_hat_pooled": "f",
    "evaluations": "i",
    "counted": "i",
    "budget": "i",
    "at_budget": "b",
    "weighted": "b",
    "seconds": "f",
    "own_seconds_per_iteration": "f",
    "iterations": "f",
    "draws": "i",
    "chains": "i",
}


def test_frame_columns_and_dtypes(iid_frame):
    df, n, replicates = iid_frame
    assert list(df.columns) == list(COLUMNS)
    for column, kind in COLUMNS.items():
        dtype = df[column].dtype
        if kind == "category":
            assert isinstance(dtype, pd.CategoricalDtype), column
        elif kind == "O":
            assert pd.api.types.is_string_dtype(dtype), column
        else:
            assert dtype.kind == kind, (column, dtype)
    assert len(df) == 2 * replicates * 2 * 2  # samplers × replicates × statistics × coordinates
    assert list(df["sampler"].cat.categories) == ["iid", "biased"]
    assert set(df["statistic"]) == {"mean", "second_moment"}
    assert list(df["label"].iloc[:4]) == ["x[0]", "x[1]", "x[0]", "x[1]"]
    np.testing.assert_allclose(
        df["truth"].iloc[:4], np.concatenate([IID_MEAN, IID_SD**2 + IID_MEAN**2])
    )
    assert df.attrs["budget"] == n and df.attrs["draws"]["iid"].shape == (2000, 2)


def test_var_of_square_estimated_when_missing():
    run = _iid_run(IID_MEAN, IID_SD, 500)
    df = C.compare_samplers(
        None,
        [("iid", C.Sampler("iid", "custom", run=run))],
        budget=500,
        replicates=20,
        reference={"mean": IID_MEAN, "var": IID_SD**2},
        keep_draws=0,
    )
    second = df[df["statistic"] == "second_moment"].drop_duplicates("coordinate")
    assert second["var_f_estimated"].all()
    np.testing.assert_allclose(second["var_f"], IID_REF.var_sq, rtol=0.1)
    assert not df[df["statistic"] == "mean"]["var_f_estimated"].any()


def test_plot_returns_a_figure(iid_frame):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df, _, _ = iid_frame
    fig = C.plot_comparison(df)
    assert isinstance(fig, matplotlib.figure.Figure)
    assert len(fig.axes) == 3  # ESS panel and two marginals
    fig2 = C.plot_comparison(df, statistic="second_moment", coordinates=[1])
    assert len(fig2.axes) == 2
    plt.close("all")
    with pytest.raises(ValueError, match="statistic"):
        C.plot_comparison(df, statistic="median")


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"budget": 0}, "budget"),
        ({"budget": 10.5}, "budget"),
        ({"replicates": 1, "reference": GAUSS_REF}, "replicates"),
        ({"replicates": 0}, "replicates"),
        ({"samplers": "gibbs"}, "samplers"),
        ({"samplers": [lambda: None]}, "samplers"),
        ({"samplers": []}, "samplers"),
        ({"samplers": ["emcee", "emcee"]}, "samplers"),
        ({"samplers": "nuts"}, "gradient_model"),
        ({"tune_fraction": 1.0}, "tune_fraction"),
        ({"chains": 0}, "chains"),
        ({"reference": {"mean": [0, 0]}}, "reference"),
        ({"reference": np.zeros(3)}, "reference"),
        ({"only_replicates": [2]}, "only_replicates"),
        ({"only_replicates": []}, "only_replicates"),
        ({"only_replicates": [-1]}, "only_replicates"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, match):
    args = {"samplers": "demetropolisz", "budget": 100, "replicates": 2}
    args.update(kwargs)
    samplers = args.pop("samplers")
    with pytest.raises(ValueError, match=match):
        C.compare_samplers(_model(), samplers, **args)


def test_a_study_split_between_runs_has_the_whole_study_s_rows():
    """Replicates run apart (``only_replicates``), each with its seed in the whole study, give
    the whole study's rows replicate by replicate."""
    sampler = {"iid": C.Sampler("iid", "custom", run=_iid_run(IID_MEAN, IID_SD, 100))}
    kwargs = {"budget": 100, "replicates": 4, "reference": IID_REF, "keep_draws": 0}
    whole = C.compare_samplers(None, sampler, random_seed=3, **kwargs)
    parts = [
        C.compare_samplers(None, sampler, random_seed=3, only_replicates=chosen, **kwargs)
        for chosen in ([3, 1], [0], [2])
    ]
    assert sorted(parts[0]["replicate"].unique()) == [1, 3]
    joined = pd.concat(parts).sort_values(["replicate", "statistic", "coordinate"])
    whole = whole.sort_values(["replicate", "statistic", "coordinate"])
    for column in ("replicate", "seed", "estimate", "sq_error", "evaluations"):
        np.testing.assert_array_equal(joined[column].to_numpy(), whole[column].to_numpy())


def test_reference_shape_mismatch_is_reported():
    run = _iid_run(IID_MEAN, IID_SD, 50)
    with pytest.raises(ValueError, match="reference"):
        C.compare_samplers(
            None,
            {"iid": C.Sampler("iid", "custom", run=run)},
            budget=50,
            replicates=2,
            reference=C.Reference(np.zeros(3), np.ones(3)),
        )


def test_sampler_specifications():
    assert C.as_sampler("NUTS").kind == "nuts"
    assert C.as_sampler("demetropolisz").name == "DEMetropolisZ"
    assert C.as_sampler(pks.KMCLite).name == "KMCLite"
    named = C.as_sampler(lambda: pks.KMCLite(trajectory=Trajectory(n_steps=20)), "KMCLite(20)")
    assert named.kind == "step" and named.name == "KMCLite(20)"
    assert C.Reference.coerce(T.TARGETS["banana"]).mean.shape == (8,)
    draws = np.random.default_rng(0).normal(size=(500, 3))
    ref = C.Reference.coerce(draws)
    assert ref.var_sq.shape == (3,) and ref.draws.shape == (500, 3)


def test_emcee_missing_names_the_harness(monkeypatch):
    monkeypatch.setitem(sys.modules, "emcee", None)
    with pytest.raises(ImportError, match=r"pip install pymc-kernel-steps-bench"):
        C.run_emcee(_model(), 200)


# ------------------------------------------------------------------ counts per sampler kind
@pytest.fixture(scope="module")
def gaussian_runs():
    """One comparison of every gradient-free kind at a small budget, with an instrumented op."""
    model = _model()
    [op] = T.counting_ops(model)
    samplers = {"ours": pks.AdaptiveMetropolis, "DEMZ": "demetropolisz", "MH": "metropolis"}
    samplers["SMC"] = "smc"
    if _has_emcee():
        samplers["emcee"] = "emcee"
    df = C.compare_samplers(
        model,
        samplers,
        budget=800,
        replicates=2,
        reference=GAUSS_REF,
        random_seed=3,
        smc_pilot_particles=50,
    )
    return df.drop_duplicates(["sampler", "replicate"]).set_index(["sampler", "replicate"]), op


def _has_emcee():
    try:
        import emcee  # noqa: F401
    except ImportError:
        return False
    return True


def test_counts_equal_the_instrumented_op(gaussian_runs):
    runs, _ = gaussian_runs
    # `evaluations` are the calls the CountingLogp saw; `counted` what the kind's formula or
    # stat implies (logp_evals, 2 per DEMetropolisZ iteration, 2 × size per Metropolis
    # iteration, the SMC kernel's particle evaluations, walkers × (iterations + 1) for emcee)
    np.testing.assert_array_equal(runs["evaluations"], runs["counted"])
    _, op = gaussian_runs
    last = runs.index[-1]  # the op still holds the count of the last run
    assert op.n_calls == runs.loc[last, "evaluations"] > 0
    for name in ("ours", "DEMZ", "MH"):
        assert (runs.loc[name, "evaluations"] == 800).all(), name


def test_emcee_and_smc_respect_the_budget(gaussian_runs):
    runs, _ = gaussian_runs
    smc = runs.loc["SMC", "evaluations"]
    assert ((smc > 0.7 * 800) & (smc < 1.3 * 800)).all(), smc
    if "emcee" in runs.index.get_level_values(0):
        emcee_evals = runs.loc["emcee", "evaluations"]
        walkers = runs.loc["emcee", "chains"]
        assert ((emcee_evals <= 800) & (emcee_evals > 800 - walkers)).all()


def test_adapters_count_what_the_op_sees():
    pytest.importorskip("emcee")
    model = _model()
    [op] = T.counting_ops(model)
    op.reset()
    out = C.run_emcee(model, 640, random_seed=1)
    assert out["walkers"] == 32 and op.n_calls == out["evaluations"] == 640
    assert out["idata"]["posterior"]["x"].shape == (32, 9, 2)  # 19 iterations, 10 burn-in
    op.reset()
    smc = C.run_smc(model, 60, random_seed=2)
    assert op.n_calls == smc["evaluations"] and smc["stages"] >= 1
    assert smc["idata"]["posterior"]["x"].shape == (1, 60, 2)


def test_nuts_budget_is_gradient_evaluations():
    model = _model()
    twin = T.gaussian_model(COV, black_box=False)
    df = C.compare_samplers(
        model, ["nuts"], budget=1500, replicates=2, reference=GAUSS_REF, gradient_model=twin
    )
    runs = df.drop_duplicates("replicate")
    assert ((runs["evaluations"] <= 1500) & (runs["evaluations"] > 1200)).all()
    assert (runs["evaluations"] == runs["counted"]).all()


def test_estimates_hook_and_ckam_sampling_phase():
    def first_half(idata):
        return idata.isel(draw=slice(0, idata["posterior"].sizes["draw"] // 2))

    run = _iid_run(IID_MEAN, IID_SD, 100)
    sampler = C.Sampler("half", "custom", run=run, estimates=first_half)
    df = C.compare_samplers(None, sampler, budget=100, replicates=1, keep_draws=0)
    assert (df["draws"] == 50).all() and df["ess_err"].isna().all()  # no reference
    assert np.isnan(C.ess_err_table(df).loc["half", "mean_worst"])
    ckam = C.compare_samplers(_model(), pks.CKAM, budget=400, replicates=1, keep_draws=0)
    assert ckam["draws"].iloc[0] < 200  # only the sampling-phase draws of the 200 kept
