"""Kernel Hamiltonian Monte Carlo (paper 002): the machinery KMCLite and KMCFinite share, HMC on a
surrogate of the log density, accepted with the true log density."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from .._validation import (
    require_bool,
    require_choice,
    require_fraction,
    require_int,
    require_positive,
)
from ..core.adaptation import (
    SCALE_RANGE,
    Adapter,
    DualAveraging,
    JumpDistanceStepSize,
    min_accepted_moves,
)
from ..core.bayesopt import SearchBox, WindowedTuner
from ..core.confinement import Confinement
from ..core.history import ChainHistory, first_visits
from ..core.moves import LearnedMoves, Mixture, Proposal, RandomWalk, SurrogateHMC
from ..core.regression import PolynomialTrend
from ..core.surrogates import (
    Evaluations,
    KernelHyperparameters,
    RegressionHyperparameters,
    SurrogateFitter,
    TrainingData,
)
from ..core.whitening import Whitening, moved_coordinates
from ._moves import (
    learned_instance_stats,
    move_code,
    moves_attribute,
    random_walk_share,
    require_moves,
)
from ._public import configuration, public_signature, resolve
from ._state import HMC_STATS
from ._threads import single_threaded_blas
from ._warm_start import WarmStart
from .base import ChainState, KernelStep

__all__ = ["KMCChain"]

#: fewer distinct training states than this (a stuck chain) and the surrogate is not refitted
_MIN_DISTINCT_STATES = 10
#: target acceptance of dual averaging when ``target_accept`` is not given (as PyMC's NUTS)
DEFAULT_TARGET_ACCEPT = 0.8
#: the random walk's share of ``moves="fixed"`` when ``random_walk_probability`` is not given
DEFAULT_RANDOM_WALK_PROBABILITY = 0.25
#: a step size is kept only if trial trajectories on the surrogate conserve the surrogate's own
#: Hamiltonian (wall included) with mean acceptance ``min(1, exp(−ΔH))`` at least this; beyond the
#: leapfrog's stability limit that acceptance, like the true one, collapses to zero
_STABLE_ACCEPT = 0.5
#: step sizes stay below this fraction of the leapfrog's stability limit ``2/√(curvature)`` in the
#: surrogate's far field (where only the wall and the regression's Gaussian term act)
_FAR_FIELD_MARGIN = 0.9


def _of_hmc(name: str, doc: str) -> property:
    """A chain attribute that is the surrogate HMC move's ``name``."""
    return property(
        lambda chain: getattr(chain.hmc, name),
        lambda chain, value: setattr(chain.hmc, name, value),
        doc=doc,
    )


@dataclass
class KMCChain(ChainState):
    """What a chain of the KMC steps (:class:`~pymc_kernel_steps.KMCLite`,
    :class:`~pymc_kernel_steps.KMCFinite`) learned: their ``step.chain``.

    The public attributes of :class:`ChainState` and these; the other fields are internal.

    Attributes
    ----------
    hmc : SurrogateHMC or None
        The surrogate HMC move (frozen after tuning); ``surrogate``, ``whitening``,
        ``inv_mass``, ``confinement``, ``step_size``, ``step_size_tuner``, ``max_n_steps`` and
        ``far_field_step_size_limit`` are its own, under the chain's names.
    learned : Mixture or None
        After the first fit: the random walk (``random_walk_probability``) or a trajectory;
        ``moves="learned"``: trajectory, differential evolution, snooker, envelope and random
        walk, weights learned while tuning (``learned.weights``; ``learned.stats()`` gives
        every move's weight, acceptance and expected squared jump).
    learned_moves : LearnedMoves or None
        ``moves="learned"``: the mixture and its weight learner (``learned_moves.weights`` by
        kind, ``.stats()`` with the rates; also sample stats, in every chain); frozen after tuning.
    rw_whitening : Whitening
        The history's whitening: the random walk's metric, in which jumps are measured.
    hyperparameters : KernelHyperparameters or RegressionHyperparameters or None
        The surrogate's hyper-parameters at its last selection (chosen by the step's
        :class:`~pymc_kernel_steps.core.surrogates.SurrogateFitter`).
    lengthscale, regularization : float
        The surrogate's kernel lengthscale (the shortest, for per-coordinate lengthscales) and
        regularization at its last selection (NaN before the first fit).
    precisions : ndarray, shape (d,) or None
        ``surrogate="regression"``: the kernel's ``1/ℓ_j²``.
    trend : PolynomialTrend or None
        ``surrogate="regression"``: the surrogate's parametric part.
    evaluated_points : ChainHistory or None
        ``surrogate="regression"``: where the model was evaluated while adapting.
    evaluated_values : list or None
        ``surrogate="regression"``: the log densities there.
    """

    hmc: SurrogateHMC | None = None
    learned: Mixture | None = None
    learned_moves: LearnedMoves | None = None
    hyperparameters: KernelHyperparameters | RegressionHyperparameters | None = None
    evaluated_points: ChainHistory | None = None
    evaluated_values: list | None = None
    # internal bookkeeping, not part of the public interface
    #: the tuning phase's mixtures with single-coordinate moves, before and after the first fit
    tuning_random_walk: Mixture | None = None
    tuning_learned: Mixture | None = None
    last_fit_iteration: int = 0
    next_selection_size: int = 0
    warm_started: bool = False  # the history began with the states of `history=`
    #: draws the momentum of iterations without one (random-walk moves) for the `energy` stat;
    #: a generator of its own, so that the draws do not depend on it
    energy_rng: np.random.Generator | None = None

    surrogate = _of_hmc("surrogate", "The fitted surrogate (None before the first fit).")
    whitening = _of_hmc("frame", "The surrogate's coordinates u = whitening.whiten(x).")
    inv_mass = _of_hmc("inv_mass", "The diagonal inverse mass matrix of the trajectories.")
    confinement = _of_hmc("confinement", "The trajectories' wall and abort ball (whitened).")
    far_field_step_size_limit = _of_hmc("step_size_cap", "The largest step size allowed.")
    step_size = _of_hmc("step_size", "The trajectories' step size.")
    step_size_tuner = _of_hmc("tuner", "The step-size (or (ε, L)) tuner, an Adapter.")
    max_n_steps = _of_hmc(
        "max_n_steps", "L of trajectory_tuning='bayesopt' (L_r ~ U{1..L}); None otherwise."
    )

    @property
    def lengthscale(self) -> float:
        """The surrogate's kernel lengthscale at its last selection (NaN before)."""
        return math.nan if self.hyperparameters is None else self.hyperparameters.lengthscale

    @property
    def regularization(self) -> float:
        """The surrogate's regularization at its last selection (NaN before)."""
        return math.nan if self.hyperparameters is None else self.hyperparameters.regularization

    @property
    def precisions(self) -> np.ndarray | None:
        """``surrogate="regression"``: the kernel's ``1/ℓ_j²`` (None otherwise)."""
        return getattr(self.hyperparameters, "precisions", None)

    @property
    def trend(self) -> PolynomialTrend | None:
        """``surrogate="regression"``: the surrogate's parametric part (None otherwise)."""
        return getattr(self.hyperparameters, "trend", None)

    @property
    def rw_whitening(self) -> Whitening:
        """The history's whitening: the random walk's metric, in which jumps are measured."""
        return self.random_walk.metric

    @rw_whitening.setter
    def rw_whitening(self, value: Whitening) -> None:
        self.random_walk.metric = value
        self.hmc.jump_metric = value


class _KMC(KernelStep, WarmStart):
    """Shared machinery of :class:`KMCLite` and :class:`KMCFinite`."""

    chain: KMCChain
    #: chooses and fits the surrogate (set by the step before ``_KMC.__init__``)
    fitter: SurrogateFitter

    progress_scale_stat = "step_size"
    progress_scale_label = "Step size"
    own_move = "hmc"  # the chain's attribute that holds the step's own learned move
    divergence_advice = (
        "They are surrogate trajectories that diverged or left the region the chain has seen, "
        "rejected without evaluating the model: they cost no evaluation and do not bias the "
        "draws. PyMC's advice to 'Increase `target_accept`' is NUTS's: for KMC a longer tuning "
        "phase, or smaller steps (step_size_adaptation='dual_averaging' with a higher "
        "target_accept, or a smaller step_size), makes them rarer."
    )
    stats_dtypes_shapes = {
        **KernelStep.stats_dtypes_shapes,
        **HMC_STATS,
        "n_history": (np.int64, []),
        "refit": (bool, []),
        "surrogate": (bool, []),
        "lengthscale": (np.float64, []),
        "move": (np.int64, []),
    }
    moves = moves_attribute
    _instance_stats = learned_instance_stats

    #: the options the step resolves (its surrogate's, the trajectory, moves, warm-up): see
    #: :func:`._public.resolve`
    public_options: tuple

    @public_signature
    def __init__(
        self,
        vars=None,
        *,
        surrogate=None,
        trajectory=None,
        moves=None,
        warmup=None,
        history=None,
        adapt_after_tuning: bool = False,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
        **deprecated,
    ):
        public = next(c for c in type(self).__mro__ if "public_options" in c.__dict__)
        given = {"surrogate": surrogate, "trajectory": trajectory, "moves": moves}
        self.options = resolve(
            public.__name__, public.public_options, given | {"warmup": warmup}, deprecated
        )
        self._configure(
            vars,
            **configuration(self.options),
            history=history,
            adapt_after_tuning=adapt_after_tuning,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
        )

    def _configure_kmc(
        self,
        vars=None,
        *,
        n_steps: int | tuple[int, int] = (10, 30),
        step_size: float | None = None,
        step_size_adaptation: str = "esjd",
        trajectory_tuning: str | None = None,
        target_accept: float | None = None,
        step_size_jitter: float = 0.2,
        lengthscale: float | None = None,
        regularization: float | None = None,
        min_history: int | None = None,
        refit_interval: int = 100,
        adapt_mass: bool = True,
        whiten: bool = True,
        confine: bool = True,
        random_walk_probability: float | None = None,
        moves: str = "learned",
        history=None,
        scouts: int = 4,
        model=None,
        **shared,
    ):
        if np.isscalar(n_steps):
            low, high = n_steps, n_steps
        elif isinstance(n_steps, tuple | list) and len(n_steps) == 2:
            low, high = n_steps
        else:
            raise ValueError(
                f"`n_steps` must be an integer or a (low, high) pair of integers, got {n_steps!r}."
            )
        for name, value in (("n_steps", low), ("n_steps", high)):
            require_int(name, value, minimum=1)
        if high < low:
            raise ValueError(f"`n_steps` range must be (low, high) with low ≤ high, got {n_steps}.")
        if step_size is not None:
            require_positive("step_size", step_size)
        require_choice("step_size_adaptation", step_size_adaptation, ("esjd", "dual_averaging"))
        require_choice("trajectory_tuning", trajectory_tuning, (None, "bayesopt"))
        self.trajectory_tuning = trajectory_tuning
        if target_accept is not None and step_size_adaptation != "dual_averaging":
            raise ValueError(
                "`target_accept` has an effect only with step_size_adaptation='dual_averaging' "
                f"(the default 'esjd' maximises the expected squared jump distance and has no "
                f"target acceptance); got target_accept={target_accept!r} with "
                f"step_size_adaptation={step_size_adaptation!r}. To tune the step size towards "
                f"an acceptance rate, pass {type(self).__name__}(step_size_adaptation="
                f"'dual_averaging', target_accept={target_accept!r}). If PyMC's divergence "
                "warning sent you here: its advice ('Increase `target_accept`') is NUTS's. A KMC "
                "`diverging` iteration is a surrogate trajectory that diverged or left the region "
                "the chain has seen; it is rejected without evaluating the model and does not "
                "bias the draws. Fewer of them: a longer tuning phase (`tune`), or smaller steps "
                "(dual averaging with a higher `target_accept`, or a smaller `step_size`)."
            )
        if target_accept is None:
            target_accept = DEFAULT_TARGET_ACCEPT
        require_fraction("target_accept", target_accept)
        require_fraction("step_size_jitter", step_size_jitter, zero=True)
        if lengthscale is not None:
            require_positive("lengthscale", lengthscale)
        if regularization is not None:
            require_positive("regularization", regularization)
        self._moves = require_moves(moves)
        random_walk_probability = random_walk_share(
            type(self).__name__, moves, random_walk_probability, DEFAULT_RANDOM_WALK_PROBABILITY
        )
        require_fraction("random_walk_probability", random_walk_probability, zero=True)
        if min_history is not None:
            require_int("min_history", min_history, minimum=2)
        require_int("refit_interval", refit_interval, minimum=1)
        self.n_steps_range = (int(low), int(high))
        self.initial_step_size = step_size
        self.step_size_adaptation = step_size_adaptation
        self.target_accept = float(target_accept)
        self.step_size_jitter = float(step_size_jitter)
        self.fitter = self.fitter.fixing(lengthscale, regularization)
        self._min_history_arg = min_history
        self.refit_interval = int(refit_interval)
        self._tune_length = 0
        for name, flag in (("adapt_mass", adapt_mass), ("whiten", whiten), ("confine", confine)):
            require_bool(name, flag)
        self.adapt_mass = bool(adapt_mass)
        self.whiten = bool(whiten)
        self.confine = bool(confine)
        self.random_walk_probability = float(random_walk_probability)
        super().__init__(vars, scouts=scouts, model=model, **shared)
        self._init_warm_start(history, model)

    def _warm_states(self, history, model) -> np.ndarray:
        states = self._states_from(history, model=model)
        distinct = len(first_visits(states[len(states) // 2 :]))  # the half a fit learns from
        if distinct < _MIN_DISTINCT_STATES:
            raise ValueError(
                f"`history`'s most recent half holds {distinct} distinct states; the surrogate "
                f"is fitted to it and needs at least {_MIN_DISTINCT_STATES}."
            )
        return states

    @property
    def min_history(self) -> int:
        if self._min_history_arg is not None:
            return self._min_history_arg
        default = max(300, 20 * self.dim)
        if self._tune_length:  # leave at least two thirds of a short tuning phase to the surrogate
            default = min(default, max(50, self._tune_length // 3))
        return default

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        self._tune_length = int(tune)
        super().setup_chain(rng, tune, draws)
        # seeded from a copy of the chain's generator: the chain's own stream is not advanced
        self.chain.energy_rng = np.random.default_rng(copy.deepcopy(self.rng).integers(2**63))
        if self.warm_history is not None:  # before the freeze: DE, snooker, envelope need it
            with single_threaded_blas():  # as in astep: no oversubscription with cores > 1
                self._warm_start()
        if not self.tune:
            self.chain.hmc.freeze()
            if self.chain.learned_moves is not None:
                self.chain.learned_moves.freeze()

    def _new_chain(self) -> KMCChain:
        chain = KMCChain(history=ChainHistory(self.dim))
        chain.random_walk = RandomWalk.optimal(self.dim, SCALE_RANGE, target=0.234)
        chain.hmc = SurrogateHMC(self.dim, self.n_steps_range, self.step_size_jitter)
        if self.moves == "learned":
            # one mixture from the start: the trajectory passes its turn on until the first fit
            chain.learned_moves = LearnedMoves(chain.hmc, chain.random_walk, chain.history)
            chain.learned = chain.learned_moves.mixture
            chain.tuning_random_walk = self._with_coordinate_moves(chain, chain.learned, False)
        else:
            p = self.random_walk_probability
            chain.learned = Mixture([(chain.random_walk, p), (chain.hmc, 1.0 - p)])
            chain.tuning_random_walk = self._with_coordinate_moves(chain, chain.random_walk, False)
        chain.tuning_learned = self._with_coordinate_moves(chain, chain.learned, True)
        chain.rw_whitening = Whitening.identity(self.dim)
        chain.next_selection_size = self.min_history
        return chain

    def _on_start_scales(self) -> None:
        super()._on_start_scales()
        # the random-walk moves (and the jumps' metric) act in the start's frame until the
        # history gives one
        self.chain.rw_whitening = Whitening.diagonal(self.chain.start_scales)

    # ------------------------------------------------------------------ transition
    def _propose(self, x) -> tuple[Proposal, None]:
        """The random walk until the first fit, then the mixture of random walk and surrogate
        trajectory; while tuning, mixed with single-coordinate moves."""
        chain = self.chain
        if chain.hmc.ready:
            kernel = chain.tuning_learned if self.tune else chain.learned
        elif self.tune:
            kernel = chain.tuning_random_walk
        else:
            kernel = chain.random_walk if chain.learned_moves is None else chain.learned
        return kernel.choose(self.rng).propose(self.rng, x), None

    def _on_decision(self, x, transition) -> None:
        """``moves="learned"``: count the proposal's whitened jump towards the weights."""
        learned = self.chain.learned_moves
        if learned is not None and self.tune:
            learned.record(transition.proposal, x, transition.accept_prob, self.chain.rw_whitening)

    def _transition_stats(self, transition):
        chain = self.chain
        proposal, log_ratio = transition.proposal, transition.log_accept_ratio
        trajectory = proposal.extra if proposal.move is chain.hmc else None
        # As NUTS's `diverging` (which ArviZ's plots and PyMC's checks read): a trajectory whose
        # true energy is non-finite (it left the support, the model was NaN there, or the
        # integration blew up), or any proposal rejected without evaluating the model.
        diverging = transition.degenerate or (
            trajectory is not None and not math.isfinite(log_ratio)
        )
        return {
            "diverging": diverging,
            "step_size": math.nan if trajectory is None else trajectory.step_size,
            "n_steps": 0 if trajectory is None else trajectory.n_steps,
            "energy_error": -log_ratio if math.isfinite(log_ratio) else math.inf,
            "energy": self._energy(transition, trajectory),
            "n_history": len(chain.history),
            "refit": transition.refit,
            "surrogate": trajectory is not None,
            "lengthscale": chain.lengthscale,
            "move": move_code(proposal),
            **({} if chain.learned_moves is None else chain.learned_moves.sample_stats()),
        }

    def _energy(self, transition, trajectory) -> float:
        """The Hamiltonian ``−log π(x) + ½ pᵀM⁻¹p`` of the state after this iteration, as
        PyMC's HMC reports it (``az.plot_energy`` and the BFMI read it): after a trajectory the
        end momentum if it was accepted, the initial one if not. An iteration without a
        trajectory (random-walk move) leaves the momentum of the joint chain on ``(x, p)`` a
        fresh draw from ``N(0, M)``: its kinetic energy is ``½ χ²_d``, drawn from a generator of
        its own so that the draws do not depend on this stat."""
        chain = self.chain
        if trajectory is not None:
            kinetic = trajectory.kinetic_end if transition.accepted else trajectory.kinetic_start
        elif chain.energy_rng is not None:
            kinetic = 0.5 * float(chain.energy_rng.chisquare(self.dim))
        else:  # pragma: no cover - setup_chain always runs first under pm.sample
            kinetic = 0.5 * self.dim
        return -chain.current_logp + kinetic

    def _recent_history(self) -> np.ndarray:
        """The most recent half of the history: what the chain learned, without the transient."""
        history = self.chain.history
        return history.points[len(history) // 2 :]

    def _update_rw_whitening(self) -> None:
        """Mean and covariance of the recent history: the random-walk moves' metric."""
        chain = self.chain
        if chain.warm_started or chain.accepted_moves >= min_accepted_moves(self.dim):
            chain.rw_whitening = Whitening.from_points(
                self._recent_history(),
                fallback_variance=self._fallback_variance(chain.random_walk.scale.scale),
                min_variance=self._variance_floor(),
            )
            if chain.learned_moves is not None:
                chain.learned_moves.fit_envelope(chain.rw_whitening)

    # ------------------------------------------------------------------ adaptation
    def _adapt(self, x, transition):
        chain = self.chain
        if chain.surrogate is None:
            if len(chain.history) % 50 == 0:
                self._update_rw_whitening()
            pooled_states = 0 if chain.pooled is None else len(chain.pooled.states)
            if (
                len(chain.history) + pooled_states
                >= max(self.min_history, chain.next_selection_size)
                and chain.accepted_moves >= min_accepted_moves(self.dim)
                and self._fit(x, select=True)
            ):
                transition.refit = True
            return
        if len(chain.history) >= chain.next_selection_size:
            transition.refit = self._fit(x, select=True)
        elif self._update_surrogate(x):
            transition.refit = True

    def _on_stop_tuning(self):
        chain = self.chain
        chain.hmc.freeze()  # it takes its tuner's final step size (and L)
        if chain.learned_moves is not None:
            chain.learned_moves.freeze()
        if chain.surrogate is not None and math.isfinite(chain.step_size):
            # The tuned step size belongs to the surrogates seen during tuning; the one frozen
            # now (a Lite refit, or the last online updates) may be steeper.
            chain.step_size = self._stable_step_size(chain.step_size)

    def _far_field_step_size_limit(self) -> float:
        """The largest step size allowed: a margin below the leapfrog's stability limit
        ``2 / √(max_j M⁻¹_jj · κ)`` for the curvature ``κ`` that trajectories meet far from the
        history, the confining wall's stiffness plus the surrogate's own far-field curvature
        (:attr:`~pymc_kernel_steps.core.surrogates.SurrogateFitter.far_field_curvature`: the
        unit curvature of the regression's Gaussian term; inf when neither acts). A quartic
        trend steepens without bound far out; there the abort ball
        (:attr:`Confinement.abort_radius`) stops what the limit cannot.

        Beyond that limit a trajectory that leaves the data region grows geometrically: on the
        glass model a regression trajectory of 28 steps of size 1.6 reached 10⁹ and the model
        was evaluated there. The limit depends on the adapted mass and wall alone, never on the
        trajectory, so capping the step size at it keeps the move exact."""
        chain = self.chain
        curvature = chain.confinement.far_field_curvature + self.fitter.far_field_curvature
        if curvature <= 0.0:
            return math.inf
        return _FAR_FIELD_MARGIN * 2.0 / math.sqrt(float(np.max(chain.inv_mass)) * curvature)

    def _stable_step_size(self, step_size: float) -> float:
        """The largest step size up to ``step_size`` (and the far-field limit) at which
        trajectories on the current surrogate from recent states keep the surrogate's own
        Hamiltonian (see :meth:`SurrogateHMC.stable_step_size`): mean ``min(1, exp(−ΔH))`` at
        least ``_STABLE_ACCEPT``, or the dual averaging's ``target_accept`` if lower. It runs
        during tuning only: the frozen kernel stays exact."""
        threshold = _STABLE_ACCEPT
        if self.step_size_adaptation == "dual_averaging":  # never above the user's target
            threshold = min(threshold, self.target_accept)
        step_size = min(step_size, self._far_field_step_size_limit())
        return self.chain.hmc.stable_step_size(step_size, self._recent_history(), threshold)

    def _fit(
        self,
        x,
        select: bool,
        chosen: KernelHyperparameters | RegressionHyperparameters | None = None,
    ) -> bool:
        """(Re)fit the surrogate; with ``select`` also choose its hyper-parameters by
        cross-validation (or take ``chosen``, hyper-parameters chosen already) and
        re-estimate the mass matrix, then restart the step-size adaptation.

        Returns False, changing nothing, when the training states hold fewer than
        ``_MIN_DISTINCT_STATES`` distinct states (a chain stuck on a lucky pseudo-marginal
        estimate): the surrogate so far, or the random walk before the first fit, is kept, and
        the next selection waits until the history has doubled."""
        chain = self.chain
        training = self._training_points()
        if len(first_visits(training)) < _MIN_DISTINCT_STATES:
            if select:
                chain.next_selection_size = 2 * len(chain.history)
            return False
        evaluations = self._recorded_evaluations()
        if select:
            self._update_rw_whitening()
            if self.whiten:
                chain.whitening = self.fitter.frame(chain.rw_whitening, evaluations, self.rng)
        points = chain.whitening.whiten(training)
        data = TrainingData(points, chain.whitening, evaluations)
        if select:
            variance = points.var(axis=0)
            spread = np.all(moved_coordinates(training)) and np.all(
                np.isfinite(variance) & (variance > 0)
            )
            if self.adapt_mass and spread:
                chain.inv_mass = variance
            if self.confine:
                chain.confinement = Confinement.around(points, chain.inv_mass)
            chain.far_field_step_size_limit = self._far_field_step_size_limit()
            if chosen is None:
                self._select_hyperparameters(data)
            else:
                chain.hyperparameters = copy.deepcopy(chosen)
            chain.next_selection_size = 2 * len(chain.history)
        chain.surrogate = self.fitter.fit(data, chain.hyperparameters, self.rng)
        chain.last_fit_iteration = chain.iteration
        if select:
            if chain.step_size_tuner is None:
                initial = self.initial_step_size or 1.0 / math.sqrt(self.dim)
            else:
                initial = chain.step_size
            # start the search where trajectories on the new surrogate do not blow up
            chain.step_size_tuner = self._step_size_tuner(self._stable_step_size(initial))
            chain.step_size, chain.max_n_steps = chain.step_size_tuner.value
        return True

    def _step_size_tuner(self, step_size: float) -> Adapter:
        """A new tuner of the trajectories started at ``step_size``, as ``trajectory_tuning``
        and ``step_size_adaptation`` ask."""
        if self.trajectory_tuning == "bayesopt":
            return self._trajectory_tuner(step_size, self.chain.max_n_steps)
        if self.step_size_adaptation == "esjd":
            tuner = JumpDistanceStepSize(step_size)
            tuner.max_step_size = min(tuner.max_step_size, self._far_field_step_size_limit())
            return tuner
        return DualAveraging(step_size, target=self.target_accept)

    def _trajectory_tuner(self, step_size: float, max_n_steps: int | None) -> WindowedTuner:
        """GP-UCB over ``ε ∈ [ε₀/30, 3ε₀]`` (``ε₀`` the initial step size: the same box at every
        restart, so that the search cannot drift) and ``L`` in the ``n_steps`` range (paper 003),
        started at ``(step_size, max_n_steps)`` (``L_max`` at first), rewarding the ESJD per
        target evaluation (one per iteration: the trajectory costs none), in windows of a
        hundredth of the tuning phase."""
        initial = self.initial_step_size or 1.0 / math.sqrt(self.dim)
        box = SearchBox(
            (initial / 30, self.n_steps_range[0]),
            (3 * initial, self.n_steps_range[1]),
            integer=(False, True),
            log_scale=(True, True),
            names=("step_size", "n_steps"),
        )
        window = max(1, self._tune_length // 100)
        start = (step_size, max_n_steps or box.upper[1])
        return WindowedTuner(box, window, cost_exponent=0.0, start=start)

    def _select_hyperparameters(self, data: TrainingData) -> None:
        """Choose the surrogate's hyper-parameters (:meth:`SurrogateFitter.select`)."""
        self.chain.hyperparameters = self.fitter.select(data, self.rng)

    # subclass API
    def _recorded_evaluations(self) -> Evaluations | None:
        """The evaluations the fitter learns from (None: it learns from the states alone)."""
        return None

    def _training_points(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _update_surrogate(self, x) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError
