"""Cyclical Kernel Adaptive Metropolis (paper 004): cycles of KAM exploration and cosine-scheduled
random-walk sampling, for posteriors with several modes.

Which draws to use for what: see :func:`sampling_phase`. The options of :class:`CKAM` are
:class:`~pymc_kernel_steps.options.Cycles` and :class:`~pymc_kernel_steps.options.KAMProposal`;
below, ``cycle_length`` is ``Cycles.length`` and the other names are those options' fields.

Splits the run into cycles of ``cycle_length`` iterations that continue through tuning and
draws alike. Each cycle starts with an **exploration phase** (the first
``ceil(exploration_fraction × cycle_length)`` iterations) that forgets the previous cycle's
geometry and looks for modes, and ends with a **sampling phase** of random-walk Metropolis
moves whose scale decreases along a cosine, so that the chain settles in the mode it found.
Adaptive samplers that learn from their whole history lock onto the mode they start in; cKAM
keeps finding and revisiting every mode.

Exploration phase (iteration ``k`` of the cycle, ``0 ≤ k < K``):

1. while the cycle has fewer than ``min_history`` points: random walk ``N(x, s² I)``, ``s`` by
   Robbins–Monro towards ``target_accept``;
2. then KAM moves ``N(x, γ² I + ν² Mᵀ H M)`` with the sub-sample ``z`` drawn from **the
   current cycle's history only** (paper 004 §2.4), the median-heuristic lengthscale and
   ``ν²`` by Robbins–Monro, exactly as :class:`~pymc_kernel_steps.KAMH`, in a repeating
   pattern of six moves: KAM, **blind jump**, blind jump, **mode hop**, blind jump, blind
   jump (four jumps in six: a blind jump finds a mode 16 σ away about twice in a thousand
   tries on the 2-d bimodal target, so finding it early takes many). A blind jump is
   ``N(x, ρ² S)`` with ``S = (2.38²/d) Cov(whole chain history)`` (computed when the cycle's
   KAM moves start) and ``ρ`` drawn log-uniformly in ``[1, jump_scale]``: it finds modes
   nothing has visited yet. A mode hop is ``x + (z_a − z_b) + γ ξ`` with ``z_a, z_b`` two
   random points of the whole history (the differential-evolution move of ter Braak &
   Vrugt with unit factor): once two modes are in the history it moves between them in one
   step. Both are symmetric, state-independent proposals.

At the phase change the sub-sample is redrawn from the cycle's whole exploration, and
``ν_exp = ν``, ``Σ = (γ/ν_exp)² I + Mᵀ H M`` at the current point (the KAM covariance divided
by ``ν_exp²``) and ``ν₀ = 2 ν_exp / (cos(πK/T_c) + 1)`` are frozen.

Sampling phase (``K ≤ k < T_c``): ``x*`` from the mixture, chosen independently of ``x``,
of a **mode hop** ``x + (z_a − z_b) + γ ξ`` (probability ``sampling_hops``), with ``z_a ≠ z_b``
from the chain's history up to the phase change (frozen: the phase's own draws are not
added), a **blind jump** ``N(x, ρ² S)`` (probability ``sampling_jumps``, ``S`` of this cycle)
and otherwise the paper's random walk ``N(x, ν_k² Σ)`` with ``ν_k = (ν₀/2)(cos(πk/T_c) + 1)``;
accepted with ``min(1, π(x*)/π(x))``. Every component is symmetric (the hop sums over
ordered pairs, so ``z_b − z_a`` is as likely as ``z_a − z_b``), hence so is the mixture:
``q(x* | x) = q(x | x*)`` and the ratio needs no proposal term. The hops move the chain
between the modes *within* a sampling phase, so the mode weights no longer rest on the mode
each phase happened to start in (how often they do: see the benchmarks page in the
documentation).

**What is exact.** Every sampling-phase move is a Metropolis move with a symmetric proposal
that is fixed during the move (``ν_k`` depends only on the position in the cycle; ``Σ``,
``S``, ``γ`` and the hops' archive only on the past, and none changes during the phase), so
each leaves the posterior invariant; the chain is time-inhomogeneous but every kernel it
applies is ``π``-invariant. The same holds for each
exploration move given the adaptation state (KAM moves carry their Hastings correction, jumps
and random-walk moves are symmetric).

**What is heuristic.** The exploration adaptation (``s``, ``ν²``, sub-sample, lengthscale,
``S``) restarts every cycle by design and never vanishes, so the exploration-phase draws are
not from a fixed kernel and the usual diminishing-adaptation guarantee does not apply; and
``Σ`` is frozen at a state-dependent point (the paper's "fuzzy estimate of the local
covariance"). Use :func:`sampling_phase` for estimates. The relative weights of the modes come
from the moves between them, mostly the sampling-phase hops, which are ``π``-reversible, so
the flows between modes balance once every mode is in the history; a mode found late
(blind jumps are rare successes) is under-weighted until then, so run enough iterations
(and chains) and check the weights chain by chain.
``adapt_after_tuning`` does not apply: cycles, and their adaptation, continue through the
draws. The cycle counter counts every iteration, tuning included.

**Relation to the paper.** Algorithm 2 of paper 004 restarts the exploration stepsize from its
large initial value each cycle and relies on a large, decaying KAM noise ``γ`` (4 → 1 in
absolute units in the authors' code) to leave a mode. Here the exploration scales are warm
started from the previous cycle's end values (``s`` from the trace of the last KAM covariance,
``ν²`` carried over, with a Robbins–Monro gain that restarts each cycle), ``γ`` keeps the
KAMH meaning, and leaving a mode is the job of the separate blind jumps (whose scale follows
the target's measured spread instead of absolute units) and of the mode hops. The paper's
sampling phase is the random walk alone; ours mixes in mode hops and blind jumps
(``sampling_hops``, ``sampling_jumps``), symmetric like it.

Sample stats (in ``idata.sample_stats``): ``accept``, ``accepted``, ``logp_evals``,
``accept_rate`` (the chain's mean ``accept`` since the start of its phase, tuning or
drawing: the progress bar's figure),
``logp_nan``, ``logp_inf``, ``lp`` (the model's log density; emitted as ``model_logp``,
absent for noisy log densities), ``exploring`` (bool), ``cycle`` (int64), ``jump`` (bool:
the move was a blind jump or a mode hop, in either phase) and ``scale``: the proposal scale
of the move (``s`` for the cycle-start random walk, ``√ν²`` for KAM moves, ``ρ`` for
exploration jumps, 1 for exploration hops, the schedule's ``ν_k`` for every sampling-phase
move). The ``tune`` and ``warning`` stats are consumed by PyMC and do not appear in the
DataTree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import require_bool, require_fraction, require_int, require_real
from ..core.adaptation import SCALE_RANGE, RobbinsMonroScale
from ..core.history import ChainHistory
from ..core.kernels import GaussianKernel, median_lengthscale
from ..core.moves import (
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
from ..core.proposals import cholesky_or_nan
from ..core.schedules import (
    ckam_nu0,
    ckam_sampling_scale,
    exploration_length,
)
from ..core.whitening import Whitening
from ._kam import KAMStep
from ._public import CYCLES, configuration, kam_proposal, public_signature, resolve
from ._sampling_phase import sampling_phase
from .base import ChainState, KernelStep

__all__ = ["CKAM", "CKAMChain", "default_cycle_length", "sampling_phase"]

#: default number of cycles per chain when ``cycle_length`` is not given
_CYCLES_PER_CHAIN = 20
#: the longest default cycle (the paper's T/M on its 2-d targets)
_MAX_DEFAULT_CYCLE = 1000
#: points of the whole history used to estimate the covariance of the jump moves
_JUMP_POINTS = 1000
#: the kinds of moves that count as jumps (the `jump` stat)
_JUMP_KINDS = (BlindJump.kind, ModeHop.kind)


@dataclass
class CKAMChain(ChainState):
    """What a chain of :class:`~pymc_kernel_steps.CKAM` learned and where it is in its cycle:
    its ``step.chain``.

    The exploration phase is the random walk (``random_walk``) until the cycle's history is
    long enough, then the repeating pattern ``exploration`` of the KAM move, blind jumps and
    mode hops; the sampling phase is the mixture ``sampling`` of a mode hop on the frozen
    archive, a blind jump and the cosine walk. The public attributes of :class:`ChainState`
    and these; the other fields are internal.

    Attributes
    ----------
    cycle_length, n_explore : int
        ``T_c`` and the exploration phase's length ``K`` of each cycle.
    cycle : int
        The current cycle (0-based).
    position : int
        ``mod(t − 1, T_c)``: the 0-based position in the cycle of the *next* iteration.
    kam : KAMMove or None
        The exploration's KAM move (its sub-sample, ``ν²`` and ``γ``).
    jump, hop : BlindJump, ModeHop or None
        The exploration's blind jump (``S = (2.38²/d) Cov(whole history)``, refreshed each
        cycle) and mode hop.
    exploration : Cycle or None
        The exploration's repeating pattern of moves.
    sampling_hop, sampling_jump, walk : ModeHop, BlindJump, CosineWalk or None
        The sampling phase's moves, frozen at the phase change: a mode hop on the history up to
        it, the blind jump with the cycle's ``S``, and the walk ``N(x, ν_k² Σ)``.
    sampling : Mixture or None
        Their mixture.
    nu_exp, nu0 : float
        The exploration's final scale ``ν`` and the cosine schedule's ``ν₀`` (see
        :func:`~pymc_kernel_steps.core.ckam_sampling_scale`).
    """

    cycle_length: int = 0
    n_explore: int = 0
    cycle: int = 0
    position: int = 0
    kam: KAMMove | None = None
    jump: BlindJump | None = None
    hop: ModeHop | None = None
    exploration: Cycle | None = None
    sampling_hop: ModeHop | None = None
    sampling_jump: BlindJump | None = None
    walk: CosineWalk | None = None
    sampling: Mixture | None = None
    nu_exp: float = math.nan
    nu0: float = math.nan
    # internal bookkeeping, not part of the public interface
    cycle_start: int = 0  # index in ``history`` of the first point of the current cycle
    kam_moves: int = 0  # KAM moves made in this cycle
    previous_n: int = 0  # sub-sample size at the end of the previous cycle's exploration


@dataclass(frozen=True)
class CyclePosition:
    """Where in its cycle an iteration proposed: the phase, the cycle and the move's scale."""

    exploring: bool
    cycle: int
    scale: float


def default_cycle_length(total_iterations: int, minimum: int) -> int:
    """Default ``T_c``: about 20 cycles per chain, at most 1000 iterations (the paper's value),
    at least ``minimum`` (what the exploration phase needs)."""
    return max(int(minimum), min(_MAX_DEFAULT_CYCLE, int(total_iterations) // _CYCLES_PER_CHAIN))


class CKAM(KAMStep):
    r"""Cyclical Kernel Adaptive Metropolis (Li, Zeng & Guo 2022): cycles of an exploration phase
    (KAM moves, blind jumps and mode hops that look for modes) and a sampling phase of
    random-walk moves whose scale decreases along a cosine.

    Pick it for a posterior with several separated modes and no usable gradient: samplers that
    learn from their whole history lock onto the mode they start in, while cKAM keeps finding
    and revisiting every mode. Use the sampling phases' draws for estimates
    (:func:`sampling_phase`); the exploration's adaptation never ends, by design. On a unimodal
    posterior :class:`KAMH` or :class:`KMCLite` mixes better. The module's documentation
    (``help(pymc_kernel_steps.steps.ckam)``) gives the algorithm, what is exact and what is
    heuristic.

    Parameters
    ----------
    vars : list of variables, optional
        Continuous variables to sample (default: all continuous free variables).
    proposal : KAMProposal, optional
        The exploration's KAM move (:class:`~pymc_kernel_steps.options.KAMProposal`; here by
        default a sub-sample of 50 from the current cycle, refreshed every 10 KAM moves, on
        unwhitened states: the paper's).
    cycles : Cycles, optional
        Cycle length, exploration share, blind jumps and mode hops
        (:class:`~pymc_kernel_steps.options.Cycles`).
    model, initial_point, compile_kwargs, rng, blocked : optional
        As every PyMC step: the model (default: the enclosing one), the point of the variables
        outside the block, keywords of :func:`pymc.pytensorf.compile` (``pm.sample``'s do not
        reach a step you build), the random state of a step driven by hand (``pm.sample``
        reseeds it from ``random_seed``), and PyMC's ``blocked`` (always joint).

    See Also
    --------
    sampling_phase : which draws to use for estimates.
    pymc_kernel_steps.options : every option, documented once.

    Notes
    -----
    The keywords of earlier releases (``cycle_length=``, ``jump_scale=``, ``gamma=``, ...) still
    work, mapped to the options, with a ``DeprecationWarning`` naming the new spelling. Sample
    stats: ``accept``, ``accepted``, ``accept_rate``, ``logp_evals``, ``exploring``, ``cycle``,
    ``jump`` and ``scale``.
    """

    name = "ckam"
    chain: CKAMChain
    # its tuning alternates exploration (blind jumps between modes) and sampling by design, so the
    # late half of tuning is not meant to be a stationary chain
    checks_tuning_mixing = False
    progress_scale_stat = "scale"
    progress_scale_label = "Scale"

    stats_dtypes_shapes = {
        **KernelStep.stats_dtypes_shapes,
        "exploring": (bool, []),
        "cycle": (np.int64, []),
        "scale": (np.float64, []),
        "jump": (bool, []),
    }

    @public_signature
    def __init__(
        self,
        vars=None,
        *,
        proposal=None,
        cycles=None,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
        **deprecated,
    ):
        given = {"proposal": proposal, "cycles": cycles}
        self.options = resolve("CKAM", _OPTIONS, given, deprecated)
        if self.options["proposal"].nu2 is not None:
            raise ValueError(
                "CKAM: KAMProposal(nu2=...) is KAMH's; CKAM's ν² restarts its Robbins–Monro "
                "adaptation every cycle."
            )
        keywords = configuration(self.options)
        del keywords["nu2"]
        self._configure(
            vars,
            **keywords,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
        )

    def _configure(
        self,
        vars=None,
        *,
        cycle_length: int | None = None,
        exploration_fraction: float = 0.4,
        jump_scale: float = 16.0,
        mode_jumps: bool = True,
        sampling_hops: float = 0.2,
        sampling_jumps: float = 0.1,
        subsample_size: int = 50,
        refresh_interval: int = 10,
        whiten: bool = False,
        **shared,
    ):
        require_fraction("exploration_fraction", exploration_fraction)
        if cycle_length is not None:
            require_int("cycle_length", cycle_length, minimum=2)
        require_real("jump_scale", jump_scale)
        if not (np.isfinite(jump_scale) and jump_scale >= 0):
            raise ValueError(f"`jump_scale` must be a finite number ≥ 0, got {jump_scale!r}.")
        require_bool("mode_jumps", mode_jumps)
        require_fraction("sampling_hops", sampling_hops, zero=True)
        require_fraction("sampling_jumps", sampling_jumps, zero=True)
        if sampling_hops + sampling_jumps >= 1.0:
            raise ValueError(
                "`sampling_hops + sampling_jumps` must be below 1 (the rest of the sampling-phase "
                f"moves are the cosine random walk), got {sampling_hops + sampling_jumps!r}."
            )
        self.exploration_fraction = float(exploration_fraction)
        self.jump_scale = float(jump_scale)
        self.mode_jumps = bool(mode_jumps)
        self.sampling_hops = float(sampling_hops)
        self.sampling_jumps = float(sampling_jumps)
        self._cycle_length_arg = cycle_length
        self._planned_iterations: int | None = None
        super().__init__(
            vars,
            subsample_size=subsample_size,
            refresh_interval=refresh_interval,
            whiten=whiten,
            climb=False,
            **shared,
        )
        if cycle_length is not None and cycle_length < self.min_cycle_length:
            raise ValueError(
                f"`cycle_length` = {cycle_length} is too short: with exploration_fraction = "
                f"{self.exploration_fraction} and min_history = {self.min_history}, the "
                f"exploration phase needs at least {self.min_exploration} iterations "
                f"(min_history random-walk iterations to fill the cycle's sub-sample, then KAM "
                f"moves), so `cycle_length` must be at least {self.min_cycle_length}."
            )

    # ------------------------------------------------------------------ configuration
    @property
    def min_history(self) -> int:
        """Points of the current cycle needed before KAM moves start."""
        if self._min_history_arg is not None:
            return self._min_history_arg
        return max(20, 5 * self.dim)

    @property
    def min_exploration(self) -> int:
        """Shortest exploration phase: ``min_history`` random-walk iterations, then as many
        KAM/jump iterations."""
        return 2 * self.min_history

    @property
    def min_cycle_length(self) -> int:
        """Shortest allowed ``cycle_length`` (exploration needs :attr:`min_exploration`
        iterations and at least one sampling iteration must follow)."""
        length = max(math.ceil(self.min_exploration / self.exploration_fraction), 2)
        while exploration_length(length, self.exploration_fraction) < self.min_exploration or (
            exploration_length(length, self.exploration_fraction) >= length
        ):
            length += 1
        return length

    def cycle_length_for(self, tune: int, draws: int) -> int:
        """The cycle length used for a chain of ``tune + draws`` iterations."""
        if self._cycle_length_arg is not None:
            return int(self._cycle_length_arg)
        return default_cycle_length(tune + draws, self.min_cycle_length)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        self._planned_iterations = int(tune) + int(draws)
        super().setup_chain(rng, tune, draws)

    def _new_chain(self) -> CKAMChain:
        planned = self._planned_iterations if self._planned_iterations is not None else 2000
        length = self.cycle_length_for(planned, 0)
        chain = CKAMChain(history=ChainHistory(self.dim))
        chain.cycle_length = length
        chain.n_explore = exploration_length(length, self.exploration_fraction)
        chain.random_walk = RandomWalk.optimal(self.dim, SCALE_RANGE, target=self.target_accept)
        chain.kam = KAMMove(self.dim)
        chain.jump = BlindJump(self.jump_scale)
        chain.hop = ModeHop(chain.history)
        chain.exploration = Cycle(
            [
                chain.kam,
                chain.jump,
                chain.jump,
                chain.hop if self.mode_jumps else chain.kam,
                chain.jump,
                chain.jump,
            ],
            fallback=chain.kam,
        )
        chain.sampling_hop = ModeHop(chain.history, archive_size=0)
        chain.sampling_jump = BlindJump(self.jump_scale)
        chain.walk = CosineWalk()
        if self.sampling_hops > 0 or self.sampling_jumps > 0:
            rest = 1.0 - self.sampling_hops - self.sampling_jumps
            chain.sampling = Mixture(
                [
                    (chain.sampling_hop, self.sampling_hops),
                    (chain.sampling_jump, self.sampling_jumps),
                    (chain.walk, rest),
                ]
            )
        else:
            chain.sampling = Mixture([(chain.walk, 1.0)])
        return chain

    # ------------------------------------------------------------------ proposals
    def _propose(self, x) -> tuple[Proposal, CyclePosition]:
        """The move of the cycle's phase: the random walk until the cycle's history is long
        enough, then the exploration pattern (KAM, blind jumps, mode hop); in the sampling
        phase a mixture, chosen independently of ``x``, of a mode hop (probability
        ``sampling_hops``), a blind jump (``sampling_jumps``) and the cosine random walk
        ``N(x, ν_k² Σ)`` (the rest). Every sampling component is symmetric and fixed for the
        whole phase (frozen archive, ``S``, ``γ``, ``Σ``), so the mixture is too:
        ``q(y | x) = q(x | y)`` and the Metropolis ratio ``π(y)/π(x)`` is exact."""
        chain = self.chain
        k = chain.position
        if k >= chain.n_explore:
            chain.walk.scale = ckam_sampling_scale(k, chain.cycle_length, chain.nu0)
            proposal = chain.sampling.propose(self.rng, x)
            scale = chain.walk.scale
        elif not chain.kam.ready:
            proposal = chain.random_walk.propose(self.rng, x)
            scale = chain.random_walk.scale.scale
        else:
            proposal = chain.exploration.propose(self.rng, x)
            if proposal.move is chain.jump:
                scale = proposal.extra
            elif proposal.move is chain.hop:
                scale = 1.0
            else:
                scale = math.sqrt(chain.kam.nu2_scale.scale)
        return proposal, CyclePosition(k < chain.n_explore, chain.cycle, scale)

    # ------------------------------------------------------------------ schedule and adaptation
    def _adapting(self) -> bool:
        """Always: the cycles, and the adaptation of their exploration, are the method."""
        return True

    def _adapt(self, x, transition):
        """Refresh the exploration's sub-sample, freeze the sampling proposal, advance the cycle
        position (every iteration, tuning or not)."""
        chain = self.chain
        proposal = transition.proposal
        if proposal.move is chain.kam:
            chain.kam_moves += 1
            if chain.kam_moves % self.refresh_interval == 0:
                self._refresh_subsample(x)
        elif proposal.move is chain.random_walk:
            if len(chain.history) - chain.cycle_start >= self.min_history:
                self._start_kam(x)

        chain.position += 1
        if chain.position == chain.n_explore:
            self._freeze_sampling_proposal(x)
        elif chain.position == chain.cycle_length:
            self._start_cycle()

    def _start_cycle(self) -> None:
        """Begin a new cycle: forget the cycle's sub-sample, restart the Robbins–Monro gains."""
        chain = self.chain
        chain.cycle += 1
        chain.position = 0
        chain.cycle_start = len(chain.history)
        chain.kam_moves = 0
        kam = chain.kam
        if kam.subsample is not None:
            chain.previous_n = kam.subsample.shape[0]
        kam.subsample = None
        kam.forget_cache()
        if chain.walk.chol is not None and math.isfinite(chain.nu_exp):
            # warm start: the random walk (in the start's frame D) starts at the variances of
            # the last KAM proposal, geometrically averaged over the coordinates
            variances = chain.nu_exp**2 * np.sum(chain.walk.chol**2, axis=1)
            log_total = float(np.mean(np.log(variances / self._start_frame() ** 2)))
            if math.isfinite(log_total):
                rw = chain.random_walk.scale
                rw.log_scale = min(max(0.5 * log_total, rw.min_log_scale), rw.max_log_scale)
        chain.random_walk.scale.iteration = 0
        if kam.nu2_scale is not None:
            kam.nu2_scale.iteration = 0

    def _start_kam(self, x) -> None:
        chain = self.chain
        self._refresh_subsample(x)
        if not chain.kam.ready:  # degenerate cycle history: stay a random walk
            return
        chain.exploration.restart()
        self._refresh_jump_covariance()

    def _refresh_subsample(self, x) -> None:
        """Redraw the sub-sample from the current cycle's history (and the lengthscale, γ)."""
        chain = self.chain
        kam = chain.kam
        subsample = chain.history.subsample(self.rng, self.subsample_size, start=chain.cycle_start)
        whitening = None
        if self.whiten:
            whitening = Whitening.from_points(
                subsample,
                fallback_variance=self._fallback_variance(chain.random_walk.scale.scale),
            )
            subsample = whitening.whiten(subsample)
        if self.kernel is None:
            try:
                kernel = GaussianKernel(median_lengthscale(subsample))
            except ValueError:  # degenerate (a stuck chain): keep what we have
                if kam.kernel is None or kam.subsample is None:
                    return
                kernel = kam.kernel
        else:
            kernel = self.kernel
        spread = kam.reference_scale(subsample, self.gamma, whitened=self.whiten)
        if spread is None:
            return
        first_of_cycle = kam.subsample is None
        previous_n = chain.previous_n if first_of_cycle else kam.subsample.shape[0]
        kam.subsample = subsample
        kam.kernel = kernel
        kam.whitening = whitening
        kam.gamma_abs = self.gamma * spread
        chain.hop.noise_scale = chain.sampling_hop.noise_scale = kam.gamma_abs
        kam.cache_at(x)
        n = subsample.shape[0]
        if kam.nu2_scale is None:
            # first KAM phase of the chain: the learned part gets the total variance of the
            # optimal random walk (2.38² whitened; d s² with the random walk's s otherwise)
            trace = float(np.trace(kam.feature_cov_current))
            rw_variances = self._fallback_variance(chain.random_walk.scale.scale)
            total = RW_FACTOR**2 if self.whiten else float(np.sum(rw_variances))
            nu2 = total / trace if trace > 0 and np.isfinite(trace) else 1.0
            kam.nu2_scale = RobbinsMonroScale.within(nu2, SCALE_RANGE, target=self.target_accept)
        elif previous_n and previous_n != n:
            # Mᵀ H M grows with n: keep the proposal's scale when the sub-sample size changes
            kam.nu2_scale.rescale(previous_n / n)

    def _refresh_jump_covariance(self) -> None:
        """``S = (2.38²/d) Cov(whole history)`` for the warm-restart jumps of this cycle."""
        chain = self.chain
        if self.jump_scale == 0:
            chain.jump.chol = None
            return
        points = chain.history.subsample(self.rng, _JUMP_POINTS)
        cov = np.atleast_2d(np.cov(points.T, bias=True))
        scale = float(np.trace(cov)) / self.dim
        if not (np.isfinite(scale) and scale > 0):
            return  # keep the previous cycle's S (None at the very start: no jumps)
        cov.flat[:: self.dim + 1] += 1e-8 * scale
        chol = cholesky_or_nan(cov * (RW_FACTOR**2 / self.dim))
        if np.all(np.isfinite(chol)):
            chain.jump.chol = chol

    def _freeze_sampling_proposal(self, x) -> None:
        """Phase change: ``ν_exp``, ``Σ = (γ/ν_exp)² I + Mᵀ H M`` at ``x`` and ``ν₀``."""
        chain = self.chain
        kam = chain.kam
        beta_effective = chain.n_explore / chain.cycle_length
        if kam.ready:
            # Σ from the whole exploration of the cycle, not the sub-sample of the last refresh
            # (with most exploration moves being jumps, that may still be the first one, drawn
            # from the cycle-start random walk alone: few distinct states, a degenerate γ)
            self._refresh_subsample(x)
        if not kam.ready:  # no KAM move this cycle (degenerate history): the cycle's random
            # walk, N(x, s² D²) in the start's frame D, goes on at its scale
            chain.nu_exp = chain.random_walk.scale.scale
            sigma = np.diag(self._start_frame() ** 2)
        else:
            nu_exp = math.sqrt(kam.nu2_scale.scale)
            if kam.feature_cov_current is None or not np.array_equal(kam.feature_cov_point, x):
                kam.cache_at(x)
            sigma = kam.feature_cov_current.copy()
            sigma.flat[:: self.dim + 1] += (kam.gamma_abs / nu_exp) ** 2
            chain.nu_exp = nu_exp
        chol = cholesky_or_nan(sigma)
        if not np.all(np.isfinite(chol)):
            chol = np.eye(self.dim)
        whitening = kam.whitening if kam.ready else None
        # the frozen proposal N(x, ν_t² Σ) in the model's coordinates: Σ's factor mapped back
        chain.walk.chol = chol if whitening is None else whitening.chol @ chol
        # ν₀ from the effective fraction K / T_c so that ν_K = ν_exp exactly
        chain.nu0 = float(ckam_nu0(chain.nu_exp, beta_effective))
        # the mode hops and jumps of the sampling phase use the history up to here, and this
        # cycle's S: fixed for the whole phase, so that every sampling move is symmetric
        archive = len(chain.history) if math.isfinite(kam.gamma_abs) else 0
        chain.sampling_hop.archive_size = archive
        chain.sampling_jump.chol = chain.jump.chol if self.jump_scale > 0 else None

    def _transition_stats(self, transition):
        position = transition.context
        return {
            "exploring": position.exploring,
            "cycle": position.cycle,
            "scale": float(position.scale),
            "jump": transition.proposal.kind in _JUMP_KINDS,
        }


_OPTIONS = (kam_proposal("kernel"), CYCLES)
