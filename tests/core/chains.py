"""Checks of a transition's moments over independent chains and of its sample stats (without
PyMC)."""

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


def iterations_with_stats(transition, state, log_density, iterations: int, freeze_at: int, seed):
    """Drive ``state`` with ``transition`` (a module of ``core.transitions``), frozen before
    iteration ``freeze_at``; yield ``(i, state, info, stats)`` after every iteration, ``stats``
    its ``sample_stats``, after checking that they are the declared ones (the module's
    ``STATS`` and the learned mixture's) with values their dtypes hold unchanged."""
    declared = dict(transition.STATS)
    if getattr(state, "learned", None) is not None:
        declared.update(state.learned.stats_dtypes_shapes())
    rng = np.random.default_rng(seed)
    for i in range(iterations):
        if i == freeze_at:
            state = transition.freeze(state)
        state, info = transition.step(rng, state, log_density)
        stats = transition.sample_stats(state, info.proposal, info.log_accept_ratio, info)
        assert stats.keys() == declared.keys()
        for name, (dtype, _) in declared.items():
            value, given = np.asarray(stats[name]).astype(dtype), stats[name]
            assert value == given or (math.isnan(value) and math.isnan(given)), name
        yield i, state, info, stats
