"""Any PyMC model as a black box: its likelihood compiled behind one counting ``Op``.

:func:`black_box` keeps the model's priors as PyMC distributions (cheap, and what a user writes in
PyMC around external code) and replaces everything else in the log density (every observed
variable's term and every potential) with one :class:`~pymc_kernel_steps_bench.targets.CountingLogp`
of the free variables' values: the likelihood a user would wrap around an external program.
Every sampler then sees the same posterior, pays one counted evaluation per likelihood call and,
by default, gets no gradient. With ``finite_differences=True`` the ``Op`` offers the gradient an
expert would give a smooth black box: central differences, ``2 d`` more counted evaluations per
gradient.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.model.fgraph import (
    ModelObservedRV,
    ModelPotential,
    fgraph_from_model,
    model_from_fgraph,
)
from pytensor.graph.basic import Apply
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.op import Op
from pytensor.graph.replace import graph_replace

from pymc_kernel_steps.steps._compile import pm_compile

from .targets.blackbox import CountingLogp

__all__ = ["FiniteDifferenceLogp", "black_box", "likelihood_function"]

#: the Potential that holds the black box in the model :func:`black_box` returns
LIKELIHOOD_NAME = "black_box_likelihood"


class _SplitLikelihood:
    """The compiled likelihood as a function of one flat vector of the free variables' values."""

    def __init__(self, function, shapes):
        self.function = function
        self.shapes = [tuple(s) for s in shapes]
        self.sizes = [int(np.prod(s, dtype=int)) for s in self.shapes]

    def __call__(self, x: np.ndarray) -> float:
        parts, start = [], 0
        for shape, size in zip(self.shapes, self.sizes, strict=True):
            parts.append(x[start : start + size].reshape(shape))
            start += size
        value = float(self.function(*parts))
        return value if not math.isnan(value) else -math.inf


def likelihood_function(model: pm.Model, *, mode=None) -> _SplitLikelihood:
    """The log likelihood of ``model`` (observed terms and potentials) as a Python function of
    the free variables' values (constrained, flattened and concatenated in ``model.free_RVs``
    order); a NaN is returned as ``-inf``."""
    free = list(model.free_RVs)
    terms = list(model.observed_RVs) + list(model.potentials)
    if not terms:
        raise ValueError("model: it has no observed variable or potential to make a likelihood of")
    loglik = model.logp(vars=terms, sum=True)
    inputs, replace = [], {}
    for rv in free:
        constrained = rv.type(name=rv.name)
        inputs.append(constrained)
        value = model.rvs_to_values[rv]
        transform = model.rvs_to_transforms.get(rv)
        replace[value] = (
            constrained if transform is None else transform.forward(constrained, *rv.owner.inputs)
        )
    loglik = graph_replace(loglik, replace, strict=False)
    # a transform's parameters may refer to other free variables: their values, not draws
    loglik = graph_replace(loglik, dict(zip(free, inputs, strict=True)), strict=False)
    # PyMC's compile turns a failed parameter check (sigma > 0) into -inf, as in model.logp;
    # without numba's fast-math flags, as the steps compile, so that a first run on a machine
    # (a fresh PyTensor cache) and later ones compute the same bits
    function = pm_compile(inputs, loglik, mode=mode, on_unused_input="ignore")
    rv_shapes = model.eval_rv_shapes()
    shapes = [rv_shapes[rv.name] for rv in free]
    return _SplitLikelihood(function, shapes)


def black_box(
    model: pm.Model, *, finite_differences: bool = False, cost: float = 0.0, sleep: bool = False
):
    """A twin of ``model`` whose likelihood is one counted black box.

    Parameters
    ----------
    model : pymc.Model
    finite_differences : bool
        Give the black box a central-difference gradient (for NUTS on a smooth black box), each
        costing ``2 d`` counted evaluations, ``d`` the number of scalar free values.
    cost : float
        Seconds added to every evaluation (busy wait), to emulate an expensive likelihood.
    sleep : bool
        Spend ``cost`` sleeping instead (see :class:`~.targets.CountingLogp`): a few cores then
        stand in for many workers of a cluster.

    Returns
    -------
    pymc.Model
        The same free variables, priors, transforms and deterministics; the likelihood is the
        potential ``black_box_likelihood``. Its counting ``Op`` is found with
        :func:`~pymc_kernel_steps_bench.targets.counting_ops`.
    """
    initial_values = model.rvs_to_initial_values
    chosen = {rv.name: value for rv, value in initial_values.items() if value is not None}
    model.rvs_to_initial_values = dict.fromkeys(initial_values)  # fgraph refuses initvals
    try:
        fgraph, _ = fgraph_from_model(model, inlined_views=True)
    finally:
        model.rvs_to_initial_values = initial_values
    kept = [
        out
        for out in fgraph.outputs
        if not isinstance(out.owner.op, ModelObservedRV | ModelPotential)
    ]
    twin = model_from_fgraph(FunctionGraph(outputs=kept, clone=False), mutate_fgraph=True)
    likelihood = likelihood_function(model)
    op_class = FiniteDifferenceLogp if finite_differences else CountingLogp
    op = op_class(likelihood, cost=cost, sleep=sleep, name=LIKELIHOOD_NAME)
    for name, value in chosen.items():
        twin.set_initval(twin[name], value)
    with twin:
        values = [pt.flatten(twin[rv.name]).astype("float64") for rv in model.free_RVs]
        pm.Potential(LIKELIHOOD_NAME, op(pt.concatenate(values)))
    return twin


class FiniteDifferenceLogp(CountingLogp):
    """A :class:`~.targets.CountingLogp` whose gradient is central differences.

    ``∂f/∂x_i ≈ (f(x + h_i e_i) − f(x − h_i e_i)) / (2 h_i)``, ``h_i = ε^{1/3} max(1, |x_i|)``
    (``ε`` the float64 machine epsilon: the step that balances truncation and rounding error);
    every evaluation is counted, so one gradient costs ``2 d``.
    """

    def __str__(self) -> str:
        return f"FiniteDifferenceLogp{{{self.name}}}"

    def pullback(self, inputs, outputs, cotangents):
        return [cotangents[0] * _FiniteDifferenceGradient(self)(inputs[0])]

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """Central-difference gradient at ``x`` (``2 d`` counted evaluations)."""
        x = np.asarray(x, dtype=float)
        step = np.cbrt(np.finfo(float).eps) * np.maximum(1.0, np.abs(x))
        grad = np.empty_like(x)
        for i in range(x.size):
            forward, backward = x.copy(), x.copy()
            forward[i] += step[i]
            backward[i] -= step[i]
            grad[i] = (self.evaluate(forward) - self.evaluate(backward)) / (2.0 * step[i])
        return grad


class _FiniteDifferenceGradient(Op):
    """The vector ``∇f(x)`` of a :class:`FiniteDifferenceLogp` ``f``."""

    __props__ = ("value_op",)  # applications to the same input merge: one gradient, not one a var

    def __init__(self, value_op: FiniteDifferenceLogp):
        self.value_op = value_op

    def make_node(self, x) -> Apply:
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [pt.vector(dtype="float64")])

    def perform(self, node, inputs, output_storage) -> None:
        output_storage[0][0] = self.value_op.gradient(inputs[0])


def _register_numba() -> None:
    """One ``objmode`` call per gradient under PyTensor's numba backend (no fall-back warning)."""
    import numba
    from pytensor.link.numba.dispatch import numba_funcify
    from pytensor.link.numba.dispatch.basic import numba_njit

    @numba_funcify.register(_FiniteDifferenceGradient)
    def _numba_funcify_fd_gradient(op, node=None, **kwargs):
        def call(x):
            return op.value_op.gradient(x)

        @numba_njit
        def fd_gradient(x):
            with numba.objmode(ret="float64[:]"):
                ret = call(x)
            return ret

        return fd_gradient


_register_numba()
