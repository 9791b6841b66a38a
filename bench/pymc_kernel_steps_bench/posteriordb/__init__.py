"""The posteriordb suite: posteriors no one here wrote, with gold-standard reference draws.

`posteriordb <https://github.com/stan-dev/posteriordb>`_ (BSD-3-Clause) pairs Stan models and data
sets with 10,000 reference draws each (10 chains of Stan's NUTS, thinned to near independence).
This module holds PyMC translations of fifteen of them (:mod:`.models`) and their data and
reference draws, vendored under ``data/`` so that everything works offline.

- :data:`POSTERIORS`: the suite, by posteriordb name.
- :func:`model`: the PyMC model of a posterior (``gradient=False`` for the form a user without a
  gradient would write: only the Lotka–Volterra ODE differs).
- :func:`reference_draws`: the reference draws of the variables compared, ``(chains, draws, k)``,
  with :func:`labels`.
- :func:`check_translation`: NUTS on the translation against the reference draws, as z-scores of
  the means and standard deviations with both Monte Carlo errors.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from . import models

__all__ = [
    "DATA_DIR",
    "POSTERIORS",
    "Posterior",
    "check_translation",
    "labels",
    "load_data",
    "model",
    "reference_draws",
]

#: where the vendored data sets and reference draws live
DATA_DIR = Path(__file__).parent / "data"


@dataclass(frozen=True)
class Posterior:
    """One posterior of the suite.

    Attributes
    ----------
    name : str
        posteriordb's name, ``<data>-<model>``.
    build : callable
        ``build(data, gradient) -> pymc.Model`` (see :mod:`.models`).
    var_names : tuple of str
        The variables compared with the reference, in order (each flattened in C order).
    nuts : dict
        ``pm.sample`` settings of the translation check (what NUTS needs on this posterior).
    """

    name: str
    build: Callable
    var_names: tuple[str, ...]
    nuts: dict = field(default_factory=dict)

    @property
    def data_name(self) -> str:
        return self.name.split("-", 1)[0]


def _posteriors(*entries: Posterior) -> dict[str, Posterior]:
    return {p.name: p for p in entries}


POSTERIORS: dict[str, Posterior] = _posteriors(
    Posterior(
        "eight_schools-eight_schools_noncentered",
        models.eight_schools_noncentered,
        ("theta", "mu", "tau"),
        {"target_accept": 0.95},
    ),
    Posterior(
        "hudson_lynx_hare-lotka_volterra",
        models.lotka_volterra,
        ("theta", "z_init", "sigma"),
        {"chains": 1, "draws": 400, "tune": 300},  # 5-15 ms a gradient: the test's time
    ),
    Posterior("kidiq-kidscore_momiq", models.kidscore_momiq, ("beta", "sigma")),
    Posterior("kidiq-kidscore_interaction", models.kidscore_interaction, ("beta", "sigma")),
    Posterior("mesquite-logmesquite_logvas", models.logmesquite_logvas, ("beta", "sigma")),
    Posterior("earnings-logearn_interaction_z", models.logearn_interaction_z, ("beta", "sigma")),
    Posterior("earnings-earn_height", models.earn_height, ("beta", "sigma")),
    Posterior("nes2000-nes", models.nes, ("beta", "sigma")),
    Posterior("sblrc-blr", models.blr, ("beta", "sigma")),
    Posterior("arK-arK", models.arK, ("alpha", "beta", "sigma")),
    Posterior(
        "gp_pois_regr-gp_pois_regr",
        models.gp_pois_regr,
        ("rho", "alpha", "f"),
        {"target_accept": 0.95},
    ),
    Posterior("gp_pois_regr-gp_regr", models.gp_regr, ("rho", "alpha", "sigma")),
    Posterior(
        "low_dim_gauss_mix-low_dim_gauss_mix",
        models.low_dim_gauss_mix,
        ("mu", "sigma", "theta"),
    ),
    Posterior("hmm_example-hmm_example", models.hmm_example, ("theta1", "theta2", "mu")),
    Posterior(
        "diamonds-diamonds",
        models.diamonds,
        ("b", "Intercept", "sigma"),
        {"init": "jitter+adapt_full", "tune": 1000},
    ),
)


def _posterior(name: str) -> Posterior:
    try:
        return POSTERIORS[name]
    except KeyError:
        raise ValueError(
            f"posterior: unknown name {name!r}; the suite has {sorted(POSTERIORS)}"
        ) from None


@cache
def _data(data_name: str) -> str:
    with gzip.open(DATA_DIR / f"{data_name}.json.gz", "rt") as f:
        return f.read()


def load_data(name: str) -> dict:
    """The data set of posterior ``name`` (a fresh dict of lists and numbers)."""
    return json.loads(_data(_posterior(name).data_name))


def model(name: str, *, gradient: bool = True):
    """The PyMC model of posterior ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`POSTERIORS`.
    gradient : bool
        False builds the form without a gradient where the model has an external solver (the
        Lotka–Volterra ODE); the other models are PyTensor graphs either way.
    """
    posterior = _posterior(name)
    return posterior.build(load_data(name), gradient=gradient)


@cache
def _reference_arrays(name: str) -> dict[str, np.ndarray]:
    with np.load(DATA_DIR / f"{name}.npz") as archive:
        return {key: archive[key] for key in archive.files}


def reference_draws(name: str) -> np.ndarray:
    """posteriordb's reference draws of the compared variables, ``(chains, draws, k)``, in the
    order of :func:`labels`."""
    arrays = _reference_arrays(_posterior(name).name)
    parts = []
    for var in POSTERIORS[name].var_names:
        values = arrays[var]
        parts.append(values.reshape(values.shape[0], values.shape[1], -1))
    return np.concatenate(parts, axis=-1)


def labels(name: str) -> list[str]:
    """Coordinate labels of :func:`reference_draws` (``beta[0]``: PyMC's 0-based indices)."""
    arrays = _reference_arrays(_posterior(name).name)
    out = []
    for var in POSTERIORS[name].var_names:
        shape = arrays[var].shape[2:]
        out.extend(
            [var] if not shape else [f"{var}[{','.join(map(str, i))}]" for i in np.ndindex(*shape)]
        )
    return out


def check_translation(name: str, *, random_seed: int = 0, pymc_model=None, **sample_kwargs):
    """Sample the translation with NUTS and compare it with the reference draws.

    For every coordinate ``i``, ``z_mean = (m − m_ref) / √(mcse² + mcse_ref²)`` and the same for
    the standard deviation (ArviZ's ``mcse`` of the mean and of the sd, for both runs). A wrong
    prior, likelihood or data transformation moves a posterior far more than these errors.

    Parameters
    ----------
    name : str
        A key of :data:`POSTERIORS`.
    random_seed : int
        For ``pm.sample`` (one core).
    pymc_model : pymc.Model, optional
        Check this model instead of the suite's translation (the tests check that a wrong one
        fails).
    **sample_kwargs
        Override the posterior's ``nuts`` settings (``draws``, ``tune``, ``chains``,
        ``target_accept``...; by default 2 chains of 500 tuning and 500 kept draws).

    Returns
    -------
    dict
        ``labels``, ``z_mean``, ``z_sd`` (arrays), ``mean``, ``mean_ref``, ``sd``, ``sd_ref``,
        ``divergences``, ``r_hat_max``.
    """
    import arviz as az
    import pymc as pm

    from pymc_kernel_steps.diagnostics import posterior_draws

    posterior = _posterior(name)
    settings = {"draws": 500, "tune": 500, "chains": 2, **posterior.nuts, **sample_kwargs}
    with pymc_model if pymc_model is not None else model(name, gradient=True):
        idata = pm.sample(
            cores=1,
            random_seed=random_seed,
            progressbar=False,
            compute_convergence_checks=False,
            **settings,
        )
    draws = posterior_draws(idata, list(posterior.var_names))
    reference = reference_draws(name)
    out = {"labels": labels(name)}
    out["mean"], out["mean_ref"] = draws.mean(axis=(0, 1)), reference.mean(axis=(0, 1))
    out["sd"], out["sd_ref"] = draws.std(axis=(0, 1)), reference.std(axis=(0, 1))
    for stat in ("mean", "sd"):
        error = np.hypot(az.mcse(draws, method=stat), az.mcse(reference, method=stat))
        out[f"z_{stat}"] = (out[stat] - out[f"{stat}_ref"]) / error
    out["divergences"] = int(np.asarray(idata["sample_stats"]["diverging"]).sum())
    out["r_hat_max"] = float(np.max(az.rhat(draws)))
    return out
