"""A chain's start: the check that its log density is finite there, each coordinate's conditional
scale (the frame of its first moves), the climb from a start far from the posterior, and the
walkers that take turns while the chain tunes."""

from __future__ import annotations

import math

import numpy as np
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.exceptions import SamplingError

from ..core.climb import climb
from ..core.moves import optimal_scale
from ..core.start_scales import conditional_scales
from ..core.walkers import TuningWalkers
from ..core.whitening import Whitening
from ._failures import LogDensityError, sampling_chain_index

__all__ = ["StartScales"]


class StartScales:
    """Mixed into :class:`~pymc_kernel_steps.steps.base.KernelStep`: how a chain starts."""

    def _measure_start_scales(self, x: np.ndarray, value: float) -> int:
        """Measure each coordinate's conditional scale at the chain's start from second
        differences of the log density (:func:`~pymc_kernel_steps.core.conditional_scales`), so
        that the first moves suit a posterior whose coordinates differ in scale by orders of
        magnitude, or that is a thin ridge; returns the evaluations spent. Skipped (none spent)
        for a noisy log density, whose differences would measure its noise, and after a warm
        start, whose history already gives the scales."""
        if not self._sizes_its_start():
            return 0
        found = self._scales_at(x, value)
        self.chain.start_scales = found.frame()
        self.chain.start_far_from_posterior = found.far_from_posterior
        self._on_start_scales()
        return found.evaluations

    def _scales_at(self, x: np.ndarray, value: float, record: bool = True):
        """:func:`~pymc_kernel_steps.core.conditional_scales` at ``x`` (log density ``value``);
        where the model fails (raises, or is +inf) the probe counts as outside. ``record``:
        whether the evaluations are the chain's (see :meth:`KernelStep._on_evaluation`)."""
        return conditional_scales(self._probe(record), x, value)

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

    def _start_chain(self, x: np.ndarray, value: float) -> tuple[np.ndarray, float, int]:
        """At a chain's first point ``x`` (log density ``value``, finite): measure the start's
        scales and, where the start lies far from the posterior and the step climbs
        (``climb=``), climb into the posterior's bulk (:func:`~pymc_kernel_steps.core.climb`) and
        measure the scales again there; returns the chain's start, its log density and the
        evaluations spent. The climb's evaluations are not the chain's: a surrogate that learns
        from the chain's evaluations (``KMCLite``'s regression) does not see them."""
        evaluations = self._measure_start_scales(x, value)
        if not (self.tune and self._climbs_from(self.chain.start_far_from_posterior)):
            return x, value, evaluations
        found = climb(self._probe(record=False), x, value)
        self.chain.climb_evaluations = found.evaluations
        evaluations += found.evaluations
        if not np.array_equal(found.point, x):
            x, value = found.point, found.value
            evaluations += self._measure_start_scales(x, value)
        return x, value, evaluations

    def _climbs_from(self, far_from_posterior: bool) -> bool:
        """Whether a tuning chain climbs from its start: ``climb=True``, a start measured far
        from the posterior, and not in compound sampling (where the rest of the model moves)."""
        return self.climb and far_from_posterior and not self.shared

    def _probe(self, record: bool):
        """The log density as a function of a point, NaN where the model fails (raises, or is
        +inf); ``record``: whether the evaluations are the chain's."""

        def probe(point: np.ndarray) -> float:
            try:
                return self._evaluate_logp(point, self._point_map_info, record=record)
            except LogDensityError:
                return math.nan

        return probe

    def _sizes_its_start(self) -> bool:
        """Whether a chain measures its start's scales (not for a noisy log density, whose
        differences would measure its noise, nor after a warm start)."""
        return not self.noisy_logp and getattr(self, "warm_history", None) is None

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
        if not (self._sizes_its_start() and math.isfinite(value)):
            return 1
        found = self._scales_at(x, value, record=False)
        evaluations = 1 + found.evaluations
        if not self._climbs_from(found.far_from_posterior):
            return evaluations
        climbed = climb(self._probe(record=False), x, value)
        evaluations += climbed.evaluations
        if not np.array_equal(climbed.point, x):
            evaluations += self._scales_at(climbed.point, climbed.value, record=False).evaluations
        return evaluations

    def _walker_turn(self) -> bool:
        """While the chain's walkers move (``walkers=``; :class:`~pymc_kernel_steps.core.
        TuningWalkers`), store the chain's state as the walker that moved and make the next one
        the chain's current state; returns whether the current state changed."""
        chain = self.chain
        if not (self.tune and chain.walker_iterations):
            return False
        if chain.walkers is None:
            end = chain.iteration + chain.walker_iterations
            chain.walkers = TuningWalkers.start(
                chain.current_point, chain.current_logp, self.walkers, end
            )
        elif chain.walkers.done:
            return False
        chain.current_point, chain.current_logp = chain.walkers.next_turn(
            chain.current_point, chain.current_logp, chain.iteration
        )
        return True

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
