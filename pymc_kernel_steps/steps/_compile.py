"""PyMC's compile without numba's fast-math flags."""

from __future__ import annotations

from pymc.pytensorf import compile as pm_compile_fastmath

__all__ = ["failure_hint", "pm_compile"]


def pm_compile(*args, **kwargs):
    """:func:`pymc.pytensorf.compile` without numba's fast-math flags.

    PyTensor's numba backend compiles with ``reassoc`` and ``contract`` by default, and then a
    function compiled in a fresh process (an empty PyTensor cache) and the same function loaded
    from the cache by the next process round differently in the last bit (measured: a model's
    log density ``-0x1.fe2fb4cb2544cp+2`` against ``...544bp+2``); a Metropolis chain amplifies
    that into different draws, so the first run on a machine did not reproduce. Without those
    flags every process computes the same values (tested in a fresh cache directory against a
    filled one); PyTensor keys its cache by the flag, so these functions never share cached code
    with fast-math ones.
    """
    import pytensor

    with pytensor.config.change_flags(numba__fastmath=False):
        return pm_compile_fastmath(*args, **kwargs)


def failure_hint(error: Exception) -> str:
    """What to do about a failure of the compiled log density that a user's own code causes
    and whose message does not say how (appended to :class:`LogDensityError`'s message)."""
    if "unbox" in str(error):
        return (
            " (a custom Op's perform must store a NumPy array of its output's dtype, e.g. "
            "`outputs[0][0] = np.asarray(value, dtype='float64')`, not a Python float or a "
            "float32)"
        )
    return ""
