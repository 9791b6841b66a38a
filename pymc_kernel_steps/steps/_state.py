"""Per-chain state and per-iteration data of the steps."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state

from ..core.history import ChainHistory
from ..core.moves import CoordinateWalk, Proposal, RandomWalk
from ..core.scouting import Scouts
from ..core.walkers import TuningWalkers
from ..core.warmup import ClimbPhase, ScoutsPhase, StartScalesPhase, WalkersPhase

__all__ = [
    "HMC_STATS",
    "ChainState",
    "KernelStepState",
    "RefusesOtherKindsOfState",
    "MoveRuns",
    "Transition",
    "TuningData",
    "TuningMixing",
]

#: the sample stats of a step whose moves include Hamiltonian trajectories, under the names of
#: PyMC's HMC and NUTS (which ArviZ's energy plot and PyMC's divergence checks read)
HMC_STATS = {
    "step_size": (np.float64, []),
    "n_steps": (np.int64, []),
    "energy_error": (np.float64, []),
    "energy": (np.float64, []),
    "diverging": (bool, []),
}


@dataclass(frozen=True)
class TuningData:
    """What a chain learns its proposal from while tuning, as pooled tuning shares it.

    :meth:`KernelStep.tuning_data` exports a chain's own; :meth:`KernelStep.absorb_tuning_data`
    gives a chain the other chains' (``pymc_kernel_steps.distributed.sample(pooled_tuning=True)``
    does both between windows of tuning iterations).

    Attributes
    ----------
    states : ndarray, shape (n, d)
        The most recent half of the chain's history, in the step's coordinates.
    points : ndarray, shape (m, d)
        Where the chain evaluated the model's log density while tuning, for the steps that fit
        a surrogate to evaluations (``KMCLite``'s regression surrogate); empty for the others.
    log_densities : ndarray, shape (m,)
        The log densities at ``points``.
    """

    states: np.ndarray
    points: np.ndarray
    log_densities: np.ndarray

    @classmethod
    def concatenate(cls, parts, dim: int) -> TuningData:
        """The data of every chain in ``parts`` together (checked: a sequence of them, ``dim``
        columns, finite states and points; a log density may be -inf or NaN, as recorded)."""
        if isinstance(parts, TuningData):
            raise TypeError("expected a sequence of TuningData (one per chain), got one TuningData")
        parts = list(parts)
        for part in parts:
            if not isinstance(part, TuningData):
                raise TypeError(f"expected TuningData, got {type(part).__name__}")
            points = np.asarray(part.points)
            if np.shape(part.states)[1:] != (dim,) or points.shape[1:] != (dim,):
                raise ValueError(
                    f"tuning data of dimension {np.shape(part.states)[1:]} for a step of "
                    f"dimension {dim}"
                )
            if np.shape(part.log_densities) != points.shape[:1]:
                raise ValueError("tuning data: one log density per point expected")
            if not (np.all(np.isfinite(part.states)) and np.all(np.isfinite(points))):
                raise ValueError("tuning data: its states and points must be finite")
        empty = np.empty((0, dim))
        return cls(
            np.concatenate([empty, *(np.asarray(p.states, float) for p in parts)]),
            np.concatenate([empty, *(np.asarray(p.points, float) for p in parts)]),
            np.concatenate([np.empty(0), *(np.asarray(p.log_densities, float) for p in parts)]),
        )


@dataclass
class MoveRuns:
    """One move kind's record after tuning, for the stalled-move check: how often the mixture
    chose it and it moved the chain; its current run of consecutive tries that did not, with
    the iteration it began at; and the longest such run, with its first and last iteration
    (where the chain was then is in its history)."""

    tries: int = 0
    moves: int = 0
    run: int = 0
    run_start: int = 0
    longest: int = 0
    longest_start: int = 0
    longest_end: int = 0


@dataclass(frozen=True)
class TuningMixing:
    """The effective sample size of the late half of a chain's tuning phase, the states its
    moves learned from last, in its slowest coordinate (``coordinate``, an index into the
    step's raveled variables), and the tuning iterations it counts."""

    effective_states: float
    coordinate: int
    tuning_iterations: int


@dataclass
class ChainState:
    """What one chain of a step learned and where it is: the step's public ``chain`` attribute.

    ``step.chain`` holds the state of the chain the step ran last (``setup_chain`` resets it for
    each chain; with parallel chains, that of the step in the process that ran it). Read it after
    sampling to see what the chain learned; each step's subclass adds its own attributes
    (:class:`KMCChain`, :class:`KAMHChain`, :class:`CKAMChain`, :class:`AdaptiveHMCChain`).
    The attributes listed are the public interface, to read, not to write: writing to them is
    not supported. The other fields are internal bookkeeping (the counters of the end-of-chain
    warnings, the sums of the ``accept_rate`` stat, the current point, ...) and may change
    without notice.

    Attributes
    ----------
    history : ChainHistory
        The states the chain visited since its tuning began (repeats after rejections
        included, in the step's coordinates); with ``history=``, the warm start's states first.
    iteration : int
        Iterations the step made in this chain (tuning and draws).
    total_iterations : int
        The chain's tuning and draws together, as ``setup_chain`` was told.
    warmup : dict
        The per-chain states of the step's warm-up phases that take part in this chain
        (``step.phases``; :mod:`~pymc_kernel_steps.core.warmup`), by phase name; None before
        the chain's set-up or first iteration. The next seven attributes read them.
    start_scales : ndarray, shape (d,) or None
        The frame of the first random-walk moves, the coordinate moves and the scouts: each
        coordinate's conditional scale at the chain's start where it lies more than a factor
        100 from 1 and the start is in the posterior's bulk, else 1
        (:meth:`~pymc_kernel_steps.core.StartScales.frame`; None: not measured).
    start_far_from_posterior : bool
        Whether the start's slopes put it far from the posterior
        (:attr:`~pymc_kernel_steps.core.StartScales.far_from_posterior`): a transient, where the
        scales measured there say nothing of the posterior's (False: not measured).
    climb_evaluations : int
        Evaluations of the climb before tuning (``climb=``; 0: the chain did not climb).
    scout_iterations : int
        The first iterations of tuning that belong to the scouts (0: no scouts).
    scouts : Scouts or None
        The scouts (``scouts=``), once they began.
    walker_iterations : int
        The iterations of tuning, after the scouts, in which the walkers take turns
        (``walkers=``; 0: no walkers).
    walkers : TuningWalkers or None
        The walkers, once they began.
    random_walk : RandomWalk or None
        The step's own random walk (steps that offer scouts), which restarts at the scale of
        the scouts.
    """

    # the public attributes (documented above)
    history: ChainHistory
    iteration: int = 0
    total_iterations: int = 0
    warmup: dict[str, Any] | None = None
    random_walk: RandomWalk | None = None
    # internal bookkeeping, not part of the public interface
    current_point: np.ndarray | None = None
    current_logp: float = math.nan
    outside_values: list[np.ndarray] = field(default_factory=list)
    adaptation_iteration: int = 0
    rejection_run: int = 0
    accepted_moves: int = 0
    longest_rejection_run: int = 0
    longest_rejection_run_end: int = 0
    degenerate_proposals: int = 0
    #: surrogate trajectories that diverged or left the abort ball (KMC), not evaluated either
    aborted_trajectories: int = 0
    nan_log_densities: int = 0
    #: proposals whose log density was +inf (rejected), and where the first one was
    infinite_log_densities: int = 0
    first_infinite_at: str | None = None
    draws_done: int = 0
    draws_accepted: int = 0
    #: the run of rejections after tuning, the longest one, the iteration it ended and the point
    #: where the chain sat, for the sticky-excursion check
    draws_rejection_run: int = 0
    draws_longest_run: int = 0
    draws_longest_run_end: int = 0
    draws_longest_run_point: np.ndarray | None = None
    #: per move kind after tuning (steps that mix moves), for the stalled-move check
    draws_move_runs: dict[str, MoveRuns] = field(default_factory=dict)
    #: draws after tuning with the `diverging` stat (steps that emit it)
    draws_diverging: int = 0
    #: how well the chain mixed in the late half of its tuning phase, for the unsettled-tuning
    #: check (None: tuning too short to judge, or a warm start)
    tuning_mixing: TuningMixing | None = None
    #: sum and count of the acceptance probabilities since the start of the current phase
    #: (tuning or drawing), for the `accept_rate` stat
    accept_sum: float = 0.0
    accept_count: int = 0
    #: the single-coordinate moves of the tuning phase (created at the first)
    coordinate: CoordinateWalk | None = None
    #: the other chains' tuning data (pooled tuning), learned from with the chain's own
    pooled: TuningData | None = None

    def _warmup_state(self, phase: type) -> Any:
        return None if self.warmup is None else self.warmup.get(phase.name)

    @property
    def start_scales(self) -> np.ndarray | None:
        state = self._warmup_state(StartScalesPhase)
        return None if state is None else state.frame

    @property
    def start_far_from_posterior(self) -> bool:
        state = self._warmup_state(StartScalesPhase)
        return state is not None and state.far_from_posterior

    @property
    def climb_evaluations(self) -> int:
        state = self._warmup_state(ClimbPhase)
        return 0 if state is None else state.evaluations

    @property
    def scout_iterations(self) -> int:
        state = self._warmup_state(ScoutsPhase)
        return 0 if state is None else state.iterations

    @property
    def scouts(self) -> Scouts | None:
        state = self._warmup_state(ScoutsPhase)
        return None if state is None else state.scouts

    @property
    def walker_iterations(self) -> int:
        state = self._warmup_state(WalkersPhase)
        return 0 if state is None else state.iterations

    @property
    def walkers(self) -> TuningWalkers | None:
        state = self._warmup_state(WalkersPhase)
        return None if state is None else state.walkers


@dataclass
class Transition:
    """What one iteration did, for the step's adaptation and its sample stats.

    Attributes
    ----------
    proposal : Proposal
        The proposal and the move that made it.
    info : NamedTuple or None
        The info of the transition's ``step`` (``KAMHInfo``, ``KMCInfo``, ``CKAMInfo``); None
        for a warm-up phase's iteration.
    accepted : bool
    accept_prob : float
        ``min(1, exp(log_accept_ratio))``.
    log_accept_ratio : float
        −inf for a proposal rejected without evaluating the model.
    """

    proposal: Proposal
    info: Any
    accepted: bool
    accept_prob: float
    log_accept_ratio: float

    @property
    def degenerate(self) -> bool:
        """Rejected without evaluating the model (a non-finite proposal or correction), not a
        null proposal."""
        return not self.proposal.evaluated and not self.proposal.null


class RefusesOtherKindsOfState:
    """Mixin of the steps: the ``sampling_state`` setter refuses a state of another kind of
    step before anything is set (PyMC's setter checks the frozen ``name`` only after it has
    restored the state's generator)."""

    @property
    def sampling_state(self):
        return super().sampling_state

    @sampling_state.setter
    def sampling_state(self, state) -> None:
        kind = getattr(state, "name", None)
        if kind != self.name:
            raise ValueError(
                f"{type(self).__name__} (a {self.name!r} step) cannot take the sampling state "
                f"of a {kind!r} step; nothing was set."
            )
        super(RefusesOtherKindsOfState, type(self)).sampling_state.fset(self, state)


@dataclass_state
class KernelStepState(StepMethodState):
    """A step's sampling state as PyMC's ``sampling_state`` gets and sets it; ``name``, the
    step's kind, is frozen, so that one step's state is refused by a step of another kind
    (whose chain state has other fields)."""

    name: str = field(metadata={"frozen": True})
    tune: bool
    chain: ChainState
