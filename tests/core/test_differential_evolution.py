"""Differential-evolution and snooker jumps from a frozen population.

The proposals must leave any target invariant under Metropolis–Hastings whatever the (frozen)
population: checked by MCSE z-tests of a non-Gaussian target's moments with a population drawn
from a different distribution; the snooker correction is checked against the brute-force Jacobian
of its deterministic map, and dropping it is shown to bias the chain (the test can fail).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_kernel_steps.core.differential_evolution import (
    SNOOKER_SCALE,
    de_jump,
    de_scale,
    snooker_jump,
)
from tests.helpers import assert_moments

CORRELATION = 0.8
TARGET_MEAN = np.array([0.0, 1.0, 0.0])
TARGET_VAR = np.array([1.0, 1.0, math.pi**2 / 3.0])


def target_logp(x) -> float:
    """A correlated Gaussian pair beside a standard logistic coordinate."""
    a, b = x[0], x[1] - 1.0
    gaussian = -(a * a - 2.0 * CORRELATION * a * b + b * b) / (2.0 * (1.0 - CORRELATION**2))
    logistic = -x[2] - 2.0 * math.log1p(math.exp(-x[2]))
    return gaussian + logistic


def metropolis_chain(propose, rng, population, iterations, start, drop_correction=False):
    x, logp = start.copy(), target_logp(start)
    draws = np.empty((iterations, start.shape[0]))
    for i in range(iterations):
        proposal, correction = propose(rng, x, population)
        if drop_correction and math.isfinite(correction):
            correction = 0.0
        proposal_logp = target_logp(proposal)
        if math.log(rng.uniform()) < proposal_logp - logp + correction:
            x, logp = proposal, proposal_logp
        draws[i] = x
    return draws


def run_chains(propose, seed, drop_correction=False, chains=4, iterations=15_000):
    rng = np.random.default_rng(seed)
    population = rng.normal(scale=2.0, size=(300, 3)) + np.array([0.5, 0.0, -0.5])
    draws = [
        metropolis_chain(propose, rng, population, iterations, rng.normal(size=3), drop_correction)[
            2000:
        ]
        for _ in range(chains)
    ]
    return np.stack(draws)


def de_with_jitter(rng, x, population):
    return de_jump(rng, x, population, de_scale(3), noise=0.01)


def snooker(rng, x, population):
    return snooker_jump(rng, x, population)


def test_de_scale_is_ter_braaks_optimum():
    assert de_scale(1) == pytest.approx(2.38 / math.sqrt(2.0))
    assert de_scale(18) == pytest.approx(2.38 / 6.0)
    with pytest.raises(ValueError, match="`dim`"):
        de_scale(0)


def test_de_jump_is_a_scaled_population_difference_plus_jitter():
    population = np.array([[0.0, 0.0], [1.0, 2.0]])
    proposal, correction = de_jump(np.random.default_rng(0), np.zeros(2), population, 0.5)
    assert correction == 0.0
    assert np.allclose(np.abs(proposal), [0.5, 1.0])


@pytest.mark.parametrize(
    ("propose", "needed"), [(de_with_jitter, 2), (snooker, 3)], ids=["de", "snooker"]
)
def test_too_small_a_population_is_a_clear_error(propose, needed):
    with pytest.raises(ValueError, match=f"at least {needed}"):
        propose(np.random.default_rng(0), np.zeros(3), np.ones((needed - 1, 3)))


def test_snooker_correction_is_the_log_jacobian_of_its_map():
    rng = np.random.default_rng(1)
    dim = 5
    centre, first, second = rng.normal(size=(3, dim))

    def snooker_map(x):
        direction = (x - centre) / np.linalg.norm(x - centre)
        return x + SNOOKER_SCALE * (direction @ (first - second)) * direction

    population = np.stack([centre, first, second])
    for _ in range(5):
        x = rng.normal(size=dim) * 2.0
        step = 1e-6
        jacobian = np.column_stack(
            [
                (snooker_map(x + step * e) - snooker_map(x - step * e)) / (2 * step)
                for e in np.eye(dim)
            ]
        )
        _, log_det = np.linalg.slogdet(jacobian)
        # The population's three rows are drawn in some order; find the draw that used this one.
        for seed in range(200):
            proposal, correction = snooker_jump(np.random.default_rng(seed), x, population)
            if np.allclose(proposal, snooker_map(x)):
                assert correction == pytest.approx(log_det, abs=1e-6)
                break
        else:  # pragma: no cover - 6 orders, 200 seeds
            pytest.fail("no seed drew the population in the order (centre, first, second)")


def test_snooker_onto_its_centre_is_rejected():
    population = np.zeros((3, 2))
    proposal, correction = snooker_jump(np.random.default_rng(0), np.zeros(2), population)
    assert correction == -math.inf


@pytest.mark.parametrize("propose", [de_with_jitter, snooker], ids=["de", "snooker"])
def test_metropolis_with_a_frozen_population_keeps_the_target(propose):
    assert_moments(run_chains(propose, seed=2), TARGET_MEAN, TARGET_VAR)


def test_snooker_without_its_correction_is_biased():
    draws = run_chains(snooker, seed=2, drop_correction=True)
    with pytest.raises(AssertionError, match="z-scores"):
        assert_moments(draws, TARGET_MEAN, TARGET_VAR)


def test_population_rows_are_distinct_and_uniform_over_ordered_choices():
    from pymc_kernel_steps.core.differential_evolution import _distinct_rows

    population = np.arange(4.0)[:, None]
    rng = np.random.default_rng(5)
    counts: dict[tuple, int] = {}
    for _ in range(24_000):
        rows = tuple(_distinct_rows(rng, population, 3)[:, 0].astype(int))
        assert len(set(rows)) == 3
        counts[rows] = counts.get(rows, 0) + 1
    assert len(counts) == 24
    frequencies = np.array(list(counts.values())) / 24_000
    assert np.all(np.abs(frequencies - 1 / 24) < 5 * np.sqrt(1 / 24 / 24_000))
