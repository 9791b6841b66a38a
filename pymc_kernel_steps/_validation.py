"""Checks of constructor arguments that name the parameter in their error."""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np

__all__ = [
    "require_bool",
    "require_choice",
    "require_fraction",
    "require_int",
    "require_mapping",
    "require_positive",
    "require_real",
    "require_seed",
]


def require_int(name: str, value, minimum: int) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is an integer ≥ ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"`{name}` must be an integer ≥ {minimum}, got {value!r}.")


def require_bool(name: str, value) -> None:
    """Raise a TypeError naming ``name`` unless ``value`` is a bool."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"`{name}` must be True or False, got {value!r}.")


def require_real(name: str, value) -> None:
    """Raise a TypeError naming ``name`` unless ``value`` is a real number (not a bool, a
    string or an array), so that ``step_size="0.1"`` is told which parameter is wrong."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a number, got {value!r} of type {type(value).__name__}.")


def require_positive(name: str, value) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is a positive finite number (a
    TypeError if it is not a number)."""
    require_real(name, value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be a positive finite number, got {value!r}.")


def require_fraction(name: str, value, *, zero: bool = False) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` lies in (0, 1), or in [0, 1) with
    ``zero`` (a TypeError if it is not a number)."""
    require_real(name, value)
    if not (0 <= value < 1 if zero else 0 < value < 1):
        interval = "[0, 1)" if zero else "(0, 1)"
        raise ValueError(f"`{name}` must lie in {interval}, got {value!r}.")


def require_seed(name: str, value) -> None:
    """Raise a TypeError or ValueError naming ``name`` unless ``value`` seeds
    :func:`numpy.random.default_rng` (None, a non-negative integer or a sequence of them, a
    ``SeedSequence``, a ``BitGenerator`` or a ``Generator``: what PyMC's
    ``get_random_generator`` takes); a bool is refused."""
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"`{name}` must be a seed, not a bool, got {value!r}.")
    try:
        np.random.default_rng(value)
    except (TypeError, ValueError) as error:
        raise type(error)(
            f"`{name}` must be None, a non-negative integer (or a sequence of them), a numpy "
            f"SeedSequence, BitGenerator or Generator, got {value!r} of type "
            f"{type(value).__name__} ({error})."
        ) from None


def require_mapping(name: str, value) -> None:
    """Raise a TypeError naming ``name`` unless ``value`` is None or a mapping (of keyword
    arguments)."""
    if value is not None and not isinstance(value, Mapping):
        raise TypeError(
            f"`{name}` must be a dict of keyword arguments (or None), got {value!r} of type "
            f"{type(value).__name__}."
        )


def require_choice(name: str, value, choices: tuple) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is one of ``choices`` (strings, and
    None where it is one); an array or a list is refused, not compared element-wise."""
    if not (value is None or isinstance(value, str)) or value not in choices:
        raise ValueError(f"`{name}` must be one of {choices}, got {value!r}.")
