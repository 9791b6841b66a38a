"""Cyclical Kernel Adaptive Metropolis (paper 004) as a transition: functions of an explicit
per-chain state.

:func:`init` builds a chain's :class:`CKAMState` from its first point; :func:`step` makes one
iteration (propose, evaluate the log density it is given at the proposal, the one
Metropolis–Hastings :func:`~pymc_kernel_steps.core.transitions.mh.decide`, record and adapt);
:func:`freeze` changes nothing, since the cycles, and their adaptation, continue through the draws
by design.

The chain runs in cycles of ``T_c`` iterations (``settings.cycle_length``). The first
``K = ceil(β T_c)`` iterations of a cycle explore (``β = settings.exploration_fraction``):

1. a random walk ``N(x, s² D²)`` (``s`` by Robbins–Monro, ``D`` the start's frame) until the
   cycle's own history holds ``settings.history_needed`` points;
2. then the repeating pattern of the KAM move ``N(x, γ² I + ν² Mᵀ H M)`` (sub-sample ``z`` from
   the current cycle only, refreshed every ``refresh_interval`` KAM moves; ``ν²`` by
   Robbins–Monro), blind jumps ``N(x, ρ² S)`` with ``S = (2.38²/d) Cov(whole history)`` and a mode
   hop ``x + (z_a − z_b) + γ ξ`` on the whole history.

At position ``K`` the sampling proposal is frozen (:func:`freeze_sampling_proposal`):
``ν_exp = ν``, ``Σ = (γ/ν_exp)² I + Mᵀ H M`` at the current state, ``ν₀ = 2 ν_exp /
(cos(πK/T_c) + 1)``, the mode hop's archive (the history up to here) and the jump's ``S``. The
remaining ``T_c − K`` iterations sample with the mixture, chosen independently of the state, of
that mode hop (``sampling_hops``), that blind jump (``sampling_jumps``) and the cosine walk
``N(x, ν_k² Σ)``, ``ν_k = (ν₀/2)(cos(πk/T_c) + 1)``. Every component is symmetric and none
adapts, so each sampling iteration is a Metropolis kernel that leaves the target invariant. At
``T_c`` a new cycle starts: the sub-sample is forgotten, the random walk is warm started from the
last KAM covariance and the Robbins–Monro gains restart.

The state's components (the history, the moves, the adapters) are objects that :func:`step`
updates in place; it returns the state it was given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..adaptation import SCALE_RANGE, RobbinsMonroScale
from ..history import ChainHistory
from ..kernels import GaussianKernel, Kernel, median_lengthscale
from ..moves import (
    RW_FACTOR,
    BlindJump,
    CosineWalk,
    Cycle,
    KAMMove,
    Mixture,
    ModeHop,
    Proposal,
    RandomWalk,
)
from ..proposals import cholesky_or_nan
from ..schedules import ckam_nu0, ckam_sampling_scale, exploration_length
from ..whitening import Whitening
from .mh import StepInfo, decide

__all__ = [
    "JUMP_KINDS",
    "CKAMInfo",
    "CKAMSettings",
    "CKAMState",
    "STATS",
    "freeze",
    "freeze_sampling_proposal",
    "init",
    "propose",
    "sample_stats",
    "step",
]

#: points of the whole history used to estimate the covariance of the jump moves
_JUMP_POINTS = 1000
#: the kinds of moves that count as jumps (a blind jump or a mode hop, in either phase)
JUMP_KINDS = (BlindJump.kind, ModeHop.kind)


@dataclass(frozen=True)
class CKAMSettings:
    """What a CKAM chain is told and never learns.

    Attributes
    ----------
    dim : int
        The dimension of the states.
    cycle_length : int
        ``T_c``, iterations per cycle.
    exploration_fraction : float
        ``β``: the first ``ceil(β T_c)`` iterations of a cycle explore.
    kernel : Kernel or None
        The KAM move's kernel; None: a Gaussian kernel with the median-heuristic lengthscale of
        each sub-sample.
    subsample_size : int
        ``n``, the points of the current cycle the KAM move learns from.
    gamma : float
        ``γ`` relative to the sub-sample's scale (its smallest standard deviation, or 1 when
        whitened).
    target_accept : float
        Target acceptance of the exploration's Robbins–Monro scales.
    min_history : int or None
        Points of the current cycle needed before the KAM moves start (None: ``max(20, 5 d)``).
    refresh_interval : int
        KAM moves between two redraws of the sub-sample.
    whiten : bool
        Let the kernel act on states whitened by the sub-sample's mean and covariance.
    jump_scale : float
        The blind jumps' largest ``ρ`` (0: no blind jumps).
    mode_jumps : bool
        The exploration's pattern includes a mode hop (False: a KAM move in its slot).
    sampling_hops, sampling_jumps : float
        The sampling mixture's probabilities of a mode hop and a blind jump (the rest is the
        cosine walk).
    """

    dim: int
    cycle_length: int
    exploration_fraction: float = 0.4
    kernel: Kernel | None = None
    subsample_size: int = 50
    gamma: float = 0.2
    target_accept: float = 0.234
    min_history: int | None = None
    refresh_interval: int = 10
    whiten: bool = False
    jump_scale: float = 16.0
    mode_jumps: bool = True
    sampling_hops: float = 0.2
    sampling_jumps: float = 0.1

    @property
    def history_needed(self) -> int:
        """Points of the current cycle needed before the KAM moves start."""
        return max(20, 5 * self.dim) if self.min_history is None else self.min_history

    @property
    def exploration_length(self) -> int:
        """``K``, the exploration iterations at the start of each cycle."""
        return exploration_length(self.cycle_length, self.exploration_fraction)


@dataclass
class CKAMState:
    """One CKAM chain: where it is, where it is in its cycle and what the cycle learned.

    Attributes
    ----------
    position : numpy.ndarray
        The current state.
    log_density : float
        The log density at ``position``.
    history : ChainHistory
        The states the chain visited (repeats after rejections included).
    random_walk : RandomWalk
        The exploration's random walk until the cycle's history suffices.
    kam : KAMMove
        The exploration's KAM move (its sub-sample, kernel, ``ν²`` and ``γ``).
    jump, hop : BlindJump, ModeHop
        The exploration's blind jump (``S`` refreshed each cycle) and mode hop (whole history).
    exploration : Cycle
        The exploration's repeating pattern: KAM, jump, jump, hop, jump, jump.
    sampling_hop, sampling_jump, walk : ModeHop, BlindJump, CosineWalk
        The sampling phase's moves, frozen at the phase change: a mode hop on the history up to
        it, the blind jump with the cycle's ``S``, and the walk ``N(x, ν_k² Σ)``.
    sampling : Mixture
        Their mixture.
    settings : CKAMSettings
    cycle : int
        The current cycle (0-based).
    cycle_position : int
        The 0-based position in the cycle of the next iteration, ``mod(t − 1, T_c)``.
    nu_exp, nu0 : float
        The exploration's final scale ``ν`` and the cosine schedule's ``ν₀`` (NaN before the
        first phase change).
    cycle_start : int
        Index in ``history`` of the current cycle's first state.
    kam_moves : int
        KAM moves made in the current cycle.
    previous_n : int
        The sub-sample's size at the end of the previous cycle's exploration (0: none).
    iteration : int
        Iterations made (a warm-up's included: the caller may set it).
    adaptation_iteration : int
        Iterations that adapted (every one: the cycles are the method).
    start_frame : numpy.ndarray or None
        Each coordinate's scale at the chain's start, the random walk's frame (None: 1).
    """

    position: np.ndarray
    log_density: float
    history: ChainHistory
    random_walk: RandomWalk
    kam: KAMMove
    jump: BlindJump
    hop: ModeHop
    exploration: Cycle
    sampling_hop: ModeHop
    sampling_jump: BlindJump
    walk: CosineWalk
    sampling: Mixture
    settings: CKAMSettings
    cycle: int = 0
    cycle_position: int = 0
    nu_exp: float = math.nan
    nu0: float = math.nan
    cycle_start: int = 0
    kam_moves: int = 0
    previous_n: int = 0
    iteration: int = 0
    adaptation_iteration: int = 0
    start_frame: np.ndarray | None = None

    @property
    def exploring(self) -> bool:
        """Whether the next iteration belongs to the exploration phase."""
        return self.cycle_position < self.settings.exploration_length


@dataclass(frozen=True)
class CKAMInfo(StepInfo):
    """What one :func:`step` did: :class:`~pymc_kernel_steps.core.transitions.mh.StepInfo`'s
    fields and

    Attributes
    ----------
    exploring : bool
        The iteration belonged to the exploration phase.
    cycle : int
        The cycle it belonged to.
    scale : float
        The proposal's scale: ``s`` for the random walk, ``√ν²`` for a KAM move, ``ρ`` for an
        exploration jump, 1 for an exploration hop, the schedule's ``ν_k`` for every
        sampling-phase move.
    """

    exploring: bool
    cycle: int
    scale: float


#: the sample stats of :func:`sample_stats` (name: dtype and shape)
STATS = {
    "exploring": (bool, []),
    "cycle": (np.int64, []),
    "scale": (np.float64, []),
    "jump": (bool, []),
}


def sample_stats(
    state: CKAMState, proposal: Proposal, log_accept_ratio: float, info: CKAMInfo
) -> dict:
    """The sample stats (:data:`STATS`) of the iteration :func:`step` reported by ``info``
    (CKAM has no warm-up phase: every iteration has one): its phase and cycle, the proposal's
    scale, and whether it was a jump."""
    return {
        "exploring": info.exploring,
        "cycle": info.cycle,
        "scale": float(info.scale),
        "jump": proposal.kind in JUMP_KINDS,
    }


def init(
    position,
    log_density: float,
    settings: CKAMSettings,
    *,
    history: ChainHistory | None = None,
) -> CKAMState:
    """A chain's state at ``position`` (log density ``log_density``), at the start of its first
    cycle.

    A caller that learns the position only later (a PyMC step, before the warm-up) may pass NaN
    and set :attr:`CKAMState.position` and :attr:`CKAMState.log_density` before the first
    :func:`step`.

    Parameters
    ----------
    position : array_like, shape (d,)
    log_density : float
    settings : CKAMSettings
    history : ChainHistory, optional
        The history to record the chain in (default: an empty one).

    Returns
    -------
    CKAMState
    """
    dim = settings.dim
    history = ChainHistory(dim) if history is None else history
    kam = KAMMove(dim)
    jump = BlindJump(settings.jump_scale)
    hop = ModeHop(history)
    exploration = Cycle(
        [kam, jump, jump, hop if settings.mode_jumps else kam, jump, jump], fallback=kam
    )
    sampling_hop = ModeHop(history, archive_size=0)
    sampling_jump = BlindJump(settings.jump_scale)
    walk = CosineWalk()
    if settings.sampling_hops > 0 or settings.sampling_jumps > 0:
        rest = 1.0 - settings.sampling_hops - settings.sampling_jumps
        sampling = Mixture(
            [
                (sampling_hop, settings.sampling_hops),
                (sampling_jump, settings.sampling_jumps),
                (walk, rest),
            ]
        )
    else:
        sampling = Mixture([(walk, 1.0)])
    return CKAMState(
        position=np.array(position, dtype=float),
        log_density=float(log_density),
        history=history,
        random_walk=RandomWalk.optimal(dim, SCALE_RANGE, target=settings.target_accept),
        kam=kam,
        jump=jump,
        hop=hop,
        exploration=exploration,
        sampling_hop=sampling_hop,
        sampling_jump=sampling_jump,
        walk=walk,
        sampling=sampling,
        settings=settings,
    )


def freeze(state: CKAMState) -> CKAMState:
    """End of tuning: nothing changes. The cycles, and the adaptation of their exploration
    phases, continue through the draws by design (paper 004); each sampling phase's proposal
    is frozen at its own start (:func:`freeze_sampling_proposal`).

    Returns
    -------
    CKAMState
        ``state``, unchanged.
    """
    return state


def step(
    rng: np.random.Generator, state: CKAMState, log_density_fn: Callable[[np.ndarray], float]
) -> tuple[CKAMState, CKAMInfo]:
    """One iteration: propose with the move of the cycle's phase, evaluate ``log_density_fn``
    at the proposal (unless it is rejected without: a degenerate proposal), accept or reject,
    record the outcome, adapt (the exploration's moves only) and advance in the cycle.

    Parameters
    ----------
    rng : numpy.random.Generator
        Every random number of the iteration (the proposal, the accept test, the sub-sample).
    state : CKAMState
        The chain's state; updated in place.
    log_density_fn : callable
        The target's log density at a point. It may return NaN or +inf (the proposal is
        rejected; the value is reported in :attr:`CKAMInfo.log_density`) and may raise (the
        state's position is then unchanged).

    Returns
    -------
    state : CKAMState
        ``state``, after the iteration.
    info : CKAMInfo
    """
    x = state.position
    exploring, cycle = state.exploring, state.cycle
    proposal = propose(rng, state)
    scale = _scale_of(state, proposal, exploring)
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
    proposal.move.record(proposal, x, accepted, accept_prob)
    proposal.move.update(proposal, x, accept_prob, rng)  # the sampling moves do not adapt
    _adapt(rng, state, x_new, proposal)
    state.adaptation_iteration += 1
    info = CKAMInfo.of(proposal, decision, exploring=exploring, cycle=cycle, scale=scale)
    return state, info


def propose(rng: np.random.Generator, state: CKAMState) -> Proposal:
    """A proposal from ``state.position`` by the move of the cycle's phase: the random walk
    until the cycle's history is long enough, then the exploration pattern (KAM, blind jumps,
    mode hop); in the sampling phase the mixture, chosen independently of the state, of a mode
    hop, a blind jump and the cosine walk ``N(x, ν_k² Σ)`` with ``ν_k`` at the cycle position.
    Every sampling component is symmetric and fixed for the whole phase, so the mixture is too:
    ``q(y | x) = q(x | y)``."""
    x = state.position
    k = state.cycle_position
    if k >= state.settings.exploration_length:
        state.walk.scale = ckam_sampling_scale(k, state.settings.cycle_length, state.nu0)
        return state.sampling.propose(rng, x)
    if not state.kam.ready:
        return state.random_walk.propose(rng, x)
    return state.exploration.propose(rng, x)


def _scale_of(state: CKAMState, proposal: Proposal, exploring: bool) -> float:
    """The scale of ``proposal`` (see :attr:`CKAMInfo.scale`), before any adaptation."""
    move = proposal.move
    if not exploring:
        return state.walk.scale
    if move is state.random_walk:
        return state.random_walk.scale.scale
    if move is state.jump:
        return proposal.extra
    if move is state.hop:
        return 1.0
    return math.sqrt(state.kam.nu2_scale.scale)


# ---------------------------------------------------------------------- the cycle
def _adapt(rng: np.random.Generator, state: CKAMState, x: np.ndarray, proposal: Proposal) -> None:
    """After an iteration that left the chain at ``x``: refresh the exploration's sub-sample,
    start its KAM moves, freeze the sampling proposal or start a new cycle, as the cycle's
    position says."""
    settings = state.settings
    if proposal.move is state.kam:
        state.kam_moves += 1
        if state.kam_moves % settings.refresh_interval == 0:
            _refresh_subsample(rng, state, x)
    elif proposal.move is state.random_walk:
        if len(state.history) - state.cycle_start >= settings.history_needed:
            _start_kam(rng, state, x)

    state.cycle_position += 1
    if state.cycle_position == settings.exploration_length:
        freeze_sampling_proposal(rng, state, x)
    elif state.cycle_position == settings.cycle_length:
        _start_cycle(state)


def _start_frame(state: CKAMState) -> np.ndarray:
    """The start's frame ``D`` (unit scales before it is measured)."""
    return np.ones(state.settings.dim) if state.start_frame is None else state.start_frame


def _fallback_variance(state: CKAMState) -> np.ndarray:
    """Each coordinate's variance under the random walk, ``(s D)²``: the whitening's value for
    a coordinate the history has not moved."""
    return (state.random_walk.scale.scale * _start_frame(state)) ** 2


def _start_cycle(state: CKAMState) -> None:
    """Begin a new cycle: forget the cycle's sub-sample, warm start the random walk from the
    last KAM covariance, restart the Robbins–Monro gains."""
    state.cycle += 1
    state.cycle_position = 0
    state.cycle_start = len(state.history)
    state.kam_moves = 0
    kam = state.kam
    if kam.subsample is not None:
        state.previous_n = kam.subsample.shape[0]
    kam.subsample = None
    kam.forget_cache()
    if state.walk.chol is not None and math.isfinite(state.nu_exp):
        # warm start: the random walk (in the start's frame D) starts at the variances of
        # the last KAM proposal, geometrically averaged over the coordinates
        variances = state.nu_exp**2 * np.sum(state.walk.chol**2, axis=1)
        log_total = float(np.mean(np.log(variances / _start_frame(state) ** 2)))
        if math.isfinite(log_total):
            rw = state.random_walk.scale
            rw.log_scale = min(max(0.5 * log_total, rw.min_log_scale), rw.max_log_scale)
    state.random_walk.scale.iteration = 0
    if kam.nu2_scale is not None:
        kam.nu2_scale.iteration = 0


def _start_kam(rng: np.random.Generator, state: CKAMState, x: np.ndarray) -> None:
    """The cycle's history suffices: the first sub-sample, the pattern from its start and this
    cycle's jump covariance (a degenerate history keeps the random walk)."""
    _refresh_subsample(rng, state, x)
    if not state.kam.ready:
        return
    state.exploration.restart()
    _refresh_jump_covariance(rng, state)


def _refresh_subsample(rng: np.random.Generator, state: CKAMState, x: np.ndarray) -> None:
    """Redraw the sub-sample from the current cycle's history (and the lengthscale, γ)."""
    settings, kam = state.settings, state.kam
    subsample = state.history.subsample(rng, settings.subsample_size, start=state.cycle_start)
    whitening = None
    if settings.whiten:
        whitening = Whitening.from_points(subsample, fallback_variance=_fallback_variance(state))
        subsample = whitening.whiten(subsample)
    if settings.kernel is None:
        try:
            kernel = GaussianKernel(median_lengthscale(subsample))
        except ValueError:  # degenerate (a stuck chain): keep what we have
            if kam.kernel is None or kam.subsample is None:
                return
            kernel = kam.kernel
    else:
        kernel = settings.kernel
    spread = kam.reference_scale(subsample, settings.gamma, whitened=settings.whiten)
    if spread is None:
        return
    first_of_cycle = kam.subsample is None
    previous_n = state.previous_n if first_of_cycle else kam.subsample.shape[0]
    kam.subsample = subsample
    kam.kernel = kernel
    kam.whitening = whitening
    kam.gamma_abs = settings.gamma * spread
    state.hop.noise_scale = state.sampling_hop.noise_scale = kam.gamma_abs
    kam.cache_at(x)
    n = subsample.shape[0]
    if kam.nu2_scale is None:
        # first KAM phase of the chain: the learned part gets the total variance of the
        # optimal random walk (2.38² whitened; d s² with the random walk's s otherwise)
        trace = float(np.trace(kam.feature_cov_current))
        total = RW_FACTOR**2 if settings.whiten else float(np.sum(_fallback_variance(state)))
        nu2 = total / trace if trace > 0 and np.isfinite(trace) else 1.0
        kam.nu2_scale = RobbinsMonroScale.within(nu2, SCALE_RANGE, target=settings.target_accept)
    elif previous_n and previous_n != n:
        # Mᵀ H M grows with n: keep the proposal's scale when the sub-sample size changes
        kam.nu2_scale.rescale(previous_n / n)


def _refresh_jump_covariance(rng: np.random.Generator, state: CKAMState) -> None:
    """``S = (2.38²/d) Cov(whole history)`` for the blind jumps of this cycle."""
    settings = state.settings
    if settings.jump_scale == 0:
        state.jump.chol = None
        return
    points = state.history.subsample(rng, _JUMP_POINTS)
    cov = np.atleast_2d(np.cov(points.T, bias=True))
    scale = float(np.trace(cov)) / settings.dim
    if not (np.isfinite(scale) and scale > 0):
        return  # keep the previous cycle's S (None at the very start: no jumps)
    cov.flat[:: settings.dim + 1] += 1e-8 * scale
    chol = cholesky_or_nan(cov * (RW_FACTOR**2 / settings.dim))
    if np.all(np.isfinite(chol)):
        state.jump.chol = chol


def freeze_sampling_proposal(rng: np.random.Generator, state: CKAMState, x) -> None:
    """The phase change at ``x``: the sub-sample redrawn from the cycle's whole exploration,
    then ``ν_exp``, ``Σ = (γ/ν_exp)² I + Mᵀ H M`` at ``x``, ``ν₀``, the mode hop's archive and
    the blind jump's ``S``, fixed for the whole sampling phase. A cycle without KAM moves (a
    degenerate history) samples with its random walk ``N(x, s² D²)`` instead."""
    settings, kam = state.settings, state.kam
    dim = settings.dim
    beta_effective = settings.exploration_length / settings.cycle_length
    if kam.ready:
        # Σ from the whole exploration of the cycle, not the sub-sample of the last refresh
        # (with most exploration moves being jumps, that may still be the first one, drawn
        # from the cycle-start random walk alone: few distinct states, a degenerate γ)
        _refresh_subsample(rng, state, x)
    if not kam.ready:  # the cycle's random walk, N(x, s² D²) in the start's frame D, goes on
        state.nu_exp = state.random_walk.scale.scale
        sigma = np.diag(_start_frame(state) ** 2)
    else:
        nu_exp = math.sqrt(kam.nu2_scale.scale)
        if kam.feature_cov_current is None or not np.array_equal(kam.feature_cov_point, x):
            kam.cache_at(x)
        sigma = kam.feature_cov_current.copy()
        sigma.flat[:: dim + 1] += (kam.gamma_abs / nu_exp) ** 2
        state.nu_exp = nu_exp
    chol = cholesky_or_nan(sigma)
    if not np.all(np.isfinite(chol)):
        chol = np.eye(dim)
    whitening = kam.whitening if kam.ready else None
    # the frozen proposal N(x, ν_t² Σ) in the model's coordinates: Σ's factor mapped back
    state.walk.chol = chol if whitening is None else whitening.chol @ chol
    # ν₀ from the effective fraction K / T_c so that ν_K = ν_exp exactly
    state.nu0 = float(ckam_nu0(state.nu_exp, beta_effective))
    # the mode hops and jumps of the sampling phase use the history up to here, and this
    # cycle's S: fixed for the whole phase, so that every sampling move is symmetric
    archive = len(state.history) if math.isfinite(kam.gamma_abs) else 0
    state.sampling_hop.archive_size = archive
    state.sampling_jump.chol = state.jump.chol if settings.jump_scale > 0 else None
