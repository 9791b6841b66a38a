"""Gradient-free kernel adaptive MCMC step methods for PyMC."""

from . import core
from ._version import __version__
from .core import GaussianKernel, LinearKernel, MaternKernel, RationalQuadraticKernel
from .pseudo_marginal import pseudo_marginal_potential
from .steps import (
    CKAM,
    KAMH,
    AdaptiveHMC,
    AdaptiveMetropolis,
    KMCFinite,
    KMCLite,
    LogDensityError,
    sampling_phase,
)

__all__ = [
    "AdaptiveHMC",
    "CKAM",
    "KAMH",
    "AdaptiveMetropolis",
    "GaussianKernel",
    "KMCFinite",
    "KMCLite",
    "LinearKernel",
    "LogDensityError",
    "MaternKernel",
    "RationalQuadraticKernel",
    "__version__",
    "core",
    "pseudo_marginal_potential",
    "sampling_phase",
]
