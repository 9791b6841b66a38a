"""Shared test utilities: MCSE z-tests and small PyMC models with known answers."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from arviz import ess, mcse

from pymc_kernel_steps import KMCLite


def posterior_array(idata, var="x") -> np.ndarray:
    """Draws of ``var`` as an array (chain, draw, *shape)."""
    return np.asarray(idata.posterior[var].values)


def assert_moments(draws, mean, var=None, z_max=4.0, min_ess=100):
    """MCSE z-tests: |mean − truth| / MCSE < z_max for the mean and the second central moment.

    ``draws`` has shape (chain, draw, d). The variance is tested as the mean of
    ``(x − μ)²``, whose MCSE is again ESS-based.
    """
    draws = np.asarray(draws, dtype=float)
    if draws.ndim == 2:
        draws = draws[..., None]
    mean = np.broadcast_to(np.asarray(mean, dtype=float), draws.shape[-1:])
    bulk = ess(draws, method="bulk")
    assert np.all(bulk > min_ess), f"ESS too small for a meaningful test: {bulk}"
    z_mean = (draws.mean(axis=(0, 1)) - mean) / mcse(draws, method="mean")
    assert np.all(np.abs(z_mean) < z_max), f"mean z-scores {z_mean}"
    if var is not None:
        var = np.broadcast_to(np.asarray(var, dtype=float), draws.shape[-1:])
        squares = (draws - mean) ** 2
        z_var = (squares.mean(axis=(0, 1)) - var) / mcse(squares, method="mean")
        assert np.all(np.abs(z_var) < z_max), f"variance z-scores {z_var}"


CORRELATED_MEAN = np.array([0.0, 1.0, 2.0, 3.0])
CORRELATED_COV = np.array(
    [[1.0, 0.9, 0.0, 0.0], [0.9, 1.0, 0.0, 0.0], [0.0, 0.0, 4.0, 1.0], [0.0, 0.0, 1.0, 1.0]]
)


def correlated_gaussian_model() -> pm.Model:
    with pm.Model() as model:
        pm.MvNormal("x", mu=CORRELATED_MEAN, cov=CORRELATED_COV)
    return model


def banana_logp_pt(x, b=0.03, V=100.0):
    """Haario's twisted Gaussian in pytensor."""
    y2 = x[1] + b * (x[0] ** 2 - V)
    rest = pt.sum(x[2:] ** 2) if x.type.shape[0] is None or x.type.shape[0] > 2 else 0.0
    return -0.5 * x[0] ** 2 / V - 0.5 * y2**2 - 0.5 * rest


def banana_model(dim=2, b=0.03, V=100.0) -> pm.Model:
    with pm.Model() as model:
        x = pm.Flat("x", shape=dim)
        pm.Potential("banana", banana_logp_pt(x, b, V))
    return model


def banana_moments(dim=2, b=0.03, V=100.0):
    var = np.ones(dim)
    var[0] = V
    var[1] = 1.0 + 2.0 * b**2 * V**2
    return np.zeros(dim), var


def sample_stuck_on_a_lucky_estimate(step_factory, tune=1500, draws=300, seed=4) -> dict:
    """Sample a 4-d pseudo-marginal target whose 400th estimate is 300 above the rest, so the
    chain accepts it and then sits on that one state; return every iteration's stats (tuning
    included) as ``{name: 1-d array}``."""
    from pymc_kernel_steps import pseudo_marginal_potential

    calls = {"n": 0}

    def lucky_once(theta, rng):
        calls["n"] += 1
        lucky = 300.0 if calls["n"] == 400 else 0.0  # one estimate far above the rest
        return float(-0.5 * theta @ theta + 0.1 * rng.standard_normal() + lucky)

    with pm.Model():
        x = pm.Flat("x", shape=4)
        pseudo_marginal_potential("loglik", lucky_once, x)
        idata = pm.sample(
            step=step_factory(),
            tune=tune,
            draws=draws,
            chains=1,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
        )
    groups = ("warmup_sample_stats", "sample_stats")
    return {
        name: np.concatenate([idata[group][name].values.ravel() for group in groups])
        for name in idata.sample_stats.data_vars
    }


class ScoreMatchingKMCLite(KMCLite):
    """``KMCLite(surrogate="score_matching")``, the paper's surrogate fitted to the chain's
    states (the default is ``surrogate="regression"``), as a class for parametrised tests."""

    def __init__(self, *args, surrogate="score_matching", **kwargs):
        super().__init__(*args, surrogate=surrogate, **kwargs)


def _null_move_codes() -> list[int]:
    from pymc_kernel_steps.core.moves import MOVE_KINDS

    return [MOVE_KINDS.index("differential_evolution"), MOVE_KINDS.index("snooker")]


#: the ``move`` stat's codes of the moves whose proposal can be the state itself (a population
#: whose states coincide, as a stuck chain's history): null, rejected without evaluation
NULL_MOVES = _null_move_codes()
