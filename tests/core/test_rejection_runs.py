"""The probability of a long run of rejections where acceptance does not depend on the point."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pymc_kernel_steps.core import rejection_run_probability


def _longest_run(rejected) -> int:
    longest = current = 0
    for r in rejected:
        current = current + 1 if r else 0
        longest = max(longest, current)
    return longest


@pytest.mark.parametrize("acceptance", [0.0, 0.1, 0.3, 0.77, 1.0])
@pytest.mark.parametrize("run", [1, 2, 3, 5])
def test_equals_the_enumeration_of_every_sequence(run, acceptance):
    iterations = 11
    exact = 0.0
    for rejected in itertools.product([False, True], repeat=iterations):
        k = sum(rejected)
        if _longest_run(rejected) >= run:
            exact += (1 - acceptance) ** k * acceptance ** (iterations - k)
    assert rejection_run_probability(run, iterations, acceptance) == pytest.approx(exact, abs=1e-12)


def test_agrees_with_simulation_at_a_chain_length():
    rng = np.random.default_rng(0)
    rejected = rng.uniform(size=(4000, 1000)) > 0.6
    runs = np.array([_longest_run(row) for row in rejected])
    for run in (6, 8, 10):
        simulated = float(np.mean(runs >= run))
        exact = rejection_run_probability(run, 1000, 0.6)
        assert abs(simulated - exact) < 4 * np.sqrt(exact * (1 - exact) / runs.size) + 1e-3


def test_short_chains_and_arguments():
    assert rejection_run_probability(5, 4, 0.5) == 0.0
    assert rejection_run_probability(5, 5, 0.5) == pytest.approx(0.5**5)
    with pytest.raises(ValueError, match="run"):
        rejection_run_probability(0, 10, 0.5)
    with pytest.raises(ValueError, match="iterations"):
        rejection_run_probability(3, -1, 0.5)
    with pytest.raises(ValueError, match="acceptance"):
        rejection_run_probability(3, 10, 1.5)
