"""Shared test utilities: MCSE z-tests and small PyMC models with known answers."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from arviz import ess, mcse


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
