"""The warning of the modules that moved into :mod:`pymc_kernel_steps.bench` and stayed as
re-exports (``pymc_kernel_steps.comparison``, ``pymc_kernel_steps.targets``)."""

from __future__ import annotations

import importlib
import os
import warnings

__all__ = ["warn_moved"]


def warn_moved(message: str, module_file: str) -> None:
    """Warn with a DeprecationWarning attributed to the line that imports the moved module
    (``module_file``: its ``__file__``; frames of its folder and of the import machinery are
    passed over)."""
    warnings.warn(
        message,
        DeprecationWarning,
        skip_file_prefixes=(
            os.path.dirname(module_file),
            os.path.dirname(importlib.__file__),
            "<frozen importlib",
        ),
    )
