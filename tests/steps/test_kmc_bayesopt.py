"""KMCLite / KMCFinite with Trajectory(tuning="bayesopt"): (ε, L) by annealed GP-UCB of the ESJD
per target evaluation (paper 003's tuner on KMC's trajectories)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps import KMCFinite, KMCLite
from pymc_kernel_steps.options import FiniteFeatures, Regression, Trajectory

from ..helpers import CORRELATED_COV, CORRELATED_MEAN, assert_moments, correlated_gaussian_model

QUIET = dict(progressbar=False, compute_convergence_checks=False)


@pytest.fixture(params=[KMCLite, KMCFinite], ids=lambda cls: cls.__name__)
def kmc_class(request):
    return request.param


def _surrogate(kmc_class, **fields):
    """The step's default surrogate with ``fields``."""
    return (Regression if kmc_class is KMCLite else FiniteFeatures)(**fields)


def test_bad_trajectory_tuning_raises(kmc_class):
    with correlated_gaussian_model():
        with pytest.raises(ValueError, match="`Trajectory.tuning`"):
            kmc_class(trajectory=Trajectory(tuning="grid"))


def test_trajectories_tuned_in_the_box_then_frozen(kmc_class):
    with correlated_gaussian_model():
        step = kmc_class(
            trajectory=Trajectory(tuning="bayesopt", n_steps=(5, 20)),
            surrogate=_surrogate(kmc_class, min_history=100),
        )
        idata = pm.sample(
            step=step, tune=600, draws=300, chains=1, cores=1, random_seed=3,
            discard_tuned_samples=False, **QUIET,
        )  # fmt: skip
    warm, post = idata.warmup_sample_stats, idata.sample_stats
    box = step.chain.step_size_tuner.optimizer.box
    assert box.lower[1] == 5 and box.upper[1] == 20
    assert box.lower[0] == pytest.approx(0.5 / 30) and box.upper[0] == pytest.approx(1.5)
    trajectories = warm.surrogate.values[0]
    eps = warm.step_size.values[0][trajectories]
    assert np.all((eps >= box.lower[0] - 1e-12) & (eps <= box.upper[0] + 1e-12))
    assert np.unique(eps).size > 3  # the optimiser explored
    assert np.all(warm.n_steps.values[0][trajectories] >= 1)
    assert np.all(warm.n_steps.values[0][trajectories] <= 20)
    frozen = post.surrogate.values[0]
    assert np.unique(post.step_size.values[0][frozen]).size == 1  # no jitter, frozen
    n_steps = post.n_steps.values[0][frozen]
    assert n_steps.min() == 1 and n_steps.max() == step.chain.max_n_steps  # L_r ~ U{1..L}
    # the best (ε, L) observed, ε capped where trajectories on the frozen surrogate are unstable
    best_step_size, best_n_steps = step.chain.step_size_tuner.final()
    assert (best_step_size, best_n_steps) in set(step.chain.step_size_tuner.optimizer.observed)
    assert step.chain.max_n_steps == best_n_steps
    frozen_step_size = float(post.step_size.values[0][frozen][0])
    assert frozen_step_size <= best_step_size
    assert frozen_step_size <= step.chain.far_field_step_size_limit


@pytest.mark.slow
def test_bayesopt_tuned_kmc_keeps_the_moments(kmc_class):
    with correlated_gaussian_model():
        idata = pm.sample(
            step=kmc_class(trajectory=Trajectory(tuning="bayesopt")),
            tune=1500,
            draws=2000,
            chains=2,
            cores=1,
            random_seed=5,
            **QUIET,
        )
    assert_moments(idata.posterior.x.values, CORRELATED_MEAN, np.diag(CORRELATED_COV))
