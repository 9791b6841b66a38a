"""The robustness study's scoring: exact draws give honest z-scores and a page."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest

from pymc_kernel_steps_bench.robustness import robustness_page, z_table
from pymc_kernel_steps_bench.runners import Sampler, compare_samplers
from pymc_kernel_steps_bench.targets.robustness import ROBUSTNESS_TARGETS, robustness_reference

NAME = "curved6"


def _exact(shift: float):
    target = ROBUSTNESS_TARGETS[NAME]

    def run(model, budget, seed):
        draws = target.sample(np.random.default_rng(seed), budget) + shift
        return {"idata": az.from_dict({"posterior": {"x": draws[None]}}), "evaluations": budget}

    return run


@pytest.fixture(scope="module")
def frame():
    samplers = [
        Sampler("KMCLite", "custom", run=_exact(0.0)),  # scored as ours
        Sampler("emcee", "custom", run=_exact(0.1)),  # scored as a peer, biased
    ]
    df = compare_samplers(
        None, samplers, budget=2000, replicates=10, reference=robustness_reference(NAME)
    )
    df.insert(0, "posterior", NAME)
    df.insert(1, "dim", ROBUSTNESS_TARGETS[NAME].dim)
    df["mcse_ref"] = 0.0
    return df


def test_exact_draws_have_honest_z_scores_and_a_bias_is_seen(frame):
    zs = z_table(frame).set_index(["sampler", "statistic"])
    exact = zs.loc[("KMCLite", "mean")]
    assert 0.6 < exact["z_rms"] < 1.5
    assert exact["z_pooled"] < 4.5
    biased = zs.loc[("emcee", "mean")]
    assert biased["z_pooled"] > 10 and abs(biased["t_seeds"]) > 10


def test_the_page_names_our_best_against_the_best_peer(frame):
    page = robustness_page(frame)
    assert f"| {NAME} | 6 | mean | `KMCLite`" in page
    assert "`emcee`" in page and "z_pooled" in page


def test_the_page_says_when_a_run_is_several_chains(frame):
    assert "chains sharing the budget" not in robustness_page(frame.assign(chains=32))
    page = robustness_page(frame.assign(chains=4, kind="step"))
    assert "Every run of a step method is 4 chains sharing the budget" in page
