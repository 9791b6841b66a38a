"""A PyMC model's prior as a map from the unit cube, and its likelihood beside it.

The nested samplers (nautilus, dynesty) take the prior as a map ``u ↦ x`` from the unit cube and the
likelihood apart; pocoMC takes a prior object (``logpdf``, ``rvs``, ``bounds``) and the likelihood.
:func:`unit_cube_prior` builds both from a PyMC model, in the model's unconstrained space (the space
PyMC's samplers and ``emcee`` work in), so every peer returns draws that
:func:`~pymc_kernel_steps_bench._util._unconstrained`'s ``to_posterior`` maps back to the model's
variables and deterministics.

Two constructions
-----------------
Inverse CDFs (``kind == "icdf"``)
    Where every free variable's prior has an inverse CDF in PyMC (``pm.icdf``: ``Normal``,
    ``HalfNormal``, ``HalfCauchy``, ``Gamma``, ``Beta``, ``LogNormal``, ...), the map applies
    them in the model's order, each with the parameters the variables before it took (a
    hierarchical prior is a chain of conditional inverse CDFs), then the variable's transform
    (``log``, ``interval``, ``ordered``): ``z = forward(F⁻¹(u))``. The likelihood is the model's
    log density minus its prior terms: for :func:`~pymc_kernel_steps_bench.blackbox.black_box`
    models, the counted black box itself. A transform that restricts the prior (``ordered``: an
    unordered draw has no image) maps such a ``u`` to NaN, and its likelihood is ``−∞`` without
    an evaluation: the prior restricted to the transform's support, as the model has it.
The proper stand-in (``kind == "standin"``)
    Where a prior is improper (``Flat``, ``HalfFlat``) or has no inverse CDF (``Dirichlet``,
    ``MvNormal``), the whole prior is replaced as
    :func:`~pymc_kernel_steps_bench.population.run_smc` replaces it for ``pm.sample_smc``:
    ``N(x0, s² I)`` in the unconstrained space, ``x0`` the model's initial point and ``s`` the
    harness's ``smc_prior_scale`` (10), with the model's log density minus that Gaussian as the
    likelihood: the same posterior under a prior the samplers can draw from.

Every likelihood call evaluates the model's log density once, so every
:class:`~pymc_kernel_steps_bench.targets.CountingLogp` in the model counts it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats

from ._util import _unconstrained

__all__ = ["STANDIN_PRIOR_SCALE", "UnitCubePrior", "unit_cube_prior"]

#: standard deviation of the stand-in prior (the harness's ``smc_prior_scale``)
STANDIN_PRIOR_SCALE = 10.0


@dataclass
class UnitCubePrior:
    """The prior of a PyMC model as a unit-cube map and a prior object, its likelihood beside it.

    Attributes
    ----------
    kind : str
        ``"icdf"`` (the model's own priors through their inverse CDFs) or ``"standin"`` (the
        Gaussian stand-in); see the module notes.
    dim : int
        Size of the unconstrained vector.
    x0 : numpy.ndarray
        The model's initial point, unconstrained.
    """

    kind: str
    dim: int
    x0: np.ndarray
    _transform: Any
    _log_prior: Any
    _log_likelihood: Any
    to_posterior: Any
    _info: Any
    scale: float = STANDIN_PRIOR_SCALE

    # ------------------------------------------------------------------ unit cube (nested)
    def transform(self, u: np.ndarray) -> np.ndarray:
        """The point ``z`` (unconstrained) of the unit-cube point ``u``, ``(dim,)`` or
        ``(n, dim)``; NaN where the model's transform has no image of the prior draw."""
        u = np.asarray(u, dtype=float)
        if u.ndim == 2:
            return np.stack([self.transform(row) for row in u]) if len(u) else u.copy()
        return np.asarray(self._transform(u), dtype=float)

    def log_likelihood(self, z: np.ndarray) -> float:
        """The log likelihood at ``z``: one evaluation of the model's log density (``−∞``
        without one where ``z`` is NaN)."""
        z = np.asarray(z, dtype=float)
        if not np.all(np.isfinite(z)):
            return -math.inf
        value = float(self._log_likelihood(z))
        return value if math.isfinite(value) or value == -math.inf else -math.inf

    # ------------------------------------------------------------------ prior object (pocoMC)
    def logpdf(self, z: np.ndarray) -> np.ndarray:
        """The prior's log density in the unconstrained space (Jacobian included), up to a
        constant, ``(n, dim) -> (n,)`` or ``(dim,) -> float``."""
        z = np.asarray(z, dtype=float)
        if z.ndim == 2:
            return np.array([self.logpdf(row) for row in z])
        value = float(self._log_prior(z))
        return value if not math.isnan(value) else -math.inf

    def rvs(self, size: int = 1, random_state=None) -> np.ndarray:
        """``size`` prior draws ``(size, dim)``, unconstrained (draws outside a restricting
        transform's support are drawn again); from numpy's global generator without
        ``random_state``, which pocoMC seeds."""
        if random_state is None:
            uniform = np.random.random_sample  # noqa: NPY002 - the stream pocoMC seeds
        else:
            uniform = np.random.default_rng(random_state).random
        kept, n = [], 0
        for _ in range(100):
            z = self.transform(uniform((max(int(size), 1), self.dim)))
            z = z[np.all(np.isfinite(z), axis=1)]
            kept.append(z)
            n += len(z)
            if n >= size:
                return np.concatenate(kept)[: int(size)]
        raise ValueError("prior: too few draws lie in the support of the model's transforms")

    def point(self, z: np.ndarray) -> dict[str, np.ndarray]:
        """``z`` as the model's point: ``{value variable name: value}``."""
        from pymc.blocking import DictToArrayBijection, RaveledVars

        return DictToArrayBijection.rmap(RaveledVars(np.asarray(z, dtype=float), self._info))

    @property
    def bounds(self) -> np.ndarray:
        """``(dim, 2)``: the unconstrained space is unbounded."""
        return np.tile([-np.inf, np.inf], (self.dim, 1))


def _flat_function(model, expression):
    """``expression`` (of the model's value variables) compiled as a function of one flat
    unconstrained vector, in :func:`~._util._unconstrained`'s order."""
    from pymc.blocking import DictToArrayBijection, RaveledVars

    point = model.initial_point()
    names = [v.name for v in model.value_vars]
    info = DictToArrayBijection.map({n: point[n] for n in names}).point_map_info
    fn = model.compile_fn(expression, inputs=model.value_vars, on_unused_input="ignore")

    def function(z):
        return fn(DictToArrayBijection.rmap(RaveledVars(np.asarray(z, dtype=float), info)))

    return function


def _has_improper_prior(model) -> bool:
    from .population import _has_improper_prior as improper

    return improper(model)


def _topological(model) -> list:
    """The model's free variables, each after every free variable its prior depends on."""
    from pytensor.graph.traversal import ancestors

    free = list(model.free_RVs)
    parents = {
        rv: {a for a in ancestors(rv.owner.inputs) if a in set(free) and a is not rv} for rv in free
    }
    order: list = []
    while len(order) < len(free):
        ready = [rv for rv in free if rv not in order and parents[rv] <= set(order)]
        if not ready:  # pragma: no cover - a model's graph has no cycle
            raise ValueError("model: its free variables depend on each other in a cycle")
        order.extend(ready)
    return order


def _icdf_map(model):
    """The compiled map ``u -> z`` through the priors' inverse CDFs (``u`` and ``z`` in the
    order of the model's value variables), or None where a prior has none (or is improper)."""
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.replace import graph_replace

    if _has_improper_prior(model):
        return None
    point = model.initial_point()
    rv_shapes = model.eval_rv_shapes()
    values_to_rvs = {value: rv for rv, value in model.rvs_to_values.items()}
    u = pt.vector("u", dtype="float64")
    start, parts = 0, {}
    for value_var in model.value_vars:  # u's slices in the order of the unconstrained vector
        rv = values_to_rvs[value_var]
        shape = np.shape(point[value_var.name])
        if shape != tuple(rv_shapes[rv.name]):  # a size-changing transform (simplex): no map
            return None
        size = int(np.prod(shape, dtype=int))
        parts[rv] = u[start : start + size].reshape(shape)
        start += size
    drawn, unconstrained = {}, {}
    for rv in _topological(model):  # every parent drawn before its children
        try:
            x = pm.icdf(rv, parts[rv])
        except NotImplementedError:
            return None
        x = graph_replace(x, drawn, strict=False) if drawn else x
        transform = model.rvs_to_transforms.get(rv)
        if transform is not None:
            inputs = [graph_replace(i, drawn, strict=False) for i in rv.owner.inputs]
            z = transform.forward(x, *inputs)
        else:
            z = x
        drawn[rv] = x
        unconstrained[rv] = pt.flatten(z)
    values = [unconstrained[values_to_rvs[v]] for v in model.value_vars]
    try:
        out = pt.concatenate(values) if len(values) > 1 else values[0]
        function = pytensor.function([u], out, on_unused_input="ignore")
        function(np.full(start, 0.5))
    except (NotImplementedError, TypeError, ValueError):
        return None
    return function


def unit_cube_prior(model, *, scale: float = STANDIN_PRIOR_SCALE) -> UnitCubePrior:
    """The prior of ``model`` as a unit-cube map and a prior object, with its likelihood.

    Parameters
    ----------
    model : pymc.Model
    scale : float
        Standard deviation of the stand-in prior ``N(x0, scale² I)`` used where a prior is
        improper or has no inverse CDF (see the module notes).

    Returns
    -------
    UnitCubePrior
    """
    from pymc.blocking import DictToArrayBijection

    x0, _, to_posterior = _unconstrained(model)
    dim = int(x0.size)
    start = model.initial_point()
    info = DictToArrayBijection.map({v.name: start[v.name] for v in model.value_vars})
    info = info.point_map_info
    full = _flat_function(model, model.logp())
    icdf = _icdf_map(model)
    if icdf is not None:
        prior = _flat_function(model, model.logp(vars=model.free_RVs, jacobian=True))
        terms = list(model.observed_RVs) + list(model.potentials)
        likelihood = _flat_function(model, model.logp(vars=terms)) if terms else (lambda z: 0.0)
        return UnitCubePrior("icdf", dim, x0, icdf, prior, likelihood, to_posterior, info, scale)

    def standin_transform(u):
        return x0 + scale * special.ndtri(u)

    def standin_log_prior(z):
        return float(np.sum(stats.norm.logpdf(z, loc=x0, scale=scale)))

    def standin_likelihood(z):
        return float(full(z)) - standin_log_prior(z)

    return UnitCubePrior(
        "standin",
        dim,
        x0,
        standin_transform,
        standin_log_prior,
        standin_likelihood,
        to_posterior,
        info,
        scale,
    )
