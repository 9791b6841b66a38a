"""Checks of a transition's moments over independent chains (without PyMC)."""

from __future__ import annotations

import math

import numpy as np


def assert_moments_over_chains(run_chain, seeds, truth, t_max: float = 4.5) -> None:
    """Assert that the chains' mean estimates of E[x] and E[x²] agree with ``truth`` (the two
    concatenated): |mean of the chains' estimates − truth| / (their sd / √chains), a t statistic
    with ``chains − 1`` degrees of freedom, below ``t_max`` on every moment. ``run_chain(seed)``
    returns one chain's draws, ``(n, d)``. Where one chain's effective sample size overstates
    its precision (a banana's tails, visited in rare excursions) this measures the error
    honestly."""
    estimates = []
    for seed in seeds:
        draws = run_chain(seed)
        estimates.append(np.concatenate([draws.mean(axis=0), (draws**2).mean(axis=0)]))
    estimates = np.array(estimates)
    error = estimates.std(axis=0, ddof=1) / math.sqrt(len(estimates))
    t = np.abs(estimates.mean(axis=0) - np.asarray(truth)) / error
    assert np.all(t < t_max), t
