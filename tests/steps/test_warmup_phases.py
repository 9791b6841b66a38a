"""The steps' warm-up as data: the phases built from ``warmup=[Climb(), Scouts(n), Walkers(n)]``,
and a step whose iteration asks its list of phases and nothing else (a phase of one's own is asked
at the chain's start, for the iterations it owns and for a state to hand over)."""

from __future__ import annotations

import cloudpickle
import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps import CKAM, KAMH, AdaptiveHMC, AdaptiveMetropolis, KMCFinite, KMCLite
from pymc_kernel_steps.core import conditional_scales
from pymc_kernel_steps.core.moves import Proposal, RandomWalk
from pymc_kernel_steps.core.warmup import Outcome, Phase, StartScalesPhase
from pymc_kernel_steps.options import Climb, Scouts, Walkers


def _gaussian() -> pm.Model:
    with pm.Model() as model:
        pm.Normal("x", 0.5, 1.0, shape=2)
    return model


def _log_density(x) -> float:
    return float(-0.5 * np.sum((np.asarray(x) - 0.5) ** 2) - np.log(2 * np.pi))


def _run(step, point, iterations):
    stats = []
    for _ in range(iterations):
        point, [stat] = step.step(point)
        stats.append(stat)
    return point, stats


class Owner(Phase):
    """Owns the first ``length`` iterations of tuning: each proposes one step right of the
    chain's point and accepts it."""

    name = "owner"

    def __init__(self, length: int):
        self.length = length
        self.move = RandomWalk.optimal(2, 10.0)

    def init(self, setup):
        return {"point": None, "value": None, "asked": []}

    def at_start(self, state, start, log_density, tuning):
        state["point"], state["value"] = start.point.copy(), start.value
        return start

    def owns(self, state, iteration, tuning):
        state["asked"].append(iteration)
        return tuning and iteration < self.length

    def propose(self, state, rng):
        return Proposal(state["point"] + 1.0, 0.0, self.move)

    def decide(self, state, proposal, log_density, rng):
        state["point"], state["value"] = proposal.x.copy(), log_density
        return Outcome(True, 1.0, 0.0, proposal.x.copy(), log_density)


class Handing(Phase):
    """Hands the chain a fixed state on every iteration of the step's own while it tunes."""

    name = "handing"

    def __init__(self, point):
        self.point = np.asarray(point, dtype=float)

    def init(self, setup):
        return []

    def hand_over(self, state, point, value, iteration, tuning):
        state.append(iteration)
        return (self.point.copy(), _log_density(self.point)) if tuning else None


class Teleport(Phase):
    """Moves the chain's start to ``point`` at the cost of one (unrecorded) evaluation."""

    name = "teleport"
    records_evaluations = False

    def __init__(self, point):
        self.point = np.asarray(point, dtype=float)

    def init(self, setup):
        return {"moved": False}

    def at_start(self, state, start, log_density, tuning):
        if state["moved"]:
            return start
        state["moved"] = True
        return start.moved_to(self.point.copy(), log_density(self.point), 1)


def test_the_keywords_become_the_phases():
    with _gaussian():
        names = {
            "KAMH": [p.name for p in KAMH().phases],
            "KMCLite": [p.name for p in KMCLite().phases],
            "KMCFinite walkers": [
                p.name for p in KMCFinite(warmup=[Climb(), Scouts(4), Walkers(3)]).phases
            ],
            "AdaptiveMetropolis": [p.name for p in AdaptiveMetropolis().phases],
            "no climb, scouts": [p.name for p in KAMH(warmup=[Walkers(4)]).phases],
            "CKAM": [p.name for p in CKAM().phases],
            "AdaptiveHMC": [p.name for p in AdaptiveHMC().phases],
            "AdaptiveHMC without mass": list(AdaptiveHMC(adapt_mass=False).phases),
        }
    assert names == {
        "KAMH": ["start_scales", "climb", "scouts"],
        "KMCLite": ["start_scales", "climb", "scouts"],
        "KMCFinite walkers": ["start_scales", "climb", "scouts", "walkers"],
        "AdaptiveMetropolis": ["start_scales", "scouts"],
        "no climb, scouts": ["start_scales", "walkers"],
        "CKAM": ["start_scales"],
        "AdaptiveHMC": ["start_scales"],
        "AdaptiveHMC without mass": [],
    }
    with _gaussian():
        step = KAMH()
    assert step.scouts == 4 and step.walkers == 1 and step.climb  # the keywords stay
    with pytest.raises(ValueError, match="distinct"):
        step.phases = (*step.phases, StartScalesPhase())


@pytest.mark.parametrize("step_class", [KAMH, KMCLite])
def test_the_iteration_asks_the_phases_and_nothing_else(step_class):
    """The keywords ask for scouts and walkers, but the phases replaced by others are what the
    iterations follow: a phase that owns the first iterations makes them, then one hands the
    chain a state on each iteration of the step's own."""
    model = _gaussian()
    with model:
        step = step_class(warmup=[Scouts(4), Walkers(4)])
    owner, handing = Owner(length=5), Handing([2.0, -1.0])
    step.phases = (StartScalesPhase(), owner, handing)
    step.setup_chain(np.random.default_rng(1), tune=2000, draws=10)
    chain = step.chain
    assert chain.scout_iterations == 0 and chain.walker_iterations == 0
    point, stats = _run(step, model.initial_point(), 5)
    state = chain.warmup
    assert state["owner"]["asked"] == [0, 1, 2, 3, 4] and state["handing"] == []
    # each owned iteration moved one step right of the last, from the start at 0.5
    np.testing.assert_array_equal(point["x"], [5.5, 5.5])
    assert [s["accepted"] for s in stats] == [1.0] * 5
    assert len(chain.history) == 0  # the owned iterations are not the step's own
    probes = conditional_scales(_log_density, np.full(2, 0.5), _log_density(np.full(2, 0.5)))
    assert [s["logp_evals"] for s in stats] == [2 + probes.evaluations, 1, 1, 1, 1]
    point, stats = _run(step, point, 3)
    assert state["owner"]["asked"] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert state["handing"] == [5, 6, 7]
    # every proposal of the step's own came from the state handed over
    assert len(chain.history) == 3
    for x in chain.history.points:
        assert np.array_equal(x, [2.0, -1.0]) or not np.array_equal(x, [5.5, 5.5])
    step.stop_tuning()
    _run(step, point, 2)
    assert state["handing"] == [5, 6, 7, 8, 9]  # asked, handing nothing over while drawing
    assert state["owner"]["asked"][-2:] == [8, 9]


def test_a_phase_that_moves_the_start_is_counted_and_the_scales_are_measured_there():
    model = _gaussian()
    with model:
        step = KAMH(warmup=[])
    there = np.array([1.5, -0.5])
    step.phases = (StartScalesPhase(), Teleport(there))
    planned = step.start_evaluations(model.initial_point())
    start = np.full(2, 0.5)
    at_start = conditional_scales(_log_density, start, _log_density(start))
    at_there = conditional_scales(_log_density, there, _log_density(there))
    assert planned == 1 + at_start.evaluations + 1 + at_there.evaluations
    step.setup_chain(np.random.default_rng(0), tune=100, draws=10)
    _, [stats] = _run(step, model.initial_point(), 1)
    assert stats["logp_evals"] == planned + 1
    assert step.chain.warmup["teleport"]["moved"]
    np.testing.assert_array_equal(step.chain.start_scales, at_there.frame())
    # the first proposal was made from the new start
    first = step.chain.history.points[0]
    assert np.array_equal(first, there) or not np.array_equal(first, start)


def test_a_step_with_phases_of_its_own_pickles_and_resumes_identically():
    model = _gaussian()
    with model:
        step = KAMH(warmup=[])
    step.phases = (StartScalesPhase(), Owner(length=3), Handing([0.0, 0.0]))
    step.setup_chain(np.random.default_rng(4), tune=50, draws=10)
    point, _ = _run(step, model.initial_point(), 2)
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    assert [p.name for p in clone.phases] == ["start_scales", "owner", "handing"]
    runs = [_run(candidate, dict(point), 10)[0]["x"] for candidate in (step, clone)]
    np.testing.assert_array_equal(runs[0], runs[1])


def test_the_warmup_states_travel_with_the_sampling_state():
    """Sequential chains restore ``sampling_state``: the scouts' and walkers' states are in it."""
    model = _gaussian()
    with model:
        step = KAMH(warmup=[Climb(), Scouts(2), Walkers(2)])
    step.setup_chain(np.random.default_rng(6), tune=1000, draws=10)
    point, _ = _run(step, model.initial_point(), 90)  # within the scouts (100 iterations)
    saved = step.sampling_state
    runs = []
    for _ in range(2):
        step.sampling_state = saved
        current, _ = _run(step, dict(point), 120)  # the scouts' end, into the walkers' turns
        runs.append(current["x"])
        assert step.chain.scouts.done and step.chain.walkers is not None
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("step_class", [AdaptiveMetropolis, KAMH])
def test_a_state_handed_over_is_judged_by_its_own_log_density(step_class):
    """After a hand-over (the walkers' next walker) the acceptance ratio compares the proposal
    with the state handed over, not with the state the chain came from. Before the fix the
    ratio used the log density of the walker that moved last, so the walkers' moves did not
    leave the posterior invariant while they tuned."""
    model = _gaussian()
    with model:
        step = step_class(warmup=[])
    handed = np.array([2.0, -1.0])
    step.phases = (StartScalesPhase(), Handing(handed))
    step.setup_chain(np.random.default_rng(3), tune=100, draws=10)
    evaluated = []
    evaluate = step._evaluate_logp

    def spy(x, *args, proposal=False, **kwargs):
        value = evaluate(x, *args, proposal=proposal, **kwargs)
        if proposal:
            evaluated.append((np.array(x, copy=True), value))
        return value

    step._evaluate_logp = spy
    point = model.initial_point()
    for _ in range(20):
        evaluated.clear()
        point, [stats] = step.step(point)
        assert len(evaluated) == 1 and stats["logp_evals"] >= 1
        proposal, value = evaluated[0]
        assert value == pytest.approx(_log_density(proposal), abs=1e-9)
        # a random-walk or single-coordinate move (symmetric) from the state handed over
        expected = min(1.0, float(np.exp(value - _log_density(handed))))
        assert stats["accept"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
