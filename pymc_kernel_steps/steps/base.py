"""The shared base of every step method in this package.

It compiles the model's log density for the step's block once, evaluates it once per iteration
(at the proposal), keeps the current point's value, holds all per-chain state in one
``sampling_state`` field, and turns each transition's info into PyMC sample stats.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.pytensorf import join_nonshared_inputs, make_shared_replacements, reseed_rngs
from pymc.stats.convergence import SamplerWarning
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence
from pymc.util import get_random_generator
from pymc.vartypes import discrete_types
from rich.progress import TextColumn
from rich.table import Column

from .._validation import require_bool, require_int, require_mapping, require_seed
from ..core.history import ChainHistory
from ..core.moves import Proposal
from ..core.warmup import chain_states, iteration_owner
from ._compile import failure_hint, pm_compile, warn_if_noisy_outside_the_block
from ._failures import LogDensityError, sampling_chain_index
from ._health import (
    MIN_ACCEPTED_PER_PARAMETER,
    count_unusable,
    end_of_chain_warning,
    track_draw,
    tuning_mixing,
)
from ._history_input import states_from
from ._pooling import PooledTuning
from ._public import StepClass
from ._signature import explicit_signature
from ._start import WarmupPhases
from ._state import ChainState, KernelStepState, RefusesOtherKindsOfState, Transition, TuningData
from ._threads import single_threaded_blas
from ._variables import step_initial_point, step_model, step_value_vars

__all__ = [
    "ChainState",
    "KernelStep",
    "KernelStepState",
    "LogDensityError",
    "Transition",
    "TuningData",
]


class KernelStep(
    WarmupPhases, PooledTuning, RefusesOtherKindsOfState, ArrayStepShared, metaclass=StepClass
):
    """Base class of the step methods in this package (not used directly).

    The one adapter between PyMC and the samplers' transitions
    (:mod:`~pymc_kernel_steps.core.transitions`): it compiles the model's log density, runs the
    warm-up :attr:`phases`, hands every later iteration to the step's transition
    (``_transition_module``: its ``step``, ``freeze`` and ``sample_stats``) with the chain's
    state ``chain.transition``, and reports each iteration as sample stats (its own and the
    transition's ``STATS``), warnings and the progress bar. A subclass names its transition,
    builds its state in :meth:`_new_chain`, may extend :meth:`_sync_transition` with what its
    transition reads from the chain, and declares its stats in ``stats_dtypes_shapes``.

    Parameters
    ----------
    vars, adapt_after_tuning, scouts, walkers, climb, model, initial_point, compile_kwargs
        The internal keywords every step shares (a subclass's ``_configure`` names its own and
        passes these on as ``**shared``, with ``rng`` and ``blocked``); a public step's
        constructor takes options (:mod:`pymc_kernel_steps.options`) and turns them into these
        keywords (:mod:`._public`). Here ``scouts`` and ``walkers`` default to 1 (none); with
        ``climb`` they become the step's warm-up :attr:`phases`
        (:mod:`~pymc_kernel_steps.core.warmup`). A step that offers scouts keeps its own random
        walk in ``chain.random_walk``, which restarts at the scouts' scale.

    Attributes
    ----------
    phases : tuple of Phase
        The warm-up phases, in the order they act.
    chain : ChainState
        What the chain the step ran last learned (its history, start scales, scouts and the
        step's own, documented by the step's subclass of :class:`ChainState`); read-only.
    """

    chain: ChainState
    #: the step's transition: a module of :mod:`~pymc_kernel_steps.core.transitions` (its
    #: ``step(rng, state, log_density_fn)`` and ``freeze(state)``)
    _transition_module: ClassVar[Any] = None

    name = "kernel_step"
    default_blocked = True
    _state_class = KernelStepState
    progress_scale_stat: ClassVar[str] = "scale"
    progress_scale_label: ClassVar[str] = "Scale"

    stats_dtypes_shapes: ClassVar[dict] = {
        "accept": (np.float64, []),
        "accept_rate": (np.float64, []),
        "accepted": (np.float64, []),
        "logp_evals": (np.int64, []),
        "tune": (bool, []),
        "model_logp": (np.float64, []),
        "logp_nan": (bool, []),
        "logp_inf": (bool, []),
        "warning": (SamplerWarning, None),
    }

    def __new__(cls, *args, **kwargs):
        step_model(kwargs.get("model"))  # PyMC's __new__ reads the model's variables first
        return super().__new__(cls, *args, **kwargs)

    def __init_subclass__(cls, withheld: tuple[str, ...] = (), **kwargs):
        """A subclass's constructor forwards ``**shared`` and gets the full signature (see
        :func:`._signature.explicit_signature`; ``withheld``: inherited parameters it sets)."""
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            explicit_signature(cls, withheld)

    def __init__(
        self,
        vars=None,
        *,
        adapt_after_tuning: bool = False,
        scouts: int = 1,
        walkers: int = 1,
        climb: bool = True,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
    ):
        """Compile the model's log density for the step's block; the parameters are described
        in the class's docstring (``help(type(step))``)."""
        model = step_model(model)
        initial_point = step_initial_point(initial_point, model)
        vars = step_value_vars(type(self).__name__, vars, model)
        self._var_shapes = [(v.name, tuple(np.shape(initial_point[v.name]))) for v in vars]
        self.dim = int(sum(np.prod(shape, dtype=int) for _, shape in self._var_shapes))
        if self.dim == 0:
            raise ValueError(f"{type(self).__name__} got variables of total size zero.")
        require_bool("adapt_after_tuning", adapt_after_tuning)
        self.adapt_after_tuning = bool(adapt_after_tuning)
        require_int("scouts", scouts, minimum=1)
        self.scouts = int(scouts)
        require_int("walkers", walkers, minimum=1)
        self.walkers = int(walkers)
        require_bool("climb", climb)
        self.climb = bool(climb)
        require_mapping("compile_kwargs", compile_kwargs)
        require_seed("rng", rng)

        shared = make_shared_replacements(initial_point, vars, model)
        [logp], raveled_input = join_nonshared_inputs(
            point=initial_point, outputs=[model.logp()], inputs=vars, shared_inputs=shared
        )
        self._logp_fn, rng_updates = self._compile_log_density(logp, raveled_input, compile_kwargs)
        self._logp_rngs = list(rng_updates)
        self.noisy_logp = bool(self._logp_rngs)
        if self.noisy_logp:
            warn_if_noisy_outside_the_block(type(self).__name__, shared)

        super().__init__(vars, shared, blocked=True, rng=rng)
        self.tune = True
        self._point_map_info = None
        self.phases = self._warmup_phases()
        self.chain = self._new_chain()
        declared = {**self.stats_dtypes_shapes, **self._instance_stats()}
        if self.noisy_logp:  # a log-density estimate is not the model's log density
            del declared["model_logp"]
        self.stats_dtypes_shapes = declared
        self.stats_dtypes = [{k: v[0] for k, v in declared.items()}]

    def _instance_stats(self) -> dict:
        """This instance's sample stats besides its class's (a learned mixture's weights)."""
        return {}

    def _compile_log_density(self, logp, raveled_input, compile_kwargs):
        """The compiled log density of the step's block (its one compilation) and the updates of
        the random generators it draws from (a noisy log density has some)."""
        fn, rng_updates = pm_compile(
            [raveled_input], logp, random_seed=False, return_updates=True, **(compile_kwargs or {})
        )
        fn.trust_input = True
        return fn, rng_updates

    # ------------------------------------------------------------------ pickling
    def __getstate__(self):
        """The step's attributes as one cloudpickle blob, so that :meth:`__setstate__` can
        rebuild its compiled functions (PyTensor recompiles a function when it is unpickled, as
        in PyMC's worker processes) without numba's fast-math flags, as in :func:`pm_compile`;
        one blob also keeps the functions' shared variables those of ``self.shared``."""
        import cloudpickle

        return {"_kernel_step_state": cloudpickle.dumps(self.__dict__)}

    def __setstate__(self, state):
        import cloudpickle
        import pytensor

        if "_kernel_step_state" in state:
            with pytensor.config.change_flags(numba__fastmath=False):
                state = cloudpickle.loads(state["_kernel_step_state"])
        self.__dict__.update(state)

    def _states_from(self, history, parameter: str = "history", model=None) -> np.ndarray:
        """The states of ``history`` as an ``(n, dim)`` array in the step's coordinates (see
        :func:`._history_input.states_from`)."""
        return states_from(self, history, parameter, model)

    # ------------------------------------------------------------------ chain set-up and tuning
    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Reset every per-chain quantity (parallel chains call only this and ``stop_tuning``)."""
        self.rng = get_random_generator(rng, copy=False)
        self.tune = tune > 0
        if self._logp_rngs:
            reseed_rngs(self._logp_rngs, self.rng.integers(2**63))
        self.chain = self._new_chain()
        self.chain.total_iterations = int(tune) + int(draws)
        self.chain.warmup = chain_states(self.phases, self._chain_setup(tune))

    def stop_tuning(self) -> None:
        """Freeze adaptation (unless ``adapt_after_tuning``)."""
        self.tune = False
        self.chain.accept_sum, self.chain.accept_count = 0.0, 0  # `accept_rate` of the draws
        self.chain.tuning_mixing = tuning_mixing(self)
        self._on_stop_tuning()

    def _on_stop_tuning(self) -> None:
        """End of tuning: the transition freezes what the chain learned."""
        self._transition_module.freeze(self.chain.transition)

    def _new_chain(self) -> ChainState:
        return ChainState(history=ChainHistory(self.dim))

    # ------------------------------------------------------------------ coordinate-wise moves
    #: share of tuning iterations spent on single-coordinate moves (exact MH moves whose
    #: acceptance tunes each coordinate's scale), before and after the learned proposal starts,
    #: for the steps whose transitions use them
    coordinate_share_early: ClassVar[float] = 0.5
    coordinate_share_late: ClassVar[float] = 0.1

    # ------------------------------------------------------------------ log density
    def _evaluate_logp(
        self, x: np.ndarray, point_map_info=None, record: bool = True, proposal: bool = False
    ) -> float:
        """The model's log density at ``x``. NaN is returned (the caller rejects it), and so is a
        proposal's +inf (``proposal``: rejected and counted by the caller); an exception, or +inf
        elsewhere, raises :class:`LogDensityError` naming the point. ``record``: pass it to
        :meth:`_on_evaluation` (not for an evaluation outside the chain)."""
        try:
            value = float(self._logp_fn(x))
        except Exception as error:
            raise LogDensityError(
                f"{self._where(x, point_map_info)}: the model's log density raised "
                f"{type(error).__name__}: {error}{failure_hint(error)}"
            ) from error
        if value == math.inf and not proposal:
            raise LogDensityError(
                f"{self._where(x, point_map_info)}: the model's log density is +inf at the chain's "
                "start or current point (an overflow, or a bug in the model): no finite value."
            )
        if record:
            self._on_evaluation(x, value)
        return value

    def _on_evaluation(self, x: np.ndarray, value: float) -> None:
        """Hook called with every evaluation of the model's log density (NaN, +inf included)."""

    def _where(self, x, point_map_info) -> str:
        """Where a failure happened: step, iteration and the point (the model's value
        variables, i.e. unconstrained values), so that the user can reproduce it."""
        chain = self.chain
        phase = "tuning" if self.tune else "drawing"
        if point_map_info is not None:
            point = DictToArrayBijection.rmap(RaveledVars(np.asarray(x), point_map_info))
            shown = {k: np.asarray(v).tolist() for k, v in point.items()}
        else:
            shown = np.asarray(x).tolist()
        index = sampling_chain_index()
        which = "the chain" if index is None else f"chain {index}"
        return (
            f"{type(self).__name__}, iteration {chain.iteration} of {which} ({phase}), "
            f"at the point {shown}"
        )

    def _outside_changed(self) -> bool:
        previous = self.chain.outside_values
        if len(previous) != len(self.shared):
            return True
        return any(
            not np.array_equal(shared.get_value(borrow=True), old)
            for shared, old in zip(self.shared.values(), previous, strict=True)
        )

    def _snapshot_outside(self) -> None:
        self.chain.outside_values = [
            np.array(shared.get_value(borrow=True), copy=True) for shared in self.shared.values()
        ]

    def _current_state(self, x: np.ndarray) -> tuple[np.ndarray, float, int]:
        """The chain's current point, its log density and the evaluations spent on them: ``x``
        and the cached value unless the point or the rest of the model changed since it was
        computed (compound sampling); at the chain's first point, where the warm-up phases
        leave its start (:meth:`_start_chain`)."""
        chain = self.chain
        if (
            chain.current_point is not None
            and np.array_equal(chain.current_point, x)
            and not (self.shared and self._outside_changed())
        ):
            return x, chain.current_logp, 0
        value = self._evaluate_logp(x, self._point_map_info)
        evaluations = 1
        moved = False
        if chain.current_point is None:
            self._check_start(x, value)
            start = self._start_chain(x, value)
            evaluations += start.evaluations
            moved = not np.array_equal(start.point, x)
            x, value = start.point, start.value
        chain.current_logp = value if not math.isnan(value) else -math.inf
        chain.current_point = x.copy()
        if self.shared:
            self._snapshot_outside()
        return (chain.current_point.copy() if moved else x), chain.current_logp, evaluations

    # ------------------------------------------------------------------ the transition
    def _transition_stats(self, transition: Transition) -> dict:
        """This iteration's stats of the step's transition: its module's ``sample_stats`` (a
        warm-up phase's iteration has no ``info``)."""
        return self._transition_module.sample_stats(
            self.chain.transition,
            transition.proposal,
            transition.log_accept_ratio,
            transition.info,
        )

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, list[dict[str, Any]]]:
        # One BLAS thread: no oversubscription when PyMC runs chains in several processes, and
        # floating-point results that do not depend on the machine's load.
        with single_threaded_blas():
            return self._astep(q0)

    def _astep(self, q0: RaveledVars) -> tuple[RaveledVars, list[dict[str, Any]]]:
        chain = self.chain
        self._point_map_info = q0.point_map_info
        x, logp_current, evaluations = self._current_state(q0.data)
        owner = iteration_owner(self.phases, self._warmup_states(), chain.iteration, self.tune)
        if owner is not None:
            return self._warmup_iteration(*owner, q0, evaluations)
        x, logp_current = self._hand_over(x, logp_current)
        return self._iterate(q0, x, logp_current, evaluations)

    def _sync_transition(self, state, x: np.ndarray, logp_current: float) -> None:
        """Hand the transition's ``state`` the chain's current state and what the chain counts
        outside it (the warm-up's iterations included) and the start's frame the warm-up
        measured; a step whose transition reads more extends it."""
        chain = self.chain
        state.position, state.log_density = x, logp_current
        state.iteration = chain.iteration
        state.start_frame = chain.start_scales

    def _iterate(self, q0: RaveledVars, x: np.ndarray, logp_current: float, evaluations: int):
        """One iteration after the warm-up from ``x`` (log density ``logp_current``;
        ``evaluations`` already spent this iteration): the chain's state ``chain.transition``
        goes to the step's transition (``_transition_module.step``), which proposes, has the
        model evaluated once, at the proposal, accepts or rejects, records and adapts; the step
        takes back where the chain is and reports what it did."""
        chain = self.chain
        state = chain.transition
        self._sync_transition(state, x, logp_current)
        unusable = [False, False]

        def log_density(point):
            # the transition records the evaluations its surrogate learns from
            value = self._evaluate_logp(point, q0.point_map_info, record=False, proposal=True)
            unusable[:] = count_unusable(self, value, point, q0.point_map_info)
            return value

        state, info = self._transition_module.step(self.rng, state, log_density)
        proposal = info.proposal
        self._count_unevaluated(proposal)
        chain.current_point, chain.current_logp = state.position, state.log_density
        chain.iteration = state.iteration
        chain.adaptation_iteration = state.adaptation_iteration
        moved = info.accepted and not proposal.stays
        self._track_rejections(info.accepted, moved=moved, kind=proposal.kind)
        transition = Transition(
            proposal, info, info.accepted, info.accept_prob, info.log_accept_ratio
        )
        return self._result(q0, transition, evaluations + info.evaluations, *unusable)

    def _count_unevaluated(self, proposal: Proposal) -> None:
        """Count a proposal rejected without evaluating the model: an aborted trajectory or a
        degenerate proposal (a null proposal, the state itself, is neither)."""
        if proposal.evaluated:
            return
        if proposal.move.may_abort:  # a trajectory that diverged or was aborted
            self.chain.aborted_trajectories += 1
        else:  # a null proposal (the state itself) is not degenerate: the chain stays
            self.chain.degenerate_proposals += not proposal.null

    def _result(self, q0, transition: Transition, evaluations: int, logp_nan: bool, logp_inf: bool):
        """The new state and this iteration's sample stats."""
        chain = self.chain
        accept_prob, accepted = transition.accept_prob, transition.accepted
        transition_stats = self._transition_stats(transition)
        self._count_divergence(transition_stats.get("diverging", False))
        stats = {
            "accept": accept_prob,
            "accept_rate": self._accept_rate(accept_prob),
            "accepted": float(accepted),
            "logp_evals": evaluations,
            "tune": self.tune,
            "logp_nan": logp_nan,
            "logp_inf": logp_inf,
            "warning": self._end_of_chain_warning(),
            **transition_stats,
        }
        if not self.noisy_logp:
            stats["model_logp"] = chain.current_logp
        return RaveledVars(chain.current_point.copy(), q0.point_map_info), [stats]

    # ------------------------------------------------------------------ health of the chain
    def _track_rejections(self, accepted: bool, moved: bool | None = None, kind=None) -> None:
        """Count an accepted proposal towards the adaptation and a move to another point
        (``moved``, default ``accepted``; not a proposal that :attr:`~.Proposal.stays`) towards
        the stuck-chain checks, and after tuning towards the record of the move ``kind``."""
        chain = self.chain
        moved = accepted if moved is None else moved
        chain.rejection_run = 0 if moved else chain.rejection_run + 1
        chain.accepted_moves += accepted
        if not self.tune:
            chain.draws_done += 1
            chain.draws_accepted += moved
            track_draw(chain, moved, kind)
        if chain.rejection_run > chain.longest_rejection_run:
            chain.longest_rejection_run = chain.rejection_run
            chain.longest_rejection_run_end = chain.iteration

    def _accept_rate(self, accept_prob: float) -> float:
        """The mean acceptance probability of this chain since the start of its current phase
        (tuning or drawing), this iteration's included: the `accept_rate` stat."""
        chain = self.chain
        chain.accept_sum += accept_prob
        chain.accept_count += 1
        return chain.accept_sum / chain.accept_count

    def _count_divergence(self, diverging: bool) -> None:
        if diverging and not self.tune:
            self.chain.draws_diverging += 1

    #: what to do about `diverging` draws, for the steps that emit the stat (PyMC's check then
    #: advises "Increase `target_accept`", which is NUTS's advice); None: no such stat
    divergence_advice: ClassVar[str | None] = None

    #: accepted moves per parameter after tuning below which a chain is reported (None: no such
    #: check, for a step whose accepted moves each travel across the posterior)
    min_accepted_per_parameter: ClassVar[float | None] = MIN_ACCEPTED_PER_PARAMETER

    #: whether the end of tuning checks that the learned moves settled (see
    #: :func:`._health.unsettled_tuning`); a step whose tuning is not meant to be stationary
    #: turns it off
    checks_tuning_mixing: ClassVar[bool] = True

    #: stats a user should look at when the chain is stuck (subclasses name their own)
    stuck_chain_stats: ClassVar[tuple[str, ...]] = ("accept", "accepted", "logp_evals")

    def _end_of_chain_warning(self) -> SamplerWarning | None:
        """One warning on the chain's last iteration if it was stuck (see
        :func:`._health.end_of_chain_warning`; PyMC logs it at the end of the chain)."""
        return end_of_chain_warning(self)

    # ------------------------------------------------------------------ PyMC integration
    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE if var.dtype in discrete_types else Competence.COMPATIBLE

    def _progressbar_config(self, n_chains=1):
        # the chain's mean acceptance since the start of its phase (the `accept_rate` stat), not
        # the last iteration's; the scale column is blank where this iteration has none (a
        # random-walk move of KMC has no step size)
        columns = [
            TextColumn(
                "{task.fields[accept_rate]:0.2f}", table_column=Column("Accept rate", ratio=1)
            ),
            TextColumn(
                "{task.fields[kernel_scale]}",
                table_column=Column(self.progress_scale_label, ratio=1),
            ),
        ]
        return columns, {"accept_rate": [0.0] * n_chains, "kernel_scale": [""] * n_chains}

    def _make_progressbar_update_functions(self):
        scale_stat = self.progress_scale_stat

        def update_stats(step_stats):
            scale = step_stats.get(scale_stat, math.nan)
            return {
                "accept_rate": step_stats["accept_rate"],
                "kernel_scale": f"{scale:0.3g}" if np.isfinite(scale) else "",
            }

        return (update_stats,)
