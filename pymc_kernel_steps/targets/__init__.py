"""Deprecated: the targets moved to :mod:`pymc_kernel_steps.bench.targets`.

Import from there; this package only re-exports the public names (and makes its old submodules,
``pymc_kernel_steps.targets.synthetic`` and the like, aliases of the new ones) and warns.
"""

import sys as _sys

from ..bench import targets as _targets
from ..bench._moved import warn_moved as _warn_moved
from ..bench.targets import *  # noqa: F403
from ..bench.targets import (
    blackbox,
    glass,
    lotka_volterra,
    pima,
    registry,
    skew_normal_abc,
    synthetic,
)

__all__ = list(_targets.__all__)

for _module in (blackbox, glass, lotka_volterra, pima, registry, skew_normal_abc, synthetic):
    _sys.modules.setdefault(f"{__name__}.{_module.__name__.rpartition('.')[2]}", _module)

_warn_moved(
    "pymc_kernel_steps.targets is deprecated: import from pymc_kernel_steps.bench.targets",
    __file__,
)
