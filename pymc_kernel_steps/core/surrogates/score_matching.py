"""The fitters of the score-matching surrogates (paper 002): the lite estimator in the span of
kernels centred on the states, and the finite estimator on random Fourier features."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..history import first_visits
from ..integrators import SurrogateTrajectory
from ..kernels import GaussianKernel, median_lengthscale
from ..score_matching import FiniteScoreEstimator, LiteScoreEstimator, select_hyperparameters
from .fitter import SurrogateFitter, TrainingData, require_positive_int

__all__ = ["FiniteScoreFitter", "KernelHyperparameters", "LiteScoreFitter"]

#: the cross-validation runs on at most this many distinct states
_SELECTION_POINTS = 500
#: fewer distinct states than this and the cross-validation runs on all of them, repeats included
_MIN_DISTINCT_STATES = 10
#: the lengthscales tried, in multiples of the median heuristic's
_LENGTHSCALE_FACTORS = np.array([1.0, 1.5, 2.0, 3.0])


@dataclass(frozen=True)
class KernelHyperparameters:
    """A Gaussian kernel's lengthscale ``ℓ`` and the regularization ``λ`` of a score-matching
    surrogate."""

    lengthscale: float
    regularization: float


@dataclass(frozen=True, kw_only=True)
class _ScoreFitter(SurrogateFitter):
    """Score matching on the training states: (ℓ, λ) by K-fold cross-validation of the held-out
    score-matching objective."""

    estimator: ClassVar[str]

    def _selection_options(self) -> dict:
        return {}

    def select(self, data: TrainingData, rng: np.random.Generator) -> KernelHyperparameters:
        """(ℓ, λ) by cross-validation (:func:`~..score_matching.select_hyperparameters`) on the
        distinct training states, at most 500 of them, over ``ℓ`` of 1, 1.5, 2 and 3 times their
        median heuristic and the estimator's default grid of ``λ``.

        Parameters
        ----------
        data : TrainingData
            Its ``states`` are used.
        rng : numpy.random.Generator
            Draws the sub-sample, the folds (and the finite estimator's features).

        Returns
        -------
        KernelHyperparameters
        """
        if self.lengthscale is not None and self.regularization is not None:
            return KernelHyperparameters(self.lengthscale, self.regularization)
        points = data.states
        regularizations = None if self.regularization is None else [self.regularization]
        # A rejection repeats a state, and a held-out repeat of a training state rewards
        # vanishing lengthscales: validate on distinct states, at most `_SELECTION_POINTS`.
        # (Folds of consecutive states avoid that too, but on an early, non-stationary history
        # they favour heavy regularisation: measured, see the samplers page of the documentation.)
        distinct = points[first_visits(points)]
        if len(distinct) > _SELECTION_POINTS:
            keep = np.sort(rng.choice(len(distinct), _SELECTION_POINTS, replace=False))
            distinct = distinct[keep]
        if len(distinct) < _MIN_DISTINCT_STATES:
            distinct = points
        if self.lengthscale is None:
            # Shorter than the typical distance between states (the median heuristic), the
            # surrogate fits the chain's near-repeats and its gradient needs tiny steps.
            lengthscales = median_lengthscale(distinct) * _LENGTHSCALE_FACTORS
        else:
            lengthscales = [self.lengthscale]
        lengthscale, regularization, _ = select_hyperparameters(
            distinct,
            estimator=self.estimator,
            lengthscales=lengthscales,
            regularizations=regularizations,
            rng=rng,
            **self._selection_options(),
        )
        return KernelHyperparameters(float(lengthscale), float(regularization))


@dataclass(frozen=True, kw_only=True)
class LiteScoreFitter(_ScoreFitter):
    """The lite score-matching surrogate ``f(u) = Σ_i α_i k(z_i, u)`` on the training states
    (:class:`~..score_matching.LiteScoreEstimator`, paper 002's Proposition 1).

    Parameters
    ----------
    lengthscale, regularization : float, optional
        Fixed instead of chosen by :meth:`select`.
    """

    estimator: ClassVar[str] = "lite"

    def fit(
        self, data: TrainingData, hyperparameters: KernelHyperparameters, rng: np.random.Generator
    ) -> SurrogateTrajectory:
        """The lite estimator fitted to ``data.states`` (``rng`` is not used).

        Parameters
        ----------
        data : TrainingData
        hyperparameters : KernelHyperparameters
        rng : numpy.random.Generator

        Returns
        -------
        LiteScoreEstimator
        """
        return LiteScoreEstimator(
            GaussianKernel(hyperparameters.lengthscale),
            regularization=hyperparameters.regularization,
        ).fit(data.states)


@dataclass(frozen=True, kw_only=True)
class FiniteScoreFitter(_ScoreFitter):
    """The finite score-matching surrogate ``f(u) = θᵀφ(u)`` on ``n_features`` random Fourier
    features (:class:`~..score_matching.FiniteScoreEstimator`, paper 002's Proposition 2),
    which takes new states online (``surrogate.update(u)``).

    Parameters
    ----------
    n_features : int, default 300
        The number ``m`` of random features.
    lengthscale, regularization : float, optional
        Fixed instead of chosen by :meth:`select`.
    """

    n_features: int = 300
    estimator: ClassVar[str] = "finite"
    updates_online: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive_int("n_features", self.n_features)

    def _selection_options(self) -> dict:
        return {"n_features": self.n_features}

    def fit(
        self, data: TrainingData, hyperparameters: KernelHyperparameters, rng: np.random.Generator
    ) -> SurrogateTrajectory:
        """The finite estimator fitted to ``data.states``, its features drawn from ``rng``.

        Parameters
        ----------
        data : TrainingData
        hyperparameters : KernelHyperparameters
        rng : numpy.random.Generator

        Returns
        -------
        FiniteScoreEstimator
        """
        return FiniteScoreEstimator(
            n_features=self.n_features,
            kernel=GaussianKernel(hyperparameters.lengthscale),
            regularization=hyperparameters.regularization,
            rng=rng,
        ).fit(data.states)
