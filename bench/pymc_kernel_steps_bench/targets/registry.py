"""The benchmark targets by name, with exact moments or cached reference posteriors.

A reference is a small JSON file ``references/<name>.json`` written by
``benchmarks/references/make_references.py`` from long, converged runs. It holds the posterior
mean, variance, second moments and quantiles of the target's variable, their Monte Carlo
standard errors, the R-hat and ESS of the run, and the command, seed, date and run time that made
it. :func:`load_reference` reads one; :data:`TARGETS` fills ``true_mean`` / ``true_var`` from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pymc as pm

from .glass import glass_model
from .lotka_volterra import LOTKA_VOLTERRA_TRUE, lotka_volterra_model
from .pima import pima_logistic_model
from .skew_normal_abc import skew_normal_abc_data, skew_normal_abc_model
from .synthetic import (
    banana_model,
    banana_moments,
    bimodal_model,
    bimodal_moments,
    gaussian_model,
    logistic_regression_model,
    noisy_gaussian_model,
    noisy_gaussian_moments,
)

__all__ = ["REFERENCE_DIR", "Target", "TARGETS", "load_reference"]

#: where the cached reference posteriors live
REFERENCE_DIR = Path(__file__).parent / "references"


def load_reference(name: str) -> dict | None:
    """The cached reference of target ``name`` (arrays as ``np.ndarray``), or None if absent.

    Keys: ``mean``, ``var``, ``second_moment``, ``quantile_levels``, ``quantiles``
    (``(levels, dim)``), ``mcse_mean``, ``mcse_second_moment``, ``rhat``, ``ess_bulk``, and the
    provenance (``command``, ``seed``, ``date``, ``seconds``, ``sampler``, ``notes``, ...).
    """
    path = REFERENCE_DIR / f"{name}.json"
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    return {k: (np.asarray(v, dtype=float) if isinstance(v, list) else v) for k, v in raw.items()}


@dataclass(frozen=True)
class Target:
    """A benchmark target: a model builder and its reference moments.

    Attributes
    ----------
    name : str
    build : callable
        ``build(black_box: bool = True, cost: float = 0.0) -> pm.Model``.
    var_name : str
        The model's (single, vector) free variable, as it appears in the posterior.
    true_mean, true_var : np.ndarray or None
        Exact moments, or those of the cached reference, or None.
    noisy : bool
        True for a pseudo-marginal target (a fresh estimate at every evaluation).
    twin : bool
        True when ``build(black_box=False)`` gives a differentiable twin (for NUTS).
    true_params : np.ndarray or None
        The parameters that generated the data (simulated data sets only).
    reference : dict or None
        The cached reference (:func:`load_reference`); None for exact targets.
    """

    name: str
    build: Callable[..., pm.Model]
    var_name: str = "x"
    true_mean: np.ndarray | None = None
    true_var: np.ndarray | None = None
    noisy: bool = False
    twin: bool = True
    true_params: np.ndarray | None = None
    reference: dict | None = field(default=None, repr=False, compare=False)

    @property
    def exact(self) -> bool:
        """True when the moments are exact (no reference run was needed)."""
        return self.true_mean is not None and self.reference is None


def _with_reference(name: str, build, var_name: str, **kwargs) -> Target:
    ref = load_reference(name)
    mean = var = None
    if ref is not None:
        mean, var = ref["mean"], ref["var"]
    return Target(name, build, var_name, mean, var, reference=ref, **kwargs)


def _glass(black_box: bool = True, cost: float = 0.0):
    return glass_model(black_box=black_box, cost=cost)


def _abc(black_box: bool = True, cost: float = 0.0):
    return skew_normal_abc_model(black_box=black_box, cost=cost)


def _ode(black_box: bool = True, cost: float = 0.0):
    return lotka_volterra_model(black_box=black_box, cost=cost)


def _banana8(black_box: bool = True, cost: float = 0.0):
    return banana_model(8, black_box=black_box, cost=cost)


_GAUSSIAN_COV = np.array(
    [[1.0, 0.95, 0.0, 0.0], [0.95, 1.0, 0.0, 0.0], [0, 0, 4.0, -1.0], [0, 0, -1, 1]]
)


def _gaussian(black_box: bool = True, cost: float = 0.0):
    return gaussian_model(_GAUSSIAN_COV, black_box=black_box, cost=cost)


def _make_targets() -> dict[str, Target]:
    banana_mean, banana_var = banana_moments(8)
    bimodal_mean, bimodal_var = bimodal_moments()
    noisy_mean, noisy_var = noisy_gaussian_moments()
    return {
        "banana": Target("banana", _banana8, true_mean=banana_mean, true_var=banana_var),
        "bimodal": Target("bimodal", bimodal_model, true_mean=bimodal_mean, true_var=bimodal_var),
        "gaussian": Target(
            "gaussian", _gaussian, true_mean=np.zeros(4), true_var=np.diag(_GAUSSIAN_COV).copy()
        ),
        "logistic": _with_reference("logistic", logistic_regression_model, "w"),
        "noisy": Target(
            "noisy", noisy_gaussian_model, true_mean=noisy_mean, true_var=noisy_var, noisy=True
        ),
        "pima": _with_reference("pima", pima_logistic_model, "w"),
        "glass": _with_reference("glass", _glass, "theta", noisy=True, twin=False),
        "abc": _with_reference(
            "abc",
            _abc,
            "theta",
            noisy=True,
            twin=False,
            true_params=skew_normal_abc_data()[1],
        ),
        "ode": _with_reference(
            "ode", _ode, "theta", twin=False, true_params=LOTKA_VOLTERRA_TRUE.copy()
        ),
    }


#: the benchmark targets by name: banana (8-d), bimodal, gaussian (4-d correlated), logistic
#: (synthetic), noisy, pima (8-d logistic), glass (9-d pseudo-marginal), abc (10-d), ode (5-d)
TARGETS: dict[str, Target] = _make_targets()
