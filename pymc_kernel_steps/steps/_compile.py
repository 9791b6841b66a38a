"""Compiling a step's log density: PyMC's compile without numba's fast-math flags, a hint for
failures the user's code causes, and the warning of a noisy log density in a compound step."""

from __future__ import annotations

from pathlib import Path

from pymc.pytensorf import compile as pm_compile_fastmath

__all__ = [
    "NOISY_OUTSIDE",
    "failure_hint",
    "pm_compile",
    "warn_if_noisy_outside_the_block",
]

#: warnings point at the user's line, the first outside the package
_PACKAGE_DIRECTORY = str(Path(__file__).resolve().parent.parent)

#: the warning of a step whose log density is noisy and that does not sample every variable
NOISY_OUTSIDE = (
    "the model's log density is a noisy estimate (a pseudo-marginal likelihood), and this step "
    "does not sample {}. In a compound step neither half is exact: each time another step "
    "moves those variables this step must re-estimate its current point, and the other steps "
    "draw a fresh estimate whenever they evaluate the model. {}"
)
#: the remedies: every continuous variable in one step, or no discrete variable at all
SAMPLE_EVERY_VARIABLE = (
    "Sample every variable with this one step (step=KMCLite() and so on, without variables)."
)
MARGINALISE_DISCRETE = (
    "This package's steps take continuous variables only, so with the discrete {} the run "
    "cannot be exact: sum them out of the model (marginalise) to sample it exactly."
)


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


def warn_if_noisy_outside_the_block(step_name: str, outside: dict) -> None:
    """Warn, at the construction of a step whose log density is noisy, if it does not sample
    every free variable of the model (``outside``: the others' value variables)."""
    import warnings

    from pymc.vartypes import discrete_types

    if not outside:
        return
    names = sorted(value.name for value in outside)
    discrete = sorted(value.name for value in outside if value.dtype in discrete_types)
    remedy = MARGINALISE_DISCRETE.format(discrete) if discrete else SAMPLE_EVERY_VARIABLE
    message = f"{step_name}: {NOISY_OUTSIDE.format(names, remedy)}"
    warnings.warn(message, UserWarning, skip_file_prefixes=(_PACKAGE_DIRECTORY,))
