"""Adaptive HMC (paper 003): HMC on the model's gradient with (ε, L) tuned by Bayesian
optimisation of the expected squared jump distance per √L.

The options of :class:`AdaptiveHMC` are :class:`~pymc_kernel_steps.options.BayesianTuning` and
``adapt_mass``; below, the names are that option's fields.

Each iteration draws ``L_r ~ U{1, ..., L}``, a momentum ``p ~ N(0, M)`` and runs ``L_r``
leapfrog steps of size ``ε`` on the model's log density and gradient (compiled by PyTensor),
accepting with ``min(1, exp(H(x, p) − H(x*, p*)))``, ``H = −log π + ½ pᵀM⁻¹p``. For every
fixed ``(ε, L)`` this is a mixture of exact HMC kernels.

During tuning ``(ε, L)`` is chosen by annealed GP-UCB (paper 003, Alg. 2; see
:mod:`pymc_kernel_steps.core.bayesopt`) over a box: the tuning phase of ``B`` iterations is
cut into windows of ``m = B / n_windows`` iterations, each window's reward is the mean
Rao–Blackwellised squared jump ``α ‖x* − x‖²_{M⁻¹}`` divided by ``√L``, and the next window's
``(ε, L)`` maximises the acquisition. The diagonal mass matrix ``M⁻¹`` starts as each
coordinate's conditional variance at the chain's start (from second differences of the log
density, ``2–6 d`` evaluations, counted) where its sd lies more than a factor 100 from 1
and the start lies in the posterior's bulk (see *The start of tuning* in the usage guide),
and 1 elsewhere, and is the posterior
variance estimated from the tuning draws at 15 % and 40 % of the tuning phase; after each
estimate a step-size search and a fresh optimisation start. After a start outside the
posterior's bulk (a transient, where the step size and scales found at the start do not
hold) the estimates come at 7.5, 10, 15 and 40 % of the tuning phase (doubling windows in
the transient), the step-size search is repeated at iterations 5, 10, 20, … before the first,
with a new box and optimiser wherever the step size found lies outside the box, and the
box's ``L`` reaches at least 100 until the last estimate. At the end of tuning the
``(ε, L)`` of largest posterior-mean reward is kept.

Sample stats (in ``idata.sample_stats``): ``accept``, ``accepted`` (float64),
``accept_rate`` (the chain's mean ``accept`` since the start of its phase, tuning or
drawing: the progress bar's figure),
``logp_evals`` (evaluations of the log density and its gradient this iteration: ``L_r``,
plus the step-size searches), ``lp`` (the model's log density, emitted as ``model_logp``),
``logp_nan``, ``logp_inf``, ``step_size`` (``ε``), ``n_steps`` (``L_r``, the leapfrog steps
taken),
``max_n_steps`` (``L``), ``esjd`` (this iteration's ``α ‖x* − x‖²_{M⁻¹}``),
``tuning_window`` (index of the reward window, −1 once frozen), ``energy_error``,
``energy`` (the Hamiltonian ``−log π(q) + ½ pᵀM⁻¹p`` of the state kept, with the trajectory's
end momentum if accepted and its initial one if not, as PyMC's HMC: ``az.plot_energy`` and
the BFMI read it) and ``diverging``. The ``tune`` and ``warning`` stats are consumed by
PyMC and do not appear in the DataTree.

This step uses the model's gradient: it is the gradient-based comparator of the package's
gradient-free samplers, and an alternative to NUTS. The documentation's Algorithms page says
where it deviates from the paper, and its benchmark pages how it compares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytensor
from pymc.blocking import RaveledVars
from pymc.step_methods.compound import Competence
from pymc.vartypes import discrete_types
from rich.progress import TextColumn
from rich.table import Column

from .._validation import require_bool, require_int, require_positive
from ..core.adaptation import Feedback
from ..core.bayesopt import MIN_MAX_N_STEPS, WindowedTuner, default_hmc_box
from ..core.history import ChainHistory
from ..core.hmc import HamiltonianState, find_step_size, hmc_transition, regularized_variance
from ._compile import failure_hint
from ._health import count_unusable
from ._public import TUNING, configuration, public_signature, resolve
from ._state import HMC_STATS
from ._threads import single_threaded_blas
from .base import (
    ChainState,
    KernelStep,
    LogDensityError,
    pm_compile,
)

__all__ = ["AdaptiveHMC", "AdaptiveHMCChain"]

#: mass-matrix estimates at these fractions of the tuning phase (each from the draws since the
#: previous one, the first from the second half of the draws before it)
MASS_UPDATE_FRACTIONS = (0.15, 0.4)
#: fewer tuning draws than this leave the mass matrix as it is
MIN_MASS_DRAWS = 20
#: window length when there is no tuning phase to divide
UNTUNED_WINDOW = 10
#: after a start far from the posterior, the step-size search is repeated at the current point
#: at these iterations and then at doublings of the last (20, 40, ...) until the first
#: mass-matrix update; where the step size found lies outside the box, a new box and optimiser
#: start. (On posteriordb's earn_height the first transition from sigma = 1 flings sigma to
#: about 2·10⁶, where the step size found at the start, 5·10⁻⁷, left the chain still for 150
#: iterations.)
FAR_START_CHECKS = (5, 10)
#: after a start far from the posterior, mass-matrix estimates at these fractions of the tuning
#: phase instead: doubling windows in the transient (for 1000 tuning iterations 37-75, 75-100,
#: 100-150, as Stan's), then the last window 150-400 as after a start in the bulk. Each estimate
#: learns only the scales the chain moved over under the previous one, so the transient needs
#: several. (Stan's 250 and 450 for the last two cost sblrc-blr 38 % of its ESS per gradient and
#: left one mesquite run stuck, at 5 ESS: a last window of 200 draws.)
FAR_START_MASS_UPDATE_FRACTIONS = (0.075, 0.1, 0.15, 0.4)
#: while the mass matrix is provisional after a far start (before its last update), the box's
#: largest ``L`` is at least this: ``2π / ε₀`` is half a period in a metric that fits the
#: posterior, and the provisional one does not
PROVISIONAL_MIN_MAX_N_STEPS = 100


@dataclass
class AdaptiveHMCChain(ChainState):
    """What a chain of :class:`~pymc_kernel_steps.AdaptiveHMC` learned: its ``step.chain``.

    The public attributes of :class:`ChainState` and these; the other fields are internal.

    Attributes
    ----------
    inv_mass : ndarray, shape (d,)
        The diagonal inverse mass matrix.
    step_size : float
        The step size ``ε`` of the trajectories.
    max_n_steps : int
        ``L``: the trajectories take ``L_r ~ U{1..L}`` steps.
    reference_step_size : float
        The step size ``ε₀`` the search box of ``(ε, L)`` is centred on.
    tuner : WindowedTuner or None
        The Bayesian-optimisation tuner of ``(ε, L)`` (its box, windows and observations).
    """

    inv_mass: np.ndarray | None = None
    step_size: float = math.nan
    max_n_steps: int = 0
    reference_step_size: float = math.nan
    tuner: WindowedTuner | None = None
    # internal bookkeeping, not part of the public interface
    hamiltonian: HamiltonianState | None = None
    earlier_windows: int = 0
    mass_updates: tuple[int, ...] = ()
    last_mass_update: int = 0
    window: int = 1
    box_checks: tuple[int, ...] = ()
    nan_this_iteration: bool = False
    inf_this_iteration: bool = False


def _check_bounds(name: str, bounds, integer: bool):
    """Validate a ``(low, high)`` pair; return it as numbers (or None)."""
    if bounds is None:
        return None
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise ValueError(f"`{name}` must be a (low, high) pair, got {bounds!r}.")
    low, high = bounds
    if integer:
        for value in (low, high):
            require_int(name, value, minimum=1)
    else:
        for value in (low, high):
            require_positive(name, value)
    if low > high:
        raise ValueError(f"`{name}` must satisfy low ≤ high, got {bounds!r}.")
    return (int(low), int(high)) if integer else (float(low), float(high))


class _LogDensityOf:
    """The log density alone, from a compiled ``x -> (log density, gradient)`` function."""

    def __init__(self, logp_and_grad):
        self.logp_and_grad = logp_and_grad

    def __call__(self, x):
        return self.logp_and_grad(x)[0]


def _require_exact(rng_updates) -> None:
    """Raise unless the log density is exact (draws no random numbers)."""
    if rng_updates:
        raise ValueError(
            "AdaptiveHMC needs the model's exact, differentiable log density, but this "
            "model's log density is random (a pseudo-marginal or simulator estimate). Use "
            "KMCLite, KMCFinite or KAMH."
        )


class AdaptiveHMC(KernelStep):
    r"""Hamiltonian Monte Carlo tuned by Bayesian optimisation (Wang, Mohamed & de Freitas 2013):
    ``L_r ~ U{1..L}`` leapfrog steps of size ``ε`` on the model's log density and gradient, with
    ``(ε, L)`` chosen while tuning by annealed GP-UCB and a diagonal mass matrix estimated from
    the tuning draws.

    Pick it only where the model *has* a gradient: it is the package's gradient-based
    comparator, an alternative to NUTS with a fixed trajectory length per iteration (cheaper
    bookkeeping, no tree). For models without a gradient use :class:`KMCLite`, :class:`KAMH`
    or :class:`KMCFinite`; it refuses a noisy (pseudo-marginal) log density. The module's
    documentation (``help(pymc_kernel_steps.steps.ahmc)``) gives the tuning schedule.

    Parameters
    ----------
    vars : list of variables, optional
        Continuous variables to sample (default: all continuous free variables).
    tuning : BayesianTuning, optional
        The box of ``(ε, L)``, the reward windows and the rewards' scale
        (:class:`~pymc_kernel_steps.options.BayesianTuning`).
    adapt_mass : bool, default True
        Start the diagonal mass matrix at the start's frame and estimate it from the tuning
        draws (False keeps the identity).
    adapt_after_tuning : bool, default False
        False: ``(ε, L)`` and the mass matrix are frozen after tuning (one exact HMC kernel).
        True: the paper's infinite adaptation of ``(ε, L)`` with vanishing probability.
    model, initial_point, compile_kwargs, rng, blocked : optional
        As every PyMC step: the model (default: the enclosing one), the point of the variables
        outside the block, keywords of :func:`pymc.pytensorf.compile` (``pm.sample``'s do not
        reach a step you build), the random state of a step driven by hand (``pm.sample``
        reseeds it from ``random_seed``), and PyMC's ``blocked`` (always joint).

    See Also
    --------
    pymc_kernel_steps.options : every option, documented once.

    Notes
    -----
    The keywords of earlier releases (``step_size_bounds=``, ``n_windows=``, ...) still work,
    mapped to ``tuning=BayesianTuning(...)``, with a ``DeprecationWarning``. Sample stats:
    ``accept``, ``accepted``, ``accept_rate``, ``logp_evals``, ``step_size``, ``n_steps``,
    ``max_n_steps``, ``esjd``, ``tuning_window``, ``energy``, ``energy_error``, ``diverging``.

    Examples
    --------
    >>> import pymc as pm
    >>> from pymc_kernel_steps import AdaptiveHMC
    >>> from pymc_kernel_steps.options import BayesianTuning
    >>> with pm.Model():
    ...     x = pm.Normal("x", 0.0, 1.0, shape=3)
    ...     step = AdaptiveHMC(tuning=BayesianTuning(n_steps_bounds=(1, 20)))
    ...     idata = pm.sample(step=step, random_seed=1)
    """

    name = "adaptive_hmc"
    chain: AdaptiveHMCChain
    divergence_advice = (
        "Their energy error was non-finite or large: the step size was too long where they "
        "were. PyMC's advice to 'Increase `target_accept`' is NUTS's: AdaptiveHMC has no "
        "target_accept; pass a smaller upper bound of step_size_bounds, or tune longer."
    )
    #: HMC trajectories cross the posterior in a few accepted moves (at d = 100: effective sample
    #: size 630 from 626 accepted moves, 6.3 per parameter): no per-parameter check
    min_accepted_per_parameter = None
    progress_scale_stat = "step_size"
    progress_scale_label = "Step size"
    stuck_chain_stats = ("accept", "accepted", "step_size", "n_steps", "diverging")

    stats_dtypes_shapes: ClassVar[dict] = {
        **KernelStep.stats_dtypes_shapes,
        **HMC_STATS,
        "max_n_steps": (np.int64, []),
        "esjd": (np.float64, []),
        "tuning_window": (np.int64, []),
    }

    @public_signature
    def __init__(
        self,
        vars=None,
        *,
        tuning=None,
        adapt_mass: bool = True,
        adapt_after_tuning: bool = False,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
        **deprecated,
    ):
        self.options = resolve("AdaptiveHMC", (TUNING,), {"tuning": tuning}, deprecated)
        self._configure(
            vars,
            **configuration(self.options),
            adapt_mass=adapt_mass,
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
        step_size_bounds: tuple[float, float] | None = None,
        n_steps_bounds: tuple[int, int] | None = None,
        adapt_mass: bool = True,
        n_windows: int = 100,
        window: int | None = None,
        reward_max: float = 4.0,
        **shared,
    ):
        self.step_size_bounds = _check_bounds("step_size_bounds", step_size_bounds, False)
        self.n_steps_bounds = _check_bounds("n_steps_bounds", n_steps_bounds, True)
        require_bool("adapt_mass", adapt_mass)
        self.adapt_mass = bool(adapt_mass)
        require_int("n_windows", n_windows, minimum=1)
        self.n_windows = int(n_windows)
        if window is not None:
            require_int("window", window, minimum=1)
        self.window = None if window is None else int(window)
        require_positive("reward_max", reward_max)
        self.reward_max = float(reward_max)
        self._tune_length = 0
        # its own start takes the gradient's information (the mass matrix's first scales)
        super().__init__(vars, climb=False, **shared)

    def _compile_log_density(self, logp, raveled_input, compile_kwargs):
        """The log density and its gradient, compiled once into one function (the step's only
        compilation; its log density is that function's first output)."""
        try:
            grad = pytensor.grad(logp, raveled_input)
        except Exception as error:
            _, rng_updates = super()._compile_log_density(logp, raveled_input, compile_kwargs)
            _require_exact(rng_updates)
            raise ValueError(
                "AdaptiveHMC needs the gradient of the model's log density, and PyTensor could "
                f"not build it ({type(error).__name__}: {error}). For a black-box likelihood "
                "without a gradient use KMCLite, KMCFinite or KAMH."
            ) from error
        fn, rng_updates = pm_compile(
            [raveled_input],
            [logp, grad],
            random_seed=False,
            return_updates=True,
            **(compile_kwargs or {}),
        )
        _require_exact(rng_updates)
        fn.trust_input = True
        self._logp_dlogp_fn = fn
        return _LogDensityOf(fn), rng_updates

    @staticmethod
    def competence(var, has_grad):
        """As NUTS: continuous variables with a gradient only (the trajectories need it)."""
        if var.dtype in discrete_types or not has_grad:
            return Competence.INCOMPATIBLE
        return Competence.COMPATIBLE

    # ------------------------------------------------------------------ the log density
    def _logp_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Log density and gradient at ``x``; NaN and ``+inf`` are returned as ``-inf`` (and
        counted: a trajectory that meets one is rejected), an exception raises
        :class:`LogDensityError` naming the point."""
        try:
            logp, grad = self._logp_dlogp_fn(np.ascontiguousarray(x, dtype=float))
        except Exception as error:
            raise LogDensityError(
                f"{self._where(x, self._point_map_info)}: the model's log density or its "
                f"gradient raised {type(error).__name__}: {error}{failure_hint(error)}"
            ) from error
        logp = float(logp)
        nan, infinite = count_unusable(self, logp, x, self._point_map_info)
        if nan or infinite:
            self.chain.nan_this_iteration |= nan
            self.chain.inf_this_iteration |= infinite
            logp = -math.inf
        return logp, np.asarray(grad, dtype=float)

    # ------------------------------------------------------------------ chain set-up
    def setup_chain(self, rng, tune: int, draws: int) -> None:
        self._tune_length = int(tune)
        super().setup_chain(rng, tune, draws)

    def _new_chain(self) -> AdaptiveHMCChain:
        chain = AdaptiveHMCChain(history=ChainHistory(self.dim), inv_mass=np.ones(self.dim))
        tune = self._tune_length
        if self.window is not None:
            chain.window = self.window
        else:
            chain.window = max(1, tune // self.n_windows) if tune > 0 else UNTUNED_WINDOW
        if self.adapt_mass and tune > 0:
            chain.mass_updates = tuple(int(round(f * tune)) for f in MASS_UPDATE_FRACTIONS)
        return chain

    def _start_optimisation(self, evaluations: int, reference: float | None = None) -> int:
        """Step-size search at the current point (unless ``reference`` gives its result), then a
        fresh box and optimiser; returns the evaluations made."""
        chain = self.chain
        used = 0
        if reference is None:
            initial = chain.step_size if math.isfinite(chain.step_size) else 1.0
            reference, used = find_step_size(
                self.rng, chain.hamiltonian, self._logp_and_grad, chain.inv_mass, initial=initial
            )
        chain.reference_step_size = reference
        provisional = chain.start_far_from_posterior and any(
            update > chain.iteration for update in chain.mass_updates
        )
        box = default_hmc_box(
            reference,
            self.step_size_bounds,
            self.n_steps_bounds,
            min_max_n_steps=PROVISIONAL_MIN_MAX_N_STEPS if provisional else MIN_MAX_N_STEPS,
        )
        start = (0.5 * reference, math.sqrt(box.lower[1] * box.upper[1]))
        if chain.tuner is not None:
            chain.earlier_windows += chain.tuner.windows
        chain.tuner = WindowedTuner(
            box,
            chain.window,
            cost_exponent=0.5,
            start=start,
            reward_max=self.reward_max,
            annealing_offset=self.n_windows,
        )
        chain.step_size, chain.max_n_steps = chain.tuner.value
        return evaluations + used

    def _warmup_phases(self):
        return super()._warmup_phases() if self.adapt_mass else ()

    def _box_checks(self) -> tuple[int, ...]:
        """The iterations of :data:`FAR_START_CHECKS` and their doublings before the first
        mass-matrix update (or the end of tuning)."""
        chain = self.chain
        end = chain.mass_updates[0] if chain.mass_updates else self._tune_length
        checks = [c for c in FAR_START_CHECKS if c < end]
        while checks and 2 * checks[-1] < end:
            checks.append(2 * checks[-1])
        return tuple(checks)

    def _check_box(self, evaluations: int) -> int:
        """The step-size search at the current point; a new box and optimiser if the step size
        found lies outside the box (the chain has left the region the box was set for)."""
        chain = self.chain
        reference, used = find_step_size(
            self.rng,
            chain.hamiltonian,
            self._logp_and_grad,
            chain.inv_mass,
            initial=chain.reference_step_size,
        )
        box = chain.tuner.optimizer.box
        if not box.lower[0] <= reference <= box.upper[0]:
            return self._start_optimisation(evaluations + used, reference=reference)
        return evaluations + used

    def _update_mass(self) -> bool:
        """Estimate the mass matrix from the draws since the last estimate; True if it changed."""
        chain = self.chain
        start = chain.last_mass_update or chain.iteration // 2
        draws = chain.history.points[start : chain.iteration]
        chain.last_mass_update = chain.iteration
        if len(draws) < MIN_MASS_DRAWS:
            return False
        variance = regularized_variance(draws, reference_variance=self._start_frame() ** 2)
        if not (np.all(np.isfinite(variance)) and np.all(variance > 0)):
            return False
        chain.inv_mass = variance
        return True

    def _on_stop_tuning(self) -> None:
        chain = self.chain
        tuner = chain.tuner
        if tuner is None or not tuner.windows:  # nothing learned: go on as before
            return
        chain.step_size, chain.max_n_steps = tuner.final()
        if self.adapt_after_tuning:  # go on from the best point, with a fresh window
            tuner.move_to((chain.step_size, chain.max_n_steps))

    # ------------------------------------------------------------------ the transition
    def astep(self, q0: RaveledVars):
        with single_threaded_blas():
            return self._hmc_step(q0)

    def _hmc_step(self, q0: RaveledVars):
        chain = self.chain
        self._point_map_info = q0.point_map_info
        chain.nan_this_iteration = chain.inf_this_iteration = False
        x = q0.data
        evaluations = 0
        state = chain.hamiltonian
        if (
            state is None
            or not np.array_equal(state.position, x)
            or (self.shared and self._outside_changed())
        ):
            first = state is None
            chain.hamiltonian = HamiltonianState.at(self._logp_and_grad, x)
            evaluations += 1
            if chain.inf_this_iteration:  # the current point, not a proposal: nothing to reject
                where = "at the start" if first else "at the chain's current point"
                raise LogDensityError(
                    f"{self._where(x, self._point_map_info)}: the model's log density is +inf "
                    f"{where}, which no proper posterior has (an overflow or a bug in the model)."
                )
            if first:
                nan = chain.nan_this_iteration  # _logp_and_grad returns NaN as -inf
                self._check_start(x, math.nan if nan else chain.hamiltonian.logp)
                # the first metric: each coordinate's conditional variance at the start
                evaluations += self._start_chain(x, chain.hamiltonian.logp).evaluations
                chain.inv_mass = self._start_frame() ** 2
                if chain.start_far_from_posterior and self.tune:
                    if chain.mass_updates:
                        tune = self._tune_length
                        chain.mass_updates = tuple(
                            int(round(f * tune)) for f in FAR_START_MASS_UPDATE_FRACTIONS
                        )
                    chain.box_checks = self._box_checks()
            if self.shared:
                self._snapshot_outside()
        if chain.tuner is None:
            evaluations = self._start_optimisation(evaluations)
        elif self.tune and chain.iteration in chain.mass_updates and self._update_mass():
            evaluations = self._start_optimisation(evaluations)
        elif self.tune and chain.iteration in chain.box_checks:
            evaluations = self._check_box(evaluations)

        step_size, max_n_steps = chain.step_size, chain.max_n_steps
        chain.hamiltonian, info = hmc_transition(
            self.rng, chain.hamiltonian, self._logp_and_grad, step_size, max_n_steps, chain.inv_mass
        )
        evaluations += info["evaluations"]
        accepted = info["accepted"]
        chain.current_point = chain.hamiltonian.position
        chain.current_logp = chain.hamiltonian.logp
        chain.history.append(chain.current_point)
        chain.iteration += 1
        self._track_rejections(accepted)

        window = -1
        if self.tune or self.adapt_after_tuning:
            window = chain.earlier_windows + chain.tuner.windows
            feedback = Feedback(info["accept_prob"], info["squared_jump"], info["evaluations"])
            chain.tuner.update(feedback, self.rng)
            chain.step_size, chain.max_n_steps = chain.tuner.value
            chain.adaptation_iteration += 1

        self._count_divergence(info["diverging"])
        stats = {
            "accept": info["accept_prob"],
            "accept_rate": self._accept_rate(info["accept_prob"]),
            "accepted": float(accepted),
            "logp_evals": evaluations,
            "tune": self.tune,
            "model_logp": chain.hamiltonian.logp,
            "logp_nan": chain.nan_this_iteration,
            "logp_inf": chain.inf_this_iteration,
            "warning": self._end_of_chain_warning(),
            "step_size": step_size,
            "n_steps": info["n_steps"],
            "max_n_steps": max_n_steps,
            "esjd": info["esjd_term"],
            "tuning_window": window,
            "energy_error": info["energy_error"],
            "energy": info["energy"],
            "diverging": info["diverging"],
        }
        return RaveledVars(chain.hamiltonian.position.copy(), q0.point_map_info), [stats]

    # ------------------------------------------------------------------ progress bar
    def _progressbar_config(self, n_chains=1):
        columns, stats = super()._progressbar_config(n_chains)
        columns.append(
            TextColumn("{task.fields[max_n_steps]}", table_column=Column("Steps", ratio=1))
        )
        return columns, {**stats, "max_n_steps": [0] * n_chains}

    def _make_progressbar_update_functions(self):
        (base_update,) = super()._make_progressbar_update_functions()

        def update_stats(step_stats):
            return {**base_update(step_stats), "max_n_steps": step_stats["max_n_steps"]}

        return (update_stats,)
