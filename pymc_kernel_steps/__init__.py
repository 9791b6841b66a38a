"""Gradient-free kernel adaptive MCMC step methods for PyMC.

The top level is lazy (PEP 562): ``import pymc_kernel_steps`` or ``import
pymc_kernel_steps.core`` loads neither PyMC nor PyTensor; the step classes and
:func:`pseudo_marginal_potential`, which need them, are imported on first access
(``from pymc_kernel_steps import KMCLite`` works as before). The steps' option classes
(:mod:`pymc_kernel_steps.options`) are exported here too.
"""

import importlib as _importlib

from ._version import __version__

#: public name -> module (relative to this package) that defines it
_LAZY = {
    "AdaptiveHMC": ".steps",
    "CKAM": ".steps",
    "KAMH": ".steps",
    "AdaptiveMetropolis": ".steps",
    "KMCFinite": ".steps",
    "KMCLite": ".steps",
    "LogDensityError": ".steps",
    "sampling_phase": ".steps",
    "GaussianKernel": ".core",
    "LinearKernel": ".core",
    "MaternKernel": ".core",
    "RationalQuadraticKernel": ".core",
    "pseudo_marginal_potential": ".pseudo_marginal",
    "BayesianTuning": ".options",
    "Climb": ".options",
    "Cycles": ".options",
    "FiniteFeatures": ".options",
    "FixedMoves": ".options",
    "KAMProposal": ".options",
    "LearnedMixture": ".options",
    "Regression": ".options",
    "ScoreMatching": ".options",
    "Scouts": ".options",
    "Trajectory": ".options",
    "Walkers": ".options",
}

#: submodules the eager top level used to load, reachable as attributes as before
_SUBMODULES = ("core", "options", "pseudo_marginal", "steps")

__all__ = [
    "AdaptiveHMC",
    "AdaptiveMetropolis",
    "BayesianTuning",
    "CKAM",
    "Climb",
    "core",
    "Cycles",
    "FiniteFeatures",
    "FixedMoves",
    "GaussianKernel",
    "KAMH",
    "KAMProposal",
    "KMCFinite",
    "KMCLite",
    "LearnedMixture",
    "LinearKernel",
    "LogDensityError",
    "MaternKernel",
    "options",
    "pseudo_marginal_potential",
    "RationalQuadraticKernel",
    "Regression",
    "sampling_phase",
    "ScoreMatching",
    "Scouts",
    "Trajectory",
    "Walkers",
    "__version__",
]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name], __name__), name)
    elif name in _SUBMODULES:
        value = _importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
