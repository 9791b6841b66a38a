"""Cyclical schedules of cKAM (paper 004, Algorithm 2): phases of a cycle and the cosine scale.

Pure numpy. Positions in a cycle are 0-based: iteration ``t`` (1-based, as in the paper) sits at
position ``k = mod(t − 1, T_c)``. The first ``K = exploration_length(T_c, β)`` positions of a
cycle explore, the remaining ``T_c − K`` sample.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "ckam_nu0",
    "ckam_sampling_scale",
    "cycle_position",
    "exploration_length",
    "is_exploring",
]


def _check_fraction(beta: float) -> float:
    beta = float(beta)
    if not 0.0 < beta < 1.0:
        raise ValueError(f"`exploration_fraction` must lie in (0, 1), got {beta!r}.")
    return beta


def ckam_nu0(nu_exp, beta):
    """Initial scale ``ν₀ = 2 ν_exp / (cos(βπ) + 1)`` of the cosine schedule.

    Chosen so that the schedule :func:`ckam_sampling_scale` passes through the last exploration
    scale ``ν_exp`` at the phase change (position ``β T_c``): the sampling phase starts where
    the exploration ended.

    Parameters
    ----------
    nu_exp : float or array
        Scale ``ν`` at the end of the exploration phase (positive).
    beta : float
        Exploration fraction in (0, 1).

    Returns
    -------
    float or array
    """
    beta = _check_fraction(beta)
    return 2.0 * np.asarray(nu_exp, dtype=float) / (math.cos(beta * math.pi) + 1.0)


def ckam_sampling_scale(position, cycle_length: int, nu0):
    """Cosine scale ``ν = (ν₀ / 2)(cos(π k / T_c) + 1)`` at cycle position ``k = mod(t − 1, T_c)``.

    Parameters
    ----------
    position : int or array of int
        Position ``k`` in the cycle (0-based); taken modulo ``cycle_length``.
    cycle_length : int
        ``T_c``.
    nu0 : float
        Initial scale ``ν₀`` (see :func:`ckam_nu0`).

    Returns
    -------
    float or array
        Decreases from ``ν₀`` at ``k = 0`` towards 0 at the end of the cycle.
    """
    if cycle_length < 1:
        raise ValueError(f"`cycle_length` must be at least 1, got {cycle_length!r}.")
    k = np.mod(np.asarray(position), cycle_length)
    value = 0.5 * np.asarray(nu0, dtype=float) * (np.cos(np.pi * k / cycle_length) + 1.0)
    return float(value) if np.ndim(value) == 0 else value


def exploration_length(cycle_length: int, beta: float) -> int:
    """Number ``K = ceil(β T_c)`` of exploration iterations at the start of each cycle."""
    beta = _check_fraction(beta)
    if cycle_length < 2:
        raise ValueError(f"`cycle_length` must be at least 2, got {cycle_length!r}.")
    return min(max(math.ceil(beta * cycle_length - 1e-9), 1), cycle_length - 1)


def cycle_position(iteration, cycle_length: int):
    """``(cycle, position)`` of the 0-based ``iteration`` (``t − 1`` in the paper)."""
    return np.divmod(iteration, cycle_length)


def is_exploring(iteration, cycle_length: int, beta: float):
    """Whether the 0-based ``iteration`` falls in an exploration phase."""
    _, k = cycle_position(iteration, cycle_length)
    return k < exploration_length(cycle_length, beta)
