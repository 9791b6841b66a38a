r"""Score-matching surrogates of a log density (Strathmann et al. 2015, paper 002).

Two estimators of an unnormalised log density ``f ≈ log π`` fitted to samples by minimising the
empirical score-matching objective

.. math::

    J(f) = \frac{1}{n} \sum_j \sum_l
    \Big[\partial_l^2 f(x_j) + \tfrac12 (\partial_l f(x_j))^2\Big],

which needs neither π nor its gradient (Hyvärinen 2005):

* :class:`LiteScoreEstimator` — ``f(x) = Σ_i α_i k(z_i, x)`` in the span of Gaussian kernels
  centred on the data (Proposition 1; O(n³) fit, O(n d) gradient; gradients vanish away from the
  data, so trajectories fall back to a random walk there).
* :class:`FiniteScoreEstimator` — ``f(x) = θᵀφ(x)`` with ``m`` random Fourier features
  (Proposition 2; O(n d m² + m³) fit, exact O(d m²) online update per new point).

:func:`select_hyperparameters` chooses the kernel lengthscale ``ℓ`` and the regulariser ``λ`` by
K-fold cross-validation of the held-out objective ``J``.

Conventions (``DESIGN.md``): ``k(x, y) = exp(−‖x − y‖² / (2ℓ²))``, ``σ = 2ℓ²``;
lite: ``α = −(σ/2)(C + λ(K + I))⁻¹ b``; finite: ``(Σ_i A(x_i) + λI) θ = Σ_i β(x_i)`` (sums).
"""

from .finite import FiniteScoreEstimator
from .lite import LiteScoreEstimator, lite_linear_system
from .selection import select_hyperparameters

__all__ = [
    "FiniteScoreEstimator",
    "LiteScoreEstimator",
    "lite_linear_system",
    "select_hyperparameters",
]
