"""Warm-up as data (``core.warmup``): the phases' one protocol, driven without PyMC on simple log
densities — the start's scales, the climb from far, the scouts' best walk, the walkers' turns —
and the functions that ask a list of phases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_kernel_steps.core import conditional_scales
from pymc_kernel_steps.core.moves import Proposal
from pymc_kernel_steps.core.warmup import (
    SCOUT_LENGTH,
    ChainSetup,
    ClimbPhase,
    Outcome,
    Phase,
    ScoutsPhase,
    Start,
    StartScalesPhase,
    WalkersPhase,
    begin,
    chain_states,
    check_phases,
    hand_over,
    iteration_owner,
)

CENTRE = np.array([100.0, -50.0, 20.0])
SCALES = np.array([1.0, 2.0, 0.5])
TUNING = ChainSetup(tune=1000)


def gaussian(x) -> float:
    return -0.5 * float(np.sum(((np.asarray(x) - CENTRE) / SCALES) ** 2))


class Recorder:
    """``log_density(records)`` as :func:`begin` asks for it: every evaluation noted with
    whether it was the chain's own."""

    def __init__(self, log_density):
        self.log_density = log_density
        self.calls: list[bool] = []

    def __call__(self, records: bool):
        def probe(x):
            self.calls.append(records)
            return self.log_density(x)

        return probe


def _start(x, log_density=gaussian) -> Start:
    x = np.asarray(x, dtype=float)
    return Start(x, log_density(x))


def _run_start(phases, start, setup=TUNING, log_density=gaussian, tuning=True):
    states = chain_states(phases, setup)
    recorder = Recorder(log_density)
    return begin(phases, states, start, recorder, tuning), states, recorder


# ---------------------------------------------------------------------------- the protocol
def test_a_bare_phase_takes_part_in_nothing():
    phase = Phase()
    start = _start(CENTRE)
    assert phase.init(TUNING) is None
    assert phase.at_start(None, start, gaussian, True) is start
    assert not phase.owns(None, 0, True)
    assert phase.hand_over(None, CENTRE, 0.0, 0, True) is None
    with pytest.raises(NotImplementedError):
        phase.propose(None, np.random.default_rng(0))
    with pytest.raises(NotImplementedError):
        phase.decide(None, Proposal(CENTRE, 0.0, None), 0.0, None)
    assert chain_states([phase], TUNING) == {}


def test_the_phases_must_be_phases_with_distinct_names():
    assert check_phases([StartScalesPhase(), ClimbPhase()])[1].name == "climb"
    with pytest.raises(ValueError, match="distinct"):
        check_phases([StartScalesPhase(), StartScalesPhase()])
    with pytest.raises(TypeError, match="Phase"):
        check_phases([StartScalesPhase(), "climb"])
    with pytest.raises(TypeError, match="sequence"):
        check_phases(StartScalesPhase())


def test_a_phase_that_sits_the_chain_out_is_never_asked():
    class Absent(Phase):
        name = "absent"

        def at_start(self, state, start, log_density, tuning):
            raise AssertionError("asked")

        def owns(self, state, iteration, tuning):
            raise AssertionError("asked")

    phases = [Absent()]
    states = chain_states(phases, TUNING)
    start = _start(CENTRE)
    assert begin(phases, states, start, Recorder(gaussian), True) is start
    assert iteration_owner(phases, states, 0, True) is None


def test_a_start_moved_every_time_is_refused():
    class Restless(Phase):
        name = "restless"

        def init(self, setup):
            return []

        def at_start(self, state, start, log_density, tuning):
            return start.moved_to(start.point + 1.0, start.value, 1)

    with pytest.raises(RuntimeError, match="more than once"):
        _run_start([Restless()], _start(CENTRE))


# ---------------------------------------------------------------------------- the start's scales
def test_the_start_scales_are_measured_once_and_are_the_chain_s_own():
    x = CENTRE + 0.3
    start, states, recorder = _run_start([StartScalesPhase()], _start(x))
    expected = conditional_scales(gaussian, x, gaussian(x))
    np.testing.assert_allclose(start.scales.scales, SCALES, rtol=1e-6)
    np.testing.assert_array_equal(start.scales.scales, expected.scales)
    assert start.evaluations == expected.evaluations == len(recorder.calls)
    assert all(recorder.calls)
    state = states["start_scales"]
    np.testing.assert_array_equal(state.frame, expected.frame())
    assert not state.far_from_posterior
    # a start already measured is not measured again
    again = StartScalesPhase().at_start(state, start, gaussian, True)
    assert again is start


@pytest.mark.parametrize(
    "setup", [ChainSetup(1000, exact=False), ChainSetup(1000, warm_started=True)]
)
def test_no_start_scales_for_a_noisy_log_density_or_a_warm_start(setup):
    start, states, recorder = _run_start(
        [StartScalesPhase(), ClimbPhase()], _start(np.zeros(3)), setup
    )
    assert "start_scales" not in states and start.scales is None
    assert start.evaluations == 0 and recorder.calls == []


# ---------------------------------------------------------------------------- the climb
def test_the_climb_from_far_reaches_the_bulk_and_the_scales_are_measured_there():
    phases = [StartScalesPhase(), ClimbPhase()]
    start, states, recorder = _run_start(phases, _start(np.zeros(3)))
    climbed = states["climb"].climbed
    assert climbed is not None and states["climb"].evaluations == climbed.evaluations > 0
    # in the bulk: log π within d/2 of the peak (0 here), a few scales from the centre
    assert start.value >= -1.5 - 1e-9
    assert np.all(np.abs(start.point - CENTRE) < 5 * SCALES)
    # the scales measured at the start, the climb's (not the chain's own), the scales again
    far = conditional_scales(gaussian, np.zeros(3), gaussian(np.zeros(3)))
    assert far.far_from_posterior
    there = conditional_scales(gaussian, start.point, start.value)
    assert recorder.calls == (
        [True] * far.evaluations + [False] * climbed.evaluations + [True] * there.evaluations
    )
    assert start.evaluations == far.evaluations + climbed.evaluations + there.evaluations
    np.testing.assert_array_equal(start.scales.scales, there.scales)
    np.testing.assert_array_equal(states["start_scales"].frame, there.frame())
    assert not states["start_scales"].far_from_posterior


@pytest.mark.parametrize(
    ("x", "setup", "tuning"),
    [
        (CENTRE + 0.5, TUNING, True),  # a start in the bulk
        (np.zeros(3), TUNING, False),  # a chain that does not tune
        (np.zeros(3), ChainSetup(1000, whole_model=False), True),  # compound sampling
    ],
)
def test_no_climb_from_the_bulk_without_tuning_or_in_compound_sampling(x, setup, tuning):
    phases = [StartScalesPhase(), ClimbPhase()]
    start, states, recorder = _run_start(phases, _start(x), setup, tuning=tuning)
    np.testing.assert_array_equal(start.point, x)
    assert all(recorder.calls)
    assert states.get("climb") is None or states["climb"].evaluations == 0


def test_no_climb_without_the_start_scales():
    start, states, recorder = _run_start([ClimbPhase()], _start(np.zeros(3)))
    assert states["climb"].climbed is None and recorder.calls == []


# ---------------------------------------------------------------------------- the scouts
def _two_modes(x) -> float:
    """A broad mode at −2 and a narrow, higher one at +3 (1-d)."""
    x = float(np.asarray(x)[0])
    return float(
        np.logaddexp(
            -0.5 * (x + 2.0) ** 2 - 0.5 * math.log(2 * math.pi),
            -0.5 * ((x - 3.0) / 0.2) ** 2 - math.log(0.2) - 0.5 * math.log(2 * math.pi),
        )
    )


@pytest.mark.parametrize(
    "setup",
    [
        ChainSetup(4 * SCOUT_LENGTH * 10 - 1),  # more than a tenth of tuning
        ChainSetup(10_000, exact=False),
        ChainSetup(10_000, whole_model=False),
        ChainSetup(10_000, warm_started=True),
    ],
)
def test_the_scouts_sit_out(setup):
    assert ScoutsPhase(4).init(setup) is None


def test_the_scouts_own_the_first_iterations_and_leave_the_chain_at_the_best_walk():
    phases = [StartScalesPhase(), ScoutsPhase(4, length=30)]
    setup = ChainSetup(tune=1200)  # the scouts take at most a tenth of tuning
    start, states, _ = _run_start(phases, _start(np.zeros(1), _two_modes), setup, _two_modes)
    state = states["scouts"]
    assert state.iterations == 120
    scouts = state.scouts
    np.testing.assert_array_equal(scouts.positions, np.zeros((4, 1)))
    np.testing.assert_array_equal(scouts.coordinate_scales, start.scales.frame())
    rng = np.random.default_rng(2)
    outcomes: list[Outcome] = []
    for iteration in range(120):
        phase, owned = iteration_owner(phases, states, iteration, True)
        assert phase is phases[1] and owned is state
        walk = scouts.turn
        proposal = phase.propose(state, rng)
        outcome = phase.decide(state, proposal, _two_modes(proposal.x), rng)
        outcomes.append(outcome)
        if not scouts.done:  # the chain is where the walk that moved is
            np.testing.assert_array_equal(outcome.point, scouts.positions[walk])
            assert outcome.random_walk_scale is None
    assert iteration_owner(phases, states, 120, True) is None
    assert iteration_owner(phases, states, 0, False) is None  # not while drawing
    last = outcomes[-1]
    best = int(np.argmax(scouts.log_densities))
    np.testing.assert_array_equal(last.point, scouts.positions[best])
    assert last.value == scouts.log_densities.max() == pytest.approx(_two_modes(last.point))
    assert last.random_walk_scale == scouts.scale.scale


def test_the_scouts_begin_where_the_climb_ended():
    phases = [StartScalesPhase(), ClimbPhase(), ScoutsPhase(2, length=5)]
    start, states, _ = _run_start(phases, _start(np.zeros(3)))
    assert states["climb"].evaluations > 0
    np.testing.assert_array_equal(states["scouts"].scouts.positions, [start.point] * 2)
    assert np.all(states["scouts"].scouts.log_densities == start.value)


# ---------------------------------------------------------------------------- the walkers
def test_the_walkers_take_turns_then_hand_over_the_highest():
    phases = [WalkersPhase(3, share=0.01)]
    states = chain_states(phases, ChainSetup(tune=600))
    assert states["walkers"].iterations == 6
    point, value = np.zeros(2), -1.0
    first = 10  # the first iteration of the step's own, after other phases
    for iteration in range(first, first + 7):
        point, value = hand_over(phases, states, point, value, iteration, True)
        # the step's own iteration moves the walker whose turn it is
        point, value = point + 1.0, value - float(iteration)
    walkers = states["walkers"].walkers
    assert walkers.done
    assert walkers.turn == int(np.argmax(walkers.log_densities))
    assert hand_over(phases, states, point, value, first + 7, True) is None


def test_no_walkers_without_tuning_or_for_a_noisy_log_density():
    assert WalkersPhase(4).init(ChainSetup(tune=1)) is None  # no iteration to walk for
    assert WalkersPhase(4).init(ChainSetup(tune=400, exact=False)) is None
    assert WalkersPhase(4).init(ChainSetup(tune=400, whole_model=False)) is None
    states = chain_states([WalkersPhase(4)], ChainSetup(tune=400))
    assert hand_over([WalkersPhase(4)], states, np.zeros(1), 0.0, 0, False) is None
    assert states["walkers"].walkers is None


@pytest.mark.parametrize("count", [1, 0, 2.5])
def test_bad_counts(count):
    with pytest.raises(ValueError, match="count"):
        ScoutsPhase(count)
    with pytest.raises(ValueError, match="count"):
        WalkersPhase(count)


def test_each_phase_hands_over_from_the_state_the_one_before_handed():
    class Shift(Phase):
        def __init__(self, name, by):
            self.name, self.by = name, by

        def init(self, setup):
            return self.by

        def hand_over(self, state, point, value, iteration, tuning):
            return point + state, value - state

    phases = [Shift("one", 1.0), Shift("two", 10.0)]
    states = chain_states(phases, TUNING)
    point, value = hand_over(phases, states, np.zeros(2), 0.0, 0, True)
    np.testing.assert_array_equal(point, [11.0, 11.0])
    assert value == -11.0
