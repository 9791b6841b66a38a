r"""The surrogates of the KMC steps behind one fitter interface.

A *fitter* knows what a surrogate log density learns from and how it is chosen and fitted; the
steps hold one and never ask which surrogate it is:

* :attr:`~SurrogateFitter.needs_evaluations`: whether it learns from the log densities the chain
  evaluated (:class:`Evaluations`) besides the chain's states;
* :meth:`~SurrogateFitter.frame`: the coordinates the surrogate lives in, given the history's;
* :meth:`~SurrogateFitter.select`: its hyper-parameters, by cross-validation on
  :class:`TrainingData`;
* :meth:`~SurrogateFitter.fit`: the fitted surrogate, whose ``gradient_spec()`` the compiled
  trajectory evaluates;
* :attr:`~SurrogateFitter.far_field_curvature`: the curvature the surrogate keeps far from the
  data, which bounds the leapfrog's stable step size there.

One fitter per surrogate: :class:`RegressionFitter` (kernel ridge regression on the evaluated log
densities around a polynomial trend, :mod:`..regression`), :class:`LiteScoreFitter` and
:class:`FiniteScoreFitter` (score matching on the states, paper 002, :mod:`..score_matching`).
"""

from .fitter import Evaluations, SurrogateFitter, TrainingData
from .regression import RegressionFitter, RegressionHyperparameters
from .score_matching import FiniteScoreFitter, KernelHyperparameters, LiteScoreFitter

__all__ = [
    "Evaluations",
    "FiniteScoreFitter",
    "KernelHyperparameters",
    "LiteScoreFitter",
    "RegressionFitter",
    "RegressionHyperparameters",
    "SurrogateFitter",
    "TrainingData",
]
