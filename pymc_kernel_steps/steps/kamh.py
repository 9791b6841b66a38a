"""Kernel Adaptive Metropolis–Hastings (paper 001) and Adaptive Metropolis as its linear case."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import require_positive
from ..core.adaptation import (
    SCALE_RANGE,
    CandidateSearch,
    Feedback,
    RobbinsMonroScale,
    min_accepted_moves,
)
from ..core.history import ChainHistory
from ..core.kernels import GaussianKernel, LinearKernel, median_lengthscale
from ..core.moves import RW_FACTOR, KAMMove, LearnedMoves, Mixture, Proposal, RandomWalk
from ..core.proposals import kamh_feature_covariance
from ..core.whitening import Whitening
from ._docs import with_shared_parameters
from ._kam import KAMStep
from ._moves import learned_instance_stats, move_code, moves_attribute, require_moves
from .base import ChainState, KernelStep

__all__ = ["KAMH", "KAMHChain", "AdaptiveMetropolis"]

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


@dataclass
class KAMHChain(ChainState):
    """What a chain of :class:`~pymc_kernel_steps.KAMH` (or
    :class:`~pymc_kernel_steps.AdaptiveMetropolis`) learned: its ``step.chain``.

    The public attributes of :class:`ChainState` and these; the other fields are internal.

    Attributes
    ----------
    kam : KAMMove or None
        The KAMH phase's proposal (a random walk before its first fit): sub-sample, kernel,
        ``ν²`` and ``γ``.
    whitening : Whitening or None
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

    kam: KAMMove | None = None
    whitening: Whitening | None = None
    candidates: list | None = None
    candidate: int = 0
    candidate_nu2_scales: list | None = None
    candidate_search: CandidateSearch | None = None
    learned_moves: LearnedMoves | None = None
    # internal bookkeeping, not part of the public interface
    #: the tuning phase's mixtures of single-coordinate moves and the random walk, or KAM
    tuning_random_walk: Mixture | None = None
    tuning_kam: Mixture | None = None
    candidate_frozen: bool = False


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

    def _new_chain(self) -> KAMHChain:
        chain = KAMHChain(history=ChainHistory(self.dim))
        chain.random_walk = RandomWalk.optimal(self.dim, SCALE_RANGE, target=self.target_accept)
        chain.kam = KAMMove(self.dim, fixed_nu2=self.fixed_nu2)
        if self.moves == "learned":
            # one mixture from the start: the KAM move passes its turn on until its first fit
            chain.learned_moves = LearnedMoves(chain.kam, chain.random_walk, chain.history)
            learned = chain.learned_moves.mixture
            chain.tuning_random_walk = self._with_coordinate_moves(chain, learned, False)
            chain.tuning_kam = self._with_coordinate_moves(chain, learned, True)
        else:
            chain.tuning_random_walk = self._with_coordinate_moves(chain, chain.random_walk, False)
            chain.tuning_kam = self._with_coordinate_moves(chain, chain.kam, True)
        chain.whitening = Whitening.identity(self.dim)
        return chain

    # ------------------------------------------------------------------ proposal
    def _use_candidate(self, index: int) -> None:
        chain = self.chain
        if chain.candidates is None or index == chain.candidate:
            return
        chain.candidate = index
        chain.kam.kernel = chain.candidates[index]
        if chain.candidate_nu2_scales is not None:
            chain.kam.nu2_scale = chain.candidate_nu2_scales[index]
        chain.kam.forget_cache()  # cached for another kernel

    def _propose(self, x) -> tuple[Proposal, None]:
        """The random walk until the first fit, then the KAM move; while tuning, mixed with
        single-coordinate moves."""
        chain = self.chain
        if chain.learned_moves is not None and not self.tune:
            move = chain.learned_moves.mixture.choose(self.rng)  # frozen weights
        elif chain.kam.ready:
            move = chain.tuning_kam.choose(self.rng) if self.tune else chain.kam
        else:
            move = chain.tuning_random_walk.choose(self.rng) if self.tune else chain.random_walk
        if move is chain.kam:
            self._choose_candidate()
        return move.propose(self.rng, x), None

    def _choose_candidate(self) -> None:
        """While tuning, the lengthscale candidate of this KAM move, drawn independently of the
        state (a mixture of MH moves), until the best is frozen."""
        chain = self.chain
        if self.tune and chain.candidates is not None and not chain.candidate_frozen:
            if self._tune_length and chain.iteration >= CANDIDATE_SEARCH_SHARE * self._tune_length:
                self._freeze_best_candidate()  # the rest of tuning adapts ν² for it alone
            else:
                # a mixture of MH moves: the kernel is chosen independently of the state
                self._use_candidate(chain.candidate_search.propose(self.rng))

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

    def _on_decision(self, x, transition) -> None:
        """From the state ``x`` the proposal was made from: ``moves="learned"``: count its
        whitened jump towards the weights; while the lengthscale candidates are tried, count
        ``(1 − accepted) α ‖u* − u‖²`` towards the candidate's score (see
        :meth:`_freeze_best_candidate`)."""
        chain = self.chain
        if chain.learned_moves is not None and self.tune:
            metric = chain.whitening if self.whiten else chain.random_walk.metric
            chain.learned_moves.record(transition.proposal, x, transition.accept_prob, metric)
        proposal, accept_prob = transition.proposal, transition.accept_prob
        if (
            chain.candidates is not None
            and self.tune
            and not chain.candidate_frozen
            and proposal.move is chain.kam
        ):
            reward = 0.0  # an accepted move scores 0: the score is α(1 − α)‖u* − u‖² on average
            if math.isfinite(accept_prob) and not transition.accepted:
                jump = self._white_difference(proposal.x, x)
                reward = accept_prob * float(jump @ jump)
            feedback = Feedback(accept_prob, index=chain.candidate, reward=reward)
            chain.candidate_search.update(feedback, self.rng)

    # ------------------------------------------------------------------ adaptation
    def _adapt(self, x, transition):
        chain = self.chain
        if not chain.kam.ready:
            if len(
                chain.history
            ) >= self.min_history and chain.accepted_moves >= min_accepted_moves(self.dim):
                self._refresh_subsample(x, first=True)
            return
        if chain.adaptation_iteration % self.refresh_interval == 0 or not self.tune:
            self._refresh_subsample(x, first=False)

    def _white_difference(self, y, x) -> np.ndarray:
        """``y − x`` in the kernel's (whitened) coordinates."""
        difference = np.asarray(y) - np.asarray(x)
        return difference @ self.chain.kam.whitening.inv_chol.T if self.whiten else difference

    def _on_stop_tuning(self) -> None:
        self._freeze_best_candidate()
        if self.chain.learned_moves is not None:
            self.chain.learned_moves.freeze()

    def _freeze_best_candidate(self) -> None:
        """Keep the candidate kernel with the largest score: the moving average over its KAM
        moves of ``(1 − accepted) α ‖u* − u‖²``, whose expectation is ``α (1 − α) ‖u* − u‖²``
        (the expected squared jump weighted by the chance of a rejection: it prefers proposals
        that go far and are accepted about half of the time). The expected squared jump
        ``α ‖u* − u‖²`` alone was measured and lost (``benchmarks/robustness/README.md``)."""
        chain = self.chain
        if chain.candidates is None or chain.candidate_frozen:
            return
        chain.candidate_frozen = True
        self._use_candidate(chain.candidate_search.final())

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        self._tune_length = int(tune)
        super().setup_chain(rng, tune, draws)
        if not self.tune and self.chain.learned_moves is not None:
            self.chain.learned_moves.freeze()

    def _refresh_subsample(self, x, first: bool) -> None:
        """Redraw the sub-sample (from the most recent half of the history), the whitening, the
        default kernel's lengthscale and the absolute γ."""
        chain = self.chain
        subsample = self._tuning_states_subsample(self.subsample_size)
        if np.all(subsample == subsample[0]):
            # A stuck chain (e.g. on a lucky pseudo-marginal estimate): the recent history holds
            # one state, where the kernel's features vanish and ν² would be rescaled without
            # bound. Keep the proposal learned so far (or the random walk before the first fit).
            return
        history_whitening = None
        if self.whiten or chain.learned_moves is not None:
            history_whitening = Whitening.from_points(
                subsample,
                fallback_variance=self._fallback_variance(chain.random_walk.scale.scale),
                min_variance=self._variance_floor(),
            )
        if chain.learned_moves is not None:
            chain.learned_moves.fit_envelope(history_whitening)
        if self.whiten:
            whitening = history_whitening
            subsample = whitening.whiten(subsample)
        else:
            whitening = chain.whitening
        kam = chain.kam
        candidates = None
        if self.kernel is None:
            try:
                base = median_lengthscale(subsample)
            except ValueError:  # degenerate history (e.g. a stuck chain): keep what we have
                if kam.kernel is None:
                    return
                base = None
            if base is not None:
                candidates = [GaussianKernel(f * base) for f in LENGTHSCALE_FACTORS]
                kernel = candidates[chain.candidate]
            else:
                kernel, candidates = kam.kernel, chain.candidates
        else:
            kernel = self.kernel
        spread = kam.reference_scale(subsample, self.gamma, whitened=self.whiten)
        if spread is None:
            return
        previous_n = 0 if kam.subsample is None else kam.subsample.shape[0]
        kam.subsample = subsample
        kam.kernel = kernel
        chain.whitening = whitening
        if chain.learned_moves is not None and self.whiten:
            chain.random_walk.metric = whitening  # the mixture's random walk, whitened
        kam.whitening = whitening if self.whiten else None
        kam.gamma_abs = self.gamma * spread
        u = whitening.whiten(x)
        kam.feature_cov_current = kam.feature_cov(u)
        kam.feature_cov_point = np.array(x, copy=True)
        if candidates is not None:
            traces = [np.trace(kamh_feature_covariance(u, subsample, k)) for k in candidates]
            chain.candidates = candidates
            if chain.candidate_search is None:
                chain.candidate_search = CandidateSearch(
                    len(candidates), _JUMP_AVERAGE_WEIGHT, current=chain.candidate
                )
        else:
            traces = [np.trace(kam.feature_cov_current)]
        if self.fixed_nu2 is None:
            self._refresh_nu2_scales(traces, previous_n, subsample.shape[0], first)

    def _refresh_nu2_scales(self, traces, previous_n: int, n: int, first: bool) -> None:
        """One Robbins–Monro ``ν²`` per kernel (candidate): started where the learned part has
        the optimal random walk's total variance, kept at that scale as the sub-sample grows,
        and bounded relative to the history's own scale."""
        chain = self.chain
        if self.whiten:
            total = RW_FACTOR**2
        else:
            total = float(np.sum(self._fallback_variance(chain.random_walk.scale.scale)))
        natural = [total / t if _MIN_TRACE < t < np.inf else math.nan for t in traces]
        if first or chain.candidate_nu2_scales is None:
            chain.candidate_nu2_scales = [
                RobbinsMonroScale.within(
                    nu2 if math.isfinite(nu2) else 1.0, SCALE_RANGE, target=self.target_accept
                )
                for nu2 in natural
            ]
        else:
            for scale, nu2 in zip(chain.candidate_nu2_scales, natural, strict=True):
                if previous_n and previous_n != n:
                    # Mᵀ H M grows with n: keep the proposal's scale when the sub-sample grows
                    scale.rescale(previous_n / n)
                if self.whiten and math.isfinite(nu2):  # no scale where the features vanish
                    scale.recentre(nu2, SCALE_RANGE)
        index = chain.candidate if chain.candidates is not None else 0
        chain.kam.nu2_scale = chain.candidate_nu2_scales[index]


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
