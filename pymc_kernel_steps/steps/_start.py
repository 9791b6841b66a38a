"""A chain's warm-up, PyMC's side: the check that the log density is finite at its start, the
step's warm-up phases (:mod:`~pymc_kernel_steps.core.warmup`: the start's scales, the climb, the
scouts, the walkers) asked with the model's log density, and the frame of the first moves."""

from __future__ import annotations

import math

import numpy as np
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.exceptions import SamplingError

from ..core.moves import optimal_scale
from ..core.warmup import (
    ChainSetup,
    ClimbPhase,
    Phase,
    ScoutsPhase,
    Start,
    StartScalesPhase,
    WalkersPhase,
    begin,
    chain_states,
    check_phases,
    hand_over,
)
from ..core.whitening import Whitening
from ._failures import LogDensityError, sampling_chain_index
from ._health import count_unusable
from ._state import Transition

__all__ = ["WarmupPhases"]


class WarmupPhases:
    """Mixed into :class:`~pymc_kernel_steps.steps.base.KernelStep`: its warm-up phases, asked
    at a chain's start and in its iterations, with the model's log density."""

    @property
    def phases(self) -> tuple[Phase, ...]:
        """The warm-up phases of the step's chains, in the order they act
        (:mod:`~pymc_kernel_steps.core.warmup`): built from the step's ``warmup=[...]``
        (:class:`~pymc_kernel_steps.options.Climb`, ``Scouts``, ``Walkers``). Another sequence
        of phases may replace it before a chain is set up."""
        return self._phases

    @phases.setter
    def phases(self, phases) -> None:
        self._phases = check_phases(phases)

    def _warmup_phases(self) -> tuple[Phase, ...]:
        """The phases the step's keywords ask for: the start's scales always, then the climb,
        the scouts and the walkers where asked."""
        phases = [StartScalesPhase()]
        if self.climb:
            phases.append(ClimbPhase())
        if self.scouts > 1:
            phases.append(ScoutsPhase(self.scouts))
        if self.walkers > 1:
            phases.append(WalkersPhase(self.walkers))
        return tuple(phases)

    def _chain_setup(self, tune: int) -> ChainSetup:
        return ChainSetup(
            tune=int(tune),
            exact=not self.noisy_logp,
            whole_model=not self.shared,
            warm_started=getattr(self, "warm_history", None) is not None,
        )

    def _warmup_states(self) -> dict:
        """The chain's states of the phases (set up without tuning for a chain stepped before
        ``setup_chain``)."""
        chain = self.chain
        if chain.warmup is None:
            chain.warmup = chain_states(self.phases, self._chain_setup(0))
        return chain.warmup

    def _check_start(self, x: np.ndarray, value: float) -> None:
        """Raise :class:`pymc.exceptions.SamplingError` naming the starting values (every
        variable's, as ``model.check_start_vals`` does for NUTS) if the log density at a chain's
        first point is not finite: from there every draw would be rejected or NaN."""
        if math.isfinite(value):
            return
        point = {}
        if self._point_map_info is not None:
            block = DictToArrayBijection.rmap(RaveledVars(np.asarray(x), self._point_map_info))
            point.update({k: np.asarray(v).tolist() for k, v in block.items()})
        else:
            point["(step's block)"] = np.asarray(x).tolist()
        for name, shared in self.shared.items():
            point[name] = np.asarray(shared.get_value(borrow=True)).tolist()

        index = sampling_chain_index()
        which = "the chain" if index is None else f"chain {index}"
        raise SamplingError(
            "Initial evaluation of model at starting point failed!\n"
            f"{type(self).__name__}: the model's log density at the starting point of {which} "
            f"is {value}.\nStarting values (of the model's value variables, i.e. "
            f"unconstrained):\n{point}\n"
            "A NaN value of a transformed variable (such as 'sigma_log__') comes from an initial "
            "value outside the variable's support (check `initvals`); -inf from a point the "
            "model rules out. `model.point_logps(point)` and `model.debug()` show which term "
            "fails."
        )

    def _start_chain(self, x: np.ndarray, value: float) -> Start:
        """The chain's start after its phases acted at its first point ``x`` (log density
        ``value``, finite; :func:`~pymc_kernel_steps.core.warmup.begin`): the start's scales
        measured, and, where the start lies far from the posterior and the step climbs
        (``climb=``), the climb into the posterior's bulk and the scales measured again there.
        The climb's evaluations are not the chain's: a surrogate that learns from the chain's
        evaluations (``KMCLite``'s regression) does not see them."""
        start = begin(self.phases, self._warmup_states(), Start(x, value), self._probe, self.tune)
        if self.chain.start_scales is not None:
            self._on_start_scales()
        return start

    def _probe(self, record: bool):
        """The log density as a function of a point, NaN where the model fails (raises, or is
        +inf); ``record``: whether the evaluations are the chain's."""

        def probe(point: np.ndarray) -> float:
            try:
                return self._evaluate_logp(point, self._point_map_info, record=record)
            except LogDensityError:
                return math.nan

        return probe

    def start_evaluations(self, point: dict) -> int:
        """The evaluations a chain of this step spends at its first point ``point`` (a dict of
        the model's value variables, e.g. ``model.initial_point()``) before its first proposal:
        the start, its second differences and the climb (``climb=``) with the second differences
        where it ends. The procedure is deterministic, so this is the count a chain that tunes
        will report (for a benchmark that plans a budget of evaluations); it evaluates the
        model that many times."""
        x = DictToArrayBijection.map({v.name: point[v.name] for v in self.vars}).data
        x = np.asarray(x, dtype=float)
        value = float(self._logp_fn(x))
        if not math.isfinite(value):
            return 1
        states = chain_states(self.phases, self._chain_setup(0))
        start = begin(
            self.phases, states, Start(x, value), lambda _: self._probe(record=False), True
        )
        return 1 + start.evaluations

    def _warmup_iteration(self, phase: Phase, state, q0: RaveledVars, evaluations: int):
        """An iteration that ``phase`` owns (the scouts'): it proposes, the model is evaluated
        there, it decides; the chain's state is where it leaves the chain. ``evaluations``: those
        already spent this iteration (at the chain's start)."""
        chain = self.chain
        proposal = phase.propose(state, self.rng)
        logp_proposal = self._evaluate_logp(proposal.x, q0.point_map_info, proposal=True)
        evaluations += 1
        logp_nan, logp_inf = count_unusable(self, logp_proposal, proposal.x, q0.point_map_info)
        if logp_inf:
            logp_proposal = -math.inf
        outcome = phase.decide(state, proposal, logp_proposal, self.rng)
        chain.current_point, chain.current_logp = outcome.point, outcome.value
        if outcome.random_walk_scale is not None and chain.random_walk is not None:
            chain.random_walk.scale.restart_at(outcome.random_walk_scale)
        chain.iteration += 1
        self._track_rejections(outcome.accepted)
        transition = Transition(
            proposal, None, outcome.accepted, outcome.accept_prob, outcome.log_accept_ratio
        )
        return self._result(q0, transition, evaluations, logp_nan, logp_inf)

    def _hand_over(self, x: np.ndarray, logp: float) -> tuple[np.ndarray, float]:
        """The state the step's own iteration proposes from and its log density: ``x`` and
        ``logp``, or the state a phase hands the chain (the walkers' next), which becomes the
        chain's current state."""
        chain = self.chain
        handed = hand_over(
            self.phases,
            self._warmup_states(),
            chain.current_point,
            chain.current_logp,
            chain.iteration,
            self.tune,
        )
        if handed is None:
            return x, logp
        chain.current_point, chain.current_logp = handed
        return chain.current_point.copy(), chain.current_logp

    def _on_start_scales(self) -> None:
        """Once ``chain.start_scales`` is known: the random walk acts in the start's frame
        until the history gives one."""
        chain = self.chain
        if chain.random_walk is not None:
            chain.random_walk.metric = Whitening.diagonal(chain.start_scales)
        if chain.coordinate is not None and chain.coordinate.scales is None:
            chain.coordinate.initial_scale = optimal_scale(self.dim) * chain.start_scales

    def _start_frame(self) -> np.ndarray:
        """``chain.start_scales``, or unit scales before they are measured."""
        scales = self.chain.start_scales
        return np.ones(self.dim) if scales is None else scales

    def _fallback_variance(self, scale: float) -> np.ndarray:
        """The variance of each coordinate under the random walk of scale ``s`` (``(s D)²``):
        the whitening's value for a coordinate the history has not moved."""
        return (scale * self._start_frame()) ** 2
