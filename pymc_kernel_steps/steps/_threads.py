"""One BLAS thread inside the steps' transitions.

The numeric core's matrices are small (d × d, n × n with n ≤ a few hundred): multi-threaded BLAS
gains nothing there, and when PyMC runs chains in several processes (``cores > 1``) every process
would start as many BLAS threads as the machine has cores and oversubscribe it (see the
benchmarks page in the documentation).
One thread also makes floating-point results independent of the machine's load.
"""

from __future__ import annotations

import contextlib

__all__ = ["single_threaded_blas"]

_controller = None  # built lazily in each process (it is not picklable, and libraries load late)


def single_threaded_blas():
    """A context manager that limits the loaded BLAS libraries to one thread (cheap: ~10 µs)."""
    global _controller
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl comes with pymc
        return contextlib.nullcontext()
    if _controller is None:
        _controller = ThreadpoolController().select(user_api="blas")
    if all(lib.num_threads == 1 for lib in _controller.lib_controllers):
        return contextlib.nullcontext()
    return _controller.limit(limits=1)
