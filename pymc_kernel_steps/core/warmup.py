"""Warm-up as data: the phases a chain goes through before and while it tunes, with one protocol.

A step holds its phases as a tuple in the order they act (``step.phases``, built from
``scouts=``, ``walkers=`` and ``climb=``); each chain holds their per-chain states by phase name
(``chain.warmup``). The step asks the list at three moments, and a phase takes part in those its
methods answer (the defaults of :class:`Phase` take part in none):

- **At the chain's first point** (:meth:`Phase.at_start`): given the log density, the start and
  its value, a phase returns the start the chain goes on from, with the evaluations it spent.
  The start's conditional scales (:class:`StartScalesPhase`) and the climb from a start far from
  the posterior (:class:`ClimbPhase`) act here. When a phase moves the start, the phases act
  again from the first, at the new start: what they measured was the old start's (so the scales
  are measured again where the climb ended). A phase moves a chain's start at most once.
- **Before each iteration** (:meth:`Phase.owns`): a phase that owns the iteration makes it
  instead of the step's own transition. It proposes (:meth:`Phase.propose`); the step evaluates
  the proposal; the phase decides (:meth:`Phase.decide`). The scouts (:class:`ScoutsPhase`)
  own the first iterations of tuning.
- **In each iteration of the step's own** (:meth:`Phase.hand_over`): a phase may hand the chain
  another state to propose from. The walkers (:class:`WalkersPhase`) take turns this way.

:func:`chain_states`, :func:`begin`, :func:`iteration_owner` and :func:`hand_over` ask the list
at those moments. None of this is PyMC's: the step evaluates the model and turns the outcomes into
sample stats. Every phase belongs to the start or to tuning, so the draws' kernel is untouched.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .adaptation import RobbinsMonroScale
from .climb import Climb, climb
from .moves import Proposal, optimal_scale
from .scouting import Scouts
from .start_scales import StartScales, conditional_scales
from .walkers import TuningWalkers

__all__ = [
    "SCOUT_LENGTH",
    "SCOUT_SCALE_RANGE",
    "SCOUT_SHARE",
    "WALKER_SHARE",
    "ChainSetup",
    "ClimbPhase",
    "ClimbState",
    "Outcome",
    "Phase",
    "ScoutsPhase",
    "ScoutsState",
    "Start",
    "StartScalesPhase",
    "StartScalesState",
    "WalkersPhase",
    "WalkersState",
    "begin",
    "chain_states",
    "check_phases",
    "hand_over",
    "iteration_owner",
]

#: iterations of each scout (the initial random walks of ``scouts=``)
SCOUT_LENGTH = 50
#: the scouts take at most this share of the tuning phase; with less tuning there are none
#: (shorter walks pick the main basin less reliably, and a larger share leaves too little tuning:
#: with 1000 tuning iterations, walks of 25 left 2 of 4 ODE seeds with a late chain, and walks of
#: 50 left adaptive Metropolis a frozen proposal accepted 3-7 % of the time)
SCOUT_SHARE = 0.1
#: the scouts' random-walk scale stays within this factor of its start
SCOUT_SCALE_RANGE = 1e4
#: the walkers (``walkers=``) move for this share of the tuning iterations
WALKER_SHARE = 0.5

LogDensity = Callable[[np.ndarray], float]


@dataclass(frozen=True)
class ChainSetup:
    """What the phases learn of a chain when it is set up.

    Attributes
    ----------
    tune : int
        The chain's tuning iterations (0: none, or a chain stepped without being set up).
    exact : bool
        The log density is exact, not a noisy estimate (pseudo-marginal, ABC), whose best value
        is a lucky one and whose differences measure its noise.
    whole_model : bool
        The step samples every free variable; False in compound sampling, where the rest of the
        model moves under it.
    warm_started : bool
        The chain begins with an earlier run's history, which already says where the posterior
        is and at what scales.
    """

    tune: int
    exact: bool = True
    whole_model: bool = True
    warm_started: bool = False


@dataclass(frozen=True)
class Start:
    """A chain's start as the phases that act there leave it (:meth:`Phase.at_start`).

    Attributes
    ----------
    point : numpy.ndarray, shape (d,)
    value : float
        The log density at ``point`` (finite).
    evaluations : int
        Evaluations the phases spent (the start's own not counted).
    scales : StartScales or None
        The conditional scales measured at ``point`` (None: not measured there).
    """

    point: np.ndarray
    value: float
    evaluations: int = 0
    scales: StartScales | None = None

    def spent(self, evaluations: int) -> Start:
        """The same start, ``evaluations`` more spent."""
        return dataclasses.replace(self, evaluations=self.evaluations + int(evaluations))

    def moved_to(self, point: np.ndarray, value: float, evaluations: int) -> Start:
        """The start at ``point`` (log density ``value``), ``evaluations`` more spent, its scales
        not yet measured there."""
        return Start(point, float(value), self.evaluations + int(evaluations))


@dataclass(frozen=True)
class Outcome:
    """What a phase's own iteration did (:meth:`Phase.decide`).

    Attributes
    ----------
    accepted : bool
    accept_prob : float
    log_accept_ratio : float
    point : numpy.ndarray, shape (d,)
        The state the chain is in after the iteration.
    value : float
        Its log density.
    random_walk_scale : float or None
        Where the step's own random walk starts (a phase that ends hands over the scale it
        learned); None: left as it is.
    """

    accepted: bool
    accept_prob: float
    log_accept_ratio: float
    point: np.ndarray
    value: float
    random_walk_scale: float | None = None


class Phase:
    """One phase of warm-up: the protocol, whose defaults take part in nothing.

    A phase object holds its options and serves every chain of its step; what it learns in one
    chain is its per-chain state, which :meth:`init` returns and every other method gets back
    (and may update in place). The state must be picklable: it travels with the chain's
    sampling state.

    Attributes
    ----------
    name : str
        The key of the phase's state in a chain's ``warmup`` (unique among a step's phases).
    records_evaluations : bool
        Whether the evaluations of :meth:`at_start` are the chain's own, which a surrogate
        fitted to the chain's evaluations learns from (the climb's are not).
    """

    name: str = "phase"
    records_evaluations: bool = True

    def init(self, setup: ChainSetup) -> Any:
        """The phase's state in a chain set up as ``setup``; None: it sits the chain out."""
        return None

    def at_start(self, state, start: Start, log_density: LogDensity, tuning: bool) -> Start:
        """The chain's start after this phase, at its first point ``start`` (``log_density``:
        NaN where the model fails; ``tuning``: the step tunes)."""
        return start

    def owns(self, state, iteration: int, tuning: bool) -> bool:
        """Whether the phase makes the chain's iteration ``iteration`` itself."""
        return False

    def propose(self, state, rng: np.random.Generator) -> Proposal:
        """The proposal of an iteration the phase owns."""
        raise NotImplementedError(f"{type(self).__name__} owns no iteration")

    def decide(
        self, state, proposal: Proposal, log_density: float, rng: np.random.Generator
    ) -> Outcome:
        """Accept or reject ``proposal`` (log density ``log_density``, NaN meaning −inf) in an
        iteration the phase owns."""
        raise NotImplementedError(f"{type(self).__name__} owns no iteration")

    def hand_over(
        self, state, point: np.ndarray, value: float, iteration: int, tuning: bool
    ) -> tuple[np.ndarray, float] | None:
        """The state (and its log density) the step's own iteration ``iteration`` proposes from
        instead of the chain's ``point`` (log density ``value``); None: ``point``."""
        return None


def check_phases(phases) -> tuple[Phase, ...]:
    """``phases`` as a tuple, checked: :class:`Phase` objects with distinct names."""
    if isinstance(phases, Phase) or not isinstance(phases, Sequence):
        raise TypeError(f"`phases` must be a sequence of warm-up phases, got {phases!r}.")
    phases = tuple(phases)
    for phase in phases:
        if not isinstance(phase, Phase):
            raise TypeError(f"a warm-up phase must be a Phase, got {phase!r}.")
    names = [phase.name for phase in phases]
    if len(set(names)) != len(names):
        raise ValueError(f"the warm-up phases' names must be distinct, got {names}.")
    return phases


def chain_states(phases: Sequence[Phase], setup: ChainSetup) -> dict[str, Any]:
    """The per-chain states of the ``phases`` that take part in a chain set up as ``setup``, by
    name."""
    states = {}
    for phase in phases:
        state = phase.init(setup)
        if state is not None:
            states[phase.name] = state
    return states


def _taking_part(phases: Sequence[Phase], states: Mapping[str, Any]) -> Iterator[tuple]:
    for phase in phases:
        state = states.get(phase.name)
        if state is not None:
            yield phase, state


def begin(
    phases: Sequence[Phase],
    states: Mapping[str, Any],
    start: Start,
    log_density: Callable[[bool], LogDensity],
    tuning: bool,
) -> Start:
    """The chain's start after every phase acted at ``start``, in order, and again from the first
    wherever one moved it.

    Parameters
    ----------
    phases, states
        The step's phases and the chain's states of them.
    start : Start
        The chain's first point and its log density (finite).
    log_density : callable
        ``log_density(records)``: the log density of a point, NaN where the model fails, with
        its evaluations the chain's own where ``records`` (:attr:`Phase.records_evaluations`).
    tuning : bool
        The step tunes.
    """
    taking_part = list(_taking_part(phases, states))
    for _ in range(len(taking_part) + 1):
        for phase, state in taking_part:
            after = phase.at_start(state, start, log_density(phase.records_evaluations), tuning)
            moved = not np.array_equal(after.point, start.point)
            start = after
            if moved:
                break
        else:
            return start
    raise RuntimeError("a warm-up phase moved the chain's start more than once")


def iteration_owner(
    phases: Sequence[Phase], states: Mapping[str, Any], iteration: int, tuning: bool
) -> tuple[Phase, Any] | None:
    """The first phase that owns the chain's iteration ``iteration``, with its state; None: the
    step's own transition makes it."""
    for phase, state in _taking_part(phases, states):
        if phase.owns(state, iteration, tuning):
            return phase, state
    return None


def hand_over(
    phases: Sequence[Phase],
    states: Mapping[str, Any],
    point: np.ndarray,
    value: float,
    iteration: int,
    tuning: bool,
) -> tuple[np.ndarray, float] | None:
    """The state the step's own iteration ``iteration`` proposes from, where the phases hand
    the chain one instead of ``point`` (each the state the one before handed over); None where
    none does."""
    handed = None
    for phase, state in _taking_part(phases, states):
        turn = phase.hand_over(state, point, value, iteration, tuning)
        if turn is not None:
            handed = point, value = turn
    return handed


# ---------------------------------------------------------------------------- the start's scales
@dataclass
class StartScalesState:
    """What :class:`StartScalesPhase` measured in a chain.

    Attributes
    ----------
    found : StartScales or None
        The conditional scales at the chain's start, where the climb ended if it moved it (None:
        not measured yet).
    frame : numpy.ndarray or None
        ``found.frame()``: the frame of the chain's first moves.
    """

    found: StartScales | None = None
    frame: np.ndarray | None = None

    @property
    def far_from_posterior(self) -> bool:
        """Whether the start's slopes put it far from the posterior (False: not measured)."""
        return self.found is not None and self.found.far_from_posterior


class StartScalesPhase(Phase):
    """Each coordinate's conditional scale at the chain's start, from second differences of the
    log density (:func:`~pymc_kernel_steps.core.conditional_scales`), so that the first moves
    suit a posterior whose coordinates differ in scale by orders of magnitude, or that is a thin
    ridge; the slopes also say whether the start lies far from the posterior.

    Sits out a chain whose log density is a noisy estimate (its differences would measure its
    noise) and a warm-started chain (its history gives the scales)."""

    name = "start_scales"

    def init(self, setup: ChainSetup) -> StartScalesState | None:
        return StartScalesState() if setup.exact and not setup.warm_started else None

    def at_start(self, state, start, log_density, tuning) -> Start:
        if start.scales is not None:
            return start
        found = conditional_scales(log_density, start.point, start.value)
        state.found, state.frame = found, found.frame()
        return dataclasses.replace(start.spent(found.evaluations), scales=found)


# ---------------------------------------------------------------------------- the climb
@dataclass
class ClimbState:
    """What :class:`ClimbPhase` did in a chain: ``climbed``, the climb (None: none)."""

    climbed: Climb | None = None

    @property
    def evaluations(self) -> int:
        return 0 if self.climbed is None else self.climbed.evaluations


class ClimbPhase(Phase):
    """The climb into the posterior's bulk (:func:`~pymc_kernel_steps.core.climb`) from a start
    that :class:`StartScalesPhase` measured far from the posterior, while the step tunes.

    Its evaluations are not the chain's own (a surrogate fitted to the chain's evaluations does
    not see them). Sits out compound sampling, where the rest of the model moves."""

    name = "climb"
    records_evaluations = False

    def init(self, setup: ChainSetup) -> ClimbState | None:
        return ClimbState() if setup.whole_model else None

    def at_start(self, state, start, log_density, tuning) -> Start:
        far = start.scales is not None and start.scales.far_from_posterior
        if not (tuning and far and state.climbed is None):
            return start
        found = climb(log_density, start.point, start.value)
        state.climbed = found
        if np.array_equal(found.point, start.point):
            return start.spent(found.evaluations)
        return start.moved_to(found.point, found.value, found.evaluations)


# ---------------------------------------------------------------------------- the scouts
@dataclass
class ScoutsState:
    """The scouts of a chain: the ``iterations`` they own and the ``scouts`` (once begun)."""

    iterations: int
    scouts: Scouts | None = None


class ScoutsPhase(Phase):
    """``count`` random walks of ``length`` iterations from the chain's start, advanced in turn
    (:class:`~pymc_kernel_steps.core.Scouts`); the chain goes on from the best, and the step's
    own random walk at the scale they learned.

    They own the first ``count × length`` iterations of tuning where these are at most ``share``
    of it; they sit out a noisy log density (the best of its estimates is a lucky one, on which
    a pseudo-marginal chain would stick), compound sampling and a warm-started chain (its
    history says where the posterior is).

    Parameters
    ----------
    count : int
        Walks (at least 2).
    length, share, scale_range
        Iterations of each walk; the largest share of tuning they take; the factor their
        random-walk scale stays within of its start (``2.38 / √d``).
    """

    name = "scouts"

    def __init__(
        self,
        count: int,
        length: int = SCOUT_LENGTH,
        share: float = SCOUT_SHARE,
        scale_range: float = SCOUT_SCALE_RANGE,
    ):
        if int(count) != count or count < 2:
            raise ValueError(f"`count` must be at least 2 walks, got {count!r}.")
        self.count = int(count)
        self.length = int(length)
        self.share = float(share)
        self.scale_range = float(scale_range)

    def init(self, setup: ChainSetup) -> ScoutsState | None:
        iterations = self.count * self.length
        if not (setup.exact and setup.whole_model and not setup.warm_started):
            return None
        return ScoutsState(iterations) if iterations <= self.share * setup.tune else None

    def at_start(self, state, start, log_density, tuning) -> Start:
        scale = RobbinsMonroScale.within(optimal_scale(start.point.size), self.scale_range)
        frame = None if start.scales is None else start.scales.frame()
        length = state.iterations // self.count
        state.scouts = Scouts.start(
            start.point.copy(), start.value, self.count, length, scale, frame
        )
        return start

    def owns(self, state, iteration, tuning) -> bool:
        return tuning and iteration < state.iterations

    def propose(self, state, rng) -> Proposal:
        scouts = state.scouts
        return Proposal(scouts.propose(rng), 0.0, scouts.walk)

    def decide(self, state, proposal, log_density, rng) -> Outcome:
        scouts = state.scouts
        walk = scouts.turn
        accepted, accept_prob, log_ratio = scouts.update(proposal.x, log_density, rng)
        if scouts.done:
            point, value = scouts.best()
            return Outcome(accepted, accept_prob, log_ratio, point, value, scouts.scale.scale)
        point, value = scouts.positions[walk].copy(), float(scouts.log_densities[walk])
        return Outcome(accepted, accept_prob, log_ratio, point, value)


# ---------------------------------------------------------------------------- the walkers
@dataclass
class WalkersState:
    """The walkers of a chain: the ``iterations`` they move for and the ``walkers`` (once
    begun)."""

    iterations: int
    walkers: TuningWalkers | None = None


class WalkersPhase(Phase):
    """``count`` copies of the chain that take turns, moved by the step's own transition, for
    ``share`` of the tuning iterations after the scouts
    (:class:`~pymc_kernel_steps.core.TuningWalkers`); the chain goes on from the highest. They
    sit out a noisy log density and compound sampling.

    Parameters
    ----------
    count : int
        Walkers (at least 2).
    share : float
        The share of the tuning iterations they move for.
    """

    name = "walkers"

    def __init__(self, count: int, share: float = WALKER_SHARE):
        if int(count) != count or count < 2:
            raise ValueError(f"`count` must be at least 2 walkers, got {count!r}.")
        if not (math.isfinite(share) and 0 < share <= 1):
            raise ValueError(f"`share` must lie in (0, 1], got {share!r}.")
        self.count = int(count)
        self.share = float(share)

    def init(self, setup: ChainSetup) -> WalkersState | None:
        iterations = int(self.share * setup.tune)
        if not (setup.exact and setup.whole_model and iterations):
            return None
        return WalkersState(iterations)

    def hand_over(self, state, point, value, iteration, tuning) -> tuple[np.ndarray, float] | None:
        if not tuning:
            return None
        if state.walkers is None:
            end = iteration + state.iterations
            state.walkers = TuningWalkers.start(point, value, self.count, end)
        elif state.walkers.done:
            return None
        return state.walkers.next_turn(point, value, iteration)
