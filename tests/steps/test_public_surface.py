"""The steps' public surface (issue 48): options, at most 12 parameters, a short help() that
opens with when to pick the sampler, and the keywords of earlier releases mapped to the options
with a DeprecationWarning naming the new spelling (same configuration, same draws)."""

from __future__ import annotations

import inspect
import pydoc
import warnings

import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps import CKAM, KAMH, AdaptiveHMC, AdaptiveMetropolis, KMCFinite, KMCLite
from pymc_kernel_steps.core import GaussianKernel
from pymc_kernel_steps.options import (
    BayesianTuning,
    Climb,
    Cycles,
    FiniteFeatures,
    FixedMoves,
    KAMProposal,
    Regression,
    ScoreMatching,
    Scouts,
    Trajectory,
    Walkers,
)

from .test_conventions import PUBLIC_STEPS

MAX_PARAMETERS = 12
MAX_HELP_LINES = 120
KERNEL = GaussianKernel(1.5)


@pytest.fixture(params=PUBLIC_STEPS, ids=lambda cls: cls.__name__)
def public_step(request):
    return request.param


def test_at_most_twelve_parameters(public_step):
    assert len(inspect.signature(public_step).parameters) <= MAX_PARAMETERS


def test_help_is_short_and_opens_with_when_to_pick_it(public_step):
    text = pydoc.render_doc(public_step, renderer=pydoc.plaintext)
    assert len(text.splitlines()) < MAX_HELP_LINES
    doc = inspect.getdoc(public_step)
    paragraphs = doc.split("\n\n")
    assert paragraphs[1].startswith("Pick it"), paragraphs[1]
    assert "pymc_kernel_steps.options" in doc or "options" in paragraphs[1]


def model():
    with pm.Model() as model:
        pm.Normal("x", mu=[0.0, 1.0], sigma=[1.0, 2.0])
    return model


#: (step, old keywords, the same in the new spelling, the spelling the warning names)
CASES = [
    (KMCLite, {"subsample_size": 100}, {"surrogate": Regression(subsample_size=100)},
     "surrogate=Regression(subsample_size=...)"),
    (KMCLite, {"trend": "quadratic"}, {"surrogate": Regression(trend="quadratic")},
     "surrogate=Regression(trend=...)"),
    (KMCLite, {"lengthscale": 1.0}, {"surrogate": Regression(lengthscale=1.0)},
     "surrogate=Regression(lengthscale=...)"),
    (KMCLite, {"regularization": 0.1}, {"surrogate": Regression(regularization=0.1)},
     "surrogate=Regression(regularization=...)"),
    (KMCLite, {"min_history": 60}, {"surrogate": Regression(min_history=60)},
     "surrogate=Regression(min_history=...)"),
    (KMCLite, {"refit_interval": 50}, {"surrogate": Regression(refit_interval=50)},
     "surrogate=Regression(refit_interval=...)"),
    (KMCLite, {"whiten": True}, {}, "surrogate=ScoreMatching(whiten=...)"),
    (KMCLite, {"surrogate": "score_matching", "whiten": False},
     {"surrogate": ScoreMatching(whiten=False)}, "surrogate=ScoreMatching(whiten=...)"),
    (KMCLite, {"n_steps": 12}, {"trajectory": Trajectory(n_steps=12)},
     "trajectory=Trajectory(n_steps=...)"),
    (KMCLite, {"step_size": 0.3}, {"trajectory": Trajectory(step_size=0.3)},
     "trajectory=Trajectory(step_size=...)"),
    (KMCLite, {"step_size_adaptation": "dual_averaging", "target_accept": 0.9},
     {"trajectory": Trajectory(step_size_adaptation="dual_averaging", target_accept=0.9)},
     "trajectory=Trajectory(target_accept=...)"),
    (KMCLite, {"trajectory_tuning": "bayesopt"}, {"trajectory": Trajectory(tuning="bayesopt")},
     "trajectory=Trajectory(tuning=...)"),
    (KMCLite, {"step_size_jitter": 0.1}, {"trajectory": Trajectory(jitter=0.1)},
     "trajectory=Trajectory(jitter=...)"),
    (KMCLite, {"adapt_mass": False}, {"trajectory": Trajectory(adapt_mass=False)},
     "trajectory=Trajectory(adapt_mass=...)"),
    (KMCLite, {"confine": False}, {"trajectory": Trajectory(confine=False)},
     "trajectory=Trajectory(confine=...)"),
    (KMCLite, {"moves": "fixed", "random_walk_probability": 0.1},
     {"moves": FixedMoves(random_walk_probability=0.1)},
     "moves=FixedMoves(random_walk_probability=...)"),
    (KMCLite, {"scouts": 2}, {"warmup": [Climb(), Scouts(2)]}, "warmup=[Climb(), Scouts(n=2)]"),
    (KMCLite, {"scouts": 1}, {"warmup": [Climb()]}, "warmup=[Climb()]"),
    (KMCLite, {"walkers": 3}, {"warmup": [Scouts(4), Climb(), Walkers(3)]},
     "warmup=[Climb(), Scouts(n=4), Walkers(n=3)]"),
    (KMCLite, {"climb": False}, {"warmup": [Scouts(4)]}, "warmup=[Scouts(n=4)]"),
    (KMCFinite, {"n_features": 50}, {"surrogate": FiniteFeatures(n_features=50)},
     "surrogate=FiniteFeatures(n_features=...)"),
    (KMCFinite, {"whiten": False}, {"surrogate": FiniteFeatures(whiten=False)},
     "surrogate=FiniteFeatures(whiten=...)"),
    (KMCFinite, {"lengthscale": 2.0, "regularization": 0.5},
     {"surrogate": FiniteFeatures(lengthscale=2.0, regularization=0.5)},
     "surrogate=FiniteFeatures(regularization=...)"),
    (KMCFinite, {"min_history": 80}, {"surrogate": FiniteFeatures(min_history=80)},
     "surrogate=FiniteFeatures(min_history=...)"),
    (KMCFinite, {"n_steps": (2, 4)}, {"trajectory": Trajectory(n_steps=(2, 4))},
     "trajectory=Trajectory(n_steps=...)"),
    (KMCFinite, {"random_walk_probability": 0.0, "moves": "fixed"},
     {"moves": FixedMoves(random_walk_probability=0.0)},
     "moves=FixedMoves(random_walk_probability=...)"),
    (KMCFinite, {"walkers": 2, "climb": False}, {"warmup": [Scouts(4), Walkers(2)]},
     "warmup=[Scouts(n=4), Walkers(n=2)]"),
    (KAMH, {"nu2": 0.5}, {"proposal": KAMProposal(nu2=0.5)}, "proposal=KAMProposal(nu2=...)"),
    (KAMH, {"kernel": KERNEL}, {"proposal": KAMProposal(kernel=KERNEL)},
     "proposal=KAMProposal(kernel=...)"),
    (KAMH, {"subsample_size": 100}, {"proposal": KAMProposal(subsample_size=100)},
     "proposal=KAMProposal(subsample_size=...)"),
    (KAMH, {"gamma": 0.3}, {"proposal": KAMProposal(gamma=0.3)}, "proposal=KAMProposal(gamma=...)"),
    (KAMH, {"target_accept": 0.3}, {"proposal": KAMProposal(target_accept=0.3)},
     "proposal=KAMProposal(target_accept=...)"),
    (KAMH, {"min_history": 30}, {"proposal": KAMProposal(min_history=30)},
     "proposal=KAMProposal(min_history=...)"),
    (KAMH, {"refresh_interval": 5}, {"proposal": KAMProposal(refresh_interval=5)},
     "proposal=KAMProposal(refresh_interval=...)"),
    (KAMH, {"whiten": False}, {"proposal": KAMProposal(whiten=False)},
     "proposal=KAMProposal(whiten=...)"),
    (KAMH, {"scouts": 2}, {"warmup": [Climb(), Scouts(2)]}, "warmup=[Climb(), Scouts(n=2)]"),
    (KAMH, {"walkers": 1, "climb": False}, {"warmup": [Scouts(4)]}, "warmup=[Scouts(n=4)]"),
    (AdaptiveMetropolis, {"nu2": 0.5}, {"proposal": KAMProposal(nu2=0.5)},
     "proposal=KAMProposal(nu2=...)"),
    (AdaptiveMetropolis, {"gamma": 0.1, "whiten": False},
     {"proposal": KAMProposal(gamma=0.1, whiten=False)}, "proposal=KAMProposal(gamma=...)"),
    (AdaptiveMetropolis, {"scouts": 1}, {"warmup": []}, "warmup=[]"),
    (AdaptiveMetropolis, {"climb": True, "walkers": 2},
     {"warmup": [Climb(), Scouts(4), Walkers(2)]}, "warmup=[Climb(), Scouts(n=4), Walkers(n=2)]"),
    (CKAM, {"cycle_length": 100}, {"cycles": Cycles(length=100)}, "cycles=Cycles(length=...)"),
    (CKAM, {"exploration_fraction": 0.5}, {"cycles": Cycles(exploration_fraction=0.5)},
     "cycles=Cycles(exploration_fraction=...)"),
    (CKAM, {"jump_scale": 0.0, "mode_jumps": False},
     {"cycles": Cycles(jump_scale=0.0, mode_jumps=False)}, "cycles=Cycles(mode_jumps=...)"),
    (CKAM, {"sampling_hops": 0.1, "sampling_jumps": 0.0},
     {"cycles": Cycles(sampling_hops=0.1, sampling_jumps=0.0)},
     "cycles=Cycles(sampling_jumps=...)"),
    (CKAM, {"kernel": KERNEL, "subsample_size": 30},
     {"proposal": KAMProposal(kernel=KERNEL, subsample_size=30)},
     "proposal=KAMProposal(subsample_size=...)"),
    (CKAM, {"gamma": 0.3, "target_accept": 0.3, "min_history": 20},
     {"proposal": KAMProposal(gamma=0.3, target_accept=0.3, min_history=20)},
     "proposal=KAMProposal(min_history=...)"),
    (CKAM, {"refresh_interval": 5, "whiten": True},
     {"proposal": KAMProposal(refresh_interval=5, whiten=True)},
     "proposal=KAMProposal(whiten=...)"),
    (AdaptiveHMC, {"step_size_bounds": (0.1, 0.5)},
     {"tuning": BayesianTuning(step_size_bounds=(0.1, 0.5))},
     "tuning=BayesianTuning(step_size_bounds=...)"),
    (AdaptiveHMC, {"n_steps_bounds": (1, 5), "n_windows": 10},
     {"tuning": BayesianTuning(n_steps_bounds=(1, 5), n_windows=10)},
     "tuning=BayesianTuning(n_windows=...)"),
    (AdaptiveHMC, {"window": 5, "reward_max": 2.0},
     {"tuning": BayesianTuning(window=5, reward_max=2.0)},
     "tuning=BayesianTuning(reward_max=...)"),
]  # fmt: skip

#: the cases whose draws are compared too (one or more per option of every step)
DRAW_CASES = [0, 1, 8, 11, 15, 16, 18, 20, 24, 27, 35, 38, 40, 42, 43, 49]


def _new(cls, kwargs, **more):
    return cls(model=model(), compile_kwargs={"mode": "FAST_COMPILE"}, **kwargs, **more)


def _case_id(case):
    cls, old, _, _ = case
    return f"{cls.__name__}-{'-'.join(old)}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_old_keywords_warn_with_the_new_spelling_and_configure_the_same_step(case):
    cls, old, new, spelling = case
    with pytest.warns(DeprecationWarning) as record:
        before = _new(cls, old)
    messages = [str(w.message) for w in record if w.category is DeprecationWarning]
    deprecated = [name for name in old if f"`{cls.__name__}({name}=...)`" in " ".join(messages)]
    assert deprecated, messages
    assert any(spelling in message for message in messages), (spelling, messages)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        after = _new(cls, new)
    assert _comparable(before.options) == _comparable(after.options)


def _comparable(options):
    """Options with the warm-up as a set of phases (its order is the phases' own)."""
    return {k: frozenset(v) if isinstance(v, list) else v for k, v in options.items()}


@pytest.mark.parametrize("index", DRAW_CASES, ids=lambda i: _case_id(CASES[i]))
def test_old_keywords_give_the_same_draws(index):
    cls, old, new, _ = CASES[index]
    draws = []
    for kwargs in (old, new):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            step = _new(cls, kwargs, rng=5)
        point = {"x": np.array([0.3, 0.7])}
        step.setup_chain(np.random.default_rng(7), tune=40, draws=10)
        chain = []
        for i in range(50):
            if i == 40:
                step.stop_tuning()
            point, _ = step.step(point)
            chain.append(point["x"].copy())
        draws.append(np.array(chain))
    np.testing.assert_array_equal(draws[0], draws[1])


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (KMCLite, {"n_steps": 3, "trajectory": Trajectory()}),
        (KMCLite, {"subsample_size": 50, "surrogate": Regression()}),
        (KMCLite, {"scouts": 2, "warmup": []}),
        (KMCLite, {"random_walk_probability": 0.1, "moves": FixedMoves()}),
        (KAMH, {"gamma": 0.3, "proposal": KAMProposal()}),
        (CKAM, {"jump_scale": 1.0, "cycles": Cycles()}),
        (AdaptiveHMC, {"window": 3, "tuning": BayesianTuning()}),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) else value.__name__,
)
def test_an_old_keyword_beside_the_option_that_holds_it_is_a_type_error(cls, kwargs):
    with pytest.raises(TypeError, match=rf"{cls.__name__}\(\) got both `{next(iter(kwargs))}`"):
        _new(cls, kwargs)


@pytest.mark.parametrize(
    "cls, kwargs, error, match",
    [
        (KMCLite, {"step_size_jitter": 2.0}, ValueError, r"`Trajectory.jitter`"),
        (KMCLite, {"whiten": False}, ValueError, r"needs whiten=True"),
        (KMCLite, {"surrogate": "score_matching", "trend": "quartic"}, ValueError, "trend"),
        (KMCLite, {"random_walk_probability": 0.1}, ValueError, r"FixedMoves\("),
        (KMCLite, {"scouts": 0}, ValueError, r"`scouts`"),
        (KMCLite, {"surrogate": FiniteFeatures()}, TypeError, r"`surrogate` must be"),
        (KMCLite, {"surrogate": "rff"}, ValueError, r"`surrogate` must be one of"),
        (KMCLite, {"warmup": [Scouts(2), Scouts(3)]}, ValueError, r"`warmup`"),
        (KMCFinite, {"surrogate": "score_matching"}, TypeError, r"`surrogate` must be"),
        (KAMH, {"moves": FixedMoves(random_walk_probability=0.1)}, ValueError, "KAMH"),
        (KAMH, {"random_walk_probability": 0.1}, TypeError, "random_walk_probability"),
        (AdaptiveMetropolis, {"proposal": KAMProposal(kernel=KERNEL)}, ValueError, "linear"),
        (AdaptiveMetropolis, {"kernel": KERNEL}, TypeError, "kernel"),
        (CKAM, {"proposal": KAMProposal(nu2=1.0)}, ValueError, "nu2"),
        (CKAM, {"scouts": 2}, TypeError, "scouts"),
    ],
)
def test_bad_combinations_are_named(cls, kwargs, error, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(error, match=match):
            _new(cls, kwargs)


def test_the_options_of_a_step_are_kept():
    step = _new(KMCLite, {"trajectory": Trajectory(n_steps=5), "moves": "fixed"})
    assert step.options["trajectory"] == Trajectory(n_steps=5)
    assert step.options["moves"] == FixedMoves()
    assert step.options["surrogate"] == Regression()
    assert step.options["warmup"] == [Climb(), Scouts(4)]
    assert step.n_steps_range == (5, 5) and step.moves == "fixed"
