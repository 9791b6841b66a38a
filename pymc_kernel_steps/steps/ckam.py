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
from ..core.moves import BlindJump, CosineWalk, Cycle, KAMMove, Mixture, ModeHop
from ..core.schedules import exploration_length
from ..core.transitions import ckam
from ._kam import KAMStep
from ._public import CYCLES, configuration, kam_proposal, public_signature, resolve
from ._sampling_phase import sampling_phase
from .base import ChainState, KernelStep

__all__ = ["CKAM", "CKAMChain", "default_cycle_length", "sampling_phase"]

#: default number of cycles per chain when ``cycle_length`` is not given
_CYCLES_PER_CHAIN = 20
#: the longest default cycle (the paper's T/M on its 2-d targets)
_MAX_DEFAULT_CYCLE = 1000


@dataclass
class CKAMChain(ChainState):
    """What a chain of :class:`~pymc_kernel_steps.CKAM` learned and where it is in its cycle:
    its ``step.chain``.

    The exploration phase is the random walk (``random_walk``) until the cycle's history is
    long enough, then the repeating pattern ``exploration`` of the KAM move, blind jumps and
    mode hops; the sampling phase is the mixture ``sampling`` of a mode hop on the frozen
    archive, a blind jump and the cosine walk. The public attributes of :class:`ChainState`
    and these; the other fields are internal. They read the chain's :attr:`transition` state.

    Attributes
    ----------
    transition : CKAMState
        The chain's state in :mod:`~pymc_kernel_steps.core.transitions.ckam`, the transition the
        step hands each of its iterations to (its history and random walk are the chain's own).
    cycle_length, n_explore : int
        ``T_c`` and the exploration phase's length ``K`` of each cycle.
    cycle : int
        The current cycle (0-based).
    position : int
        ``mod(t − 1, T_c)``: the 0-based position in the cycle of the *next* iteration.
    kam : KAMMove
        The exploration's KAM move (its sub-sample, ``ν²`` and ``γ``).
    jump, hop : BlindJump, ModeHop
        The exploration's blind jump (``S = (2.38²/d) Cov(whole history)``, refreshed each
        cycle) and mode hop.
    exploration : Cycle
        The exploration's repeating pattern of moves.
    sampling_hop, sampling_jump, walk : ModeHop, BlindJump, CosineWalk
        The sampling phase's moves, frozen at the phase change: a mode hop on the history up to
        it, the blind jump with the cycle's ``S``, and the walk ``N(x, ν_k² Σ)``.
    sampling : Mixture
        Their mixture.
    nu_exp, nu0 : float
        The exploration's final scale ``ν`` and the cosine schedule's ``ν₀`` (see
        :func:`~pymc_kernel_steps.core.ckam_sampling_scale`).
    """

    transition: ckam.CKAMState | None = None

    @property
    def cycle_length(self) -> int:
        return self.transition.settings.cycle_length

    @property
    def n_explore(self) -> int:
        return self.transition.settings.exploration_length

    @property
    def cycle(self) -> int:
        return self.transition.cycle

    @property
    def position(self) -> int:
        return self.transition.cycle_position

    @property
    def kam(self) -> KAMMove:
        return self.transition.kam

    @property
    def jump(self) -> BlindJump:
        return self.transition.jump

    @property
    def hop(self) -> ModeHop:
        return self.transition.hop

    @property
    def exploration(self) -> Cycle:
        return self.transition.exploration

    @property
    def sampling_hop(self) -> ModeHop:
        return self.transition.sampling_hop

    @property
    def sampling_jump(self) -> BlindJump:
        return self.transition.sampling_jump

    @property
    def walk(self) -> CosineWalk:
        return self.transition.walk

    @property
    def sampling(self) -> Mixture:
        return self.transition.sampling

    @property
    def nu_exp(self) -> float:
        return self.transition.nu_exp

    @property
    def nu0(self) -> float:
        return self.transition.nu0


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
    _transition_module = ckam
    # its tuning alternates exploration (blind jumps between modes) and sampling by design, so the
    # late half of tuning is not meant to be a stationary chain
    checks_tuning_mixing = False
    progress_scale_stat = "scale"
    progress_scale_label = "Scale"

    stats_dtypes_shapes = {
        **KernelStep.stats_dtypes_shapes,
        **ckam.STATS,
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

    def _settings(self, cycle_length: int) -> ckam.CKAMSettings:
        return ckam.CKAMSettings(
            dim=self.dim,
            cycle_length=cycle_length,
            exploration_fraction=self.exploration_fraction,
            kernel=self.kernel,
            subsample_size=self.subsample_size,
            gamma=self.gamma,
            target_accept=self.target_accept,
            min_history=self.min_history,
            refresh_interval=self.refresh_interval,
            whiten=self.whiten,
            jump_scale=self.jump_scale,
            mode_jumps=self.mode_jumps,
            sampling_hops=self.sampling_hops,
            sampling_jumps=self.sampling_jumps,
        )

    def _new_chain(self) -> CKAMChain:
        """A chain at the start of its first cycle, whose transition state shares its history
        and random walk (the warm-up phases act on those); its position is handed over every
        iteration."""
        planned = self._planned_iterations if self._planned_iterations is not None else 2000
        settings = self._settings(self.cycle_length_for(planned, 0))
        unknown = np.full(self.dim, math.nan)
        state = ckam.init(unknown, math.nan, settings)
        return CKAMChain(history=state.history, random_walk=state.random_walk, transition=state)

    # ------------------------------------------------------------------ the transition


_OPTIONS = (kam_proposal("kernel"), CYCLES)
