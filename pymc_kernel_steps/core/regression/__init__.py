r"""A surrogate log density fitted by regression to the log densities the chain has evaluated.

Score matching (:mod:`.score_matching`) fits a surrogate to the *locations* of the chain's states
and ignores the log density the sampler computed at every proposal. :class:`RegressionSurrogate`
fits those values instead (kernel ridge regression, beyond the papers), in coordinates ``u``
whitened by a Gaussian::

    f(u) = −½‖u‖² + c + Σ_i β_i k(z_i, u),    k(z, u) = exp(−½ Σ_j P_j (z_j − u_j)²).

The Gaussian term is the one whose log density is the least-squares quadratic through the
evaluations (:func:`fit_quadratic_gaussian`; ``KMCLite(surrogate="regression")`` whitens by it,
so that it is ``−½‖u‖²``). It sees, through rejected proposals too, the width of a direction
the chain has not explored yet, which the history's own Gaussian underestimates after a short
tuning. The kernel sum corrects it where there is data and
vanishes far from the centres ``z_i``, so trajectories beyond the region the chain has seen turn
back towards it (no spurious far modes). The kernel has one precision ``P_j = 1/ℓ_j²`` per
coordinate (automatic relevance determination, ``P_j = 0`` ignores coordinate ``j``):
:func:`select_regression_hyperparameters` chooses them, with the ridge ``λ``, by greedy search on
held-out squared error. A thin curved ridge such as the banana's lives in two coordinates of
eight; an isotropic kernel has to resolve it in all eight and fails.

The coefficients minimise ``(1/n) Σ_k (r_k − c − Σ_i β_i k(z_i, u_k))² + λ βᵀK_zz β`` with
``r_k = y_k + ½‖u_k‖²`` (subset of regressors, the centres a sub-sample of the data).

The Gaussian term ``−½‖u‖²`` is the quadratic case of a *trend* (:class:`PolynomialTrend`): a
proper quartic, the log density of a Gaussian in the features ``(u, u∘u)``
(:func:`fit_quartic_trend`), follows a bending log density (the banana's arms, skewed marginals)
beyond the kernel's centres; the residuals are then ``r_k = y_k − t(u_k)``.
:func:`select_trend` chooses between the two by held-out error.
"""

from .surrogate import (
    RegressionSurrogate,
    informative_evaluations,
    select_regression_hyperparameters,
)
from .trend import (
    TRENDS,
    PolynomialTrend,
    fit_quadratic_gaussian,
    fit_quartic_trend,
    quadratic_parameter_count,
    quartic_parameter_count,
    select_trend,
)

__all__ = [
    "TRENDS",
    "PolynomialTrend",
    "RegressionSurrogate",
    "fit_quadratic_gaussian",
    "fit_quartic_trend",
    "informative_evaluations",
    "quadratic_parameter_count",
    "quartic_parameter_count",
    "select_regression_hyperparameters",
    "select_trend",
]
