"""The fitter interface every surrogate of the KMC steps implements, and the data it learns
from."""

from __future__ import annotations

import dataclasses
import math
import numbers
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from ..integrators import SurrogateTrajectory
from ..whitening import Whitening

__all__ = ["Evaluations", "SurrogateFitter", "TrainingData"]


class Evaluations(NamedTuple):
    """Where the chain evaluated the log density, and the values there.

    Attributes
    ----------
    points : ndarray, shape (n, d)
        The evaluated points, in the model's coordinates.
    log_densities : ndarray, shape (n,)
        The log densities there (``-inf`` and NaN allowed: a fitter leaves them out).
    """

    points: np.ndarray
    log_densities: np.ndarray


@dataclass(frozen=True, eq=False)
class TrainingData:
    """What a fitter selects its hyper-parameters on and fits to.

    Attributes
    ----------
    states : ndarray, shape (n, d)
        The training states, in the surrogate's coordinates ``u = frame.whiten(x)``.
    frame : Whitening
        The surrogate's coordinates (:meth:`SurrogateFitter.frame`).
    evaluations : Evaluations or None
        The evaluations in the model's coordinates, for a fitter that
        :attr:`~SurrogateFitter.needs_evaluations`; None otherwise.
    """

    states: np.ndarray
    frame: Whitening
    evaluations: Evaluations | None = None


def _require_positive_or_none(name: str, value) -> None:
    if value is None:
        return
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a number, got {value!r} of type {type(value).__name__}.")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be a positive finite number or None, got {value!r}.")


def require_positive_int(name: str, value) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is a positive integer."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")


@dataclass(frozen=True, kw_only=True)
class SurrogateFitter(ABC):
    """How a surrogate log density is chosen and fitted: the interface of every surrogate.

    Parameters
    ----------
    lengthscale : float, optional
        A kernel lengthscale fixed instead of chosen by :meth:`select`.
    regularization : float, optional
        A regularization fixed instead of chosen by :meth:`select`.

    Attributes
    ----------
    needs_evaluations : bool
        Whether the surrogate learns from the evaluated log densities
        (:attr:`TrainingData.evaluations`), so that the chain must record them.
    needs_whitening : bool
        Whether the surrogate is defined in the frame it fits (:meth:`frame`), so that its
        coordinates cannot be the model's.
    far_field_curvature : float
        The curvature of the surrogate's log density far from the data, in its coordinates
        (0 for a surrogate that flattens out there).
    updates_online : bool
        Whether the fitted surrogate takes new states one at a time (``surrogate.update(u)``,
        exactly as a refit would), so that a chain updates it with every state instead of
        refitting it now and then.
    """

    lengthscale: float | None = None
    regularization: float | None = None

    needs_evaluations: ClassVar[bool] = False
    needs_whitening: ClassVar[bool] = False
    far_field_curvature: ClassVar[float] = 0.0
    updates_online: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _require_positive_or_none("lengthscale", self.lengthscale)
        _require_positive_or_none("regularization", self.regularization)

    def fixing(self, lengthscale: float | None, regularization: float | None) -> SurrogateFitter:
        """This fitter with ``lengthscale`` and ``regularization`` fixed (None: chosen)."""
        return dataclasses.replace(self, lengthscale=lengthscale, regularization=regularization)

    def frame(
        self,
        history_frame: Whitening,
        evaluations: Evaluations | None,
        rng: np.random.Generator,
    ) -> Whitening:
        """The surrogate's coordinates: by default the history's.

        Parameters
        ----------
        history_frame : Whitening
            The whitening of the chain's recent history.
        evaluations : Evaluations or None
            The chain's evaluations (when :attr:`needs_evaluations`).
        rng : numpy.random.Generator
            For a fitter that sub-samples the evaluations.

        Returns
        -------
        Whitening
        """
        return history_frame

    @abstractmethod
    def select(self, data: TrainingData, rng: np.random.Generator):
        """The surrogate's hyper-parameters, chosen by cross-validation on ``data`` (those fixed
        at construction are kept).

        Parameters
        ----------
        data : TrainingData
        rng : numpy.random.Generator
            Draws the folds and sub-samples.

        Returns
        -------
        KernelHyperparameters or RegressionHyperparameters
            With at least ``lengthscale`` and ``regularization``.
        """

    @abstractmethod
    def fit(
        self, data: TrainingData, hyperparameters, rng: np.random.Generator
    ) -> SurrogateTrajectory:
        """The surrogate fitted to ``data`` with ``hyperparameters`` (from :meth:`select`).

        Parameters
        ----------
        data : TrainingData
        hyperparameters : KernelHyperparameters or RegressionHyperparameters
        rng : numpy.random.Generator
            Draws sub-samples or random features.

        Returns
        -------
        SurrogateTrajectory
            The surrogate, in the coordinates of ``data.frame``; its ``gradient_spec()`` is what
            the compiled trajectory evaluates.
        """
