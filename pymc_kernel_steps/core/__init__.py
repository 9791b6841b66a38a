"""Numeric core: kernels, score matching, proposals, integrators, adaptation. Never imports PyMC."""

from .adaptation import DualAveraging, RobbinsMonroScale, adaptation_probability
from .history import ChainHistory
from .kernels import (
    GaussianKernel,
    Kernel,
    LinearKernel,
    MaternKernel,
    RationalQuadraticKernel,
    median_lengthscale,
)
from .proposals import gaussian_logpdf, kamh_covariance, kamh_feature_covariance, kamh_propose

__all__ = [
    "ChainHistory",
    "DualAveraging",
    "GaussianKernel",
    "Kernel",
    "LinearKernel",
    "MaternKernel",
    "RationalQuadraticKernel",
    "RobbinsMonroScale",
    "adaptation_probability",
    "gaussian_logpdf",
    "kamh_covariance",
    "kamh_feature_covariance",
    "kamh_propose",
    "median_lengthscale",
]
