"""Numeric core: kernels, score matching, proposals, integrators, adaptation. Never imports PyMC."""

from .adaptation import (
    CoordinateScales,
    DualAveraging,
    JumpDistanceStepSize,
    RobbinsMonroScale,
    adaptation_probability,
)
from .history import ChainHistory
from .integrators import finite_leapfrog, kinetic_energy, leapfrog, lite_leapfrog
from .kernels import (
    GaussianKernel,
    Kernel,
    LinearKernel,
    MaternKernel,
    RationalQuadraticKernel,
    median_lengthscale,
)
from .proposals import (
    cholesky_or_nan,
    gaussian_logpdf,
    gaussian_random_walk,
    kamh_covariance,
    kamh_feature_covariance,
    kamh_propose,
    smallest_scale,
)
from .schedules import (
    ckam_nu0,
    ckam_sampling_scale,
    cycle_position,
    exploration_length,
    is_exploring,
)
from .score_matching import (
    FiniteScoreEstimator,
    LiteScoreEstimator,
    lite_linear_system,
    select_hyperparameters,
)
from .whitening import Whitening

__all__ = [
    "ChainHistory",
    "CoordinateScales",
    "DualAveraging",
    "FiniteScoreEstimator",
    "GaussianKernel",
    "JumpDistanceStepSize",
    "Kernel",
    "LinearKernel",
    "LiteScoreEstimator",
    "MaternKernel",
    "RationalQuadraticKernel",
    "RobbinsMonroScale",
    "Whitening",
    "adaptation_probability",
    "cholesky_or_nan",
    "ckam_nu0",
    "ckam_sampling_scale",
    "cycle_position",
    "exploration_length",
    "finite_leapfrog",
    "gaussian_logpdf",
    "gaussian_random_walk",
    "is_exploring",
    "kamh_covariance",
    "kamh_feature_covariance",
    "kamh_propose",
    "kinetic_energy",
    "leapfrog",
    "lite_leapfrog",
    "lite_linear_system",
    "median_lengthscale",
    "select_hyperparameters",
    "smallest_scale",
]
