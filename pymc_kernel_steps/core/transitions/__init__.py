"""The samplers' transitions: functions of an explicit state, and the one Metropolis–Hastings
accept that every transition, the scouts and the HMC transition use."""

from .mh import accept

__all__ = ["accept"]
