"""Chains on a Dask cluster: :func:`sample`, called like :func:`pymc.sample`, plus ``client=``
(and ``pooled_tuning=``, ``tuning_rounds=`` for chains that share their tuning).

Needs Dask's ``distributed`` (the optional extra: ``pip install "pymc-kernel-steps[distributed]"``);
the rest of the package never imports it.
"""

from __future__ import annotations

try:
    import distributed as _distributed  # noqa: F401 - only to check that it is installed
except ImportError as error:  # pragma: no cover - the test environment has it
    raise ImportError(
        "pymc_kernel_steps.distributed needs Dask's `distributed` package, which is not "
        f"installed ({error}). Install the optional extra: "
        'pip install "pymc-kernel-steps[distributed]" (or pip install distributed).'
    ) from error

from .sampling import ChainFailedError, sample

__all__ = ["ChainFailedError", "sample"]
