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
from ..core.history import ChainHistory, first_visits
from ..core.moves import LearnedMoves, Mixture, SurrogateHMC
from ..core.regression import PolynomialTrend
from ..core.surrogates import (
    Evaluations,
    KernelHyperparameters,
    RegressionHyperparameters,
    SurrogateFitter,
)
from ..core.transitions import kmc
from ..core.whitening import Whitening
from ._moves import (
    learned_instance_stats,
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

#: target acceptance of dual averaging when ``target_accept`` is not given (as PyMC's NUTS)
DEFAULT_TARGET_ACCEPT = 0.8
#: the random walk's share of ``moves="fixed"`` when ``random_walk_probability`` is not given
DEFAULT_RANDOM_WALK_PROBABILITY = 0.25


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

    The public attributes of :class:`ChainState` and these; the other fields are internal. They
    read the chain's :attr:`transition` state.

    Attributes
    ----------
    transition : KMCState
        The chain's state in :mod:`~pymc_kernel_steps.core.transitions.kmc`, the transition the
        step hands each of its iterations to (its history, random walk and coordinate moves are
        the chain's own).
    hmc : SurrogateHMC
        The surrogate HMC move (frozen after tuning); ``surrogate``, ``whitening``,
        ``inv_mass``, ``confinement``, ``step_size``, ``step_size_tuner``, ``max_n_steps`` and
        ``far_field_step_size_limit`` are its own, under the chain's names.
    learned : Mixture
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

    transition: kmc.KMCState | None = None
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
    def hmc(self) -> SurrogateHMC:
        return self.transition.hmc

    @property
    def learned(self) -> Mixture:
        return self.transition.mixture

    @property
    def learned_moves(self) -> LearnedMoves | None:
        return self.transition.learned

    @property
    def hyperparameters(self) -> KernelHyperparameters | RegressionHyperparameters | None:
        return self.transition.hyperparameters

    @property
    def evaluated_points(self) -> ChainHistory | None:
        record = self.transition.evaluations
        return None if record is None else record.points

    @property
    def evaluated_values(self) -> list | None:
        record = self.transition.evaluations
        return None if record is None else record.values

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


class _KMC(KernelStep, WarmStart):
    """Shared machinery of :class:`KMCLite` and :class:`KMCFinite`."""

    chain: KMCChain
    _transition_module = kmc
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
        **kmc.STATS,
        # the step's own: the joint chain's Hamiltonian, as PyMC's HMC reports it
        "energy": HMC_STATS["energy"],
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
        if distinct < kmc.MIN_DISTINCT_STATES:
            raise ValueError(
                f"`history`'s most recent half holds {distinct} distinct states; the surrogate "
                f"is fitted to it and needs at least {kmc.MIN_DISTINCT_STATES}."
            )
        return states

    @property
    def min_history(self) -> int:
        """The history the surrogate's first fit needs (:func:`.kmc.history_needed`)."""
        return kmc.history_needed(self._settings(), self._tune_length)

    def _training_size(self) -> int | None:
        """The training states' sub-sample size (None: the recent half of the history)."""
        return None

    def _settings(self) -> kmc.KMCSettings:
        return kmc.KMCSettings(
            dim=self.dim,
            fitter=self.fitter,
            subsample_size=self._training_size(),
            n_steps_range=self.n_steps_range,
            step_size=self.initial_step_size,
            step_size_adaptation=self.step_size_adaptation,
            trajectory_tuning=self.trajectory_tuning,
            target_accept=self.target_accept,
            step_size_jitter=self.step_size_jitter,
            min_history=self._min_history_arg,
            refit_interval=self.refit_interval,
            adapt_mass=self.adapt_mass,
            whiten=self.whiten,
            confine=self.confine,
            learned_moves=self.moves == "learned",
            random_walk_probability=self.random_walk_probability,
            adapt_after_tuning=self.adapt_after_tuning,
            coordinate_share_early=self.coordinate_share_early,
            coordinate_share_late=self.coordinate_share_late,
        )

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        self._tune_length = int(tune)
        super().setup_chain(rng, tune, draws)
        # seeded from a copy of the chain's generator: the chain's own stream is not advanced
        self.chain.energy_rng = np.random.default_rng(copy.deepcopy(self.rng).integers(2**63))
        if self.warm_history is not None:  # before the freeze: DE, snooker, envelope need it
            with single_threaded_blas():  # as in astep: no oversubscription with cores > 1
                self._warm_start()
        if not self.tune:
            kmc.freeze(self.chain.transition)

    def _new_chain(self) -> KMCChain:
        """A chain whose transition state shares its history, random walk and coordinate moves
        (the warm-up phases act on those); its position is handed over every iteration. It
        starts tuning: :meth:`setup_chain` freezes it after a warm start."""
        unknown = np.full(self.dim, math.nan)
        state = kmc.init(unknown, math.nan, self._settings(), tune_length=self._tune_length)
        return KMCChain(
            history=state.history,
            random_walk=state.random_walk,
            coordinate=state.coordinate,
            transition=state,
        )

    def _on_start_scales(self) -> None:
        super()._on_start_scales()
        # the random-walk moves (and the jumps' metric) act in the start's frame until the
        # history gives one
        chain = self.chain
        kmc.set_random_walk_metric(chain.transition, Whitening.diagonal(chain.start_scales))

    def _on_evaluation(self, x, value) -> None:
        kmc.record_evaluation(self.chain.transition, x, value)

    # ------------------------------------------------------------------ the transition
    def _sync_transition(self, state, x, logp_current) -> None:
        super()._sync_transition(state, x, logp_current)
        chain = self.chain
        state.accepted_moves = chain.accepted_moves
        state.tuning = self.tune
        pooled = chain.pooled
        state.pooled_states = None if pooled is None else pooled.states
        state.pooled_evaluations = (
            None if pooled is None else Evaluations(pooled.points, pooled.log_densities)
        )

    def _transition_stats(self, transition):
        proposal = transition.proposal
        trajectory = proposal.extra if proposal.move is self.chain.hmc else None
        return {
            **super()._transition_stats(transition),
            "energy": self._energy(transition, trajectory),
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
