"""Adaptation: every tuner follows the adapter protocol; the ESJD step-size search (the others
are exercised by the steps)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from pymc_kernel_steps.core import (
    Adapter,
    AnnealedUCB,
    CandidateSearch,
    CoordinateScales,
    DualAveraging,
    Feedback,
    JumpDistanceStepSize,
    JumpRateWeights,
    RobbinsMonroScale,
    SearchBox,
    TrajectoryParameters,
    WindowedTuner,
    adaptation_probability,
)


def _noisy_esjd(step_size, rng, best=0.3):
    """A jump distance that peaks at ``best`` (acceptance capped well below 1, as with a
    surrogate gradient), with exponential noise."""
    log_ratio = math.log(step_size / best)
    return math.exp(-(log_ratio**2)) * rng.exponential()


@pytest.mark.parametrize("start", [0.003, 0.3, 30.0])
def test_jump_distance_search_finds_the_peak(start):
    rng = np.random.default_rng(0)
    tuner = JumpDistanceStepSize(start)
    for _ in range(6000):
        step_size, _ = tuner.propose(rng)
        tuner.update(Feedback(1.0, _noisy_esjd(step_size, rng)))
    assert 0.3 / 1.6 < tuner.step_size < 0.3 * 1.6


def test_jump_distance_search_where_dual_averaging_collapses():
    """Acceptance ≈ 0.4 at every step size above 0.01 and → 1 below: dual averaging towards 0.8
    drives ε to the tiny region, the ESJD search does not."""
    rng = np.random.default_rng(1)

    def acceptance(eps):
        return 0.4 if eps > 0.01 else 1.0

    tuner, averaging = JumpDistanceStepSize(0.3), DualAveraging(0.3, target=0.8)
    for _ in range(3000):
        eps = tuner.propose(rng).step_size
        tuner.update(Feedback(acceptance(eps), min(eps, 1.0) ** 2 * rng.exponential()))
        averaging.update(Feedback(acceptance(averaging.propose(rng).step_size)))
    assert averaging.final().step_size < 0.02
    assert tuner.step_size > 0.3


def test_jump_distance_search_ignores_reports_without_a_draw_and_non_finite_jumps():
    rng = np.random.default_rng(2)
    tuner = JumpDistanceStepSize(1.0, window=5)
    tuner.update(Feedback(1.0, 10.0))  # nothing drawn yet: ignored
    assert tuner.value == (1.0, None)
    for _ in range(5):
        tuner.propose(rng)
        tuner.update(Feedback(1.0, math.nan))
    assert math.isfinite(tuner.step_size) and tuner.step_size > 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"initial_step_size": 0.0}, "step_size"),
        ({"initial_step_size": math.inf}, "step_size"),
        ({"initial_step_size": 1.0, "factors": [1.0, -2.0]}, "factors"),
        ({"initial_step_size": 1.0, "factors": []}, "factors"),
        ({"initial_step_size": 1.0, "window": 0}, "window"),
    ],
)
def test_jump_distance_search_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        JumpDistanceStepSize(**kwargs)


def test_adaptation_probability_vanishes_with_divergent_sum():
    probabilities = np.array([adaptation_probability(t) for t in range(200_000)])
    assert probabilities[0] == 1.0 and probabilities[-1] < 0.03
    assert np.all(np.diff(probabilities) <= 0)
    assert probabilities.sum() > 1.8 * probabilities[:50_000].sum()  # grows like √t


def test_robbins_monro_restart_clips_to_the_bounds_and_resets_the_gain():
    scale = RobbinsMonroScale.within(1.0, 10.0)
    for _ in range(50):
        scale.update(Feedback(0.0))
    assert scale.iteration == 50
    scale.restart_at(3.0)
    assert scale.scale == pytest.approx(3.0) and scale.iteration == 0
    scale.restart_at(1e6)
    assert scale.scale == pytest.approx(10.0)
    scale.restart_at(1e-6)
    assert scale.scale == pytest.approx(0.1)


# ---------------------------------------------------------------- the adapter protocol
def _every_adapter_class() -> set[type]:
    """Every concrete subclass of :class:`Adapter` the core defines."""
    import pymc_kernel_steps.core  # noqa: F401 - defines them all

    found, pending = set(), [Adapter]
    while pending:
        for subclass in pending.pop().__subclasses__():
            pending.append(subclass)
            if subclass.__module__.startswith("pymc_kernel_steps.") and not getattr(
                subclass, "__abstractmethods__", None
            ):
                found.add(subclass)
    return found


HMC_BOX = SearchBox(
    (0.01, 1), (1.0, 50), integer=(False, True), log_scale=(True, True), names=("eps", "L")
)

#: a tuner of every kind, built at a known value, and the feedback it learns from (in turn)
ADAPTERS = {
    "RobbinsMonroScale": (lambda: RobbinsMonroScale(0.0), [Feedback(1.0)]),
    "DualAveraging": (lambda: DualAveraging(0.5), [Feedback(0.2)]),
    "JumpDistanceStepSize": (lambda: JumpDistanceStepSize(0.5, window=1), [Feedback(0.5, 4.0)]),
    "CoordinateScales": (lambda: CoordinateScales(3, 1.0), [Feedback(1.0, index=1)]),
    "WindowedTuner": (
        lambda: WindowedTuner(HMC_BOX, window=2, start=(0.1, 9)),
        [Feedback(1.0, 4.0)],
    ),
    "AnnealedUCB": (lambda: AnnealedUCB(HMC_BOX, start=(0.1, 9)), [Feedback(reward=2.0)]),
    "CandidateSearch": (
        lambda: CandidateSearch(3, 0.5),
        [Feedback(index=1, reward=1.0), Feedback(index=2, reward=3.0)],
    ),
    "JumpRateWeights": (
        lambda: JumpRateWeights([1.0, 3.0], min_evaluations=1),
        [Feedback(1.0, 2.0, index=0), Feedback(0.5, 1.0, index=1)],
    ),
}


def test_every_tuner_is_an_adapter_with_a_protocol_test():
    assert {cls.__name__ for cls in _every_adapter_class()} == set(ADAPTERS)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_every_tuner_follows_the_adapter_protocol(name):
    """Built at its initial value, it proposes, learns from feedback (its value moves) and
    gives a final value of the value's shape."""
    factory, feedbacks = ADAPTERS[name]
    adapter = factory()
    assert isinstance(adapter, Adapter) and type(adapter).__name__ == name
    initial = copy.deepcopy(adapter.value)
    rng = np.random.default_rng(0)
    for i in range(4):
        adapter.propose(rng)
        adapter.update(feedbacks[i % len(feedbacks)], rng)
    value, final = adapter.value, adapter.final()
    assert np.shape(value) == np.shape(initial) and np.shape(final) == np.shape(initial)
    assert not (_equal(value, initial) and _equal(final, initial))  # it learned something


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def test_a_tuner_that_tries_candidates_draws_them_from_the_rng():
    for name in ("JumpDistanceStepSize", "CoordinateScales", "CandidateSearch"):
        adapter = ADAPTERS[name][0]()
        first = [adapter.propose(np.random.default_rng(3)) for _ in range(2)]
        assert first[0] == first[1], name  # the same generator state, the same candidate


def test_a_deterministic_tuner_proposes_its_value_and_draws_nothing():
    for name in ("RobbinsMonroScale", "DualAveraging", "WindowedTuner", "JumpRateWeights"):
        adapter = ADAPTERS[name][0]()
        rng = np.random.default_rng(0)
        state = copy.deepcopy(rng.bit_generator.state)
        assert _equal(adapter.propose(rng), adapter.value)
        assert rng.bit_generator.state == state, name


def test_trajectory_tuners_give_step_size_and_length():
    """Every tuner of a trajectory gives ``TrajectoryParameters``: ``max_n_steps`` None where it
    leaves the length to the sampler."""
    for tuner in (DualAveraging(0.5), JumpDistanceStepSize(0.5)):
        assert tuner.value == TrajectoryParameters(0.5, None) and tuner.final().step_size == 0.5
    windowed = WindowedTuner(HMC_BOX, window=2, start=(0.1, 9))
    assert windowed.value == TrajectoryParameters(0.1, 9) == windowed.final()


def test_feedback_rao_blackwellises_the_jump_and_zeroes_what_is_not_finite():
    assert Feedback(0.5, 4.0).expected_squared_jump == 2.0
    assert Feedback(0.0, math.inf).expected_squared_jump == 0.0
    assert Feedback(math.nan, 1.0).expected_squared_jump == 0.0
    assert Feedback(1.0).expected_squared_jump == 0.0  # no jump measured


def test_a_candidate_search_keeps_the_tried_candidate_of_largest_average():
    search = CandidateSearch(3, 0.5, current=1)
    assert search.final() == 1  # nothing tried: the one in use
    search.update(Feedback(index=0, reward=4.0))
    search.update(Feedback(index=2, reward=1.0))
    search.update(Feedback(index=2, reward=1.0))
    np.testing.assert_array_equal(search.scores, [2.0, 0.0, 0.75])
    assert search.final() == 0
    search.update(Feedback(index=0, reward=-10.0))
    assert search.final() == 2  # the untried candidate 1 (average 0) is never chosen
