"""The Metropolis–Hastings accept: the one place where a proposal is accepted or rejected."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["accept"]


def accept(rng: np.random.Generator, log_ratio: float) -> tuple[bool, float]:
    """Accept a proposal with probability ``min(1, exp(log_ratio))``.

    ``log_ratio`` is the log acceptance ratio (``log π(x*) − log π(x)`` plus the proposal's log
    correction); NaN counts as −inf (rejected). One uniform is drawn from ``rng`` on every call,
    whatever the ratio, so that the random stream does not depend on the outcome.

    Returns
    -------
    accepted : bool
    accept_prob : float
        ``min(1, exp(log_ratio))``, the acceptance probability (0 for NaN).
    """
    if math.isnan(log_ratio):
        log_ratio = -math.inf
    uniform = rng.uniform()
    accepted = (math.log(uniform) if uniform > 0.0 else -math.inf) < log_ratio
    return accepted, math.exp(min(0.0, log_ratio))
