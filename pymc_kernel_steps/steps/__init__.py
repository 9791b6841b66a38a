"""PyMC step methods (the only package that imports PyMC)."""

from .base import KernelStep
from .kamh import KAMH, AdaptiveMetropolis

__all__ = ["KAMH", "AdaptiveMetropolis", "KernelStep"]
