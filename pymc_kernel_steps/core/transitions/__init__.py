"""The samplers' transitions: functions of an explicit state, and the one Metropolis–Hastings
accept that every transition, the scouts and the HMC transition use (:mod:`.kamh`: KAMH and
Adaptive Metropolis; :mod:`.kmc`: KMCLite and KMCFinite; :mod:`.ckam`: cyclical KAM)."""

from .mh import Decision, StepInfo, accept, decide

__all__ = ["Decision", "StepInfo", "accept", "decide"]
