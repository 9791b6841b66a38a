"""Pooled tuning: a chain learns its proposal from other chains' tuning data as well as its own
(``pymc_kernel_steps.distributed.sample(pooled_tuning=True)``)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ._state import TuningData

__all__ = ["PooledTuning"]


class PooledTuning:
    """The steps' public hook for pooled tuning (mixed into
    :class:`~pymc_kernel_steps.steps.base.KernelStep`)."""

    #: whether the step learns from other chains' tuning data (:meth:`absorb_tuning_data`)
    pools_tuning_data: ClassVar[bool] = False

    def tuning_data(self) -> TuningData:
        """This chain's own data so far (never what it absorbed from other chains): the most
        recent half of its history and its recorded evaluations. Meant for the tuning phase,
        when pooled tuning calls it; called after draws, the history's recent half holds draws
        too."""
        history = self.chain.history
        points, values = self._own_evaluations()
        return TuningData(history.points[len(history) // 2 :].copy(), points, values)

    def absorb_tuning_data(self, others) -> None:
        """Learn the proposal from other chains' tuning data as well as this chain's own.

        From the next fit of the proposal on, the step learns from the union of its chain's
        data and ``others`` (a sequence of :class:`TuningData`), which replaces what an earlier
        call gave. Only while tuning: the kernel frozen at the end of tuning is a fixed
        Metropolis–Hastings kernel, so the draws stay exact.

        Raises
        ------
        TypeError
            The step does not pool tuning data (``pools_tuning_data`` is False).
        ValueError
            ``adapt_after_tuning=True`` (adaptation never ends, so neither would the other
            chains' influence), or the data's dimension is not the step's.
        RuntimeError
            Tuning is over.
        """
        name = type(self).__name__
        if not self.pools_tuning_data:
            raise TypeError(f"{name} does not learn from other chains' tuning data.")
        if self.adapt_after_tuning:
            raise ValueError(
                f"{name}(adapt_after_tuning=True) cannot pool tuning data: its adaptation, and "
                "with it the other chains' influence, never ends."
            )
        if not self.tune:
            raise RuntimeError(f"{name}: tuning is over; the frozen kernel takes no new data.")
        self.chain.pooled = TuningData.concatenate(others, self.dim)
        self._on_absorb()

    def _own_evaluations(self) -> tuple[np.ndarray, np.ndarray]:
        """The chain's evaluations recorded for a surrogate (none by default)."""
        return np.empty((0, self.dim)), np.empty(0)

    def _on_absorb(self) -> None:
        """Hook: other chains' tuning data arrived (e.g. schedule a refit)."""
