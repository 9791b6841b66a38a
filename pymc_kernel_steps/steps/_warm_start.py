"""The warm start of the KMC steps (``history=``): the chains begin with an earlier run's states
and fit to them before their first iteration, with hyper-parameters chosen once per step."""

from __future__ import annotations

import copy

import numpy as np
from pymc.model import modelcontext

from ..core.history import generator_from_data
from ..core.transitions import kmc
from ._threads import single_threaded_blas

__all__ = ["WarmStart"]


class WarmStart:
    """The warm start of :class:`~pymc_kernel_steps.steps._kmc._KMC` (a base after
    ``KernelStep``, whose constructor the steps' signatures follow; it calls the step's
    ``_warm_states`` and ``_new_chain``, and the transition's
    :func:`~pymc_kernel_steps.core.transitions.kmc.warm_start`).

    Attributes
    ----------
    warm_history : ndarray, shape (n, d) or None
        The states of ``history=`` in the step's coordinates.
    warm_selection : KernelHyperparameters or RegressionHyperparameters or None
        The surrogate's hyper-parameters chosen once from them (:meth:`_warm_selection`).
    """

    #: the log densities of the warm states, for a surrogate fitted to evaluations (None: none)
    warm_log_densities = None

    def _init_warm_start(self, history, model) -> None:
        self.warm_history = (
            None if history is None else self._warm_states(history, modelcontext(model))
        )
        self.warm_selection = None
        if self.warm_history is not None:
            self.warm_selection = self._warm_selection()

    def _warm_data(self) -> tuple[np.ndarray, ...]:
        """What ``history=`` gave the step: the data the warm start is a function of."""
        return (self.warm_history,)

    def _warm_selection(self):
        """The surrogate's hyper-parameters (the chain's ``hyperparameters``) for the warm start,
        chosen once when the step is built: the warm start's fit, selection included, in a
        chain of its own, with random numbers from a generator seeded by the data of
        ``history=`` (:func:`~pymc_kernel_steps.core.history.generator_from_data`).

        Every chain then fits its surrogate with them instead of choosing them again by
        cross-validation, which cost each chain most of its time before the first iteration
        (72 trial fits for the default surrogate). They are a function of the given data
        alone: the same in every chain and every worker process (they travel with the pickled
        step), and with ``tune=0`` the kernel is still fixed from the first draw. None when
        the states are too few to fit (the chains then fall back on their own selection)."""
        own_rng, own_chain = self.rng, self.chain
        self.rng = generator_from_data(*self._warm_data())
        self.chain = self._new_chain()
        try:
            with single_threaded_blas():
                self._warm_start()
            if self.chain.surrogate is None:
                return None
            return copy.deepcopy(self.chain.hyperparameters)
        finally:
            self.rng, self.chain = own_rng, own_chain

    def _warm_start(self) -> None:
        """Begin the chain's history with the states of ``history=`` and fit the surrogate,
        the whitening, the mass matrix and the step size to them before the first iteration
        (no random-walk phase), with the hyper-parameters chosen once from them
        (:meth:`_warm_selection`). They depend on the given states and this chain's random
        numbers only, never on its draws: with ``tune=0`` the kernel is fixed from the start."""
        kmc.warm_start(
            self.rng,
            self.chain.transition,
            self.warm_history,
            log_densities=self.warm_log_densities,
            hyperparameters=self.warm_selection,
        )
