"""The suite's peers and its metric."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm
import pytest

from pymc_kernel_steps_bench import posteriordb
from pymc_kernel_steps_bench.peers import emcee_burn_in, optimise_start, run_emcee_expert
from pymc_kernel_steps_bench.report import write_suite_page
from pymc_kernel_steps_bench.suite import (
    OURS,
    PEERS,
    SUITE,
    _ess,
    geometric_mean_interval,
    held_out_best,
    ratios,
    read_runs,
    run_posterior,
    suite_table,
)


def test_the_reference_error_is_subtracted_and_floors_the_mse():
    var_f, mcse = np.array([4.0, 4.0]), np.array([0.1, 0.1])
    sq_error = np.array([[0.015, 1.0], [0.005, 1.0]])  # coordinate 0: MSE at the floor
    ess, capped = _ess(sq_error, var_f, mcse, evaluations=1000.0)
    assert ess == pytest.approx(4.0 / (1.0 - 0.01))  # coordinate 1 is the worst
    assert not capped
    ess, capped = _ess(sq_error[:, :1], var_f[:1], mcse[:1], evaluations=1000.0)
    assert ess == pytest.approx(4.0 / 0.01) and capped


def test_the_raw_figure_keeps_the_reference_error_and_is_never_capped():
    var_f, mcse = np.array([4.0, 4.0]), np.array([0.1, 0.1])
    sq_error = np.array([[0.015, 1.0], [0.005, 1.0]])
    ess, capped = _ess(sq_error, var_f, mcse, evaluations=1000.0, adjusted=False)
    assert ess == pytest.approx(4.0 / 1.0) and not capped  # coordinate 1: 4/1 < 4/0.01
    ess, capped = _ess(sq_error[:, :1], var_f[:1], mcse[:1], evaluations=1000.0, adjusted=False)
    assert ess == pytest.approx(4.0 / 0.01) and not capped


def _synthetic_runs(errors: dict[str, float], replicates: int = 6) -> pd.DataFrame:
    """A one-coordinate posterior's frame: each sampler's squared error per run (alternating
    ``error`` and ``error / 4`` over the runs, so even and odd runs differ)."""
    rows = []
    for sampler, error in errors.items():
        for replicate in range(replicates):
            for statistic in ("mean", "second_moment"):
                rows.append(
                    {
                        "posterior": "p",
                        "dim": 1,
                        "sampler": sampler,
                        "replicate": replicate,
                        "statistic": statistic,
                        "coordinate": 0,
                        "sq_error": error if replicate % 2 == 0 else error / 4,
                        "var_f": 1.0,
                        "mcse_ref": 0.0,
                        "evaluations": 1000,
                        "seconds": 1.0,
                        "budget": 1000,
                    }
                )
    return pd.DataFrame(rows)


def test_the_default_is_scored_against_the_best_peer_whatever_our_best():
    table = suite_table(_synthetic_runs({"KMCLite": 1.0, "KAMH": 0.1, "SMC": 0.5}), n_boot=20)
    fixed = ratios(table, ours="KMCLite").set_index("statistic")
    best = ratios(table).set_index("statistic")
    assert (fixed["ours"] == "KMCLite").all() and (best["ours"] == "KAMH").all()
    assert fixed.loc["mean", "ratio"] == pytest.approx(0.5)  # KMCLite's MSE is twice SMC's
    assert best.loc["mean", "ratio"] == pytest.approx(5.0)
    assert ratios(table, ours="CKAM").empty  # not in the runs: left out, not replaced


def test_the_held_out_best_is_chosen_on_even_runs_and_scored_on_odd_ones():
    """``KAMH`` is best on the even runs, ``KMCFinite`` on the odd ones: the held-out figure
    scores ``KAMH`` on the odd runs, where it is worse than ``KMCFinite``."""
    frame = _synthetic_runs({"KAMH": 1.0, "SMC": 2.0})
    other = _synthetic_runs({"KMCFinite": 1.5}).assign(
        sq_error=lambda f: np.where(f["replicate"] % 2 == 0, 1.1, 0.01)
    )
    frames = pd.concat([frame, other], ignore_index=True)
    held = held_out_best(frames, n_boot=20).set_index("statistic")
    assert held.loc["mean", "ours"] == "KAMH" and held.loc["mean", "peer"] == "SMC"
    assert held.loc["mean", "ratio"] == pytest.approx(2.0)  # odd runs: 0.5 against 0.25
    assert ratios(suite_table(frames, n_boot=20)).set_index("statistic").loc["mean", "ours"] == (
        "KMCFinite"
    )  # chosen after the fact over all runs


def test_a_sampler_with_fewer_runs_is_scored_on_its_own_runs():
    """A peer run 3 times beside samplers run 6 times (a costly peer): its figure comes from its
    own runs, resampled independently, and the others' resamples stay paired and unchanged."""
    full = _synthetic_runs({"KMCLite": 1.0, "SMC": 0.5})
    few = _synthetic_runs({"nautilus": 0.25}, replicates=3)
    alone = suite_table(full, n_boot=30)
    joined = suite_table(pd.concat([full, few], ignore_index=True), n_boot=30)
    for column in ("ess", "lo", "hi"):
        np.testing.assert_array_equal(alone[column], joined[column][: len(alone)])
    nautilus = joined[joined["sampler"] == "nautilus"].set_index("statistic")
    assert nautilus.loc["mean", "ess"] == pytest.approx(1000 / ((0.25 + 0.0625 + 0.25) / 3) / 1000)
    assert ratios(joined, ours="KMCLite").set_index("statistic").loc["mean", "peer"] == "nautilus"


def test_the_geometric_mean_interval_covers_the_ratios_resamples():
    rng = np.random.default_rng(0)
    boots = [np.exp(rng.normal(np.log(4.0), 0.1, 400)), np.exp(rng.normal(np.log(1.0), 0.1, 400))]
    lo, hi = geometric_mean_interval(boots, 0.9)
    assert lo < 2.0 < hi and hi / lo < 1.3  # the geometric mean of 4 and 1 is 2
    lo, hi = geometric_mean_interval([b * 9 for b in boots], 0.9)
    assert lo > 2.0


def test_burn_in_waits_for_the_walkers_to_arrive_and_stops_at_half():
    lp = np.concatenate([np.linspace(-1000, -10, 40), np.full(160, -10.0)])[:, None]
    assert emcee_burn_in(lp + np.zeros((1, 4)), tau=2.0) == 39
    assert emcee_burn_in(np.full((100, 4), -1.0), tau=5.0) == 15
    assert emcee_burn_in(np.full((100, 4), -1.0), tau=np.inf) == 50


def test_the_optimiser_finds_an_ill_conditioned_optimum_within_its_budget():
    scales = np.array([1e-3, 1.0, 30.0])
    target = np.array([1.0, -2.0, 5.0])

    def logp(x):
        return -0.5 * np.sum(((x - target) / scales) ** 2)

    optimum, scale, spent = optimise_start(logp, np.zeros(3), max_evaluations=2000)
    assert spent <= 2000 + 2 * (3 + 1)
    assert np.all(np.abs(optimum - target) <= 1e-2 * scales), optimum
    assert np.all(scale > 0) and np.all(np.isfinite(scale))


def test_emcee_stays_within_its_budget_and_finds_a_gaussian():
    with pm.Model() as model:
        pm.Normal("x", mu=[3.0, -1.0], sigma=[0.5, 2.0])
    out = run_emcee_expert(model, 6000, seed=2)
    assert out["evaluations"] <= 6000
    draws = out["idata"]["posterior"]["x"].values.reshape(-1, 2)
    np.testing.assert_allclose(draws.mean(axis=0), [3.0, -1.0], atol=0.3)
    np.testing.assert_allclose(draws.std(axis=0), [0.5, 2.0], rtol=0.25)


@pytest.mark.slow
def test_a_small_suite_run_writes_a_page(tmp_path):
    df = run_posterior(
        "gp_pois_regr-gp_regr",
        budget=800,
        replicates=2,
        samplers=("AdaptiveMetropolis", "emcee", "DEMetropolisZ", "NUTS-FD"),
    )
    assert set(df["sampler"]) == {"AdaptiveMetropolis", "emcee", "DEMetropolisZ", "NUTS-FD"}
    per_run = df.drop_duplicates(["sampler", "replicate"])
    assert (per_run["evaluations"] <= 1.01 * 800).all()
    assert df["mcse_ref"].gt(0).all() and (df["dim"] == 3).all()
    table = suite_table(df, n_boot=50)
    summary = ratios(table)
    assert set(summary["statistic"]) == {"mean", "second_moment"}
    assert (summary["ours"] == "AdaptiveMetropolis").all()
    df["run_date"] = "2026-01-01"
    page = tmp_path / "posteriordb.md"
    write_suite_page(df, page, n_boot=50, default="AdaptiveMetropolis")
    text = page.read_text()
    assert "gp_pois_regr-gp_regr" in text and (tmp_path / "posteriordb.png").exists()
    assert "`AdaptiveMetropolis`, the sampler the README recommends" in text
    assert "Not yet run" in text
    assert "one chain per run" in text


def test_the_suite_page_says_how_many_chains_a_run_was():
    from pymc_kernel_steps_bench.report import _chains_text

    frame = pd.DataFrame({"kind": ["step", "smc", "custom"], "chains": [4, 1, 32]})
    assert _chains_text(frame).startswith("Step methods: 4 chains per run, sharing the budget.")
    assert "one chain per run" in _chains_text(frame.assign(chains=1))


def test_labels_follow_the_flattened_reference():
    labels = posteriordb.labels("hmm_example-hmm_example")
    assert labels == ["theta1[0]", "theta1[1]", "theta2[0]", "theta2[1]", "mu[0]", "mu[1]"]


def test_variants_are_ours_and_built_with_their_moves():
    """``KMCLite[learned]``, ``KAMH[fixed]`` and the other variants: our samplers, constructed
    with their ``moves``; the headline ratios count our defaults only unless asked."""
    import functools

    from pymc_kernel_steps_bench.suite import OUR_VARIANTS, _samplers, is_ours

    assert is_ours("KMCLite[learned]") and is_ours("KAMH") and not is_ours("DEMetropolisZ")
    assert is_ours("KAMH[fixed]")
    for sampler in _samplers(None, 2, OUR_VARIANTS):
        assert isinstance(sampler.factory, functools.partial)
        moves = sampler.factory.keywords["moves"]
        assert sampler.factory.keywords == {"moves": moves} and moves in ("learned", "fixed")
        assert sampler.name == f"{sampler.factory.func.__name__}[{moves}]"
    boot = np.array([1.0, 1.0])
    table = pd.DataFrame(
        {
            "posterior": "p",
            "dim": 2,
            "statistic": "mean",
            "sampler": ["KAMH", "KAMH[fixed]", "emcee"],
            "ours": [True, True, False],
            "ess": [2.0, 8.0, 4.0],
            "lo": 0.0,
            "hi": 10.0,
            "capped": False,
            "boot": [2 * boot, 8 * boot, 4 * boot],
        }
    )
    assert ratios(table)["ours"].item() == "KAMH" and ratios(table)["ratio"].item() == 0.5
    assert ratios(table, variants=True)["ours"].item() == "KAMH[fixed]"


def test_read_runs_keeps_a_numeric_looking_commit_as_text(tmp_path):
    path = tmp_path / "runs.csv.gz"
    pd.DataFrame({"sampler": ["KMCLite"], "git_commit": ["1234567"]}).to_csv(path, index=False)
    assert read_runs(path)["git_commit"].iloc[0] == "1234567"
    assert pd.read_csv(path)["git_commit"].iloc[0] == 1234567  # what a plain read gives


def test_a_posteriors_intervals_do_not_depend_on_the_other_posteriors():
    """The bootstrap resamples of a posterior are drawn from its name: adding a posterior to
    the frames (before it, in the table's order) leaves its intervals unchanged. They used to
    come from one generator shared in order, so a new target shifted every later interval."""
    runs = Path(__file__).resolve().parents[2] / "benchmarks" / "robustness" / "runs"
    frame = read_runs(runs / "mixed4.csv.gz")
    frame = frame[frame["sampler"].isin(["AdaptiveMetropolis", "SMC"])]
    other = frame.assign(posterior="another")
    alone = suite_table(frame, n_boot=40)
    joined = suite_table(pd.concat([other, frame], ignore_index=True), n_boot=40)
    joined = joined[joined["posterior"] == "mixed4"].reset_index(drop=True)
    pd.testing.assert_frame_equal(
        alone[["sampler", "statistic", "ess", "lo", "hi"]],
        joined[["sampler", "statistic", "ess", "lo", "hi"]],
    )
    # a different name, the same data: other resamples, so the test could fail
    renamed = suite_table(other, n_boot=40)
    assert not np.allclose(renamed["lo"], alone["lo"]) or not np.allclose(
        renamed["hi"], alone["hi"]
    )


def test_the_page_notes_a_posterior_only_where_it_is_in_the_runs(tmp_path):
    """``POSTERIOR_NOTES`` (what a ratio that is not a loss means) are printed for the
    posteriors in the frames and for no other."""
    from pymc_kernel_steps_bench.report import POSTERIOR_NOTES

    runs = Path(__file__).resolve().parents[2] / "benchmarks" / "posteriordb" / "runs"
    assert "gp_pois_regr-gp_regr" not in POSTERIOR_NOTES
    cases = [(noted, {noted}) for noted in POSTERIOR_NOTES] + [("gp_pois_regr-gp_regr", set())]
    for name, printed in cases:
        page = tmp_path / name / "posteriordb.md"
        page.parent.mkdir()
        write_suite_page(read_runs(runs / f"{name}.csv.gz"), page, n_boot=20)
        text = page.read_text()
        assert ("## Notes on single posteriors" in text) is bool(printed)
        for noted, note in POSTERIOR_NOTES.items():
            assert (note[:40] in text) is (noted in printed), (name, noted)


def test_nuts_on_finite_differences_runs_the_comparison_s_chains():
    """NUTS-FD is a custom runner; it runs as many chains as the study's step methods, sharing
    the budget (it ran one chain whatever ``chains`` said before 2026-11-27)."""
    from pymc_kernel_steps_bench.blackbox import black_box
    from pymc_kernel_steps_bench.peers import nuts_finite_differences_sampler
    from pymc_kernel_steps_bench.runners import compare_samplers

    with pm.Model() as model:
        x = pm.Normal("x", mu=0.0, sigma=5.0, shape=2)
        pm.Normal("y", mu=x, sigma=[0.5, 2.0], observed=[1.0, -1.0])
    fd_model = black_box(model, finite_differences=True)
    nuts = nuts_finite_differences_sampler(fd_model, 2)
    for chains in (1, 2):
        df = compare_samplers(
            model, [nuts], budget=3000, replicates=1, chains=chains, var_names=["x"]
        )
        assert set(df["chains"]) == {chains}
        assert (df.drop_duplicates("replicate")["evaluations"] <= 1.01 * 3000).all()


def test_a_custom_runner_without_a_chains_keyword_is_called_as_before():
    from pymc_kernel_steps_bench.runners import Sampler, _run_custom, _Settings

    calls = []

    def run(model, budget, seed):
        calls.append((budget, seed))
        return {"idata": None, "evaluations": 1}

    settings = _Settings(
        budget=10,
        tune_fraction=0.5,
        chains=4,
        gradient_model=None,
        smc_pilot_particles=0,
        smc_prior_scale=0.0,
        emcee_walkers=0,
        pilots={},
    )
    _run_custom(Sampler("mine", "custom", run=run), None, 3, settings)
    assert calls == [(10, 3)]


def test_make_bench_quick_runs_the_field_peers():
    """`make bench-quick` runs the suite's default samplers (no `--samplers`), and those are
    ours and every peer, the field's four (nautilus, pocoMC, dynesty, zeus) included."""
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    recipe = makefile.split("\nbench-quick:", 1)[1].split("\n\n", 1)[0]
    assert "benchmarks/posteriordb/suite.py" in recipe
    assert "--samplers" not in recipe
    assert set(SUITE.samplers) == {*OURS, *PEERS}
    assert {"nautilus", "pocoMC", "dynesty", "zeus"} <= set(PEERS)
