"""PyMC step methods (the only package that imports PyMC)."""

from ._kmc import KMCChain
from ._state import ChainState
from .ahmc import AdaptiveHMC, AdaptiveHMCChain
from .base import KernelStep, LogDensityError
from .ckam import CKAM, CKAMChain, sampling_phase
from .kamh import KAMH, AdaptiveMetropolis, KAMHChain
from .kmc_finite import KMCFinite
from .kmc_lite import KMCLite

__all__ = [
    "AdaptiveHMC",
    "AdaptiveHMCChain",
    "CKAM",
    "CKAMChain",
    "ChainState",
    "KAMH",
    "KAMHChain",
    "AdaptiveMetropolis",
    "KMCChain",
    "KMCFinite",
    "KMCLite",
    "KernelStep",
    "LogDensityError",
    "sampling_phase",
]
