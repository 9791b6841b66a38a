"""PyMC step methods (the only package that imports PyMC)."""

from .ahmc import AdaptiveHMC
from .base import KernelStep, LogDensityError
from .ckam import CKAM, sampling_phase
from .kamh import KAMH, AdaptiveMetropolis
from .kmc_finite import KMCFinite
from .kmc_lite import KMCLite

__all__ = [
    "AdaptiveHMC",
    "CKAM",
    "KAMH",
    "AdaptiveMetropolis",
    "KMCFinite",
    "KMCLite",
    "KernelStep",
    "LogDensityError",
    "sampling_phase",
]
