"""Sticky excursions: a chain that enters some region rarely and stays there long is reported,
a healthy chain is not."""

from __future__ import annotations

import logging

import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps import CKAM, KAMH, AdaptiveHMC, AdaptiveMetropolis, KMCFinite, KMCLite
from pymc_kernel_steps.bench.targets.robustness import robustness_model
from pymc_kernel_steps.core import ChainHistory
from pymc_kernel_steps.steps._health import sticky_excursion

QUIET = dict(progressbar=False, compute_convergence_checks=False)
ALL_STEPS = [KAMH, AdaptiveMetropolis, KMCLite, KMCFinite, CKAM, AdaptiveHMC]


def _sticky_messages(caplog, model, step_class, *, tune, draws, chains, seed) -> list[str]:
    with model, caplog.at_level(logging.WARNING, logger="pymc"):
        pm.sample(
            step=step_class(), tune=tune, draws=draws, chains=chains, cores=1,
            random_seed=seed, **QUIET,
        )  # fmt: skip
    return [r.getMessage() for r in caplog.records if "sticky excursion" in r.getMessage()]


@pytest.mark.slow
def test_kmc_sticking_in_the_tails_of_a_heavy_tailed_ridge_is_reported(caplog):
    """``mixed4`` (a t₅ with a sine ridge on it, a logistic and a Gumbel): the paper's
    ``KMCLite`` (surrogate trajectories and a random walk) rarely returned from the ridge's
    tails, and over 10 seeds its E[x₄²] came out low in 9 while the within-run MCSE called the
    error small; its chains sat for 49-91 iterations at one point while accepting over half
    their proposals, and nothing said so. The learned default still does, more rarely: seeds
    0-19 of this configuration have a sticky excursion in 3 runs (the fixed form in 4). Seed 3:
    65 iterations at one point 3.4 sds out in x1, at acceptance 0.45."""
    messages = _sticky_messages(
        caplog, robustness_model("mixed4"), KMCLite, tune=2000, draws=3000, chains=1, seed=3
    )
    assert len(messages) == 1
    assert "KMCLite" in messages[0] and "sds from the draws' mean" in messages[0]


def _correlated_model() -> pm.Model:
    with pm.Model() as model:
        cov = np.array([[1.0, 0.9, 0.5], [0.9, 1.0, 0.6], [0.5, 0.6, 1.0]])
        pm.MvNormal("x", np.zeros(3), cov)
        pm.HalfNormal("s")
    return model


@pytest.mark.slow
@pytest.mark.parametrize("step_class", ALL_STEPS, ids=lambda c: c.__name__)
def test_healthy_chains_are_not_reported_as_sticky(step_class, caplog):
    """Every step on a correlated Gaussian with a positive parameter, PyMC's default lengths:
    no sticky-excursion warning."""
    assert not _sticky_messages(
        caplog, _correlated_model(), step_class, tune=1000, draws=1000, chains=2, seed=1
    )


class _Chain:
    """The fields the check reads: ``draws`` kept states of mean 0 and sd 1 (± 1 in turn, after
    tuning states of another spread)."""

    def __init__(self, run, draws, accepted, point):
        self.draws_longest_run, self.draws_done, self.draws_accepted = run, draws, accepted
        self.draws_longest_run_end = 1000 + draws
        self.draws_longest_run_point = np.asarray(point, dtype=float)
        self.history = ChainHistory(2)
        for i in range(500):
            self.history.append(np.full(2, 10.0 * (-1) ** i))
        for i in range(draws):
            self.history.append(np.full(2, (-1.0) ** i * np.sqrt((draws - 1) / draws)))


class _Step:
    def __init__(self, chain):
        self.chain = chain


def test_the_check_weighs_the_run_against_the_acceptance_rate():
    # 40 rejections in a row at 60 % acceptance: probability ~1e-13, reported with its place
    (message,) = sticky_excursion(_Step(_Chain(40, 1000, 600, [0.0, 4.0])))
    assert "40 iterations" in message and "4.0 sds" in message and "coordinate 1" in message
    # the same run at 10 % acceptance is what such a chain does anyway
    assert not sticky_excursion(_Step(_Chain(40, 1000, 100, [0.0, 4.0])))
    # too short to judge, or long enough to be reported as a stuck chain
    assert not sticky_excursion(_Step(_Chain(15, 1000, 900, [0.0, 4.0])))
    assert not sticky_excursion(_Step(_Chain(250, 1000, 600, [0.0, 4.0])))
