"""Kernel Adaptive Metropolis–Hastings (paper 001) and Adaptive Metropolis as its linear case."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .._validation import require_positive
from ..core.adaptation import CandidateSearch
from ..core.kernels import LinearKernel
from ..core.moves import KAMMove, LearnedMoves
from ..core.transitions import kamh
from ..core.whitening import Whitening
from ..options import Climb, Scouts
from ._kam import KAMStep
from ._moves import learned_instance_stats, moves_attribute, require_moves
from ._public import MOVES, configuration, kam_proposal, public_signature, resolve, warmup_slot
from .base import ChainState, KernelStep

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


_MOVES = replace(MOVES, old={})


class KAMH(KAMStep):
    r"""Kernel Adaptive Metropolis–Hastings (Sejdinovic et al., ICML 2014): Gaussian proposals
    ``N(x, γ² I + ν² Mᵀ H M)`` shaped by the chain's history in the RKHS of a kernel, pulled back
    to the input space at ``x``.

    Pick it when the model has no usable gradient, the posterior is curved or its scales vary
    from place to place, and you want the robust default: it evaluates the model once per
    iteration, needs no surrogate of the log density, and by default mixes its kernel move with
    differential evolution, snooker, an envelope and a random walk whose weights it learns while
    tuning. Where a target evaluation is expensive and the posterior smooth, :class:`KMCLite`
    moves further per evaluation; on near-Gaussian posteriors :class:`AdaptiveMetropolis` is as
    good; for separated modes see :class:`CKAM`. Both proposal densities enter the acceptance
    ratio, so the move is exact for a fixed adaptation state; the draws come from a frozen
    kernel.

    Parameters
    ----------
    vars : list of variables, optional
        Continuous variables to sample (default: all continuous free variables).
    proposal : KAMProposal, optional
        Kernel, sub-sample, ``γ``, ``ν²`` and its target acceptance, first fit, refreshes,
        whitening (:class:`~pymc_kernel_steps.options.KAMProposal`; by default a Gaussian
        kernel whose lengthscale is chosen while tuning, on whitened states).
    moves : LearnedMixture, FixedMoves, "learned" or "fixed", optional
        Default ``LearnedMixture()``; ``FixedMoves()`` is the KAM move alone after its first fit
        (the paper).
    warmup : list of Climb, Scouts, Walkers, optional
        The phases before tuning (default ``[Climb(), Scouts(4)]``; ``[]`` for none;
        ``Walkers(4)`` adds tuning walkers, see :class:`~pymc_kernel_steps.options.Walkers`).
    adapt_after_tuning : bool, default False
        Keep adapting through the draws with vanishing probability (the paper's diminishing
        adaptation); by default the draws come from a fixed, exact kernel.
    model, initial_point, compile_kwargs, rng, blocked : optional
        As every PyMC step: the model (default: the enclosing one), the point of the variables
        outside the block, keywords of :func:`pymc.pytensorf.compile` (``pm.sample``'s do not
        reach a step you build), the random state of a step driven by hand (``pm.sample``
        reseeds it from ``random_seed``), and PyMC's ``blocked`` (always joint).

    See Also
    --------
    AdaptiveMetropolis : the linear-kernel case.
    pymc_kernel_steps.options : every option, documented once.

    Notes
    -----
    The keywords of earlier releases (``nu2=``, ``kernel=``, ``gamma=``, ``scouts=``, ...) still
    work, mapped to the options, with a ``DeprecationWarning`` naming the new spelling. Sample
    stats: ``accept``, ``accepted``, ``accept_rate``, ``logp_evals``, ``nu2``, ``gamma``,
    ``lengthscale``, ``n_history``, ``random_walk``, ``move`` and, with learned moves,
    ``weight_<kind>`` and ``acceptance_<kind>`` (the usage guide describes each).

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
    _transition_module = kamh
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
        **kamh.STATS,
    }
    moves = moves_attribute
    _instance_stats = learned_instance_stats

    @public_signature
    def __init__(
        self,
        vars=None,
        *,
        proposal=None,
        moves=None,
        warmup=None,
        adapt_after_tuning: bool = False,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
        **deprecated,
    ):
        given = {"proposal": proposal, "moves": moves, "warmup": warmup}
        self.options = resolve("KAMH", _OPTIONS, given, deprecated)
        if self.options["moves"].keywords().get("random_walk_probability") is not None:
            raise ValueError(
                "KAMH: FixedMoves(random_walk_probability=...) is the KMC steps' share of "
                "random-walk moves; KAMH's fixed moves are the KAM move alone."
            )
        self._configure(
            vars,
            **configuration(self.options),
            adapt_after_tuning=adapt_after_tuning,
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
        nu2: float | None = None,
        moves: str = "learned",
        random_walk_probability: None = None,
        scouts: int = 4,
        walkers: int = 1,
        **shared,
    ):
        """The step from the keywords of its options (:func:`._public.configuration`)."""
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

    # ------------------------------------------------------------------ the transition
    def _sync_transition(self, state, x, logp_current) -> None:
        super()._sync_transition(state, x, logp_current)
        chain = self.chain
        state.accepted_moves = chain.accepted_moves
        state.tuning = self.tune
        state.pooled_states = None if chain.pooled is None else chain.pooled.states


class AdaptiveMetropolis(KAMH):
    """Adaptive Metropolis (Haario et al. 2001) with a learned scale: :class:`KAMH` with a linear
    kernel, whose proposal ``N(x, γ² I + 4 ν² n Cov(z))`` does not depend on ``x``.

    Pick it as the baseline, and on near-Gaussian posteriors, where it is the best of the
    package's samplers: it learns the global covariance of the chain's history and tunes its
    scale ``ν²`` by Robbins–Monro, evaluating the model once per iteration without a gradient.
    For curved posteriors use :class:`KAMH` (``KAMH(proposal=KAMProposal(kernel=
    LinearKernel()), moves="fixed")`` is this class with KAMH's warm-up).

    Parameters
    ----------
    vars : list of variables, optional
        Continuous variables to sample (default: all continuous free variables).
    proposal : KAMProposal, optional
        Sub-sample, ``γ``, ``ν²`` and its target acceptance, first fit, refreshes, whitening
        (:class:`~pymc_kernel_steps.options.KAMProposal`, without a kernel: it is linear).
    warmup : list of Climb, Scouts, Walkers, optional
        The phases before tuning (default ``[Scouts(4)]``, so that the baseline is the
        textbook adaptive Metropolis; ``[]`` for none).
    adapt_after_tuning : bool, default False
        Keep adapting through the draws with vanishing probability; by default the draws come
        from a fixed, exact kernel.
    model, initial_point, compile_kwargs, rng, blocked : optional
        As every PyMC step (see :class:`KAMH`).

    See Also
    --------
    KAMH : the same with a Gaussian (or any) kernel: a proposal that follows curved posteriors.
    pymc_kernel_steps.options : every option, documented once.

    Notes
    -----
    The keywords of earlier releases still work, with a ``DeprecationWarning`` naming the new
    spelling. Sample stats as for :class:`KAMH`.
    """

    name = "adaptive_metropolis"

    @public_signature
    def __init__(
        self,
        vars=None,
        *,
        proposal=None,
        warmup=None,
        adapt_after_tuning: bool = False,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
        **deprecated,
    ):
        given = {"proposal": proposal, "warmup": warmup}
        self.options = resolve("AdaptiveMetropolis", _LINEAR_OPTIONS, given, deprecated)
        if self.options["proposal"].kernel is not None:
            raise ValueError(
                "AdaptiveMetropolis's kernel is linear: KAMProposal(kernel=...) is KAMH's "
                "(KAMH(proposal=KAMProposal(kernel=...)))."
            )
        keywords = configuration(self.options)
        del keywords["kernel"]
        self._configure(
            vars,
            **keywords,
            adapt_after_tuning=adapt_after_tuning,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
        )

    def _configure(self, vars=None, *, walkers: int = 1, climb: bool = False, **shared):
        """The step from the keywords of its options (:func:`._public.configuration`)."""
        super()._configure(
            vars, kernel=LinearKernel(), moves="fixed", walkers=walkers, climb=climb, **shared
        )


_OPTIONS = (kam_proposal("kernel", "nu2"), _MOVES, warmup_slot(Climb(), Scouts(4)))
_LINEAR_OPTIONS = (kam_proposal("nu2"), warmup_slot(Scouts(4)))
