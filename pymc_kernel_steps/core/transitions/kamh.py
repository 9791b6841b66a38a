"""Kernel Adaptive Metropolis–Hastings (paper 001) as a transition: functions of an explicit
per-chain state, with Adaptive Metropolis as its linear-kernel case.

:func:`init` builds a chain's :class:`KAMHState` from its first point; :func:`step` makes one
iteration (propose, evaluate the log density it is given at the proposal, the one
Metropolis–Hastings :func:`~pymc_kernel_steps.core.transitions.mh.accept`, record and adapt);
:func:`freeze` ends the tuning. Until the KAM move's first fit the chain makes random-walk moves
(mixed with single-coordinate moves while tuning); afterwards the KAM move
``x* ~ N(x, γ² I + ν² Mᵀ H M)``, alone (``learned_moves=False``, the paper) or in a mixture with
differential evolution, snooker, an envelope and the random walk whose weights are learned while
tuning (:class:`~pymc_kernel_steps.core.moves.learned.LearnedMoves`). While tuning, each KAM
proposal uses one of several lengthscales of the default Gaussian kernel, chosen independently of
the state (:class:`LengthscaleSearch`); :func:`freeze` keeps the best.

The state's components (the history, the moves, the adapters) are objects that :func:`step`
updates in place; it returns the state it was given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..adaptation import (
    SCALE_RANGE,
    CandidateSearch,
    Feedback,
    RobbinsMonroScale,
    adaptation_probability,
    min_accepted_moves,
)
from ..history import ChainHistory
from ..kernels import GaussianKernel, Kernel, median_lengthscale
from ..moves import (
    RW_FACTOR,
    CoordinateWalk,
    KAMMove,
    LearnedMoves,
    Mixture,
    Proposal,
    RandomWalk,
    move_code,
    optimal_scale,
)
from ..proposals import kamh_feature_covariance
from ..whitening import Whitening
from .mh import StepInfo, decide

__all__ = [
    "CANDIDATE_SEARCH_SHARE",
    "LENGTHSCALE_FACTORS",
    "KAMHInfo",
    "KAMHSettings",
    "KAMHState",
    "LengthscaleSearch",
    "STATS",
    "freeze",
    "init",
    "propose",
    "sample_stats",
    "step",
]

#: below this trace of MᵀHM the kernel's features vanish at the state: it sets no scale for ν²
_MIN_TRACE = 1e-12
#: candidate multiples of the median-heuristic lengthscale tried during tuning (default kernel).
#: The longest makes the kernel nearly linear over the history, i.e. adaptive Metropolis, for
#: near-Gaussian targets (its effect: see the benchmarks page in the documentation)
LENGTHSCALE_FACTORS = (1.0, 2.0, 4.0, 8.0, 32.0)
#: weight of a new squared jump in the candidates' moving averages
_JUMP_AVERAGE_WEIGHT = 0.02
#: share of the tuning phase spent trying lengthscale candidates (then the best is kept; with 1,
#: at the end of tuning)
CANDIDATE_SEARCH_SHARE = 1.0


@dataclass(frozen=True)
class KAMHSettings:
    """What a KAMH chain is told and never learns.

    Attributes
    ----------
    dim : int
        The dimension of the states.
    kernel : Kernel or None
        The kernel, used as given; None: a Gaussian kernel whose lengthscale is searched among
        :data:`LENGTHSCALE_FACTORS` times the median heuristic while tuning.
    fixed_nu2 : float or None
        A fixed ``ν²``; None: Robbins–Monro towards ``target_accept``.
    learned_moves : bool
        Mix the KAM move with differential evolution, snooker, an envelope and the random walk,
        with weights learned while tuning (False: the KAM move alone after its first fit).
    subsample_size : int
        ``n``, the history points the kernel learns from.
    gamma : float
        ``γ`` relative to the history's scale.
    target_accept : float
        Target acceptance of the scales' adaptation.
    min_history : int or None
        The history the first fit needs (None: ``max(50, 10 d)``).
    refresh_interval : int
        Adaptation iterations between two fits while tuning.
    whiten : bool
        Let the kernel act on states whitened by the history's mean and covariance.
    adapt_after_tuning : bool
        Keep adapting after :func:`freeze`, with a vanishing probability.
    coordinate_share_early, coordinate_share_late : float
        The tuning iterations' share of single-coordinate moves before and after the first fit.
    """

    dim: int
    kernel: Kernel | None = None
    fixed_nu2: float | None = None
    learned_moves: bool = True
    subsample_size: int = 500
    gamma: float = 0.2
    target_accept: float = 0.234
    min_history: int | None = None
    refresh_interval: int = 20
    whiten: bool = True
    adapt_after_tuning: bool = False
    coordinate_share_early: float = 0.5
    coordinate_share_late: float = 0.05

    @property
    def history_needed(self) -> int:
        """The history the first fit needs."""
        return max(50, 10 * self.dim) if self.min_history is None else self.min_history


@dataclass
class LengthscaleSearch:
    """The search among the default kernel's lengthscales while tuning.

    Attributes
    ----------
    candidates : list of GaussianKernel or None
        The kernels tried (None: a kernel given, or no fit yet).
    candidate : int
        The index of the kernel in use.
    nu2_scales : list of RobbinsMonroScale or None
        One Robbins–Monro ``ν²`` per candidate (one for a given kernel).
    search : CandidateSearch or None
        Per candidate, the moving average of ``(1 − accepted) α ‖u* − u‖²`` and its count.
    frozen : bool
        The best candidate is kept (:func:`freeze`).
    """

    candidates: list | None = None
    candidate: int = 0
    nu2_scales: list | None = None
    search: CandidateSearch | None = None
    frozen: bool = False


@dataclass
class KAMHState:
    """One KAMH chain: where it is and what it learned.

    Attributes
    ----------
    position : numpy.ndarray
        The current state.
    log_density : float
        The log density at ``position``.
    history : ChainHistory
        The states the chain visited (repeats after rejections included).
    kam : KAMMove
        The KAM move: its sub-sample, kernel, whitening, ``γ`` and ``ν²`` adaptation.
    random_walk : RandomWalk
        The random walk of the first moves (and the learned mixture's last component).
    coordinate : CoordinateWalk
        The tuning phase's single-coordinate moves.
    learned : LearnedMoves or None
        The learned mixture (None with ``settings.learned_moves`` False).
    early_moves, late_moves : Mixture
        The tuning phase's mixtures of coordinate moves with the random walk (or the learned
        mixture) before the first fit, and with the KAM move (or the learned mixture) after.
    whitening : Whitening
        The whitening of the last fit (the identity before it).
    lengthscales : LengthscaleSearch
    settings : KAMHSettings
    tuning : bool
        Whether the chain tunes (:func:`freeze` ends it).
    tune_length : int
        The tuning iterations planned (0: unknown): the lengthscale search ends after
        :data:`CANDIDATE_SEARCH_SHARE` of them.
    iteration : int
        Iterations made (a warm-up's included: the caller may set it).
    adaptation_iteration : int
        Iterations that adapted.
    accepted_moves : int
        Accepted proposals (a warm-up's included: the caller may set it).
    start_frame : numpy.ndarray or None
        Each coordinate's scale at the chain's start, the frame of the first moves (None: 1).
    pooled_states : numpy.ndarray or None
        Other chains' states that the fits draw from too (pooled tuning).
    """

    position: np.ndarray
    log_density: float
    history: ChainHistory
    kam: KAMMove
    random_walk: RandomWalk
    coordinate: CoordinateWalk
    learned: LearnedMoves | None
    early_moves: Mixture
    late_moves: Mixture
    whitening: Whitening
    settings: KAMHSettings
    lengthscales: LengthscaleSearch = field(default_factory=LengthscaleSearch)
    tuning: bool = True
    tune_length: int = 0
    iteration: int = 0
    adaptation_iteration: int = 0
    accepted_moves: int = 0
    start_frame: np.ndarray | None = None
    pooled_states: np.ndarray | None = None


@dataclass(frozen=True)
class KAMHInfo(StepInfo):
    """What one :func:`step` did: :class:`~pymc_kernel_steps.core.transitions.mh.StepInfo`'s
    fields.
    """


def init(
    position,
    log_density: float,
    settings: KAMHSettings,
    *,
    history: ChainHistory | None = None,
    tuning: bool = True,
    tune_length: int = 0,
) -> KAMHState:
    """A chain's state at ``position`` (log density ``log_density``), before any fit.

    A caller that learns the position only later (a PyMC step, before the warm-up) may pass NaN
    and set :attr:`KAMHState.position` and :attr:`KAMHState.log_density` before the first
    :func:`step`.

    Parameters
    ----------
    position : array_like, shape (d,)
    log_density : float
    settings : KAMHSettings
    history : ChainHistory, optional
        The history to learn from (default: an empty one).
    tuning : bool
        Whether the chain starts tuning (False: frozen from the start).
    tune_length : int
        The tuning iterations planned (0: unknown).

    Returns
    -------
    KAMHState
    """
    dim = settings.dim
    history = ChainHistory(dim) if history is None else history
    random_walk = RandomWalk.optimal(dim, SCALE_RANGE, target=settings.target_accept)
    kam = KAMMove(dim, fixed_nu2=settings.fixed_nu2)
    coordinate = CoordinateWalk(dim, optimal_scale(dim))
    learned = LearnedMoves(kam, random_walk, history) if settings.learned_moves else None
    early, late = (random_walk, kam) if learned is None else (learned.mixture, learned.mixture)
    early_share, late_share = settings.coordinate_share_early, settings.coordinate_share_late
    state = KAMHState(
        position=np.array(position, dtype=float),
        log_density=float(log_density),
        history=history,
        kam=kam,
        random_walk=random_walk,
        coordinate=coordinate,
        learned=learned,
        early_moves=Mixture([(coordinate, early_share), (early, 1.0 - early_share)]),
        late_moves=Mixture([(coordinate, late_share), (late, 1.0 - late_share)]),
        whitening=Whitening.identity(dim),
        settings=settings,
        tune_length=int(tune_length),
    )
    return state if tuning else freeze(state)


def freeze(state: KAMHState) -> KAMHState:
    """End of tuning: the best lengthscale candidate is kept and the learned mixture's weights,
    population and moves are fixed, so the draws come from one Metropolis–Hastings kernel
    (unless ``settings.adapt_after_tuning``, which keeps adapting ``ν²`` and the sub-sample
    with a vanishing probability).

    Returns
    -------
    KAMHState
        ``state``, frozen in place.
    """
    state.tuning = False
    _keep_best_candidate(state)
    if state.learned is not None:
        state.learned.freeze()
    return state


def step(
    rng: np.random.Generator, state: KAMHState, log_density_fn: Callable[[np.ndarray], float]
) -> tuple[KAMHState, KAMHInfo]:
    """One iteration: propose, evaluate ``log_density_fn`` at the proposal (unless it is
    rejected without: a degenerate or null proposal), accept or reject, then record the outcome
    and adapt.

    Parameters
    ----------
    rng : numpy.random.Generator
        Every random number of the iteration (the proposal, the accept test, the sub-sample).
    state : KAMHState
        The chain's state; updated in place.
    log_density_fn : callable
        The target's log density at a point. It may return NaN or +inf (the proposal is
        rejected; the value is reported in :attr:`KAMHInfo.log_density`) and may raise (the
        state's position is then unchanged).

    Returns
    -------
    state : KAMHState
        ``state``, after the iteration.
    info : KAMHInfo
    """
    x = state.position
    proposal = propose(rng, state)
    decision = decide(rng, proposal, state.log_density, log_density_fn)
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
    _learn_from_decision(rng, state, x, proposal, accepted, accept_prob)
    if _adapting(rng, state):
        proposal.move.update(proposal, x, accept_prob, rng)
        _adapt(rng, state, x_new)
        state.adaptation_iteration += 1
    info = KAMHInfo.of(proposal, decision)
    return state, info


#: the sample stats of :func:`sample_stats` (name: dtype and shape); a learned mixture adds its
#: moves' weights and acceptances
#: (:meth:`~pymc_kernel_steps.core.moves.LearnedMoves.stats_dtypes_shapes`)
STATS = {
    "nu2": (np.float64, []),
    "gamma": (np.float64, []),
    "lengthscale": (np.float64, []),
    "n_history": (np.int64, []),
    "random_walk": (bool, []),
    "move": (np.int64, []),
}


def sample_stats(
    state: KAMHState, proposal: Proposal, log_accept_ratio: float, info: KAMHInfo | None = None
) -> dict:
    """The sample stats (:data:`STATS`) of the iteration that made ``proposal`` and left
    ``state`` (``info`` None: a warm-up phase's): ``ν²`` and ``γ`` of the KAM move, or NaN and
    the random walk's scale before its first fit (``random_walk``), and the kernel's
    lengthscale (the settings' kernel before the first fit; NaN for a kernel without one)."""
    kam = state.kam
    kernel = kam.kernel if kam.kernel is not None else state.settings.kernel
    random_walk = not kam.ready
    stats = {
        "nu2": math.nan if random_walk else kam.nu2,
        "gamma": state.random_walk.scale.scale if random_walk else kam.gamma_abs,
        "lengthscale": float(getattr(kernel, "lengthscale", math.nan)),
        "n_history": len(state.history),
        "random_walk": random_walk,
        "move": move_code(proposal),
    }
    if state.learned is not None:
        stats.update(state.learned.sample_stats())
    return stats


def propose(rng: np.random.Generator, state: KAMHState) -> Proposal:
    """A proposal from ``state.position``: the random walk until the KAM move's first fit, then
    the KAM move (or the learned mixture); while tuning, mixed with single-coordinate moves,
    and each KAM proposal with a lengthscale candidate drawn independently of the state."""
    if state.learned is not None and not state.tuning:
        move = state.learned.mixture.choose(rng)  # frozen weights
    elif state.kam.ready:
        move = state.late_moves.choose(rng) if state.tuning else state.kam
    else:
        move = state.early_moves.choose(rng) if state.tuning else state.random_walk
    if move is state.kam:
        _choose_candidate(rng, state)
    return move.propose(rng, state.position)


def _adapting(rng: np.random.Generator, state: KAMHState) -> bool:
    if state.tuning:
        return True
    if not state.settings.adapt_after_tuning:
        return False
    return rng.uniform() < adaptation_probability(state.adaptation_iteration)


# ---------------------------------------------------------------------- lengthscale candidates
def _use_candidate(state: KAMHState, index: int) -> None:
    search = state.lengthscales
    if search.candidates is None or index == search.candidate:
        return
    search.candidate = index
    state.kam.kernel = search.candidates[index]
    if search.nu2_scales is not None:
        state.kam.nu2_scale = search.nu2_scales[index]
    state.kam.forget_cache()  # cached for another kernel


def _choose_candidate(rng: np.random.Generator, state: KAMHState) -> None:
    """While tuning, the lengthscale candidate of this KAM move, drawn independently of the
    state (a mixture of MH moves), until the best is kept."""
    search = state.lengthscales
    if state.tuning and search.candidates is not None and not search.frozen:
        if state.tune_length and state.iteration >= CANDIDATE_SEARCH_SHARE * state.tune_length:
            _keep_best_candidate(state)  # the rest of tuning adapts ν² for it alone
        else:
            _use_candidate(state, search.search.propose(rng))


def _keep_best_candidate(state: KAMHState) -> None:
    """Keep the candidate kernel with the largest score: the moving average over its KAM
    moves of ``(1 − accepted) α ‖u* − u‖²``, whose expectation is ``α (1 − α) ‖u* − u‖²``
    (the expected squared jump weighted by the chance of a rejection: it prefers proposals
    that go far and are accepted about half of the time). The expected squared jump
    ``α ‖u* − u‖²`` alone was measured and lost (``benchmarks/robustness/README.md``)."""
    search = state.lengthscales
    if search.candidates is None or search.frozen:
        return
    search.frozen = True
    _use_candidate(state, search.search.final())


def _white_difference(state: KAMHState, y, x) -> np.ndarray:
    """``y − x`` in the kernel's (whitened) coordinates."""
    difference = np.asarray(y) - np.asarray(x)
    if state.settings.whiten:
        return difference @ state.kam.whitening.inv_chol.T
    return difference


def _learn_from_decision(
    rng: np.random.Generator,
    state: KAMHState,
    x: np.ndarray,
    proposal: Proposal,
    accepted: bool,
    accept_prob: float,
) -> None:
    """While tuning, after the decision on a proposal from ``x``: the learned mixture counts
    its whitened jump towards the weights; while the lengthscale candidates are tried, a KAM
    proposal's ``(1 − accepted) α ‖u* − u‖²`` counts towards its candidate's score."""
    if not state.tuning:
        return
    if state.learned is not None:
        metric = state.whitening if state.settings.whiten else state.random_walk.metric
        state.learned.record(proposal, x, accept_prob, metric)
    search = state.lengthscales
    if search.candidates is not None and not search.frozen and proposal.move is state.kam:
        reward = 0.0  # an accepted move scores 0: the score is α(1 − α)‖u* − u‖² on average
        if math.isfinite(accept_prob) and not accepted:
            jump = _white_difference(state, proposal.x, x)
            reward = accept_prob * float(jump @ jump)
        search.search.update(Feedback(accept_prob, index=search.candidate, reward=reward), rng)


# ---------------------------------------------------------------------- fits
def _adapt(rng: np.random.Generator, state: KAMHState, x: np.ndarray) -> None:
    """The first fit once the history and the accepted moves suffice; then a refit every
    ``refresh_interval`` adaptation iterations while tuning (every one after)."""
    settings = state.settings
    if not state.kam.ready:
        if len(state.history) >= settings.history_needed and state.accepted_moves >= (
            min_accepted_moves(settings.dim)
        ):
            _fit(rng, state, x, first=True)
        return
    if state.adaptation_iteration % settings.refresh_interval == 0 or not state.tuning:
        _fit(rng, state, x, first=False)


def _fallback_variance(state: KAMHState) -> np.ndarray:
    """Each coordinate's variance under the random walk: the whitening's value for a coordinate
    the history has not moved."""
    frame = np.ones(state.settings.dim) if state.start_frame is None else state.start_frame
    return (state.random_walk.scale.scale * frame) ** 2


def _fit(rng: np.random.Generator, state: KAMHState, x: np.ndarray, first: bool) -> None:
    """Redraw the sub-sample (from the most recent half of the history), the whitening, the
    default kernel's lengthscale candidates and the absolute ``γ``."""
    settings, search, kam = state.settings, state.lengthscales, state.kam
    subsample = state.history.recent_subsample(rng, settings.subsample_size, state.pooled_states)
    if np.all(subsample == subsample[0]):
        # A stuck chain (e.g. on a lucky pseudo-marginal estimate): the recent history holds
        # one state, where the kernel's features vanish and ν² would be rescaled without
        # bound. Keep the proposal learned so far (or the random walk before the first fit).
        return
    history_whitening = None
    if settings.whiten or state.learned is not None:
        history_whitening = Whitening.from_points(
            subsample,
            fallback_variance=_fallback_variance(state),
            min_variance=state.coordinate.variance_floor(),
        )
    if state.learned is not None:
        state.learned.fit_envelope(history_whitening)
    if settings.whiten:
        whitening = history_whitening
        subsample = whitening.whiten(subsample)
    else:
        whitening = state.whitening
    candidates = None
    if settings.kernel is None:
        try:
            base = median_lengthscale(subsample)
        except ValueError:  # degenerate history (e.g. a stuck chain): keep what we have
            if kam.kernel is None:
                return
            base = None
        if base is not None:
            candidates = [GaussianKernel(f * base) for f in LENGTHSCALE_FACTORS]
            kernel = candidates[search.candidate]
        else:
            kernel, candidates = kam.kernel, search.candidates
    else:
        kernel = settings.kernel
    spread = kam.reference_scale(subsample, settings.gamma, whitened=settings.whiten)
    if spread is None:
        return
    previous_n = 0 if kam.subsample is None else kam.subsample.shape[0]
    kam.subsample = subsample
    kam.kernel = kernel
    state.whitening = whitening
    if state.learned is not None and settings.whiten:
        state.random_walk.metric = whitening  # the mixture's random walk, whitened
    kam.whitening = whitening if settings.whiten else None
    kam.gamma_abs = settings.gamma * spread
    u = whitening.whiten(x)
    kam.feature_cov_current = kam.feature_cov(u)
    kam.feature_cov_point = np.array(x, copy=True)
    if candidates is not None:
        traces = [np.trace(kamh_feature_covariance(u, subsample, k)) for k in candidates]
        search.candidates = candidates
        if search.search is None:
            search.search = CandidateSearch(
                len(candidates), _JUMP_AVERAGE_WEIGHT, current=search.candidate
            )
    else:
        traces = [np.trace(kam.feature_cov_current)]
    if settings.fixed_nu2 is None:
        _refit_nu2_scales(state, traces, previous_n, subsample.shape[0], first)


def _refit_nu2_scales(state: KAMHState, traces, previous_n: int, n: int, first: bool) -> None:
    """One Robbins–Monro ``ν²`` per kernel (candidate): started where the learned part has the
    optimal random walk's total variance, kept at that scale as the sub-sample grows, and
    bounded relative to the history's own scale."""
    settings, search = state.settings, state.lengthscales
    if settings.whiten:
        total = RW_FACTOR**2
    else:
        total = float(np.sum(_fallback_variance(state)))
    natural = [total / t if _MIN_TRACE < t < np.inf else math.nan for t in traces]
    if first or search.nu2_scales is None:
        search.nu2_scales = [
            RobbinsMonroScale.within(
                nu2 if math.isfinite(nu2) else 1.0, SCALE_RANGE, target=settings.target_accept
            )
            for nu2 in natural
        ]
    else:
        for scale, nu2 in zip(search.nu2_scales, natural, strict=True):
            if previous_n and previous_n != n:
                # Mᵀ H M grows with n: keep the proposal's scale when the sub-sample grows
                scale.rescale(previous_n / n)
            if settings.whiten and math.isfinite(nu2):  # no scale where the features vanish
                scale.recentre(nu2, SCALE_RANGE)
    index = search.candidate if search.candidates is not None else 0
    state.kam.nu2_scale = search.nu2_scales[index]
