"""The field's samplers as peers: the prior as a unit-cube map, counted evaluations, weighted
moments, and each peer recovering a 2-d Gaussian posterior (nautilus, pocoMC, dynesty, zeus)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import special, stats

from pymc_kernel_steps_bench.blackbox import black_box
from pymc_kernel_steps_bench.metrics import _moments
from pymc_kernel_steps_bench.peers import (
    FIELD_PEERS,
    PEERS_EXTRA,
    nautilus_live_points,
    weighted_moments,
)
from pymc_kernel_steps_bench.prior_transform import STANDIN_PRIOR_SCALE, unit_cube_prior
from pymc_kernel_steps_bench.runners import Sampler, compare_samplers
from pymc_kernel_steps_bench.suite import suite_table
from pymc_kernel_steps_bench.targets import counting_ops

# ------------------------------------------------------------------------------ the 2-d target
OBSERVED = np.array([1.0, -2.0])
COVARIANCE = np.array([[1.0, 0.6], [0.6, 2.0]])
PRIOR_SD = 10.0


def _gaussian_model():
    """``x ~ N(0, 10² I)``, one observation ``y ~ N(x, C)``: a correlated Gaussian posterior."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, PRIOR_SD, shape=2)
        pm.MvNormal("y", mu=x, cov=COVARIANCE, observed=OBSERVED[None])
    return model


def _gaussian_posterior():
    precision = np.eye(2) / PRIOR_SD**2 + np.linalg.inv(COVARIANCE)
    cov = np.linalg.inv(precision)
    return cov @ np.linalg.solve(COVARIANCE, OBSERVED), cov


def _calls(model) -> int:
    return int(sum(op.n_calls for op in counting_ops(model)))


# ------------------------------------------------------------------------------ the prior map
def _hierarchical_model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 1.0, 2.0)
        tau = pm.HalfNormal("tau", 3.0)
        rate = pm.Gamma("rate", alpha=2.0, beta=0.5)
        theta = pm.Normal("theta", mu, tau, shape=2)
        pm.Normal("y", theta.sum() + rate, 1.0, observed=1.5)
    return model


@pytest.mark.parametrize("wrap", [False, True], ids=["model", "black_box"])
def test_the_unit_cube_map_is_the_priors_quantile_function(wrap):
    # the black box's twin orders its value variables otherwise (tau, mu, theta, rate): the map
    # must follow the model's order, and draw each parent before its children
    model = black_box(_hierarchical_model()) if wrap else _hierarchical_model()
    prior = unit_cube_prior(model)
    assert prior.kind == "icdf"
    assert prior.dim == 5
    index = {n: np.atleast_1d(v).astype(int) for n, v in prior.point(np.arange(5.0)).items()}
    rng = np.random.default_rng(1)
    for u in rng.random((20, 5)):
        point = prior.point(prior.transform(u))
        expected_mu = stats.norm.ppf(u[index["mu"]], loc=1.0, scale=2.0)
        expected_tau = stats.halfnorm.ppf(u[index["tau_log__"]], scale=3.0)
        expected_rate = stats.gamma.ppf(u[index["rate_log__"]], a=2.0, scale=1 / 0.5)
        expected_theta = stats.norm.ppf(u[index["theta"]], loc=expected_mu, scale=expected_tau)
        np.testing.assert_allclose(point["mu"], expected_mu[0], rtol=1e-8)
        np.testing.assert_allclose(np.exp(point["tau_log__"]), expected_tau[0], rtol=1e-8)
        np.testing.assert_allclose(np.exp(point["rate_log__"]), expected_rate[0], rtol=1e-6)
        np.testing.assert_allclose(point["theta"], expected_theta, rtol=1e-8, atol=1e-10)


def test_the_prior_objects_density_is_the_models_prior_in_the_unconstrained_space():
    prior = unit_cube_prior(_hierarchical_model())
    z = prior.transform(np.array([0.3, 0.6, 0.2, 0.9, 0.4]))
    point = prior.point(z)
    mu, log_tau, log_rate = point["mu"], point["tau_log__"], point["rate_log__"]
    tau, rate = math.exp(log_tau), math.exp(log_rate)
    expected = (
        stats.norm.logpdf(mu, 1.0, 2.0)
        + stats.halfnorm.logpdf(tau, scale=3.0)
        + log_tau  # the log transform's Jacobian
        + stats.gamma.logpdf(rate, a=2.0, scale=2.0)
        + log_rate
        + stats.norm.logpdf(point["theta"], mu, tau).sum()
    )
    assert prior.logpdf(z) == pytest.approx(expected, rel=1e-7)
    draws = prior.rvs(4000, random_state=3)
    assert draws.shape == (4000, 5)
    taus = np.exp([prior.point(d)["tau_log__"] for d in draws])
    assert taus.mean() == pytest.approx(3.0 * math.sqrt(2 / math.pi), rel=0.05)


def test_the_likelihood_is_the_black_box_and_counts_one_call():
    model = black_box(_hierarchical_model())
    prior = unit_cube_prior(model)
    full = model.compile_logp()
    z = prior.transform(np.array([0.3, 0.6, 0.2, 0.9, 0.4]))
    point = prior.point(z)
    for op in counting_ops(model):
        op.reset()
    for _ in range(7):
        value = prior.log_likelihood(z)
    assert _calls(model) == 7
    assert value == pytest.approx(float(full(point)) - prior.logpdf(z), rel=1e-10)


def test_a_flat_prior_gets_smcs_proper_stand_in():
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=2)
        sigma = pm.HalfFlat("sigma")
        pm.Normal("y", beta[0] + beta[1], sigma, observed=[0.5, 1.5])
    model = black_box(model)
    prior = unit_cube_prior(model)
    assert prior.kind == "standin"
    assert prior.dim == 3
    np.testing.assert_allclose(prior.transform(np.full(3, 0.5)), prior.x0)
    u = special.ndtr(np.array([1.0, -2.0, 0.5]))
    z = prior.transform(u)
    np.testing.assert_allclose(z, prior.x0 + STANDIN_PRIOR_SCALE * np.array([1.0, -2.0, 0.5]))
    gaussian = stats.norm.logpdf(z, prior.x0, STANDIN_PRIOR_SCALE).sum()
    assert prior.logpdf(z) == pytest.approx(gaussian)
    full = model.compile_logp()
    value = float(full(prior.point(z)))
    assert prior.log_likelihood(z) == pytest.approx(value - gaussian, rel=1e-10)


def test_a_draw_outside_an_ordered_transforms_support_has_no_likelihood_and_no_call():
    with pm.Model() as model:
        pm.Normal(
            "mu",
            0.0,
            2.0,
            shape=2,
            transform=pm.distributions.transforms.ordered,
            initval=np.array([-1.0, 1.0]),
        )
        pm.Normal("y", 0.0, 1.0, observed=0.3)
    model = black_box(model)
    prior = unit_cube_prior(model)
    assert prior.kind == "icdf"
    for op in counting_ops(model):
        op.reset()
    unordered = prior.transform(np.array([0.8, 0.2]))
    assert not np.all(np.isfinite(unordered))
    assert prior.log_likelihood(unordered) == -math.inf
    assert _calls(model) == 0
    ordered = prior.transform(np.array([0.2, 0.8]))
    assert np.isfinite(prior.log_likelihood(ordered))
    assert _calls(model) == 1
    draws = prior.rvs(500, random_state=0)
    assert np.all(np.isfinite(draws))


# ------------------------------------------------------------------------------ weighted moments
def test_weighted_moments_are_the_importance_sampling_estimates():
    rng = np.random.default_rng(2)
    draws = rng.normal(0.0, 2.0, size=(40_000, 1))  # proposal N(0, 2²), target N(0, 1)
    log_w = stats.norm.logpdf(draws[:, 0]) - stats.norm.logpdf(draws[:, 0], 0.0, 2.0)
    weights = np.exp(log_w)
    mean, second = weighted_moments(draws, weights)
    assert abs(mean[0]) < 0.03
    assert second[0] == pytest.approx(1.0, abs=0.05)
    both = _moments(draws[None], weights)
    np.testing.assert_allclose(both, np.concatenate([mean, second]))
    unweighted = _moments(draws[None])
    assert unweighted[1] == pytest.approx(4.0, rel=0.05)  # what ignoring the weights gives


def test_compare_samplers_scores_weighted_runs_on_weighted_moments():
    def importance(model, budget, seed):
        import arviz as az

        rng = np.random.default_rng(seed)
        x = rng.normal(0.0, 2.0, size=budget)
        w = stats.norm.pdf(x) / stats.norm.pdf(x, 0.0, 2.0)
        return {
            "idata": az.from_dict({"posterior": {"x": x[None]}}),
            "evaluations": budget,
            "weights": w / w.sum(),
        }

    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = compare_samplers(
            model,
            [Sampler("IS", "custom", run=importance)],
            budget=20_000,
            replicates=3,
            reference={"mean": np.zeros(1), "var": np.ones(1), "var_sq": np.full(1, 2.0)},
            keep_draws=500,
        )
    assert df["weighted"].all()
    assert df["at_budget"].all()
    second = df[df["statistic"] == "second_moment"]
    assert np.all(np.abs(second["estimate"] - 1.0) < 0.1), second["estimate"]
    assert df["ess_bulk"].isna().all()  # weighted draws are not a chain
    assert df.attrs["draws"]["IS"].shape == (500, 1)  # resampled by weight, thinned


def test_a_run_past_the_budget_is_scored_at_its_own_count_and_marked():
    def past(model, budget, seed):
        import arviz as az

        x = np.random.default_rng(seed).normal(size=(1, 400))
        return {
            "idata": az.from_dict({"posterior": {"x": x}}),
            "evaluations": 3 * budget,
            "at_budget": False,
        }

    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no over-budget warning for a marked run
        df = compare_samplers(
            model,
            [Sampler("over", "custom", run=past)],
            budget=100,
            replicates=2,
            reference={"mean": np.zeros(1), "var": np.ones(1), "var_sq": np.full(1, 2.0)},
            keep_draws=0,
        )
    assert not df["at_budget"].any()
    assert (df["evaluations"] == 300).all()
    frame = df.assign(posterior="p", dim=1, mcse_ref=0.0)
    table = suite_table(pd.DataFrame(frame))
    assert not table["at_budget"].any()
    assert (table["evaluations"] == 300).all()


def test_nautilus_live_points_follow_the_budget():
    assert nautilus_live_points(2_000) == 200
    assert nautilus_live_points(12_000) == 1_200
    assert nautilus_live_points(100_000) == 2_000
    assert nautilus_live_points(500) == 200


# ------------------------------------------------------------------------------ the peers
PACKAGES = {"nautilus": "nautilus", "pocoMC": "pocomc", "dynesty": "dynesty", "zeus": "zeus"}


def _needs(label: str):
    pytest.importorskip(
        PACKAGES[label],
        reason=f"{label} is not installed (the optional `peers` extra: {PEERS_EXTRA})",
    )


@pytest.mark.parametrize("label", list(FIELD_PEERS))
def test_every_call_a_peer_makes_is_counted(label):
    _needs(label)
    model = black_box(_gaussian_model())
    run, _ = FIELD_PEERS[label]
    budget = 1_200
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run(model, budget, 5)
    # the counting op saw every call, and the sampler counted as many (zeus is charged up to
    # the last iteration it keeps, as NUTS on finite differences is)
    assert out.get("evaluations_made", out["evaluations"]) == _calls(model)
    assert out["evaluations"] == out["counted"]
    if label == "nautilus":
        assert out["evaluations"] == budget  # whole batches of 100, stopped at the budget
    elif label == "zeus":
        assert out["evaluations"] <= budget
    elif label == "dynesty":
        assert budget <= out["evaluations"] <= 1.1 * budget
        assert out["at_budget"] == (out["evaluations"] <= budget)
    else:  # pocoMC runs to its own end
        assert out["at_budget"] is False
        assert out["evaluations"] > 0
    if "weights" in out:
        assert out["weights"].size == out["idata"]["posterior"]["x"].shape[1]
        assert out["weights"].sum() == pytest.approx(1.0)


@pytest.mark.slow
@pytest.mark.parametrize("label", list(FIELD_PEERS))
def test_a_peer_recovers_a_2d_gaussian_posterior(label):
    _needs(label)
    from pymc_kernel_steps.diagnostics import posterior_draws

    model = black_box(_gaussian_model())
    run, _ = FIELD_PEERS[label]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run(model, 4_000, 11)
    draws = posterior_draws(out["idata"], ["x"]).reshape(-1, 2)
    weights = out.get("weights")
    if weights is None:
        weights = np.ones(len(draws))
    mean, second = weighted_moments(draws, weights)
    variance = second - mean**2
    truth_mean, truth_cov = _gaussian_posterior()
    sd = np.sqrt(np.diag(truth_cov))
    assert np.all(np.abs(mean - truth_mean) < 0.35 * sd), (mean, truth_mean)
    np.testing.assert_allclose(variance, np.diag(truth_cov), rtol=0.35)


def test_the_suite_page_marks_a_run_scored_at_its_own_count(tmp_path):
    from pathlib import Path

    from pymc_kernel_steps_bench.report import write_suite_page
    from pymc_kernel_steps_bench.suite import read_runs

    runs = Path(__file__).resolve().parents[2] / "benchmarks" / "posteriordb" / "runs"
    frame = read_runs(runs / "gp_pois_regr-gp_regr.csv.gz")
    # frames written before the column (November's) still make a page; the committed frame has
    # it since the re-run of 2026-12-07, with a real pocoMC: both give way to the made-up one
    frame = frame[frame["sampler"] != "pocoMC"].drop(columns="at_budget")
    smc = frame["sampler"] == "SMC"
    over = frame[smc].assign(
        sampler="pocoMC", at_budget=False, evaluations=frame.loc[smc, "evaluations"] * 3
    )
    page = tmp_path / "posteriordb.md"
    write_suite_page(pd.concat([frame, over], ignore_index=True), page, n_boot=20)
    lines = page.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("| posterior | KMCLite"))
    header, row = lines[at], lines[at + 2]
    cells = dict(zip(header.split("|"), row.split("|"), strict=True))
    assert "‡" in cells[" pocoMC "]
    assert "‡" not in cells[" SMC "]


def test_the_headline_at_the_budget_leaves_out_a_peer_far_past_it(tmp_path):
    """A peer scored at its own count that is the best peer (here a made-up one with a tenth of
    SMC's squared errors at three times its evaluations) is the headline's best peer, marked
    ``‡`` with its count; the second headline, at the budget, leaves it out and scores the
    default against the best of the rest."""
    from pathlib import Path

    from pymc_kernel_steps_bench.report import _fmt, write_suite_page
    from pymc_kernel_steps_bench.suite import ratios, read_runs, suite_table

    runs = Path(__file__).resolve().parents[2] / "benchmarks" / "posteriordb" / "runs"
    frame = read_runs(runs / "gp_pois_regr-gp_regr.csv.gz")
    frame = frame[frame["sampler"] != "pocoMC"].assign(at_budget=True)
    smc = frame["sampler"] == "SMC"
    over = frame[smc].assign(
        sampler="pocoMC",
        at_budget=False,
        evaluations=frame.loc[smc, "evaluations"] * 3,
        sq_error=frame.loc[smc, "sq_error"] / 10,
    )
    frames = pd.concat([frame, over], ignore_index=True)
    page = tmp_path / "posteriordb.md"
    write_suite_page(frames, page, n_boot=20)
    text = page.read_text()
    within = ratios(suite_table(frame, n_boot=20), ours="KMCLite")
    expected = within.loc[within["statistic"] == "mean", "ratio"].item()
    sentence = next(line for line in text.splitlines() if line.startswith("Against the peers"))
    assert "`pocoMC` on 1 posterior," in sentence
    assert sentence.split("): ")[1].startswith(f"{_fmt(expected)}×")
    row = next(line for line in text.splitlines() if line.startswith("| gp_pois_regr-gp_regr"))
    assert "`pocoMC` ‡ (" in row.split("|")[4]
