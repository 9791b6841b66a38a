"""The counting black box: a Python log density wrapped as a PyTensor ``Op`` without a gradient.

Speed of a Python ``Op``
------------------------
Under PyTensor's default (numba) mode an ``Op`` without a numba implementation runs through
``numba.objmode`` via a generic fall-back that builds output storage around ``perform`` and warns.
:class:`CountingLogp` registers its own numba implementation: one ``objmode`` call of the log
density, no warning. Measured on a 8-d standard Gaussian callable (≈3 µs by itself) on the
development machine, per compiled-function call: generic fall-back ≈12 µs, this module's numba
implementation ≈9 µs, ``mode="CVM"`` ≈6 µs. The object-mode transition costs ≈3 µs more than
the CVM virtual machine: irrelevant next to a likelihood worth wrapping, but for the cheapest
targets pass ``compile_kwargs={"mode": "CVM"}`` to the step (or to ``pm.sample``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import grad_not_implemented
from pytensor.graph.basic import Apply, Variable
from pytensor.graph.op import Op
from pytensor.graph.traversal import ancestors

from pymc_kernel_steps._objmode import register_objmode

__all__ = ["CountingLogp", "NoisyCountingLogp", "counting_ops"]


class CountingLogp(Op):
    """A black-box PyTensor ``Op``: a Python log density of a float64 vector, calls counted.

    ``CountingLogp(f)(x)`` is a float64 scalar equal to ``f(x)``; its gradient is
    "not implemented", so ``pm.sample`` cannot assign NUTS and a gradient-based step refuses it.

    Parameters
    ----------
    logp_fn : callable
        ``logp_fn(x: np.ndarray) -> float`` for a 1-d float64 ``x``. Use a module-level function
        or a :func:`functools.partial` of one so that the ``Op`` pickles with plain ``pickle``.
    cost : float
        Artificial cost in seconds added to every call (default 0), to emulate an expensive
        likelihood: busy-waiting, or sleeping with ``sleep=True``.
    sleep : bool
        Spend ``cost`` in :func:`time.sleep` rather than busy-waiting: an evaluation that waits on
        something else (a remote simulator) and leaves the core free, so that a few cores can
        stand in for a cluster of workers (default False).
    name : str, optional
        Shown when the graph is printed.

    Attributes
    ----------
    n_calls : int
        Number of evaluations since construction or the last :meth:`reset`.
    seconds : float
        Wall-clock time spent inside the evaluations (including ``cost``).

    Notes
    -----
    The counter is an ordinary attribute of this object: it only counts calls made in the
    process that holds it. ``pm.sample(cores>1)`` pickles the step methods (and with them the
    compiled log density and this ``Op``) into worker processes, whose counts are lost; count with
    ``cores=1`` (chains then run sequentially in this process), or use the ``logp_evals`` sample
    stat of this package's steps.

    Two instances never compare equal (no ``__props__``), so PyTensor does not merge the
    applications of different black boxes to the same input.

    The ``Op`` has a numba implementation (one object-mode call of :meth:`evaluate`) and a Python
    ``perform`` for the other linkers (CVM, Python); see the module notes for their speeds.
    """

    def __init__(
        self,
        logp_fn: Callable[[np.ndarray], float],
        *,
        cost: float = 0.0,
        sleep: bool = False,
        name=None,
    ):
        if not callable(logp_fn):
            raise TypeError(f"logp_fn must be callable, got {type(logp_fn).__name__}")
        if not (cost >= 0.0 and math.isfinite(cost)):
            raise ValueError(f"cost must be a finite number of seconds >= 0, got {cost!r}")
        if not isinstance(sleep, bool):
            raise TypeError(f"sleep must be True or False, got {sleep!r}")
        self.logp_fn = logp_fn
        self.cost = float(cost)
        self.sleep = sleep
        self.name = name or getattr(logp_fn, "__name__", None) or type(logp_fn).__name__
        self.n_calls = 0
        self.seconds = 0.0

    def __str__(self) -> str:
        return f"CountingLogp{{{self.name}}}"

    def reset(self) -> None:
        """Set :attr:`n_calls` and :attr:`seconds` back to zero."""
        self.n_calls = 0
        self.seconds = 0.0

    def evaluate(self, x: np.ndarray) -> float:
        """Evaluate (and count) the log density at ``x`` in Python."""
        start = time.perf_counter()
        self.n_calls += 1
        value = float(self.logp_fn(x))
        self._spend_cost(start)
        self.seconds += time.perf_counter() - start
        return value

    def _spend_cost(self, start: float) -> None:
        """Wait until ``cost`` seconds have passed since ``start`` (sleeping or busy)."""
        deadline = start + self.cost
        if self.sleep:
            remaining = deadline - time.perf_counter()
            if remaining > 0.0:
                time.sleep(remaining)
            return
        while time.perf_counter() < deadline:
            pass

    def make_node(self, x) -> Apply:
        x = pt.as_tensor_variable(x)
        if x.type.ndim != 1:
            raise ValueError(f"{self} takes a vector, got a tensor of {x.type.ndim} dimensions")
        x = pt.cast(x, "float64") if x.type.dtype != "float64" else x
        return Apply(self, [x], [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage) -> None:
        output_storage[0][0] = np.asarray(self.evaluate(inputs[0]), dtype=np.float64)

    def pullback(self, inputs, outputs, cotangents):
        return [grad_not_implemented(self, 0, inputs[0], f"{self} is a black box")]


class NoisyCountingLogp(CountingLogp):
    """A counted black box of a vector ``x`` and a float64 noise array: ``f(x, noise)``.

    The building block of the pseudo-marginal and ABC targets: ``noise`` is drawn by PyTensor
    random variables in the log-density graph (a shared generator), the ``Op`` itself is a
    deterministic function of ``(x, noise)``. So a compiled log density gives a fresh estimate at
    every call, ``pymc.pytensorf.compile(..., return_updates=True)`` collects the generator's
    update and ``pymc.pytensorf.reseed_rngs`` makes runs reproducible, and tests can call the
    estimator with chosen noise.

    Parameters
    ----------
    logp_fn : callable
        ``logp_fn(x: np.ndarray, noise: np.ndarray) -> float``.
    cost, sleep, name
        As for :class:`CountingLogp`.
    """

    def __str__(self) -> str:
        return f"NoisyCountingLogp{{{self.name}}}"

    def evaluate(self, x: np.ndarray, noise: np.ndarray) -> float:  # type: ignore[override]
        """Evaluate (and count) the estimate at ``x`` with the given noise."""
        start = time.perf_counter()
        self.n_calls += 1
        value = float(self.logp_fn(x, noise))
        self._spend_cost(start)
        self.seconds += time.perf_counter() - start
        return value

    def make_node(self, x, noise) -> Apply:  # type: ignore[override]
        x = pt.as_tensor_variable(x)
        noise = pt.as_tensor_variable(noise)
        if x.type.ndim != 1:
            raise ValueError(f"{self} takes a vector, got a tensor of {x.type.ndim} dimensions")
        x = pt.cast(x, "float64") if x.type.dtype != "float64" else x
        noise = pt.cast(noise, "float64") if noise.type.dtype != "float64" else noise
        return Apply(self, [x, noise], [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage) -> None:
        output_storage[0][0] = np.asarray(self.evaluate(inputs[0], inputs[1]), dtype=np.float64)

    def pullback(self, inputs, outputs, cotangents):
        return [
            grad_not_implemented(self, 0, inputs[0], f"{self} is a black box"),
            grad_not_implemented(self, 1, inputs[1], f"{self} is a black box"),
        ]


# the counting ops' lean numba implementations (one ``objmode`` call each)
register_objmode(CountingLogp, lambda op: lambda x: np.asarray(op.evaluate(x), dtype=np.float64))
register_objmode(
    NoisyCountingLogp,
    lambda op: lambda x, noise: np.asarray(op.evaluate(x, noise), dtype=np.float64),
)


def counting_ops(model: pm.Model) -> list[CountingLogp]:
    """The counting ops (:class:`CountingLogp`, :class:`NoisyCountingLogp`) in ``model``'s logp."""
    outputs = [model.logp()]
    found: list[CountingLogp] = []
    for var in ancestors(outputs):
        if isinstance(var, Variable) and var.owner is not None:
            op = var.owner.op
            if isinstance(op, CountingLogp) and all(op is not f for f in found):
                found.append(op)
    return found


def _potential(name: str, logp_fn, x, black_box: bool, pt_logp, cost: float):
    """Add ``logp(x)`` as a potential: through a counting black box or a PyTensor expression."""
    if black_box:
        return pm.Potential(name, CountingLogp(logp_fn, cost=cost, name=name)(x))
    return pm.Potential(name, pt_logp(x))
