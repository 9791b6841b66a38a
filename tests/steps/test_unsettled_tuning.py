"""A chain whose tuning ended before its learned moves settled is told so, with the tuning
length that would do; a healthy chain, a warm start and CKAM's cyclic tuning are not."""

from __future__ import annotations

import logging
import re

import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps import CKAM, KMCLite
from pymc_kernel_steps.steps._health import UNSETTLED_TUNING_EFFECTIVE_STATES, unsettled_tuning

from ..helpers import correlated_gaussian_model

QUIET = dict(progressbar=False, compute_convergence_checks=False)
UNSETTLED = "tuning ended before the learned moves settled"


def _tuned_on(step, states: np.ndarray):
    """``step`` at the end of a tuning phase whose states were ``states``."""
    step.setup_chain(np.random.default_rng(0), tune=len(states), draws=100)
    step.chain.history.extend(states)
    step.chain.iteration = len(states)
    step.stop_tuning()
    return step


def _slow_walk(n: int, d: int, phi: float = 0.999) -> np.ndarray:
    rng = np.random.default_rng(1)
    states = np.zeros((n, d))
    for t in range(1, n):
        states[t] = phi * states[t - 1] + rng.normal(size=d) * np.sqrt(1 - phi**2)
    return states


def test_a_tuning_phase_that_barely_moved_is_reported_with_the_tune_that_would_do():
    """The late half of 1000 tuning states of an AR(1) with φ = 0.999 is worth about one
    independent state: the note names it and a tuning length that scales 1000 to 10 states."""
    with correlated_gaussian_model():
        step = _tuned_on(KMCLite(), _slow_walk(1000, 4))
    mixing = step.chain.tuning_mixing
    assert mixing.effective_states < 2 and mixing.tuning_iterations == 1000
    note = unsettled_tuning(step)
    assert UNSETTLED in note and f"coordinate {mixing.coordinate}" in note
    suggested = int(re.search(r"about tune=(\d+)", note).group(1))
    assert suggested >= 5000 and suggested % 500 == 0


def test_a_tuning_phase_of_independent_states_is_not_reported():
    states = np.random.default_rng(2).normal(size=(1000, 4))
    with correlated_gaussian_model():
        step = _tuned_on(KMCLite(), states)
    assert step.chain.tuning_mixing.effective_states > 100
    assert unsettled_tuning(step) is None


def test_a_warm_start_and_ckam_are_not_judged():
    """A warm start's moves learned from the earlier run's states; CKAM's tuning alternates
    exploration and sampling by design."""
    with correlated_gaussian_model():
        warm = _tuned_on(
            KMCLite(
                surrogate="score_matching", history=np.random.default_rng(3).normal(size=(200, 4))
            ),
            _slow_walk(1000, 4),
        )
        cyclic = _tuned_on(CKAM(), _slow_walk(1000, 4))
    assert warm.chain.tuning_mixing is None and unsettled_tuning(warm) is None
    assert cyclic.chain.tuning_mixing is None and unsettled_tuning(cyclic) is None


def _hierarchical_model(groups: int = 12) -> pm.Model:
    """Non-centred normal hierarchical model, 14 parameters (12 groups)."""
    rng = np.random.default_rng(42)
    sigma = rng.uniform(5, 15, groups)
    y = 5 + 6 * rng.standard_normal(groups) + sigma * rng.standard_normal(groups)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 10)
        tau = pm.HalfNormal("tau", 10)
        z = pm.Normal("z", 0, 1, shape=groups)
        pm.Normal("y", mu + tau * z, sigma, observed=y)
    return model


@pytest.mark.slow
def test_pymc_defaults_on_a_14_parameter_hierarchical_model_are_reported(caplog):
    """KMCLite with tune=1000 on a non-centred 14-parameter hierarchical model ends at R-hat
    1.23-1.50 over four chains (three seeds), and said nothing but PyMC's R-hat warning. Its
    chains' late tuning was worth 1.5-3.1 independent states in the slowest coordinate (12 of
    12 chains under the threshold of 5; tune=3000 gives 16-73 and R-hat 1.01). Two chains:
    at least one must be reported."""
    assert UNSETTLED_TUNING_EFFECTIVE_STATES == 5
    with _hierarchical_model(), caplog.at_level(logging.WARNING, logger="pymc"):
        pm.sample(step=KMCLite(), tune=1000, draws=200, chains=2, cores=1, random_seed=1, **QUIET)
    notes = [r.getMessage() for r in caplog.records if UNSETTLED in r.getMessage()]
    assert notes
    for note in notes:
        assert int(re.search(r"about tune=(\d+)", note).group(1)) >= 2000
