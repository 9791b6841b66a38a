"""The fitter of the regression surrogate: kernel ridge regression on the evaluated log densities
around a polynomial trend, in the frame of the Gaussian fitted to them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..regression import (
    TRENDS,
    PolynomialTrend,
    RegressionSurrogate,
    fit_quadratic_gaussian,
    informative_evaluations,
    quadratic_parameter_count,
    select_regression_hyperparameters,
    select_trend,
)
from ..whitening import Whitening
from .fitter import Evaluations, SurrogateFitter, TrainingData, require_positive_int

__all__ = ["RegressionFitter", "RegressionHyperparameters"]

#: the surrogate is fitted on at most this many evaluations per kernel centre
_EVALUATIONS_PER_CENTRE = 4
#: the ridge when the evaluations are too few to choose one
_DEFAULT_RIDGE = 1e-2
#: the precisions of the fitted Gaussian (the frame), relative to the history's
_PRECISION_RANGE = (1e-2, 1e2)
#: fewer informative evaluations than this and nothing is regressed on: the frame's Gaussian
_MIN_EVALUATIONS = 10


@dataclass(frozen=True, eq=False)
class RegressionHyperparameters:
    """The chosen kernel precisions, ridge and trend of a
    :class:`~..regression.RegressionSurrogate`.

    Attributes
    ----------
    precisions : ndarray, shape (d,)
        The kernel's per-coordinate ``P_j = 1/ℓ_j²`` (0 drops coordinate ``j``).
    regularization : float
        The ridge ``λ``.
    trend : PolynomialTrend or None
        The parametric part; None for ``−½‖u‖²`` (the evaluations were too few to choose one).
    """

    precisions: np.ndarray
    regularization: float
    trend: PolynomialTrend | None

    @property
    def lengthscale(self) -> float:
        """The shortest of the kernel's lengthscales, ``1/√max P_j`` (inf when every ``P_j`` is
        0)."""
        largest = float(self.precisions.max())
        return 1.0 / math.sqrt(largest) if largest > 0 else math.inf


@dataclass(frozen=True, kw_only=True)
class RegressionFitter(SurrogateFitter):
    r"""``f(u) = t(u) + c + Σ_i β_i k(z_i, u)`` fitted by kernel ridge regression to the
    informative evaluated log densities (:class:`~..regression.RegressionSurrogate`), in the
    frame of the Gaussian whose log density is their least-squares quadratic.

    Parameters
    ----------
    n_centres : int, default 500
        At most this many kernel centres; the surrogate is fitted on at most four times as many
        evaluations.
    trend : {"auto", "quartic", "quadratic"}, default "auto"
        The parametric part ``t`` (:func:`~..regression.select_trend`).
    lengthscale : float, optional
        Fixes an isotropic kernel of this lengthscale instead of per-coordinate ones chosen by
        :meth:`select`.
    regularization : float, optional
        Fixes the ridge ``λ``.
    """

    n_centres: int = 500
    trend: str = "auto"

    needs_evaluations: ClassVar[bool] = True
    needs_whitening: ClassVar[bool] = True
    #: the unit curvature of the Gaussian term ``−½‖u‖²``, which is all that acts far out
    far_field_curvature: ClassVar[float] = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive_int("n_centres", self.n_centres)
        if self.trend not in TRENDS:
            raise ValueError(f"`trend` must be one of {TRENDS}, got {self.trend!r}.")

    @property
    def max_evaluations(self) -> int:
        """The most evaluations a selection or a fit uses (a uniform sub-sample beyond)."""
        return _EVALUATIONS_PER_CENTRE * self.n_centres

    def _informative(
        self, evaluations: Evaluations | None, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """The informative evaluations (:func:`~..regression.informative_evaluations`), at most
        :attr:`max_evaluations`, in the model's coordinates."""
        if evaluations is None:
            raise ValueError("The regression surrogate is fitted to evaluations; none were given.")
        return informative_evaluations(
            evaluations.points, evaluations.log_densities, rng, self.max_evaluations
        )

    def _whitened(self, data: TrainingData, rng) -> tuple[np.ndarray, np.ndarray]:
        points, values = self._informative(data.evaluations, rng)
        return data.frame.whiten(points), values

    def frame(
        self,
        history_frame: Whitening,
        evaluations: Evaluations | None,
        rng: np.random.Generator,
    ) -> Whitening:
        """The frame of the Gaussian fitted to the informative evaluations
        (:func:`~..regression.fit_quadratic_gaussian` in the history's frame, precisions
        between 1/100 and 100 of the history's), so that the surrogate's Gaussian term is the
        log density's best quadratic rather than the history's Gaussian.

        The history's covariance after a short tuning can underestimate a direction many times
        over, and a Gaussian term that narrow is beyond what the kernel correction can widen.
        The evaluations, at rejected proposals too, see the log density's curvature there. With
        too few evaluations for the quadratic the history's frame is kept.

        Parameters
        ----------
        history_frame : Whitening
        evaluations : Evaluations
        rng : numpy.random.Generator
            Draws the sub-sample of the evaluations.

        Returns
        -------
        Whitening
        """
        points, values = self._informative(evaluations, rng)
        if len(points) < 2 * quadratic_parameter_count(history_frame.dim):
            return history_frame
        mean, covariance = fit_quadratic_gaussian(
            history_frame.whiten(points), values, *_PRECISION_RANGE
        )
        chol = history_frame.chol
        return Whitening.from_gaussian(history_frame.unwhiten(mean), chol @ covariance @ chol.T)

    def select(self, data: TrainingData, rng: np.random.Generator) -> RegressionHyperparameters:
        """The trend (:func:`~..regression.select_trend`), then the per-coordinate precisions
        and the ridge (:func:`~..regression.select_regression_hyperparameters`) by held-out
        squared error of the informative evaluations in ``data.frame``; with fewer than 10 of
        them the frame's Gaussian alone (precisions 0, or those of the fixed lengthscale).

        Parameters
        ----------
        data : TrainingData
            Its ``evaluations`` and ``frame`` are used.
        rng : numpy.random.Generator
            Draws the sub-sample of the evaluations, the splits and the trial centres.

        Returns
        -------
        RegressionHyperparameters
        """
        U, values = self._whitened(data, rng)
        grids = {}
        if self.lengthscale is not None:  # isotropic, as given
            grids["lengthscales"] = [self.lengthscale]
            grids["relevance_factors"] = ()
        if self.regularization is not None:
            grids["regularizations"] = [self.regularization]
        if len(U) < _MIN_EVALUATIONS:
            dim = data.states.shape[1]
            ell = self.lengthscale
            precisions = np.zeros(dim) if ell is None else np.full(dim, ell**-2.0)
            return RegressionHyperparameters(
                precisions, self.regularization or _DEFAULT_RIDGE, trend=None
            )
        trend = select_trend(U, values, rng, self.trend)
        precisions, regularization, _ = select_regression_hyperparameters(
            U, values, rng, trend=trend, **grids
        )
        return RegressionHyperparameters(precisions, regularization, trend)

    def fit(
        self,
        data: TrainingData,
        hyperparameters: RegressionHyperparameters,
        rng: np.random.Generator,
    ) -> RegressionSurrogate:
        """The regression surrogate fitted to the informative evaluations in ``data.frame``
        (to ``−½‖u‖²`` at ``data.states`` when fewer than two remain).

        Parameters
        ----------
        data : TrainingData
        hyperparameters : RegressionHyperparameters
        rng : numpy.random.Generator
            Draws the sub-sample of the evaluations and the kernel centres.

        Returns
        -------
        RegressionSurrogate
        """
        U, values = self._whitened(data, rng)
        surrogate = RegressionSurrogate(
            hyperparameters.precisions,
            hyperparameters.regularization,
            self.n_centres,
            rng,
            hyperparameters.trend,
        )
        if len(U) < 2:
            states = data.states
            return surrogate.fit(states, -0.5 * np.einsum("ij,ij->i", states, states))
        return surrogate.fit(U, values)
