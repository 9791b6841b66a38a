"""Kernel Hamiltonian Monte Carlo (paper 002) as a transition: HMC on a surrogate of the log
density learned from the chain, accepted with the true log density, as functions of an explicit
per-chain state.

:func:`init` builds a chain's :class:`KMCState`; :func:`step` makes one iteration (choose a move
and propose, evaluate the log density it is given at the proposal, the one
Metropolis–Hastings :func:`~pymc_kernel_steps.core.transitions.mh.decide`, record and adapt);
:func:`freeze` ends the tuning. Until the surrogate's first fit the chain makes random-walk
moves; afterwards surrogate trajectories (:class:`~pymc_kernel_steps.core.moves.SurrogateHMC`)
mixed with the random walk (``learned_moves=False``, the paper) or in the learned mixture with
differential evolution, snooker and an envelope
(:class:`~pymc_kernel_steps.core.moves.learned.LearnedMoves`); while tuning, each mixed with
single-coordinate moves.

The surrogate is whatever the settings' :class:`~pymc_kernel_steps.core.surrogates.SurrogateFitter`
fits: the transition asks it for the surrogate's frame, hyper-parameters and fit, whether it
learns from the evaluated log densities (:attr:`~SurrogateFitter.needs_evaluations`: they are
recorded while adapting) and whether it takes new states online
(:attr:`~SurrogateFitter.updates_online`: every adaptation iteration's state, else a refit every
``refit_interval`` iterations).

The state's components (the history, the moves, the tuners) are objects that :func:`step`
updates in place; it returns the state it was given.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..adaptation import (
    SCALE_RANGE,
    Adapter,
    DualAveraging,
    JumpDistanceStepSize,
    adaptation_probability,
    min_accepted_moves,
)
from ..bayesopt import SearchBox, WindowedTuner
from ..confinement import Confinement
from ..history import ChainHistory, first_visits
from ..moves import (
    CoordinateWalk,
    LearnedMoves,
    Mixture,
    Proposal,
    RandomWalk,
    SurrogateHMC,
    move_code,
    optimal_scale,
)
from ..surrogates import Evaluations, SurrogateFitter, TrainingData
from ..whitening import Whitening, moved_coordinates
from .mh import StepInfo, decide

__all__ = [
    "MIN_DISTINCT_STATES",
    "STATS",
    "EvaluationRecord",
    "KMCInfo",
    "KMCSettings",
    "KMCState",
    "freeze",
    "history_needed",
    "init",
    "propose",
    "record_evaluation",
    "sample_stats",
    "select_again",
    "set_random_walk_metric",
    "step",
    "warm_start",
]

#: fewer distinct training states than this (a stuck chain) and the surrogate is not refitted
MIN_DISTINCT_STATES = 10
#: a step size is kept only if trial trajectories on the surrogate conserve the surrogate's own
#: Hamiltonian (wall included) with mean acceptance ``min(1, exp(−ΔH))`` at least this; beyond the
#: leapfrog's stability limit that acceptance, like the true one, collapses to zero
_STABLE_ACCEPT = 0.5
#: step sizes stay below this fraction of the leapfrog's stability limit ``2/√(curvature)`` in the
#: surrogate's far field (where only the wall and the regression's Gaussian term act)
_FAR_FIELD_MARGIN = 0.9
#: evaluations recorded per chain at most (with ``adapt_after_tuning`` recording goes on through
#: the draws; beyond this the surrogate learns from the first ones only)
MAX_RECORDED_EVALUATIONS = 200_000
#: the random walk's history whitening is refreshed every this many states before the first fit
_WHITENING_REFRESH = 50


@dataclass(frozen=True)
class KMCSettings:
    """What a KMC chain is told and never learns.

    Attributes
    ----------
    dim : int
        The dimension of the states.
    fitter : SurrogateFitter
        Chooses and fits the surrogate.
    subsample_size : int or None
        The training states: a uniform sub-sample of at most this many of the most recent half
        of the history (with pooled states); None: that half in full.
    n_steps_range : tuple of int
        The trajectories' ``L`` range (``L ~ U{low..high}``); with ``trajectory_tuning``
        ``"bayesopt"``, the search box of ``L``.
    step_size : float or None
        The trajectories' initial step size (None: ``1/√d``).
    step_size_adaptation : {"esjd", "dual_averaging"}
        The step-size tuner: the expected squared jump's search, or dual averaging towards
        ``target_accept``.
    trajectory_tuning : {None, "bayesopt"}
        ``"bayesopt"``: ``(ε, L)`` by windowed Bayesian optimisation (paper 003) instead.
    target_accept : float
        Dual averaging's target acceptance.
    step_size_jitter : float
        The step size's relative jitter (without ``"bayesopt"``).
    min_history : int or None
        The history the first fit needs (None: see :func:`history_needed`).
    refit_interval : int
        Iterations between two fits of a surrogate that does not update online.
    adapt_mass : bool
        The trajectories' diagonal mass from the training states' variances.
    whiten : bool
        The surrogate lives in the fitter's frame (else the model's coordinates).
    confine : bool
        Trajectories feel a wall around the training states and abort far beyond it.
    learned_moves : bool
        The trajectory in the learned mixture (else mixed with the random walk alone).
    random_walk_probability : float
        The random walk's share of the fixed mixture (``learned_moves=False``).
    adapt_after_tuning : bool
        Keep adapting after :func:`freeze`, with a vanishing probability.
    coordinate_share_early, coordinate_share_late : float
        The tuning iterations' share of single-coordinate moves before and after the first fit.
    """

    dim: int
    fitter: SurrogateFitter
    subsample_size: int | None = None
    n_steps_range: tuple[int, int] = (10, 30)
    step_size: float | None = None
    step_size_adaptation: str = "esjd"
    trajectory_tuning: str | None = None
    target_accept: float = 0.8
    step_size_jitter: float = 0.2
    min_history: int | None = None
    refit_interval: int = 100
    adapt_mass: bool = True
    whiten: bool = True
    confine: bool = True
    learned_moves: bool = True
    random_walk_probability: float = 0.25
    adapt_after_tuning: bool = False
    coordinate_share_early: float = 0.5
    coordinate_share_late: float = 0.1

    @property
    def initial_step_size(self) -> float:
        """The step size the first tuner starts from (``1/√d`` unless given)."""
        return self.step_size or 1.0 / math.sqrt(self.dim)


def history_needed(settings: KMCSettings, tune_length: int = 0) -> int:
    """The history the surrogate's first fit needs: ``settings.min_history``, else
    ``max(300, 20 d)``, at most a third of a tuning phase of ``tune_length`` iterations (at least
    50), so that two thirds of a short tuning are left to the surrogate."""
    if settings.min_history is not None:
        return settings.min_history
    default = max(300, 20 * settings.dim)
    if tune_length:
        default = min(default, max(50, tune_length // 3))
    return default


@dataclass
class EvaluationRecord:
    """Where a chain evaluated the log density while adapting, and the values there (for a
    fitter that :attr:`~SurrogateFitter.needs_evaluations`).

    Attributes
    ----------
    points : ChainHistory
    values : list of float
        NaN and ±inf as evaluated.
    """

    points: ChainHistory
    values: list = field(default_factory=list)

    def evaluations(self) -> Evaluations:
        """The record as :class:`~pymc_kernel_steps.core.surrogates.Evaluations`."""
        return Evaluations(self.points.points, np.asarray(self.values))


@dataclass
class KMCState:
    """One KMC chain: where it is and what it learned.

    Attributes
    ----------
    position : numpy.ndarray
        The current state.
    log_density : float
        The log density at ``position``.
    history : ChainHistory
        The states the chain visited (repeats after rejections included).
    hmc : SurrogateHMC
        The surrogate trajectory: surrogate, frame, mass, confinement, step size and its tuner.
    random_walk : RandomWalk
        The random walk of the first moves and of the mixtures; its metric is the history's
        whitening, in which jumps are measured.
    coordinate : CoordinateWalk
        The tuning phase's single-coordinate moves.
    learned : LearnedMoves or None
        The learned mixture (None with ``settings.learned_moves`` False).
    mixture : Mixture
        After the first fit: the learned mixture, or the trajectory mixed with the random walk.
    early_moves, late_moves : Mixture
        The tuning phase's mixtures of coordinate moves with the random walk (or the learned
        mixture) before the first fit, and with ``mixture`` after.
    settings : KMCSettings
    evaluations : EvaluationRecord or None
        The evaluations recorded for the fitter (None: it learns from the states alone).
    hyperparameters : object or None
        The surrogate's hyper-parameters at its last selection.
    tuning : bool
        Whether the chain tunes (:func:`freeze` ends it).
    tune_length : int
        The tuning iterations planned (0: unknown).
    iteration : int
        Iterations made (a warm-up's included: the caller may set it).
    adaptation_iteration : int
        Iterations that adapted.
    accepted_moves : int
        Accepted proposals (a warm-up's included: the caller may set it).
    last_fit_iteration : int
        The iteration of the surrogate's last fit.
    next_selection_size : int
        The history at which the hyper-parameters are selected again.
    warm_started : bool
        The history began with given states (:func:`warm_start`).
    start_frame : numpy.ndarray or None
        Each coordinate's scale at the chain's start, the frame of the first moves (None: 1).
    pooled_states : numpy.ndarray or None
        Other chains' states that the fits draw from too (pooled tuning).
    pooled_evaluations : Evaluations or None
        Other chains' evaluations that the fits learn from too (pooled tuning).
    """

    position: np.ndarray
    log_density: float
    history: ChainHistory
    hmc: SurrogateHMC
    random_walk: RandomWalk
    coordinate: CoordinateWalk
    learned: LearnedMoves | None
    mixture: Mixture
    early_moves: Mixture
    late_moves: Mixture
    settings: KMCSettings
    evaluations: EvaluationRecord | None = None
    hyperparameters: object = None
    tuning: bool = True
    tune_length: int = 0
    iteration: int = 0
    adaptation_iteration: int = 0
    accepted_moves: int = 0
    last_fit_iteration: int = 0
    next_selection_size: int = 0
    warm_started: bool = False
    start_frame: np.ndarray | None = None
    pooled_states: np.ndarray | None = None
    pooled_evaluations: Evaluations | None = None


@dataclass(frozen=True)
class KMCInfo(StepInfo):
    """What one :func:`step` did: :class:`~pymc_kernel_steps.core.transitions.mh.StepInfo`'s
    fields (a trajectory's :class:`~pymc_kernel_steps.core.moves.Trajectory` in
    ``proposal.extra``) and

    Attributes
    ----------
    refit : bool
        The surrogate was fitted (or updated) this iteration.
    """

    refit: bool


def init(
    position,
    log_density: float,
    settings: KMCSettings,
    *,
    history: ChainHistory | None = None,
    tuning: bool = True,
    tune_length: int = 0,
) -> KMCState:
    """A chain's state at ``position`` (log density ``log_density``), before any fit.

    A caller that learns the position only later (a PyMC step, before the warm-up) may pass NaN
    and set :attr:`KMCState.position` and :attr:`KMCState.log_density` before the first
    :func:`step`.

    Parameters
    ----------
    position : array_like, shape (d,)
    log_density : float
    settings : KMCSettings
    history : ChainHistory, optional
        The history to learn from (default: an empty one).
    tuning : bool
        Whether the chain starts tuning (False: frozen from the start; a :func:`warm_start`
        belongs before the :func:`freeze`).
    tune_length : int
        The tuning iterations planned (0: unknown).

    Returns
    -------
    KMCState
    """
    dim = settings.dim
    history = ChainHistory(dim) if history is None else history
    random_walk = RandomWalk.optimal(dim, SCALE_RANGE, target=0.234)
    hmc = SurrogateHMC(dim, settings.n_steps_range, settings.step_size_jitter)
    coordinate = CoordinateWalk(dim, optimal_scale(dim))
    if settings.learned_moves:
        # one mixture from the start: the trajectory passes its turn on until the first fit
        learned = LearnedMoves(hmc, random_walk, history)
        mixture = early = learned.mixture
    else:
        learned = None
        share = settings.random_walk_probability
        mixture = Mixture([(random_walk, share), (hmc, 1.0 - share)])
        early = random_walk
    early_share, late_share = settings.coordinate_share_early, settings.coordinate_share_late
    state = KMCState(
        position=np.array(position, dtype=float),
        log_density=float(log_density),
        history=history,
        hmc=hmc,
        random_walk=random_walk,
        coordinate=coordinate,
        learned=learned,
        mixture=mixture,
        early_moves=Mixture([(coordinate, early_share), (early, 1.0 - early_share)]),
        late_moves=Mixture([(coordinate, late_share), (mixture, 1.0 - late_share)]),
        settings=settings,
        evaluations=(
            EvaluationRecord(ChainHistory(dim)) if settings.fitter.needs_evaluations else None
        ),
        tune_length=int(tune_length),
        next_selection_size=history_needed(settings, tune_length),
    )
    set_random_walk_metric(state, Whitening.identity(dim))
    return state if tuning else freeze(state)


def set_random_walk_metric(state: KMCState, metric: Whitening) -> None:
    """The random walk's metric, in which the trajectories' jumps are measured too (the start's
    frame until the history gives one)."""
    state.random_walk.metric = metric
    state.hmc.jump_metric = metric


def freeze(state: KMCState) -> KMCState:
    """End of tuning: the trajectory takes its tuner's final step size (and ``L``) and the
    learned mixture's weights, population and moves are fixed, so the draws come from one
    Metropolis–Hastings kernel (``settings.adapt_after_tuning`` keeps refitting the surrogate
    with a vanishing probability). The step size is then shrunk where trajectories on the
    surrogate frozen now are unstable: the tuned step size belongs to the surrogates seen while
    tuning, and the one frozen (a refit, or the last online updates) may be steeper. A second
    call changes nothing.

    Returns
    -------
    KMCState
        ``state``, frozen in place.
    """
    was_tuning = state.tuning
    state.tuning = False
    hmc = state.hmc
    hmc.freeze()
    if state.learned is not None:
        state.learned.freeze()
    if was_tuning and hmc.ready and math.isfinite(hmc.step_size):
        hmc.step_size = _stable_step_size(state, hmc.step_size)
    return state


def warm_start(
    rng: np.random.Generator,
    state: KMCState,
    states,
    *,
    log_densities=None,
    hyperparameters=None,
) -> bool:
    """Begin the history with ``states`` (an earlier run's) and fit the surrogate, the
    whitening, the mass and the step size to them before the first iteration (no random-walk
    phase). Call it before :func:`freeze`: the learned mixture's population and envelope take
    them too.

    Parameters
    ----------
    rng : numpy.random.Generator
    state : KMCState
    states : array_like, shape (n, d)
    log_densities : array_like, shape (n,), optional
        The log densities at ``states``, recorded for a fitter that needs evaluations.
    hyperparameters : object, optional
        The surrogate's hyper-parameters, chosen already (None: selected now).

    Returns
    -------
    bool
        Whether the surrogate was fitted (False: the states hold too few distinct ones).
    """
    if log_densities is not None and state.evaluations is not None:
        state.evaluations.points.extend(states)
        state.evaluations.values.extend(np.asarray(log_densities, dtype=float).tolist())
    state.history.extend(states)
    state.warm_started = True
    return _fit(rng, state, select=True, chosen=hyperparameters)


def record_evaluation(state: KMCState, x, value: float) -> None:
    """Record an evaluation of the log density at ``x`` for a fitter that needs evaluations,
    while the chain adapts (an evaluation outside :func:`step`: the start's, a warm-up's)."""
    record = state.evaluations
    if (
        record is not None
        and (state.tuning or state.settings.adapt_after_tuning)
        and len(record.values) < MAX_RECORDED_EVALUATIONS
    ):
        record.points.append(x)
        record.values.append(value)


def select_again(state: KMCState) -> None:
    """Once the surrogate is fitted, select its hyper-parameters again at the next iteration
    that adapts (new data arrived: other chains' with pooled tuning)."""
    if state.hmc.ready:
        state.next_selection_size = len(state.history)


def step(
    rng: np.random.Generator, state: KMCState, log_density_fn: Callable[[np.ndarray], float]
) -> tuple[KMCState, KMCInfo]:
    """One iteration: propose, evaluate ``log_density_fn`` at the proposal (unless it is
    rejected without: an aborted trajectory, a null or degenerate proposal), accept or reject,
    then record the outcome and adapt.

    Parameters
    ----------
    rng : numpy.random.Generator
        Every random number of the iteration (the move, the proposal, the accept test, the fits).
    state : KMCState
        The chain's state; updated in place.
    log_density_fn : callable
        The target's log density at a point. It may return NaN or +inf (the proposal is
        rejected; the value is reported in :attr:`KMCInfo.log_density`) and may raise (the
        state's position is then unchanged).

    Returns
    -------
    state : KMCState
        ``state``, after the iteration.
    info : KMCInfo
    """
    x = state.position
    proposal = propose(rng, state)
    decision = decide(rng, proposal, state.log_density, log_density_fn)
    if decision.evaluations:
        record_evaluation(state, proposal.x, decision.log_density)
    accepted, accept_prob = decision.accepted, decision.accept_prob
    if accepted:
        x_new = proposal.x
        state.log_density = decision.usable_log_density
    else:
        x_new = x
    state.position = np.array(x_new, copy=True)
    state.history.append(x_new)
    state.iteration += 1
    state.accepted_moves += accepted
    proposal.move.record(proposal, x, accepted, accept_prob)
    if state.learned is not None and state.tuning:
        state.learned.record(proposal, x, accept_prob, state.random_walk.metric)
    refit = False
    if _adapting(rng, state):
        proposal.move.update(proposal, x, accept_prob, rng)
        refit = _adapt(rng, state)
        state.adaptation_iteration += 1
    info = KMCInfo.of(proposal, decision, refit=refit)
    return state, info


#: the sample stats of :func:`sample_stats` (name: dtype and shape), the trajectory's under the
#: names of PyMC's HMC and NUTS; a learned mixture adds its moves' weights and acceptances
#: (:meth:`~pymc_kernel_steps.core.moves.LearnedMoves.stats_dtypes_shapes`)
STATS = {
    "diverging": (bool, []),
    "step_size": (np.float64, []),
    "n_steps": (np.int64, []),
    "energy_error": (np.float64, []),
    "n_history": (np.int64, []),
    "refit": (bool, []),
    "surrogate": (bool, []),
    "lengthscale": (np.float64, []),
    "move": (np.int64, []),
}


def sample_stats(
    state: KMCState, proposal: Proposal, log_accept_ratio: float, info: KMCInfo | None = None
) -> dict:
    """The sample stats (:data:`STATS`) of the iteration that made ``proposal`` and left
    ``state``: the one :func:`step` reported by ``info``, or one of a warm-up phase (``info``
    None: no refit).

    ``diverging`` is NUTS's: a trajectory whose true energy is non-finite (it left the support,
    the model was NaN there, or the integration blew up), or any proposal rejected without
    evaluating the model (not a null proposal, which is the state itself)."""
    trajectory = proposal.extra if proposal.move is state.hmc else None
    degenerate = not proposal.evaluated and not proposal.null
    hyperparameters = state.hyperparameters
    stats = {
        "diverging": degenerate or (trajectory is not None and not math.isfinite(log_accept_ratio)),
        "step_size": math.nan if trajectory is None else trajectory.step_size,
        "n_steps": 0 if trajectory is None else trajectory.n_steps,
        "energy_error": -log_accept_ratio if math.isfinite(log_accept_ratio) else math.inf,
        "n_history": len(state.history),
        "refit": info is not None and info.refit,
        "surrogate": trajectory is not None,
        "lengthscale": math.nan if hyperparameters is None else hyperparameters.lengthscale,
        "move": move_code(proposal),
    }
    if state.learned is not None:
        stats.update(state.learned.sample_stats())
    return stats


def propose(rng: np.random.Generator, state: KMCState) -> Proposal:
    """A proposal from ``state.position``: the random walk (or the learned mixture, whose
    trajectory passes its turn on) until the first fit, then the mixture with surrogate
    trajectories; while tuning, mixed with single-coordinate moves."""
    if state.hmc.ready:
        moves = state.late_moves if state.tuning else state.mixture
    elif state.tuning:
        moves = state.early_moves
    else:
        moves = state.random_walk if state.learned is None else state.mixture
    return moves.choose(rng).propose(rng, state.position)


def _adapting(rng: np.random.Generator, state: KMCState) -> bool:
    if state.tuning:
        return True
    if not state.settings.adapt_after_tuning:
        return False
    return rng.uniform() < adaptation_probability(state.adaptation_iteration)


# ---------------------------------------------------------------------- adaptation
def _adapt(rng: np.random.Generator, state: KMCState) -> bool:
    """Before the first fit, the random walk's whitening every 50 states and the first fit once
    the history and the accepted moves suffice; after it, a new selection whenever the history
    has doubled, else the surrogate's update. Returns whether the surrogate was (re)fitted."""
    history = state.history
    if not state.hmc.ready:
        if len(history) % _WHITENING_REFRESH == 0:
            _update_history_whitening(state)
        pooled = 0 if state.pooled_states is None else len(state.pooled_states)
        return (
            len(history) + pooled
            >= max(history_needed(state.settings, state.tune_length), state.next_selection_size)
            and state.accepted_moves >= min_accepted_moves(state.settings.dim)
            and _fit(rng, state, select=True)
        )
    if len(history) >= state.next_selection_size:
        return _fit(rng, state, select=True)
    return _update_surrogate(rng, state)


def _update_surrogate(rng: np.random.Generator, state: KMCState) -> bool:
    """A surrogate that updates online takes the new state (and the wall encloses it); another
    is refitted every ``refit_interval`` iterations."""
    settings, hmc = state.settings, state.hmc
    if settings.fitter.updates_online:
        u = hmc.frame.whiten(state.position)
        hmc.surrogate.update(u)
        if settings.confine:
            hmc.confinement = hmc.confinement.enclosing(u)
        return True
    if state.iteration - state.last_fit_iteration < settings.refit_interval:
        return False
    return _fit(rng, state, select=False)


def _recent_history(state: KMCState) -> np.ndarray:
    """The most recent half of the history: what the chain learned, without the transient."""
    history = state.history
    return history.points[len(history) // 2 :]


def _training_states(rng: np.random.Generator, state: KMCState) -> np.ndarray:
    size = state.settings.subsample_size
    if size is None:
        return _recent_history(state)
    return state.history.recent_subsample(rng, size, state.pooled_states)


def _recorded_evaluations(state: KMCState) -> Evaluations | None:
    """The chain's recorded evaluations and, with pooled tuning, the other chains'."""
    if state.evaluations is None:
        return None
    own = state.evaluations.evaluations()
    pooled = state.pooled_evaluations
    if pooled is None:
        return own
    return Evaluations(
        np.concatenate([own.points, pooled.points]),
        np.concatenate([own.log_densities, pooled.log_densities]),
    )


def _fallback_variance(state: KMCState) -> np.ndarray:
    """Each coordinate's variance under the random walk: the whitening's value for a coordinate
    the history has not moved."""
    frame = np.ones(state.settings.dim) if state.start_frame is None else state.start_frame
    return (state.random_walk.scale.scale * frame) ** 2


def _update_history_whitening(state: KMCState) -> None:
    """Mean and covariance of the recent history: the random-walk moves' metric (and the
    learned mixture's envelope), once the chain has moved enough."""
    if state.warm_started or state.accepted_moves >= min_accepted_moves(state.settings.dim):
        whitening = Whitening.from_points(
            _recent_history(state),
            fallback_variance=_fallback_variance(state),
            min_variance=state.coordinate.variance_floor(),
        )
        set_random_walk_metric(state, whitening)
        if state.learned is not None:
            state.learned.fit_envelope(whitening)


def _far_field_step_size_limit(state: KMCState) -> float:
    """The largest step size allowed: a margin below the leapfrog's stability limit
    ``2 / √(max_j M⁻¹_jj · κ)`` for the curvature ``κ`` that trajectories meet far from the
    history, the confining wall's stiffness plus the surrogate's own far-field curvature
    (:attr:`~pymc_kernel_steps.core.surrogates.SurrogateFitter.far_field_curvature`; inf when
    neither acts). A quartic trend steepens without bound far out; there the abort ball stops
    what the limit cannot.

    Beyond that limit a trajectory that leaves the data region grows geometrically: on the
    glass model a regression trajectory of 28 steps of size 1.6 reached 10⁹ and the model was
    evaluated there. The limit depends on the adapted mass and wall alone, never on the
    trajectory, so capping the step size at it keeps the move exact."""
    hmc = state.hmc
    curvature = hmc.confinement.far_field_curvature + state.settings.fitter.far_field_curvature
    if curvature <= 0.0:
        return math.inf
    return _FAR_FIELD_MARGIN * 2.0 / math.sqrt(float(np.max(hmc.inv_mass)) * curvature)


def _stable_step_size(state: KMCState, step_size: float) -> float:
    """The largest step size up to ``step_size`` (and the far-field limit) at which trajectories
    on the current surrogate from recent states keep the surrogate's own Hamiltonian
    (:meth:`SurrogateHMC.stable_step_size`): mean ``min(1, exp(−ΔH))`` at least
    ``_STABLE_ACCEPT``, or dual averaging's ``target_accept`` if lower. It draws from a
    generator of its own: the chain's random stream is left alone."""
    settings = state.settings
    threshold = _STABLE_ACCEPT
    if settings.step_size_adaptation == "dual_averaging":  # never above the user's target
        threshold = min(threshold, settings.target_accept)
    step_size = min(step_size, _far_field_step_size_limit(state))
    return state.hmc.stable_step_size(step_size, _recent_history(state), threshold)


def _fit(rng: np.random.Generator, state: KMCState, select: bool, chosen=None) -> bool:
    """(Re)fit the surrogate; with ``select`` also choose its hyper-parameters by
    cross-validation (or take ``chosen``, hyper-parameters chosen already), re-estimate the
    frame, the mass and the confinement, and restart the step-size tuner.

    Returns False, changing nothing, when the training states hold fewer than
    :data:`MIN_DISTINCT_STATES` distinct states (a chain stuck on a lucky pseudo-marginal
    estimate): the surrogate so far, or the random walk before the first fit, is kept, and the
    next selection waits until the history has doubled."""
    settings, hmc = state.settings, state.hmc
    fitter = settings.fitter
    training = _training_states(rng, state)
    if len(first_visits(training)) < MIN_DISTINCT_STATES:
        if select:
            state.next_selection_size = 2 * len(state.history)
        return False
    evaluations = _recorded_evaluations(state)
    if select:
        _update_history_whitening(state)
        if settings.whiten:
            hmc.frame = fitter.frame(state.random_walk.metric, evaluations, rng)
    points = hmc.frame.whiten(training)
    data = TrainingData(points, hmc.frame, evaluations)
    if select:
        variance = points.var(axis=0)
        spread = np.all(moved_coordinates(training)) and np.all(
            np.isfinite(variance) & (variance > 0)
        )
        if settings.adapt_mass and spread:
            hmc.inv_mass = variance
        if settings.confine:
            hmc.confinement = Confinement.around(points, hmc.inv_mass)
        hmc.step_size_cap = _far_field_step_size_limit(state)
        if chosen is None:
            state.hyperparameters = fitter.select(data, rng)
        else:
            state.hyperparameters = copy.deepcopy(chosen)
        state.next_selection_size = 2 * len(state.history)
    hmc.surrogate = fitter.fit(data, state.hyperparameters, rng)
    state.last_fit_iteration = state.iteration
    if select:
        initial = settings.initial_step_size if hmc.tuner is None else hmc.step_size
        # start the search where trajectories on the new surrogate do not blow up
        hmc.tuner = _step_size_tuner(state, _stable_step_size(state, initial))
        hmc.step_size, hmc.max_n_steps = hmc.tuner.value
    return True


def _step_size_tuner(state: KMCState, step_size: float) -> Adapter:
    """A new tuner of the trajectories started at ``step_size``, as ``trajectory_tuning`` and
    ``step_size_adaptation`` ask."""
    settings = state.settings
    if settings.trajectory_tuning == "bayesopt":
        return _trajectory_tuner(state, step_size, state.hmc.max_n_steps)
    if settings.step_size_adaptation == "esjd":
        tuner = JumpDistanceStepSize(step_size)
        tuner.max_step_size = min(tuner.max_step_size, _far_field_step_size_limit(state))
        return tuner
    return DualAveraging(step_size, target=settings.target_accept)


def _trajectory_tuner(state: KMCState, step_size: float, max_n_steps: int | None) -> WindowedTuner:
    """GP-UCB over ``ε ∈ [ε₀/30, 3ε₀]`` (``ε₀`` the initial step size: the same box at every
    restart, so that the search cannot drift) and ``L`` in the ``n_steps`` range (paper 003),
    started at ``(step_size, max_n_steps)`` (``L_max`` at first), rewarding the ESJD per target
    evaluation (one per iteration: the trajectory costs none), in windows of a hundredth of the
    tuning phase."""
    settings = state.settings
    initial = settings.initial_step_size
    low, high = settings.n_steps_range
    box = SearchBox(
        (initial / 30, low),
        (3 * initial, high),
        integer=(False, True),
        log_scale=(True, True),
        names=("step_size", "n_steps"),
    )
    window = max(1, state.tune_length // 100)
    start = (step_size, max_n_steps or box.upper[1])
    return WindowedTuner(box, window, cost_exponent=0.0, start=start)
