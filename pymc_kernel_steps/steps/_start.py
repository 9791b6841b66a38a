"""The start's scales: each coordinate's conditional scale at a chain's first point, the frame of
its first moves."""

from __future__ import annotations

import math

import numpy as np
from pymc.blocking import DictToArrayBijection

from ..core.moves import optimal_scale
from ..core.start_scales import conditional_scales
from ..core.whitening import Whitening

__all__ = ["StartScales"]


class StartScales:
    """Mixed into :class:`~pymc_kernel_steps.steps.base.KernelStep`: how a chain sizes its
    start."""

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
        from .base import LogDensityError

        def probe(point: np.ndarray) -> float:
            try:
                return self._evaluate_logp(point, self._point_map_info, record=record)
            except LogDensityError:
                return math.nan

        return conditional_scales(probe, x, value)

    def _sizes_its_start(self) -> bool:
        """Whether a chain measures its start's scales (not for a noisy log density, whose
        differences would measure its noise, nor after a warm start)."""
        return not self.noisy_logp and getattr(self, "warm_history", None) is None

    def start_evaluations(self, point: dict) -> int:
        """The evaluations a chain of this step spends at its first point ``point`` (a dict of
        the model's value variables, e.g. ``model.initial_point()``) before its first proposal:
        the start and its second differences. The procedure is deterministic, so this is the
        count the chain will report (for a benchmark that plans a budget of evaluations); it
        evaluates the model that many times."""
        x = DictToArrayBijection.map({v.name: point[v.name] for v in self.vars}).data
        x = np.asarray(x, dtype=float)
        value = float(self._logp_fn(x))
        if not (self._sizes_its_start() and math.isfinite(value)):
            return 1
        return 1 + self._scales_at(x, value, record=False).evaluations

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
