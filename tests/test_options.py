"""The option classes check their own fields, naming the field, without PyMC."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from pymc_kernel_steps.core import GaussianKernel
from pymc_kernel_steps.options import (
    BayesianTuning,
    Climb,
    Cycles,
    FiniteFeatures,
    FixedMoves,
    KAMProposal,
    LearnedMixture,
    Regression,
    ScoreMatching,
    Scouts,
    Trajectory,
    Walkers,
    warmup_keywords,
)

OPTIONS = [
    BayesianTuning,
    Climb,
    Cycles,
    FiniteFeatures,
    FixedMoves,
    KAMProposal,
    LearnedMixture,
    Regression,
    ScoreMatching,
    Scouts,
    Trajectory,
    Walkers,
]


@pytest.mark.parametrize("option", OPTIONS, ids=lambda cls: cls.__name__)
def test_defaults_are_valid_frozen_and_documented(option):
    value = option()
    assert value == option()
    names = [field.name for field in dataclasses.fields(option)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, names[0] if names else "n", 1)
    doc = option.__doc__
    for field in dataclasses.fields(option):
        assert field.name in doc, f"{option.__name__}.{field.name} is not documented"


@pytest.mark.parametrize(
    "build, error, match",
    [
        (lambda: Regression(subsample_size=1), ValueError, r"`Regression.subsample_size`"),
        (lambda: Regression(trend="cubic"), ValueError, r"`Regression.trend` must be one of"),
        (lambda: Regression(lengthscale=-1.0), ValueError, r"`Regression.lengthscale`"),
        (lambda: Regression(regularization="x"), TypeError, r"`Regression.regularization`"),
        (lambda: Regression(min_history=1), ValueError, r"`Regression.min_history`"),
        (lambda: Regression(refit_interval=0), ValueError, r"`Regression.refit_interval`"),
        (lambda: ScoreMatching(whiten="no"), TypeError, r"`ScoreMatching.whiten`"),
        (lambda: ScoreMatching(subsample_size=2.5), ValueError, r"`ScoreMatching.subsample_size`"),
        (lambda: FiniteFeatures(n_features=0), ValueError, r"`FiniteFeatures.n_features`"),
        (lambda: FiniteFeatures(lengthscale=0.0), ValueError, r"`FiniteFeatures.lengthscale`"),
        (lambda: Trajectory(n_steps=0), ValueError, r"`Trajectory.n_steps`"),
        (lambda: Trajectory(n_steps=(5, 2)), ValueError, r"`Trajectory.n_steps`.*low ≤ high"),
        (lambda: Trajectory(n_steps="10"), ValueError, r"`Trajectory.n_steps`"),
        (lambda: Trajectory(step_size=0.0), ValueError, r"`Trajectory.step_size`"),
        (lambda: Trajectory(step_size_adaptation="nuts"), ValueError, r"step_size_adaptation"),
        (lambda: Trajectory(tuning="grid"), ValueError, r"`Trajectory.tuning`"),
        (lambda: Trajectory(target_accept=0.9), ValueError, r"dual_averaging"),
        (
            lambda: Trajectory(step_size_adaptation="dual_averaging", target_accept=1.0),
            ValueError,
            r"`Trajectory.target_accept`",
        ),
        (lambda: Trajectory(jitter=1.0), ValueError, r"`Trajectory.jitter`"),
        (lambda: Trajectory(adapt_mass=1), TypeError, r"`Trajectory.adapt_mass`"),
        (lambda: Trajectory(confine=None), TypeError, r"`Trajectory.confine`"),
        (
            lambda: FixedMoves(random_walk_probability=1.0),
            ValueError,
            r"`FixedMoves.random_walk_probability`",
        ),
        (lambda: Scouts(1), ValueError, r"`Scouts.n`"),
        (lambda: Walkers(0), ValueError, r"`Walkers.n`"),
        (lambda: KAMProposal(kernel="gaussian"), TypeError, r"`KAMProposal.kernel`"),
        (lambda: KAMProposal(gamma=0.0), ValueError, r"`KAMProposal.gamma`"),
        (lambda: KAMProposal(nu2=-1.0), ValueError, r"`KAMProposal.nu2`"),
        (lambda: KAMProposal(target_accept=0.0), ValueError, r"`KAMProposal.target_accept`"),
        (lambda: KAMProposal(subsample_size=1), ValueError, r"`KAMProposal.subsample_size`"),
        (lambda: KAMProposal(refresh_interval=0), ValueError, r"`KAMProposal.refresh_interval`"),
        (lambda: KAMProposal(whiten="yes"), TypeError, r"`KAMProposal.whiten`"),
        (lambda: Cycles(length=1), ValueError, r"`Cycles.length`"),
        (lambda: Cycles(exploration_fraction=1.0), ValueError, r"`Cycles.exploration_fraction`"),
        (lambda: Cycles(jump_scale=-1.0), ValueError, r"`Cycles.jump_scale`"),
        (lambda: Cycles(mode_jumps="no"), TypeError, r"`Cycles.mode_jumps`"),
        (lambda: Cycles(sampling_hops=0.6, sampling_jumps=0.5), ValueError, r"below 1"),
        (lambda: BayesianTuning(step_size_bounds=(1.0,)), ValueError, r"step_size_bounds"),
        (lambda: BayesianTuning(n_steps_bounds=(5, 2)), ValueError, r"n_steps_bounds"),
        (lambda: BayesianTuning(n_windows=0), ValueError, r"`BayesianTuning.n_windows`"),
        (lambda: BayesianTuning(window=0), ValueError, r"`BayesianTuning.window`"),
        (lambda: BayesianTuning(reward_max=0.0), ValueError, r"`BayesianTuning.reward_max`"),
    ],
)
def test_a_bad_field_is_named(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_replace_checks_again():
    with pytest.raises(ValueError, match=r"`Trajectory.jitter`"):
        dataclasses.replace(Trajectory(), jitter=2.0)


def test_valid_options_keep_their_values():
    assert Trajectory(n_steps=[3, 7]).n_steps == (3, 7)  # a list becomes a tuple
    kernel = GaussianKernel(1.0)
    assert KAMProposal(kernel=kernel).kernel is kernel
    assert Trajectory(step_size_adaptation="dual_averaging", target_accept=0.9).target_accept == 0.9


@pytest.mark.parametrize(
    "phases, keywords",
    [
        ([], {"climb": False, "scouts": 1, "walkers": 1}),
        ([Climb(), Scouts(4)], {"climb": True, "scouts": 4, "walkers": 1}),
        ([Walkers(3), Scouts(2), Climb()], {"climb": True, "scouts": 2, "walkers": 3}),
        ((Scouts(5),), {"climb": False, "scouts": 5, "walkers": 1}),
    ],
)
def test_warmup_lists(phases, keywords):
    assert warmup_keywords(phases) == keywords


@pytest.mark.parametrize(
    "phases, error",
    [
        (Scouts(4), TypeError),
        ("climb", TypeError),
        ([Climb(), 4], TypeError),
        ([Scouts(2), Scouts(3)], ValueError),
    ],
)
def test_bad_warmup_lists(phases, error):
    with pytest.raises(error, match="`warmup`"):
        warmup_keywords(phases)


def test_options_load_neither_pymc_nor_pytensor():
    code = (
        "import sys, pymc_kernel_steps.options; "
        "assert 'pymc' not in sys.modules and 'pytensor' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_options_are_exported():
    import pymc_kernel_steps

    assert pymc_kernel_steps.options.Trajectory is Trajectory
    assert pymc_kernel_steps.Trajectory is Trajectory
    assert LearnedMixture().keywords() == {"moves": "learned"}
