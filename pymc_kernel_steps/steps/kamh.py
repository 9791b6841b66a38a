"""Kernel Adaptive Metropolis–Hastings (paper 001) and Adaptive Metropolis as its linear case."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import require_positive
from ..core.adaptation import CandidateSearch
from ..core.kernels import LinearKernel
from ..core.moves import KAMMove, LearnedMoves
from ..core.transitions import kamh
from ..core.whitening import Whitening
from ._docs import with_shared_parameters
from ._health import count_unusable
from ._kam import KAMStep
from ._moves import learned_instance_stats, move_code, moves_attribute, require_moves
from .base import ChainState, KernelStep, Transition

__all__ = ["KAMH", "KAMHChain", "AdaptiveMetropolis"]


@dataclass
class KAMHChain(ChainState):
    """What a chain of :class:`~pymc_kernel_steps.KAMH` (or
    :class:`~pymc_kernel_steps.AdaptiveMetropolis`) learned: its ``step.chain``.

    The public attributes of :class:`ChainState` and these; the other fields are internal. They
    read the chain's :attr:`transition` state.

    Attributes
    ----------
    transition : KAMHState
        The chain's state in :mod:`~pymc_kernel_steps.core.transitions.kamh`, the transition the
        step hands each of its iterations to (its history, random walk and coordinate moves are
        the chain's own).
    kam : KAMMove
        The KAMH phase's proposal (a random walk before its first fit): sub-sample, kernel,
        ``ν²`` and ``γ``.
    whitening : Whitening
        With ``whiten``, the KAM move acts on ``whitening.whiten(x)``.
    candidates : list of kernels or None
        The kernels tried during tuning (default kernel only; None: a fixed kernel).
    candidate : int
        The index in ``candidates`` of the kernel in use.
    candidate_nu2_scales : list of RobbinsMonroScale or None
        One Robbins–Monro ``ν²`` per candidate kernel.
    candidate_search : CandidateSearch or None
        The search among the candidates (default kernel only): per candidate, the moving average
        of ``(1 − accepted) α ‖u* − u‖²`` (``candidate_search.scores``) and the moves it made
        (``candidate_search.counts``).
    learned_moves : LearnedMoves or None
        ``moves="learned"``: the mixture of the KAM move, differential evolution, snooker, the
        envelope and the random walk, and its weight learner (``learned_moves.weights`` by
        kind of move, ``learned_moves.stats()`` with every move's acceptance and measured
        rate); frozen after tuning. The weights and acceptances are also sample stats, in
        every chain.
    """

    transition: kamh.KAMHState | None = None

    @property
    def kam(self) -> KAMMove:
        return self.transition.kam

    @property
    def whitening(self) -> Whitening:
        return self.transition.whitening

    @property
    def candidates(self) -> list | None:
        return self.transition.lengthscales.candidates

    @property
    def candidate(self) -> int:
        return self.transition.lengthscales.candidate

    @property
    def candidate_nu2_scales(self) -> list | None:
        return self.transition.lengthscales.nu2_scales

    @property
    def candidate_search(self) -> CandidateSearch | None:
        return self.transition.lengthscales.search

    @property
    def candidate_frozen(self) -> bool:
        return self.transition.lengthscales.frozen

    @property
    def learned_moves(self) -> LearnedMoves | None:
        return self.transition.learned


@with_shared_parameters
class KAMH(KAMStep):
    r"""Kernel Adaptive Metropolis–Hastings (Sejdinovic et al., ICML 2014).

    Proposes ``x* ~ N(x, R(x))`` with ``R(x) = γ² I + ν² Mᵀ H M``: the covariance of the chain's
    history in the RKHS of ``kernel``, pulled back to the input space at ``x`` (rows of ``M`` are
    ``2 ∇ₓ k(x, z_i)`` for a sub-sample ``z`` of the history, ``H`` centres). On curved targets it
    proposes along the local shape of the posterior. Both proposal densities enter the acceptance
    ratio, so the move is an exact Metropolis–Hastings step for fixed ``(z, ℓ, ν²)``.

    By default (``whiten=True``) the kernel acts on states whitened by the mean and covariance of
    the chain's history (see :class:`~pymc_kernel_steps.core.Whitening`): the proposal is
    ``x* = μ + L u*`` with ``u* ~ N(u, R(u))`` in the whitened coordinates ``u = L⁻¹(x − μ)``,
    so a linear change of the model's coordinates (rescaling, rotation, correlation) does not
    change the sampler's behaviour. This goes beyond the paper, whose isotropic kernel works in
    the model's coordinates (``whiten=False``).

    Needs no gradient and evaluates the log density once per iteration.

    Parameters
    ----------
    <shared: vars>
    nu2 : float, optional
        Fixed ``ν²``. Default: learned during tuning by Robbins–Monro towards ``target_accept``.
    <shared: moves>
        For ``KAMH``, ``"fixed"`` is the KAM move alone after its first fit (the paper).
    kernel : Kernel, optional
        Default: a :class:`~pymc_kernel_steps.core.GaussianKernel` whose lengthscale is chosen
        during tuning among 1, 2, 4, 8 and 32 times the median heuristic (refreshed with the
        sub-sample): each tuning iteration uses one candidate at random, each candidate has its
        own ``ν²`` tuned towards ``target_accept``, and the candidate with the largest mean
        ``α (1 − α) ‖u* − u‖²`` (the squared jump weighted by the chance of a rejection; whitened
        units) is kept after tuning. Short
        lengthscales follow curved posteriors; long ones approach adaptive Metropolis, which is
        better on near-Gaussian ones. A kernel you pass is used as given.
    subsample_size : int
        Number ``n`` of history points in the sub-sample ``z`` (default 500).
    gamma : float
        Exploration noise ``γ`` relative to the history's scale (default 0.2). With ``whiten``
        it is ``γ`` in whitened coordinates; without, the absolute ``γ`` is
        ``gamma × sqrt(λ_min(Cov(z)))``, re-estimated with the sub-sample (on the paper's banana,
        whose smallest scale is 1, this is the paper's γ = 0.2).
    target_accept : float
        Target acceptance rate of the ``ν²`` adaptation (default 0.234).
    min_history : int, optional
        While the history is shorter, or the chain has made fewer than ``max(20, 2 d)``
        accepted moves (the scouts' included), the KAM move is not ready and passes its turn
        on (default ``max(50, 10 d)``): with
        ``moves="learned"`` the chain makes coordinate moves and the mixture's other moves
        (differential evolution, snooker, the envelope and the random walk, each once it is
        ready), with ``moves="fixed"`` coordinate moves and an adaptive random walk
        ``N(x, s² I)`` with ``s`` tuned towards ``target_accept``.
    refresh_interval : int
        During tuning the sub-sample (drawn from the most recent half of the history, so the
        initial transient is forgotten), the whitening and the default kernel's lengthscale are
        refreshed every ``refresh_interval`` iterations (default 20).
    whiten : bool
        Let the kernel act on states whitened by the history's mean and covariance (default
        True; False is the paper's isotropic kernel in the model's coordinates).
    <shared: adapt_after_tuning, scouts, walkers, climb>
    <shared: model, initial_point, compile_kwargs, rng, blocked>

    Notes
    -----
    Sample stats (in ``idata.sample_stats``): ``accept`` (acceptance probability), ``accepted``,
    ``accept_rate`` (the chain's mean ``accept`` since the start of its phase, tuning or
    drawing: the progress bar's figure),
    ``logp_evals`` (target evaluations this iteration), ``logp_nan``, ``logp_inf``, ``lp`` (the
    model's log density; emitted as ``model_logp``, absent for noisy log densities), ``nu2``,
    ``gamma``, ``lengthscale`` (NaN for a kernel without one; in whitened units with ``whiten``),
    ``n_history``, ``random_walk`` (True before the KAM move's first fit) and ``move`` (the kind
    of move that proposed, an index in ``("coordinate", "random_walk", "surrogate_hmc", "kam",
    "differential_evolution", "snooker", "envelope")``). The ``tune`` and
    ``warning`` stats are consumed by PyMC and do not appear in the DataTree. Adapted scales stay
    within a factor ``10⁴`` of their natural value (for ``ν²`` with ``whiten``, ``2.38²`` over
    the trace of the learned part, re-centred at every refresh), and a chain that stays stuck
    gets one warning at the end of sampling.

    Examples
    --------
    >>> import pymc as pm
    >>> from pymc_kernel_steps import KAMH
    >>> with pm.Model():
    ...     x = pm.Normal("x", shape=2)
    ...     idata = pm.sample(step=KAMH(), tune=500, draws=500, chains=1,
    ...                       random_seed=1, progressbar=False)  # doctest: +SKIP
    """

    name = "kamh"
    chain: KAMHChain
    #: pooled tuning: the other chains' states enter the sub-sample the kernel is learned from
    pools_tuning_data = True
    #: coordinate-wise tuning moves after the learned proposal starts (fewer than KMC's: on the
    #: 2-d banana more of them cost KAMH mixing)
    coordinate_share_late = 0.05
    progress_scale_stat = "nu2"
    progress_scale_label = "ν²"
    stuck_chain_stats = ("accepted", "logp_evals", "random_walk", "nu2", "gamma", "lengthscale")
    own_move = "kam"  # the chain's attribute that holds the step's own learned move

    stats_dtypes_shapes = {
        **KernelStep.stats_dtypes_shapes,
        "nu2": (np.float64, []),
        "gamma": (np.float64, []),
        "lengthscale": (np.float64, []),
        "n_history": (np.int64, []),
        "random_walk": (bool, []),
        "move": (np.int64, []),
    }
    moves = moves_attribute
    _instance_stats = learned_instance_stats

    def __init__(
        self,
        vars=None,
        *,
        nu2: float | None = None,
        moves: str = "learned",
        scouts: int = 4,
        walkers: int = 4,
        **shared,
    ):
        if nu2 is not None:
            require_positive("nu2", nu2)
        self._moves = require_moves(moves)
        self.fixed_nu2 = nu2
        self._tune_length = 0
        super().__init__(vars, scouts=scouts, walkers=walkers, **shared)

    @property
    def min_history(self) -> int:
        if self._min_history_arg is not None:
            return self._min_history_arg
        return max(50, 10 * self.dim)

    def _settings(self) -> kamh.KAMHSettings:
        return kamh.KAMHSettings(
            dim=self.dim,
            kernel=self.kernel,
            fixed_nu2=self.fixed_nu2,
            learned_moves=self.moves == "learned",
            subsample_size=self.subsample_size,
            gamma=self.gamma,
            target_accept=self.target_accept,
            min_history=self.min_history,
            refresh_interval=self.refresh_interval,
            whiten=self.whiten,
            adapt_after_tuning=self.adapt_after_tuning,
            coordinate_share_early=self.coordinate_share_early,
            coordinate_share_late=self.coordinate_share_late,
        )

    def _new_chain(self) -> KAMHChain:
        """A chain whose transition state shares its history, random walk and coordinate moves
        (the warm-up phases act on those); its position is handed over every iteration."""
        settings = self._settings()
        unknown = np.full(self.dim, math.nan)
        state = kamh.init(
            unknown, math.nan, settings, tuning=self.tune, tune_length=self._tune_length
        )
        return KAMHChain(
            history=state.history,
            random_walk=state.random_walk,
            coordinate=state.coordinate,
            transition=state,
        )

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        self._tune_length = int(tune)
        super().setup_chain(rng, tune, draws)

    def _on_stop_tuning(self) -> None:
        kamh.freeze(self.chain.transition)

    # ------------------------------------------------------------------ the transition
    def _iterate(self, q0, x, logp_current, evaluations):
        """Hand the chain's state to :func:`~pymc_kernel_steps.core.transitions.kamh.step`
        and take back what it did."""
        chain = self.chain
        state = chain.transition
        state.position, state.log_density = x, logp_current
        state.iteration, state.accepted_moves = chain.iteration, chain.accepted_moves
        state.tuning = self.tune
        state.start_frame = chain.start_scales
        state.pooled_states = None if chain.pooled is None else chain.pooled.states
        unusable = [False, False]

        def log_density(point):
            value = self._evaluate_logp(point, q0.point_map_info, proposal=True)
            unusable[:] = count_unusable(self, value, point, q0.point_map_info)
            return value

        state, info = kamh.step(self.rng, state, log_density)
        proposal = info.proposal
        self._count_unevaluated(proposal)
        chain.current_point, chain.current_logp = state.position, state.log_density
        chain.iteration = state.iteration
        chain.adaptation_iteration = state.adaptation_iteration
        moved = info.accepted and not proposal.stays
        self._track_rejections(info.accepted, moved=moved, kind=proposal.kind)
        transition = Transition(
            proposal, None, info.accepted, info.accept_prob, info.log_accept_ratio
        )
        return self._result(q0, transition, evaluations + info.evaluations, *unusable)

    def _transition_stats(self, transition):
        chain = self.chain
        kernel = chain.kam.kernel if chain.kam.kernel is not None else self.kernel
        lengthscale = getattr(kernel, "lengthscale", math.nan) if kernel is not None else math.nan
        random_walk = not chain.kam.ready
        return {
            "nu2": math.nan if random_walk else chain.kam.nu2,
            "gamma": chain.random_walk.scale.scale if random_walk else chain.kam.gamma_abs,
            "lengthscale": float(lengthscale),
            "n_history": len(chain.history),
            "random_walk": random_walk,
            "move": move_code(transition.proposal),
            **({} if chain.learned_moves is None else chain.learned_moves.sample_stats()),
        }


@with_shared_parameters
class AdaptiveMetropolis(KAMH, withheld=("kernel", "moves")):
    """Adaptive Metropolis (Haario et al. 2001) with a learned scale: :class:`KAMH` with a linear
    kernel, whose proposal ``N(x, γ² I + 4 ν² n Cov(z))`` does not depend on ``x``.

    A baseline for the kernel methods, and the best of them on near-Gaussian posteriors: it
    learns the global covariance of the chain's history and tunes its scale ``ν²`` by
    Robbins–Monro. Needs no gradient and evaluates the log density once per iteration. For
    another kernel use :class:`KAMH` (``KAMH(kernel=LinearKernel())`` is this class).

    Parameters
    ----------
    <shared: vars>
    nu2 : float, optional
        Fixed ``ν²``. Default: learned during tuning by Robbins–Monro towards ``target_accept``.
    subsample_size : int, default 500
        Number ``n`` of history points in the sub-sample ``z`` whose covariance is learned.
    gamma : float, default 0.2
        Exploration noise ``γ`` relative to the history's scale (in whitened coordinates with
        ``whiten``; otherwise relative to ``sqrt(λ_min(Cov(z)))``).
    target_accept : float, default 0.234
        Target acceptance rate of the scale adaptation (random-walk phase and ``ν²``), in (0, 1).
    min_history : int, optional
        While the history is shorter, or the chain has made fewer than ``max(20, 2 d)``
        accepted moves (the scouts' included), the step makes coordinate moves and an
        adaptive random walk ``N(x, s² I)`` with ``s`` tuned towards ``target_accept``
        (default ``max(50, 10 d)``).
    refresh_interval : int, default 20
        During tuning the sub-sample and the whitening are refreshed every ``refresh_interval``
        iterations.
    whiten : bool, default True
        Work on states whitened by the history's mean and covariance.
    <shared: adapt_after_tuning, scouts>
    walkers : int, default 1
        Copies of the chain that take turns while it tunes, as :class:`KAMH` has by default
        (4); off here so that the baseline is the textbook adaptive Metropolis.
    climb : bool, default False
        Climb from a start far outside the posterior's bulk before tuning, as :class:`KAMH`
        does by default; off here so that the baseline is the textbook adaptive Metropolis.
    <shared: model, initial_point, compile_kwargs, rng, blocked>

    See Also
    --------
    KAMH : the same with a Gaussian (or any) kernel: a proposal that follows curved posteriors.

    Notes
    -----
    Sample stats as for :class:`KAMH`.
    """

    name = "adaptive_metropolis"

    def __init__(self, vars=None, *, walkers: int = 1, climb: bool = False, **shared):
        super().__init__(
            vars, kernel=LinearKernel(), moves="fixed", walkers=walkers, climb=climb, **shared
        )
