"""Kernel Hamiltonian Monte Carlo (paper 002): HMC on a score-matched surrogate, accepted with the
true log density."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
from pymc.model import modelcontext

from ..core.adaptation import DualAveraging, JumpDistanceStepSize
from ..core.bayesopt import SearchBox, WindowedTuner
from ..core.history import ChainHistory
from ..core.integrators import kinetic_energy
from ..core.kernels import GaussianKernel, median_lengthscale
from ..core.moves import Mixture, Proposal, RandomWalk, SurrogateHMC
from ..core.regression import (
    TRENDS,
    PolynomialTrend,
    RegressionSurrogate,
    fit_quadratic_gaussian,
    informative_evaluations,
    quadratic_parameter_count,
    select_regression_hyperparameters,
    select_trend,
)
from ..core.score_matching import (
    FiniteScoreEstimator,
    LiteScoreEstimator,
    select_hyperparameters,
)
from ..core.whitening import Whitening
from .base import (
    ChainState,
    KernelStep,
    require_bool,
    require_int,
    require_positive,
    require_real,
)
from .kamh import SCALE_RANGE, min_accepted_moves

__all__ = ["KMCFinite", "KMCLite"]

_SELECTION_POINTS = 500
_LENGTHSCALE_FACTORS = np.array([1.0, 1.5, 2.0, 3.0])
#: the confining wall starts this many times beyond the farthest training point
_WALL_MARGIN = 2.0
#: fewer distinct training states than this (a stuck chain) and the surrogate is not refitted
_MIN_DISTINCT_STATES = 10
#: the surrogates of KMCLite: score matching on the states (paper 002) or regression on the
#: evaluated log densities (:class:`~pymc_kernel_steps.core.RegressionSurrogate`)
SURROGATES = ("score_matching", "regression")
#: surrogate="regression" is fitted on at most this many evaluations per kernel centre
_REGRESSION_POINTS_PER_CENTRE = 4
_DEFAULT_REGRESSION_RIDGE = 1e-2
#: the precisions of surrogate="regression"'s fitted Gaussian, relative to the history's
_REGRESSION_PRECISION_RANGE = (1e-2, 1e2)
#: evaluations recorded per chain at most (with adapt_after_tuning=True recording goes on
#: through the draws; beyond this the surrogate learns from the first ones only)
_MAX_RECORDED_EVALUATIONS = 200_000
#: target acceptance of dual averaging when ``target_accept`` is not given (as PyMC's NUTS)
DEFAULT_TARGET_ACCEPT = 0.8
#: a step size is kept only if trial trajectories on the surrogate conserve the surrogate's own
#: Hamiltonian (wall included) with mean acceptance ``min(1, exp(−ΔH))`` at least this; beyond the
#: leapfrog's stability limit that acceptance, like the true one, collapses to zero
_STABLE_ACCEPT = 0.5
#: trial trajectories (common to every step size tried), and the factor of each shrink; the
#: trials come from their own generator with a fixed seed, so the check is a function of the
#: surrogate and the history alone and leaves the chain's random stream as it was
_STABILITY_TRIALS = 20
_STABILITY_SEED = 20151207
_STABILITY_SHRINK = 0.5**0.5
#: the step size is never shrunk by more than this factor for stability
_STABILITY_MAX_SHRINK = 1e3
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
    """Per-chain state of the KMC steps: the random walk (``random_walk``, whose metric is the
    history's whitening) and the surrogate HMC move (``hmc``) with the surrogate's fit."""

    hmc: SurrogateHMC | None = None
    #: after the first fit: the random walk (``random_walk_probability``) or a trajectory
    learned: Mixture | None = None
    #: the tuning phase's mixtures with single-coordinate moves, before and after the first fit
    tuning_random_walk: Mixture | None = None
    tuning_learned: Mixture | None = None
    lengthscale: float = math.nan
    regularization: float = math.nan
    last_fit_iteration: int = 0
    next_selection_size: int = 0
    warm_started: bool = False  # the history began with the states of `history=`
    #: draws the momentum of iterations without one (random-walk moves) for the `energy` stat;
    #: a generator of its own, so that the draws do not depend on it
    energy_rng: np.random.Generator | None = None
    evaluated_points: ChainHistory | None = None  # surrogate="regression": where the model was
    evaluated_values: list | None = None  # evaluated while adapting, and its log densities
    precisions: np.ndarray | None = None  # surrogate="regression": the kernel's 1/ℓ_j²
    trend: PolynomialTrend | None = None  # surrogate="regression": its parametric part

    surrogate = _of_hmc("surrogate", "The fitted surrogate (None before the first fit).")
    whitening = _of_hmc("frame", "The surrogate's coordinates u = whitening.whiten(x).")
    inv_mass = _of_hmc("inv_mass", "The diagonal inverse mass matrix of the trajectories.")
    wall_radius = _of_hmc("wall_radius", "Radius of the confining wall (whitened).")
    wall_stiffness = _of_hmc("wall_stiffness", "Stiffness of the confining wall.")
    far_field_step_size_limit = _of_hmc("step_size_cap", "The largest step size allowed.")
    step_size = _of_hmc("step_size", "The trajectories' step size.")
    step_size_tuner = _of_hmc("tuner", "The step-size (or (ε, L)) tuner.")
    max_n_steps = _of_hmc("max_n_steps", "L of trajectory_tuning='bayesopt' (L_r ~ U{1..L}).")

    @property
    def rw_whitening(self) -> Whitening:
        """The history's whitening: the random walk's metric, in which jumps are measured."""
        return self.random_walk.metric

    @rw_whitening.setter
    def rw_whitening(self, value: Whitening) -> None:
        self.random_walk.metric = value
        self.hmc.jump_metric = value


class _KMC(KernelStep):
    """Shared machinery of :class:`KMCLite` and :class:`KMCFinite`."""

    progress_scale_stat = "step_size"
    progress_scale_label = "Step size"
    estimator_name = ""
    divergence_advice = (
        "They are surrogate trajectories that diverged or left the region the chain has seen, "
        "rejected without evaluating the model: they cost no evaluation and do not bias the "
        "draws. PyMC's advice to 'Increase `target_accept`' is NUTS's: for KMC a longer tuning "
        "phase, or smaller steps (step_size_adaptation='dual_averaging' with a higher "
        "target_accept, or a smaller step_size), makes them rarer."
    )
    surrogate_kind = "score_matching"

    stats_dtypes_shapes = {
        **KernelStep.stats_dtypes_shapes,
        "step_size": (np.float64, []),
        "n_steps": (np.int64, []),
        "energy_error": (np.float64, []),
        "energy": (np.float64, []),
        "n_history": (np.int64, []),
        "refit": (bool, []),
        "surrogate": (bool, []),
        "lengthscale": (np.float64, []),
        "diverging": (bool, []),
    }

    def __init__(
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
        random_walk_probability: float = 0.25,
        adapt_after_tuning: bool = False,
        scouts: int = 4,
        history=None,
        model=None,
        initial_point=None,
        compile_kwargs=None,
        rng=None,
        blocked: bool = True,
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
        if step_size_adaptation not in ("esjd", "dual_averaging"):
            raise ValueError(
                "`step_size_adaptation` must be 'esjd' or 'dual_averaging', "
                f"got {step_size_adaptation!r}."
            )
        if trajectory_tuning not in (None, "bayesopt"):
            raise ValueError(
                f"`trajectory_tuning` must be None or 'bayesopt', got {trajectory_tuning!r}."
            )
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
        require_real("target_accept", target_accept)
        if not 0 < target_accept < 1:
            raise ValueError(f"`target_accept` must lie in (0, 1), got {target_accept!r}.")
        require_real("step_size_jitter", step_size_jitter)
        if not 0 <= step_size_jitter < 1:
            raise ValueError(f"`step_size_jitter` must lie in [0, 1), got {step_size_jitter!r}.")
        if lengthscale is not None:
            require_positive("lengthscale", lengthscale)
        if regularization is not None:
            require_positive("regularization", regularization)
        require_real("random_walk_probability", random_walk_probability)
        if not 0 <= random_walk_probability < 1:
            raise ValueError(
                f"`random_walk_probability` must lie in [0, 1), got {random_walk_probability!r}."
            )
        if min_history is not None:
            require_int("min_history", min_history, minimum=2)
        require_int("refit_interval", refit_interval, minimum=1)
        self.n_steps_range = (int(low), int(high))
        self.initial_step_size = step_size
        self.step_size_adaptation = step_size_adaptation
        self.target_accept = float(target_accept)
        self.step_size_jitter = float(step_size_jitter)
        self.fixed_lengthscale = lengthscale
        self.fixed_regularization = regularization
        self._min_history_arg = min_history
        self.refit_interval = int(refit_interval)
        self._tune_length = 0
        for name, flag in (("adapt_mass", adapt_mass), ("whiten", whiten), ("confine", confine)):
            require_bool(name, flag)
        self.adapt_mass = bool(adapt_mass)
        self.whiten = bool(whiten)
        self.confine = bool(confine)
        self.random_walk_probability = float(random_walk_probability)
        super().__init__(
            vars,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
            adapt_after_tuning=adapt_after_tuning,
            scouts=scouts,
        )
        self.warm_history = (
            None if history is None else self._warm_states(history, modelcontext(model))
        )

    def _warm_states(self, history, model) -> np.ndarray:
        states = self._states_from(history, model=model)
        distinct = np.unique(states, axis=0).shape[0]
        if distinct < _MIN_DISTINCT_STATES:
            raise ValueError(
                f"`history` holds {distinct} distinct states; the surrogate needs at least "
                f"{_MIN_DISTINCT_STATES}."
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
        if not self.tune:
            self.chain.hmc.freeze()
        # seeded from a copy of the chain's generator: the chain's own stream is not advanced
        self.chain.energy_rng = np.random.default_rng(copy.deepcopy(self.rng).integers(2**63))
        if self.warm_history is not None:
            self._warm_start()

    def _warm_start(self) -> None:
        """Begin the chain's history with the states of ``history=`` and fit the surrogate,
        the whitening, the mass matrix and the step size to them before the first iteration
        (no random-walk phase). They depend on the given states and this chain's random
        numbers only, never on its draws: with ``tune=0`` the kernel is fixed from the start."""
        chain = self.chain
        chain.history.extend(self.warm_history)
        chain.warm_started = True
        chain.scout_iterations = 0  # the history already says where the posterior is
        self._fit(None, select=True)

    def _new_chain(self) -> KMCChain:
        chain = KMCChain(history=ChainHistory(self.dim))
        chain.random_walk = RandomWalk.optimal(self.dim, SCALE_RANGE, target=0.234)
        chain.hmc = SurrogateHMC(self.dim, self.n_steps_range, self.step_size_jitter)
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
        else:
            kernel = chain.tuning_random_walk if self.tune else chain.random_walk
        return kernel.choose(self.rng).propose(self.rng, x), None

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
        """The most recent half of the history: what the chain has learned, without the
        initial transient."""
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
        chain.hmc.freeze()
        if isinstance(chain.step_size_tuner, DualAveraging):
            chain.step_size = chain.step_size_tuner.final_step_size
        tuner = chain.step_size_tuner
        if isinstance(tuner, WindowedTuner) and tuner.optimizer.observed:
            chain.step_size, chain.max_n_steps = tuner.best()
        if chain.surrogate is not None and math.isfinite(chain.step_size):
            # The tuned step size belongs to the surrogates seen during tuning; the one frozen
            # now (a Lite refit, or the last online updates) may be steeper.
            chain.step_size = self._stable_step_size(chain.step_size)

    def _abort_radius(self) -> float:
        """Trajectories leaving the ball of this radius (whitened) are rejected without
        evaluating the model (see :attr:`SurrogateHMC.abort_radius`)."""
        return self.chain.hmc.abort_radius

    def _far_field_step_size_limit(self) -> float:
        """The largest step size allowed: a margin below the leapfrog's stability limit
        ``2 / √(max_j M⁻¹_jj · κ)`` for the curvature ``κ`` that trajectories meet far from the
        history, the confining wall's stiffness plus, for ``surrogate="regression"``, the unit
        curvature of its Gaussian term (inf when neither acts). A quartic trend steepens without
        bound far out; there the abort ball (:meth:`_abort_radius`) stops what the limit cannot.

        Beyond that limit a trajectory that leaves the data region grows geometrically: on the
        glass model a regression trajectory of 28 steps of size 1.6 reached 10⁹ and the model
        was evaluated there. The limit depends on the adapted mass and wall alone, never on the
        trajectory, so capping the step size at it keeps the move exact."""
        chain = self.chain
        curvature = chain.wall_stiffness if math.isfinite(chain.wall_radius) else 0.0
        if self.surrogate_kind == "regression":
            curvature += 1.0
        if curvature <= 0.0:
            return math.inf
        return _FAR_FIELD_MARGIN * 2.0 / math.sqrt(float(np.max(chain.inv_mass)) * curvature)

    def _stable_step_size(self, step_size: float) -> float:
        """The largest of ``step_size × 2^(−k/2)``, ``k = 0, 1, …`` (at most a factor
        ``_STABILITY_MAX_SHRINK`` down) at which leapfrog trajectories on the current surrogate
        are stable: from recent states with fresh momenta and ``n_steps`` from its range, the
        mean of ``min(1, exp(−ΔH))`` under the *surrogate's* Hamiltonian is at least
        ``_STABLE_ACCEPT`` (or the dual averaging's ``target_accept`` if lower).

        Past the stability limit (a step size beyond ``2 / √curvature`` of the surrogate, which
        a score-matched surrogate can make far steeper than the target) trajectories blow up and
        the true acceptance is zero as well; a step-size search that starts there, or averages
        windows of rejections, cannot see in which direction to go. The check costs surrogate
        evaluations only, never the model's, and runs during tuning: the frozen kernel stays
        exact."""
        chain = self.chain
        step_size = min(step_size, self._far_field_step_size_limit())
        rng = np.random.default_rng(_STABILITY_SEED)
        starts = chain.whitening.whiten(self._recent_history())
        starts = starts[rng.integers(len(starts), size=_STABILITY_TRIALS)]
        momenta = rng.standard_normal((_STABILITY_TRIALS, self.dim)) / np.sqrt(chain.inv_mass)
        low, high = self.n_steps_range
        n_steps = rng.integers(low, high + 1, size=_STABILITY_TRIALS)
        floor = step_size / _STABILITY_MAX_SHRINK
        threshold = _STABLE_ACCEPT
        if self.step_size_adaptation == "dual_averaging":  # never above the user's target
            threshold = min(threshold, self.target_accept)
        while step_size * _STABILITY_SHRINK >= floor:
            if self._surrogate_acceptance(step_size, starts, momenta, n_steps) >= threshold:
                break
            step_size *= _STABILITY_SHRINK
        return step_size

    def _surrogate_acceptance(self, step_size, starts, momenta, n_steps) -> float:
        """Mean ``min(1, exp(−ΔH))`` of trajectories on the surrogate, ``H`` its own
        Hamiltonian (negative surrogate log density plus wall plus kinetic energy)."""
        chain = self.chain
        surrogate = chain.surrogate

        def energy(q, p):
            excess = max(0.0, math.sqrt(float(q @ q)) - chain.wall_radius)
            potential = -float(surrogate.log_density(q)) + 0.5 * chain.wall_stiffness * excess**2
            return potential + kinetic_energy(p, chain.inv_mass)

        total, abort_radius = 0.0, self._abort_radius()
        for q, p, n in zip(starts, momenta, n_steps, strict=True):
            q_new, p_new = surrogate.leapfrog(
                q,
                p,
                step_size,
                int(n),
                chain.inv_mass,
                chain.wall_radius,
                chain.wall_stiffness,
                abort_radius,
            )
            if not (np.all(np.isfinite(q_new)) and np.all(np.isfinite(p_new))):
                continue
            with np.errstate(over="ignore", invalid="ignore"):
                change = energy(q_new, p_new) - energy(q, p)
            if math.isfinite(change):
                total += math.exp(min(0.0, -change))
        return total / len(starts)

    def _fit(self, x, select: bool) -> bool:
        """(Re)fit the surrogate; with ``select`` also choose (ℓ, λ) by cross-validation and
        re-estimate the mass matrix, then restart the step-size adaptation.

        Returns False, changing nothing, when the training states hold fewer than
        ``_MIN_DISTINCT_STATES`` distinct states (a chain stuck on a lucky pseudo-marginal
        estimate): the surrogate so far, or the random walk before the first fit, is kept, and
        the next selection waits until the history has doubled."""
        chain = self.chain
        training = self._training_points()
        if np.unique(training, axis=0).shape[0] < _MIN_DISTINCT_STATES:
            if select:
                chain.next_selection_size = 2 * len(chain.history)
            return False
        if select:
            self._update_rw_whitening()
            if self.whiten:
                chain.whitening = self._surrogate_frame(chain.rw_whitening)
        points = chain.whitening.whiten(training)
        if select:
            variance = points.var(axis=0)
            if self.adapt_mass and np.all(np.isfinite(variance)) and np.all(variance > 0):
                chain.inv_mass = variance
            if self.confine:
                chain.wall_radius = _WALL_MARGIN * float(np.sqrt(np.max(np.sum(points**2, 1))))
                chain.wall_stiffness = 1.0 / float(np.mean(chain.inv_mass))
            chain.far_field_step_size_limit = self._far_field_step_size_limit()
            self._select_hyperparameters(points)
            chain.next_selection_size = 2 * len(chain.history)
        chain.surrogate = self._fit_surrogate(points)
        chain.last_fit_iteration = chain.iteration
        if select:
            if chain.step_size_tuner is None:
                initial = self.initial_step_size or 1.0 / math.sqrt(self.dim)
            else:
                initial = chain.step_size
            # start the search where trajectories on the new surrogate do not blow up
            initial = self._stable_step_size(initial)
            chain.step_size = initial
            if self.trajectory_tuning == "bayesopt":
                chain.step_size_tuner = self._trajectory_tuner(initial, chain.max_n_steps)
                chain.step_size, chain.max_n_steps = chain.step_size_tuner.parameters
            elif self.step_size_adaptation == "esjd":
                chain.step_size_tuner = JumpDistanceStepSize(initial)
                chain.step_size_tuner.max_step_size = min(
                    chain.step_size_tuner.max_step_size, self._far_field_step_size_limit()
                )
            else:
                chain.step_size_tuner = DualAveraging(initial, target=self.target_accept)
        return True

    def _trajectory_tuner(self, step_size: float, max_n_steps: int) -> WindowedTuner:
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

    def _surrogate_frame(self, history_frame: Whitening) -> Whitening:
        """The coordinates of the surrogate (``whiten=True``): by default the history's."""
        return history_frame

    def _select_hyperparameters(self, points) -> None:
        """Choose the surrogate's hyper-parameters (``points``: whitened training states)."""
        chain = self.chain
        chain.lengthscale, chain.regularization = self._hyperparameters(points)

    def _fit_surrogate(self, points):
        """A surrogate fitted with the chosen hyper-parameters (``points``: whitened training
        states)."""
        chain = self.chain
        return self._make_estimator(chain.lengthscale, chain.regularization).fit(points)

    def _hyperparameters(self, points) -> tuple[float, float]:
        if self.fixed_lengthscale is not None and self.fixed_regularization is not None:
            return self.fixed_lengthscale, self.fixed_regularization
        regularizations = None if self.fixed_regularization is None else [self.fixed_regularization]
        # A rejection repeats a state, and a held-out repeat of a training state rewards
        # vanishing lengthscales: validate on distinct states, at most `_SELECTION_POINTS`.
        # (Folds of consecutive states avoid that too, but on an early, non-stationary history
        # they favour heavy regularisation: measured, see the samplers page of the documentation.)
        _, first_visits = np.unique(points, axis=0, return_index=True)
        distinct = points[np.sort(first_visits)]
        if len(distinct) > _SELECTION_POINTS:
            keep = np.sort(self.rng.choice(len(distinct), _SELECTION_POINTS, replace=False))
            distinct = distinct[keep]
        if len(distinct) < 10:
            distinct = points
        if self.fixed_lengthscale is None:
            # Shorter than the typical distance between states (the median heuristic), the
            # surrogate fits the chain's near-repeats and its gradient needs tiny steps.
            lengthscales = median_lengthscale(distinct) * _LENGTHSCALE_FACTORS
        else:
            lengthscales = [self.fixed_lengthscale]
        lengthscale, regularization, _ = select_hyperparameters(
            distinct,
            estimator=self.estimator_name,
            lengthscales=lengthscales,
            regularizations=regularizations,
            rng=self.rng,
            **self._selection_kwargs(),
        )
        return float(lengthscale), float(regularization)

    def _selection_kwargs(self) -> dict:
        return {}

    # subclass API
    def _training_points(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _make_estimator(self, lengthscale, regularization):  # pragma: no cover - abstract
        raise NotImplementedError

    def _update_surrogate(self, x) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError


class KMCLite(_KMC):
    r"""Kernel HMC, lite version (Strathmann et al., NIPS 2015), with a surrogate fitted to the
    log densities the chain evaluated (by default; the paper's score matching is an option).

    HMC trajectories on a surrogate log density learned during tuning, accepted with the *true*
    log density: one target evaluation per iteration, no model gradient. By default
    (``surrogate="regression"``, beyond the paper) the surrogate is fitted by kernel ridge
    regression to the log densities evaluated while tuning, at accepted and rejected proposals
    alike: a parametric trend (the Gaussian of the least-squares quadratic through those values,
    or a proper quartic where it predicts them better) plus a Gaussian-kernel correction with
    one lengthscale per coordinate, so that far from the data trajectories turn back towards
    it. ``surrogate="score_matching"`` is the paper's ``f(x) = Σ α_i k(z_i, x)``
    fitted by score matching to a sub-sample ``z`` of the chain's states. Exactness never
    depends on the surrogate's quality.

    Each iteration is, with probability ``random_walk_probability``, a Gaussian random-walk move
    (per-coordinate scale from the history, Robbins–Monro tuned towards 0.234 acceptance) and
    otherwise a surrogate trajectory. Both moves are Metropolis–Hastings moves that leave the
    target invariant, so the mixture does too; the random-walk share keeps a chain from sticking
    where the surrogate is steeper than the target (typically in tails the history has not seen).

    Parameters
    ----------
    vars : list of variables, optional
        Continuous variables to sample (default: all continuous free variables of the model;
        ``pm.sample`` assigns discrete ones to PyMC's step methods).
    subsample_size : int, default 500
        Size ``n`` of the history sub-sample the surrogate is fitted on (with
        ``surrogate="regression"``: the number of kernel centres).
    surrogate : {"regression", "score_matching"}, default "regression"
        ``"regression"`` (beyond the paper) fits the log densities the chain *evaluated* while
        tuning, at accepted and rejected proposals alike:
        ``f(u) = t(u) + c + Σ_i β_i k(z_i, u)``
        (:class:`~pymc_kernel_steps.core.RegressionSurrogate`), ``t`` the trend (``−½‖u‖²``
        or a quartic, see ``trend``), in the frame ``u`` of the
        Gaussian whose log density is the least-squares quadratic through those evaluations
        (:func:`~pymc_kernel_steps.core.fit_quadratic_gaussian`, its precisions within
        1/100–100 of the history's), plus a Gaussian kernel with one
        lengthscale per whitened coordinate, chosen with the ridge by held-out squared error
        (:func:`~pymc_kernel_steps.core.select_regression_hyperparameters`; a coordinate the
        log density does not bend in is dropped from the kernel). Far from the data ``f`` is
        the trend, which decays, so trajectories turn back. It uses information score matching
        ignores, learns from rejected proposals the width of a direction the chain has not yet
        explored,
        and resolves thin curved ridges an isotropic kernel cannot; a warm start from
        ``history=`` needs the log densities ``pm.sample`` records, and it needs
        ``whiten=True`` (its Gaussian term defines its frame). In a compound step the recorded
        values are conditional log densities at the other variables' values of the moment, and
        with a noisy (pseudo-marginal) log density they are estimates: the fit is then rougher,
        never wrong. The frozen kernel is exact either way. ``"score_matching"`` is the paper's
        surrogate, fitted to the *states* of the history. How the two compare: see the
        benchmarks page in the documentation.
    trend : {"auto", "quartic", "quadratic"}, default "auto"
        The parametric part of ``surrogate="regression"`` (beyond the papers), in place of
        ``−½‖u‖²``: ``"quadratic"`` keeps that Gaussian; ``"quartic"`` is the least-squares
        log density of a Gaussian in the features ``(u, u∘u)``
        (:class:`~pymc_kernel_steps.core.PolynomialTrend`: cubic and quartic terms, its quartic
        matrix clipped positive definite so that it decays in every direction), which follows
        a curved ridge, skewness or flattened tails beyond the data the kernel sum needs; the
        kernel then models what it leaves. ``"auto"`` takes the quartic trend when it predicts
        held-out evaluations better
        (:func:`~pymc_kernel_steps.core.select_trend`), decided at each hyper-parameter
        selection; both need at least twice as many informative evaluations as the quartic's
        ``1 + d + d(d+1) + d²`` coefficients (2000 are used at most, so ``d ≤ 20``), and
        otherwise the quadratic trend is used. How the trends compare: see the benchmarks page in
        the documentation. Trajectories on a quartic can grow fast where it
        is steep; one that
        leaves the region the chain has seen is rejected without evaluating the model (see
        ``confine``).
    n_steps : int or tuple of (int, int), default (10, 30)
        Leapfrog steps per trajectory, drawn uniformly from the inclusive range ``(low, high)``
        (an integer fixes it).
    step_size : float, optional
        Initial leapfrog step size (default ``1/√d`` in the mass-matrix metric); jittered by
        ``±step_size_jitter`` per iteration and tuned as ``step_size_adaptation`` says. Each
        hyper-parameter selection and the end of tuning shrink it, if needed, below the leapfrog's
        stability limit on the surrogate (checked with the surrogate alone, no model evaluation),
        and no trajectory's step size, tuning trials and jitter included, reaches 0.9 of the
        limit ``2/√(max M⁻¹ · κ)`` of the surrogate's far field (``κ``: the wall's stiffness,
        plus 1 for ``surrogate="regression"``), where a trajectory would grow without bound.
    step_size_adaptation : {"esjd", "dual_averaging"}, default "esjd"
        ``"esjd"`` searches for the step size with the largest expected squared jump
        distance (:class:`~pymc_kernel_steps.core.JumpDistanceStepSize`); ``"dual_averaging"``
        tunes towards ``target_accept`` as NUTS does. With a surrogate gradient the acceptance
        rate is capped by the surrogate's error at every step size, and dual averaging towards
        0.8 then shrinks the step size until trajectories barely move.
    trajectory_tuning : {None, "bayesopt"}, optional
        None (default): the step size is tuned as ``step_size_adaptation`` says and ``n_steps``
        is drawn from its range. ``"bayesopt"``: ``(ε, L)`` are tuned together by annealed
        GP-UCB (paper 003, :class:`~pymc_kernel_steps.core.WindowedTuner`) over
        ``ε ∈ [ε₀/30, 3ε₀]`` (``ε₀`` the initial step size) and ``L`` in the ``n_steps`` range,
        restarted from the best point so far whenever the surrogate is re-selected, rewarding
        the ESJD per target evaluation in windows of a hundredth of the tuning phase; each
        trajectory takes ``L_r ~ U{1..L}`` steps without jitter, and the best ``(ε, L)`` is
        frozen after tuning.
    target_accept : float, optional
        Target acceptance of dual averaging, in (0, 1) (default 0.8). Accepted only with
        ``step_size_adaptation="dual_averaging"``: the default ``"esjd"`` has no target
        acceptance, and passing one raises a ValueError.
    step_size_jitter : float, default 0.2
        Relative uniform jitter of the step size, in [0, 1).
    lengthscale, regularization : float, optional
        Gaussian-kernel lengthscale ``ℓ`` and regulariser ``λ`` of the estimator. Default: chosen by
        5-fold cross-validation of the score-matching objective (on at most 500 distinct states,
        ``ℓ`` from 1 to 3 times the median heuristic) when the surrogate is first fitted and
        each time the history doubles during tuning. With ``surrogate="regression"``: chosen at
        the same times by held-out squared error of the log density, ``ℓ`` per whitened
        coordinate (a given ``lengthscale`` fixes an isotropic kernel).
    min_history : int, optional
        Random-walk iterations before the first fit (default ``max(300, 20 d)``, but at most a
        third of the tuning iterations, and at least 50).
    refit_interval : int, default 100
        The surrogate is refitted on a fresh sub-sample every ``refit_interval`` adapting
        iterations.
    adapt_mass : bool, default True
        Estimate the diagonal mass matrix from the history's variances.
    whiten : bool, default True
        Fit the surrogate and run its trajectories on states whitened by the mean and full
        covariance of the recent history (see :class:`~pymc_kernel_steps.core.Whitening`): a
        linear change of the model's coordinates then leaves the sampler unchanged. False is the
        paper's isotropic kernel in the model's coordinates. Random-walk moves always use the
        history's covariance.
    confine : bool, default True
        Add to the surrogate the confining term ``−(k/2)(‖u‖ − R)₊²`` with ``R`` twice the distance
        of the farthest training point (whitened) and ``k`` one over the mean training variance, so
        that trajectories turn back instead of carrying an expensive model far outside the
        region the chain has seen, where the lite surrogate is flat and the random-feature one
        periodic. A fixed potential keeps the move exact. A trajectory that still leaves the
        ball of radius ``2R`` is rejected without evaluating the model (the rule depends only on
        the positions it visits, which its reversal visits too, so the move stays exact; it
        counts as ``diverging``); the ball's radius is at least ``10√d``.
    random_walk_probability : float, default 0.25
        Share of random-walk moves, in [0, 1).
    adapt_after_tuning : bool, default False
        Keep adapting through the draws with vanishing probability. By default the surrogate,
        step size and mass matrix are frozen after tuning and the kernel is exactly
        π-invariant.
    scouts : int, default 4
        Random walks of 50 iterations each, run in turn from the initial point at the start of
        tuning; the chain goes on from the one at the highest log density, so that a start in
        the basin of a minor mode rarely decides where the chain spends its tuning. 1 turns
        them off; they are skipped when they would take more than a tenth of tuning (with the
        default, fewer than 2000 tuning iterations), for a noisy (pseudo-marginal) log density,
        and after a warm start.
    history : arviz.DataTree, InferenceData or array of shape (n, d), optional
        A warm start: states from an earlier run (``idata`` or ``idata.posterior``, chains and
        draws pooled; a transformed variable such as ``sigma_log__`` is read from the posterior
        if it was recorded, ``idata_kwargs={"include_transformed": True}``, and otherwise
        computed from the constrained draws with the model's transform), or an ``(n, d)`` array
        of states in the step's coordinates. Every chain begins its history
        with them and fits the surrogate, whitening, mass matrix and step size to them before
        its first iteration, with no random-walk phase; tuning then goes on from there (and may
        be short). With ``tune=0`` the kernel is fixed from the first draw (it depends on these
        states, never on the chain's own draws), so the draws stay exact. At least 10 distinct
        states; they are copied, not modified. ``surrogate="regression"`` is fitted to log
        densities, so it needs the ``idata`` of ``pm.sample`` (its ``sample_stats`` hold the
        log density ``lp`` of every draw) and a step that samples every free variable of the
        model; those log densities are its first training data.
    model : pymc.Model, optional
        The model (default: the one of the enclosing ``with`` block).
    initial_point : dict, optional
        Values at which the variables outside the block are taken when compiling (default: the
        model's initial point).
    compile_kwargs : dict, optional
        Passed to :func:`pymc.pytensorf.compile` (for example ``{"mode": "CVM"}`` for a cheap
        Python ``Op``); those given to ``pm.sample`` do not reach a step you construct.
    rng : int or numpy.random.Generator, optional
        Random state; ``pm.sample(random_seed=...)`` reseeds it for every chain.
    blocked : bool, default True
        Accepted for PyMC's interface; the step always updates its variables jointly.

    See Also
    --------
    KMCFinite : the same with random Fourier features, fitted on the whole history.

    Notes
    -----
    Sample stats (in ``idata.sample_stats``): ``accept`` (acceptance probability),
    ``accept_rate`` (the chain's mean ``accept`` since the start of its phase, tuning or
    drawing: the progress bar's figure),
    ``accepted``, ``logp_evals`` (target evaluations this iteration), ``logp_nan``, ``lp`` (the
    model's log density; emitted as ``model_logp``, absent for noisy log densities),
    ``diverging`` (a surrogate trajectory whose true energy is non-finite, or a proposal
    rejected without evaluating the model), ``step_size`` (NaN for random-walk moves),
    ``n_steps`` (0 for random-walk moves), ``energy_error`` (change of the true Hamiltonian),
    ``energy`` (the true Hamiltonian of the state kept, with the trajectory's end momentum if
    accepted and its initial one if not, as PyMC's HMC; after a random-walk move, with a fresh
    momentum: ``az.plot_energy`` and the BFMI read it), ``n_history``,
    ``refit``, ``surrogate`` (False for random-walk moves) and ``lengthscale`` (with
    ``surrogate="regression"`` the shortest of the per-coordinate lengthscales). The ``tune`` and
    ``warning`` stats are consumed by PyMC and do not appear in the DataTree.

    Examples
    --------
    >>> import pymc as pm
    >>> from pymc_kernel_steps import KMCLite
    >>> with pm.Model():
    ...     x = pm.Normal("x", shape=2)
    ...     idata = pm.sample(step=KMCLite(), tune=300, draws=200, chains=1,
    ...                       random_seed=1, progressbar=False)  # doctest: +SKIP
    """

    name = "kmc_lite"
    estimator_name = "lite"

    def __init__(
        self,
        vars=None,
        *,
        subsample_size: int = 500,
        surrogate: str = "regression",
        trend: str = "auto",
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
        random_walk_probability: float = 0.25,
        adapt_after_tuning: bool = False,
        scouts: int = 4,
        history=None,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
    ):
        require_int("subsample_size", subsample_size, minimum=2)
        self.subsample_size = int(subsample_size)
        if surrogate not in SURROGATES:
            raise ValueError(f"`surrogate` must be one of {SURROGATES}, got {surrogate!r}.")
        if surrogate == "regression" and not whiten:
            raise ValueError(
                "surrogate='regression' (the default) needs whiten=True: its Gaussian term, "
                "fitted to the evaluations, defines the frame of the surrogate (with "
                "whiten=False it would be N(0, I) in the model's coordinates). For the paper's "
                "isotropic kernel in the model's coordinates pass surrogate='score_matching' "
                "with whiten=False."
            )
        if trend not in TRENDS:
            raise ValueError(f"`trend` must be one of {TRENDS}, got {trend!r}.")
        if surrogate != "regression" and trend != "auto":
            raise ValueError(
                f"`trend` is the parametric part of surrogate='regression'; "
                f"surrogate={surrogate!r} has none (got trend={trend!r})."
            )
        self.surrogate_kind = surrogate
        self.trend_kind = trend
        self.warm_log_densities = None
        super().__init__(
            vars,
            n_steps=n_steps,
            step_size=step_size,
            step_size_adaptation=step_size_adaptation,
            trajectory_tuning=trajectory_tuning,
            target_accept=target_accept,
            step_size_jitter=step_size_jitter,
            lengthscale=lengthscale,
            regularization=regularization,
            min_history=min_history,
            refit_interval=refit_interval,
            adapt_mass=adapt_mass,
            whiten=whiten,
            confine=confine,
            random_walk_probability=random_walk_probability,
            adapt_after_tuning=adapt_after_tuning,
            scouts=scouts,
            history=history,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
        )

    def _training_points(self):
        return self._tuning_states_subsample(self.subsample_size)

    # pooled tuning: the other chains' states and evaluations enter the next selection and fit
    pools_tuning_data = True

    def _own_evaluations(self) -> tuple[np.ndarray, np.ndarray]:
        chain = self.chain
        if chain.evaluated_points is None:
            return super()._own_evaluations()
        return chain.evaluated_points.points.copy(), np.asarray(chain.evaluated_values, float)

    def _on_absorb(self) -> None:
        if self.chain.surrogate is not None:  # select and fit again at the next iteration
            self.chain.next_selection_size = len(self.chain.history)

    # surrogate="regression": the log densities evaluated while adapting are the training data
    def _new_chain(self) -> KMCChain:
        chain = super()._new_chain()
        if self.surrogate_kind == "regression":
            chain.evaluated_points = ChainHistory(self.dim)
            chain.evaluated_values = []
        return chain

    def _warm_states(self, history, model) -> np.ndarray:
        states = super()._warm_states(history, model)
        if self.surrogate_kind == "regression":
            self.warm_log_densities = self._warm_log_densities(history, len(states))
        return states

    def _warm_log_densities(self, history, n_states: int) -> np.ndarray:
        """``surrogate="regression"``: the log densities of the warm states, the ``lp`` sample
        statistic that ``pm.sample`` records with them (this package's steps, NUTS, Metropolis).
        The regression surrogate is fitted to log densities; an array of states carries none,
        and for a step that samples only some of the model's variables ``lp`` (the whole
        model's) is not a function of this step's variables alone."""
        hint = "or warm-start surrogate='score_matching', which is fitted to the states alone."
        if self.shared:
            raise ValueError(
                "`history` with surrogate='regression' needs a step that samples every free "
                "variable of the model: the recorded log densities `lp` are the whole model's, "
                f"which also depend on {sorted(self.shared)}; {hint}"
            )
        sample_stats = getattr(history, "sample_stats", None)
        if getattr(history, "posterior", None) is None and hasattr(history, "data_vars"):
            raise ValueError(
                "`history` is a posterior alone (such as idata.posterior); with "
                "surrogate='regression' pass the whole result of pm.sample (`history=idata`), "
                "whose sample_stats hold the log density `lp` of every draw that the surrogate is "
                f"fitted to; {hint}"
            )
        if (
            getattr(history, "posterior", None) is None
            or sample_stats is None
            or ("lp" not in sample_stats)
        ):
            raise ValueError(
                "`history` with surrogate='regression' must be the result of pm.sample (an "
                "ArviZ DataTree/InferenceData) whose sample_stats hold the log density `lp` of "
                f"every draw: the surrogate is fitted to log densities, not to states; {hint}"
            )
        values = np.asarray(sample_stats["lp"].values, dtype=float).reshape(-1)
        if values.shape != (n_states,):
            raise ValueError(
                f"`history`: sample_stats 'lp' holds {values.size} values for {n_states} "
                "states; expected one per draw."
            )
        return values

    def _warm_start(self) -> None:
        if self.warm_log_densities is not None:
            chain = self.chain
            chain.evaluated_points.extend(self.warm_history)
            chain.evaluated_values.extend(self.warm_log_densities.tolist())
        super()._warm_start()

    def _on_evaluation(self, x, value) -> None:
        chain = self.chain
        if (
            chain.evaluated_points is not None
            and (self.tune or self.adapt_after_tuning)
            and len(chain.evaluated_values) < _MAX_RECORDED_EVALUATIONS
        ):
            chain.evaluated_points.append(x)
            chain.evaluated_values.append(value)

    def _surrogate_frame(self, history_frame: Whitening) -> Whitening:
        """``surrogate="regression"``: the frame of the Gaussian fitted to the informative
        evaluations (:func:`~pymc_kernel_steps.core.fit_quadratic_gaussian` in the history's
        frame, precisions between 1/100 and 100 of the history's), so that the surrogate's
        Gaussian term is the log density's best quadratic rather than the history's Gaussian.

        The history's covariance after a short tuning can underestimate a direction many times
        over, and a Gaussian term that narrow is beyond what the kernel correction can widen.
        The evaluations, at rejected proposals too, see the log density's curvature there. With too
        few evaluations for the quadratic the history's frame is kept."""
        if self.surrogate_kind != "regression":
            return history_frame
        points, values = self._informative_evaluations()
        if len(points) < 2 * quadratic_parameter_count(self.dim):
            return history_frame
        mean, covariance = fit_quadratic_gaussian(
            history_frame.whiten(points), values, *_REGRESSION_PRECISION_RANGE
        )
        chol = history_frame.chol
        return Whitening.from_gaussian(history_frame.unwhiten(mean), chol @ covariance @ chol.T)

    def _informative_evaluations(self) -> tuple[np.ndarray, np.ndarray]:
        """The informative evaluations (points, log densities), at most
        ``_REGRESSION_POINTS_PER_CENTRE × subsample_size`` of them."""
        chain = self.chain
        points, values = chain.evaluated_points.points, np.asarray(chain.evaluated_values)
        if chain.pooled is not None:
            points = np.concatenate([points, chain.pooled.points])
            values = np.concatenate([values, chain.pooled.log_densities])
        return informative_evaluations(
            points,
            values,
            self.rng,
            _REGRESSION_POINTS_PER_CENTRE * self.subsample_size,
        )

    def _evaluations(self) -> tuple[np.ndarray, np.ndarray]:
        """The informative evaluations in the surrogate's frame (whitened points, log
        densities)."""
        points, values = self._informative_evaluations()
        return self.chain.whitening.whiten(points), values

    def _select_hyperparameters(self, points) -> None:
        if self.surrogate_kind != "regression":
            super()._select_hyperparameters(points)
            return
        chain = self.chain
        U, values = self._evaluations()
        grids = {}
        if self.fixed_lengthscale is not None:  # isotropic, as given
            grids["lengthscales"] = [self.fixed_lengthscale]
            grids["relevance_factors"] = ()
        if self.fixed_regularization is not None:
            grids["regularizations"] = [self.fixed_regularization]
        if len(U) < _MIN_DISTINCT_STATES:  # nothing to regress on: the history's Gaussian
            ell = self.fixed_lengthscale
            precisions = np.zeros(self.dim) if ell is None else np.full(self.dim, ell**-2.0)
            regularization = self.fixed_regularization or _DEFAULT_REGRESSION_RIDGE
            chain.trend = None
        else:
            chain.trend = select_trend(U, values, self.rng, self.trend_kind)
            precisions, regularization, _ = select_regression_hyperparameters(
                U, values, self.rng, trend=chain.trend, **grids
            )
        chain.precisions, chain.regularization = precisions, regularization
        largest = float(precisions.max())
        chain.lengthscale = 1.0 / math.sqrt(largest) if largest > 0 else math.inf

    def _fit_surrogate(self, points):
        if self.surrogate_kind != "regression":
            return super()._fit_surrogate(points)
        chain = self.chain
        U, values = self._evaluations()
        surrogate = RegressionSurrogate(
            chain.precisions, chain.regularization, self.subsample_size, self.rng, chain.trend
        )
        if len(U) < 2:
            return surrogate.fit(points, -0.5 * np.einsum("ij,ij->i", points, points))
        return surrogate.fit(U, values)

    def _make_estimator(self, lengthscale, regularization):
        return LiteScoreEstimator(GaussianKernel(lengthscale), regularization=regularization)

    def _update_surrogate(self, x) -> bool:
        chain = self.chain
        if chain.iteration - chain.last_fit_iteration < self.refit_interval:
            return False
        return self._fit(x, select=False)


class KMCFinite(_KMC):
    r"""Kernel HMC with random Fourier features (Strathmann et al., NIPS 2015).

    The surrogate ``f(x) = θᵀφ(x)`` lives in a finite feature space of ``n_features`` random
    Fourier features of a Gaussian kernel and is fitted by score matching on the *whole* history:
    every new chain state during tuning enters through an exact rank-d update of the
    solution, O(d m²) per iteration. Hyper-parameters are chosen by cross-validation after an
    initial random-walk phase and re-chosen each time the history doubles; a batch refit then
    starts a new online run. Trajectories are accepted with the true log density, so each
    iteration evaluates the model once and needs no gradient. As in :class:`KMCLite`, a share
    ``random_walk_probability`` of the iterations are random-walk moves.

    Parameters
    ----------
    vars : list of variables, optional
        Continuous variables to sample (default: all continuous free variables of the model;
        ``pm.sample`` assigns discrete ones to PyMC's step methods).
    n_features : int, default 300
        Number ``m`` of random Fourier features.
    n_steps : int or tuple of (int, int), default (10, 30)
        Leapfrog steps per trajectory, drawn uniformly from the inclusive range ``(low, high)``
        (an integer fixes it).
    step_size : float, optional
        Initial leapfrog step size (default ``1/√d`` in the mass-matrix metric); jittered by
        ``±step_size_jitter`` per iteration and tuned as ``step_size_adaptation`` says. Each
        hyper-parameter selection and the end of tuning shrink it, if needed, below the leapfrog's
        stability limit on the surrogate (checked with the surrogate alone, no model evaluation),
        and no trajectory's step size, tuning trials and jitter included, reaches 0.9 of the
        limit ``2/√(max M⁻¹ · κ)`` of the surrogate's far field (``κ``: the wall's stiffness),
        where a trajectory would grow without bound.
    step_size_adaptation : {"esjd", "dual_averaging"}, default "esjd"
        ``"esjd"`` searches for the step size with the largest expected squared jump
        distance (:class:`~pymc_kernel_steps.core.JumpDistanceStepSize`); ``"dual_averaging"``
        tunes towards ``target_accept`` as NUTS does. With a surrogate gradient the acceptance
        rate is capped by the surrogate's error at every step size, and dual averaging towards
        0.8 then shrinks the step size until trajectories barely move.
    trajectory_tuning : {None, "bayesopt"}, optional
        None (default): the step size is tuned as ``step_size_adaptation`` says and ``n_steps``
        is drawn from its range. ``"bayesopt"``: ``(ε, L)`` are tuned together by annealed
        GP-UCB (paper 003, :class:`~pymc_kernel_steps.core.WindowedTuner`) over
        ``ε ∈ [ε₀/30, 3ε₀]`` (``ε₀`` the initial step size) and ``L`` in the ``n_steps`` range,
        restarted from the best point so far whenever the surrogate is re-selected, rewarding
        the ESJD per target evaluation in windows of a hundredth of the tuning phase; each
        trajectory takes ``L_r ~ U{1..L}`` steps without jitter, and the best ``(ε, L)`` is
        frozen after tuning.
    target_accept : float, optional
        Target acceptance of dual averaging, in (0, 1) (default 0.8). Accepted only with
        ``step_size_adaptation="dual_averaging"``: the default ``"esjd"`` has no target
        acceptance, and passing one raises a ValueError.
    step_size_jitter : float, default 0.2
        Relative uniform jitter of the step size, in [0, 1).
    lengthscale, regularization : float, optional
        Gaussian-kernel lengthscale ``ℓ`` and regulariser ``λ`` of the estimator. Default: chosen by
        5-fold cross-validation of the score-matching objective (on at most 500 distinct states,
        ``ℓ`` from 1 to 3 times the median heuristic) when the surrogate is first fitted and
        each time the history doubles during tuning.
    min_history : int, optional
        Random-walk iterations before the first fit (default ``max(300, 20 d)``, but at most a
        third of the tuning iterations, and at least 50).
    adapt_mass : bool, default True
        Estimate the diagonal mass matrix from the history's variances.
    whiten : bool, default True
        Fit the surrogate and run its trajectories on states whitened by the mean and full
        covariance of the recent history (see :class:`~pymc_kernel_steps.core.Whitening`): a
        linear change of the model's coordinates then leaves the sampler unchanged. False is the
        paper's isotropic kernel in the model's coordinates. Random-walk moves always use the
        history's covariance.
    confine : bool, default True
        Add to the surrogate the confining term ``−(k/2)(‖u‖ − R)₊²`` with ``R`` twice the distance
        of the farthest training point (whitened) and ``k`` one over the mean training variance, so
        that trajectories turn back instead of carrying an expensive model far outside the
        region the chain has seen, where the lite surrogate is flat and the random-feature one
        periodic. A fixed potential keeps the move exact. A trajectory that still leaves the
        ball of radius ``2R`` is rejected without evaluating the model (the rule depends only on
        the positions it visits, which its reversal visits too, so the move stays exact; it
        counts as ``diverging``); the ball's radius is at least ``10√d``.
    random_walk_probability : float, default 0.25
        Share of random-walk moves, in [0, 1).
    adapt_after_tuning : bool, default False
        Keep adapting through the draws with vanishing probability. By default the surrogate,
        step size and mass matrix are frozen after tuning and the kernel is exactly
        π-invariant.
    scouts : int, default 4
        Random walks of 50 iterations each, run in turn from the initial point at the start of
        tuning; the chain goes on from the one at the highest log density, so that a start in
        the basin of a minor mode rarely decides where the chain spends its tuning. 1 turns
        them off; they are skipped when they would take more than a tenth of tuning (with the
        default, fewer than 2000 tuning iterations), for a noisy (pseudo-marginal) log density,
        and after a warm start.
    history : arviz.DataTree, InferenceData or array of shape (n, d), optional
        A warm start: states from an earlier run (``idata`` or ``idata.posterior``, chains and
        draws pooled; a transformed variable such as ``sigma_log__`` is read from the posterior
        if it was recorded, ``idata_kwargs={"include_transformed": True}``, and otherwise
        computed from the constrained draws with the model's transform), or an ``(n, d)`` array
        of states in the step's coordinates. Every chain begins its history
        with them and fits the surrogate, whitening, mass matrix and step size to them before
        its first iteration, with no random-walk phase; tuning then goes on from there (and may
        be short). With ``tune=0`` the kernel is fixed from the first draw (it depends on these
        states, never on the chain's own draws), so the draws stay exact. At least 10 distinct
        states; they are copied, not modified.
    model : pymc.Model, optional
        The model (default: the one of the enclosing ``with`` block).
    initial_point : dict, optional
        Values at which the variables outside the block are taken when compiling (default: the
        model's initial point).
    compile_kwargs : dict, optional
        Passed to :func:`pymc.pytensorf.compile` (for example ``{"mode": "CVM"}`` for a cheap
        Python ``Op``); those given to ``pm.sample`` do not reach a step you construct.
    rng : int or numpy.random.Generator, optional
        Random state; ``pm.sample(random_seed=...)`` reseeds it for every chain.
    blocked : bool, default True
        Accepted for PyMC's interface; the step always updates its variables jointly.

    See Also
    --------
    KMCLite : the same with a kernel expansion on a sub-sample of the history.

    Notes
    -----
    Random features are periodic, so the surrogate has spurious modes far from the data: the
    confining term (``confine``) and the random-walk phase before the first fit
    (``min_history`` iterations) keep trajectories from being carried there. The fit is updated
    with every adapting iteration (there is no ``refit_interval``).

    Sample stats (in ``idata.sample_stats``): ``accept`` (acceptance probability),
    ``accept_rate`` (the chain's mean ``accept`` since the start of its phase, tuning or
    drawing: the progress bar's figure),
    ``accepted``, ``logp_evals`` (target evaluations this iteration), ``logp_nan``, ``lp`` (the
    model's log density; emitted as ``model_logp``, absent for noisy log densities),
    ``diverging`` (a surrogate trajectory whose true energy is non-finite, or a proposal
    rejected without evaluating the model), ``step_size`` (NaN for random-walk moves),
    ``n_steps`` (0 for random-walk moves), ``energy_error`` (change of the true Hamiltonian),
    ``energy`` (the true Hamiltonian of the state kept, with the trajectory's end momentum if
    accepted and its initial one if not, as PyMC's HMC; after a random-walk move, with a fresh
    momentum: ``az.plot_energy`` and the BFMI read it), ``n_history``,
    ``refit``, ``surrogate`` (False for random-walk moves) and ``lengthscale``. The ``tune`` and
    ``warning`` stats are consumed by PyMC and do not appear in the DataTree.
    """

    name = "kmc_finite"
    estimator_name = "finite"

    def __init__(
        self,
        vars=None,
        *,
        n_features: int = 300,
        n_steps: int | tuple[int, int] = (10, 30),
        step_size: float | None = None,
        step_size_adaptation: str = "esjd",
        trajectory_tuning: str | None = None,
        target_accept: float | None = None,
        step_size_jitter: float = 0.2,
        lengthscale: float | None = None,
        regularization: float | None = None,
        min_history: int | None = None,
        adapt_mass: bool = True,
        whiten: bool = True,
        confine: bool = True,
        random_walk_probability: float = 0.25,
        adapt_after_tuning: bool = False,
        scouts: int = 4,
        history=None,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
    ):
        require_int("n_features", n_features, minimum=1)
        self.n_features = int(n_features)
        super().__init__(
            vars,
            n_steps=n_steps,
            step_size=step_size,
            step_size_adaptation=step_size_adaptation,
            trajectory_tuning=trajectory_tuning,
            target_accept=target_accept,
            step_size_jitter=step_size_jitter,
            lengthscale=lengthscale,
            regularization=regularization,
            min_history=min_history,
            adapt_mass=adapt_mass,
            whiten=whiten,
            confine=confine,
            random_walk_probability=random_walk_probability,
            adapt_after_tuning=adapt_after_tuning,
            scouts=scouts,
            history=history,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
        )

    def _training_points(self):
        return self._recent_history()

    def _selection_kwargs(self):
        return {"n_features": self.n_features}

    def _make_estimator(self, lengthscale, regularization):
        return FiniteScoreEstimator(
            n_features=self.n_features,
            kernel=GaussianKernel(lengthscale),
            regularization=regularization,
            rng=self.rng,
        )

    def _update_surrogate(self, x) -> bool:
        chain = self.chain
        u = chain.whitening.whiten(x)
        chain.surrogate.update(u)
        if self.confine:
            chain.wall_radius = max(chain.wall_radius, _WALL_MARGIN * float(np.sqrt(u @ u)))
        return True
