"""Numeric core: kernels, score matching, proposals, integrators, adaptation, Bayesian
optimisation. Never imports PyMC."""

from .adaptation import (
    CoordinateScales,
    DualAveraging,
    JumpDistanceStepSize,
    RobbinsMonroScale,
    adaptation_probability,
)
from .bayesopt import (
    AnnealedUCB,
    GaussianProcessFit,
    SearchBox,
    WindowedTuner,
    default_hmc_box,
    exploration_probability,
    fit_gp,
    gp_predict,
    ucb_beta,
)
from .history import ChainHistory
from .hmc import (
    HamiltonianState,
    find_step_size,
    hmc_transition,
    leapfrog_with_logp,
    regularized_variance,
)
from .integrators import (
    finite_leapfrog,
    kinetic_energy,
    leapfrog,
    lite_leapfrog,
    regression_leapfrog,
)
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
from .regression import (
    PolynomialTrend,
    RegressionSurrogate,
    fit_quadratic_gaussian,
    fit_quartic_trend,
    informative_evaluations,
    select_regression_hyperparameters,
    select_trend,
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
from .scouting import Scouts
from .start_scales import StartScales, conditional_scales
from .whitening import Whitening

__all__ = [
    "AnnealedUCB",
    "ChainHistory",
    "CoordinateScales",
    "DualAveraging",
    "FiniteScoreEstimator",
    "GaussianKernel",
    "GaussianProcessFit",
    "HamiltonianState",
    "JumpDistanceStepSize",
    "Kernel",
    "LinearKernel",
    "LiteScoreEstimator",
    "MaternKernel",
    "RationalQuadraticKernel",
    "PolynomialTrend",
    "RegressionSurrogate",
    "RobbinsMonroScale",
    "Scouts",
    "SearchBox",
    "StartScales",
    "Whitening",
    "WindowedTuner",
    "adaptation_probability",
    "cholesky_or_nan",
    "ckam_nu0",
    "ckam_sampling_scale",
    "conditional_scales",
    "cycle_position",
    "default_hmc_box",
    "exploration_length",
    "exploration_probability",
    "find_step_size",
    "finite_leapfrog",
    "fit_gp",
    "gaussian_logpdf",
    "gaussian_random_walk",
    "gp_predict",
    "hmc_transition",
    "fit_quadratic_gaussian",
    "fit_quartic_trend",
    "informative_evaluations",
    "is_exploring",
    "kamh_covariance",
    "kamh_feature_covariance",
    "kamh_propose",
    "kinetic_energy",
    "leapfrog",
    "leapfrog_with_logp",
    "lite_leapfrog",
    "lite_linear_system",
    "median_lengthscale",
    "regression_leapfrog",
    "regularized_variance",
    "select_hyperparameters",
    "select_regression_hyperparameters",
    "select_trend",
    "smallest_scale",
    "ucb_beta",
]
