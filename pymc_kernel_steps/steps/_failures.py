"""A failure of the model's log density at a point a step proposed: the error users catch, and
which chain it happened in (for the message)."""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["LogDensityError", "sampling_chain_index"]


def sampling_chain_index() -> int | None:
    """The index of the chain PyMC is sampling, read from its sampling loop's frame (best
    effort, for error messages: PyMC does not tell a step which chain it runs)."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("pymc.sampling"):
            owner = frame.f_locals.get("self")
            for candidate in (frame.f_locals.get("chain"), getattr(owner, "chain", None)):
                if isinstance(candidate, int | np.integer) and not isinstance(candidate, bool):
                    return int(candidate)
        frame = frame.f_back
    return None


class LogDensityError(RuntimeError):
    """The model's log density failed (raised, or returned +inf) at a point a step proposed."""
