"""A step's states read from what a user passes as a history: an array, or the posterior of a
previous run (transformed variables from their value variables or the model's transforms)."""

from __future__ import annotations

import numpy as np

__all__ = ["states_from"]


def states_from(step, history, parameter: str = "history", model=None) -> np.ndarray:
    """The states of ``history`` as an ``(n, dim)`` float array in the step's coordinates (a
    copy): an array of such rows, or an ArviZ ``DataTree``/``InferenceData`` whose
    ``posterior`` holds the step's variables (chains and draws pooled), or that posterior
    itself (``idata.posterior``). A transformed variable is read from its value variable
    (such as ``'sigma_log__'``, recorded with ``include_transformed=True``) when present,
    else computed from the constrained draws with ``model``'s transform."""
    posterior = getattr(history, "posterior", None)
    if posterior is None and hasattr(history, "data_vars"):  # idata.posterior itself
        posterior = history
    if posterior is not None:
        missing = [name for name, _ in step._var_shapes if name not in posterior]
        unconstrained = unconstrained_draws(step, posterior, missing, parameter, model)
        columns = []
        for name, shape in step._var_shapes:
            if name in unconstrained:
                values = unconstrained[name]
            else:
                values = np.asarray(posterior[name].values, dtype=float)
            size = int(np.prod(shape, dtype=int))
            if values.ndim < 2 or values.shape[2:] != shape:
                raise ValueError(
                    f"`{parameter}`: posterior variable {name!r} has shape {values.shape}; "
                    f"expected (chain, draw, *{shape})."
                )
            columns.append(values.reshape(-1, size))
        states = np.concatenate(columns, axis=1)
    else:
        try:
            states = np.array(history, dtype=float)
        except (TypeError, ValueError, NotImplementedError) as error:  # the last: a MultiTrace
            raise TypeError(
                f"`{parameter}` must be an ArviZ DataTree/InferenceData with a posterior "
                f"(the result of pm.sample), its posterior, or an (n, {step.dim}) array of "
                f"states, got {type(history).__name__}."
            ) from error
        if states.ndim != 2 or states.shape[1] != step.dim:
            raise ValueError(
                f"`{parameter}` must have shape (n, {step.dim}) (one state per row, in the "
                f"step's coordinates), got shape {states.shape}."
            )
    if not np.all(np.isfinite(states)):
        raise ValueError(f"`{parameter}` holds non-finite values.")
    return states


def unconstrained_draws(step, posterior, names, parameter, model) -> dict[str, np.ndarray]:
    """The draws of the value variables ``names`` (transformed, absent from ``posterior``:
    ``pm.sample`` records only the constrained variables by default), computed from the
    constrained draws with the model's transforms; ``(chain, draw, *shape)`` arrays."""
    if not names:
        return {}
    hint = (
        f"pass the DataTree of pm.sample(..., idata_kwargs={{'include_transformed': True}}) "
        f"or an (n, {step.dim}) array of states in the step's coordinates."
    )
    if model is None:
        raise ValueError(
            f"`{parameter}`: the posterior has no variable {names[0]!r}, which "
            f"{type(step).__name__} samples; {hint}"
        )
    import pytensor
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import explicit_graph_inputs

    values_to_rvs = {value.name: rv for value, rv in model.values_to_rvs.items()}
    graphs = []
    for name in names:
        rv = values_to_rvs.get(name)
        transform = None if rv is None else model.rvs_to_transforms.get(rv)
        if transform is None or rv.name not in posterior:
            raise ValueError(
                f"`{parameter}`: the posterior has neither the variable {name!r}, which "
                f"{type(step).__name__} samples, nor its constrained variable; {hint}"
            )
        graphs.append(transform.forward(rv, *rv.owner.inputs))
    # the transforms' inputs (bounds may depend on other variables) as functions of the
    # constrained draws of the model's free variables, which the posterior records
    placeholders = {rv: rv.type(name=rv.name) for rv in model.free_RVs}
    graphs = graph_replace(graphs, placeholders, strict=False)
    needed = set(explicit_graph_inputs(graphs))
    inputs = [p for p in placeholders.values() if p in needed]
    for placeholder in inputs:
        if placeholder.name not in posterior:
            raise ValueError(
                f"`{parameter}`: the posterior has no variable {placeholder.name!r}, which "
                f"the transforms of {names} need; {hint}"
            )
    fn = pytensor.function(inputs, graphs, mode="FAST_COMPILE", on_unused_input="ignore")
    draws = [np.asarray(posterior[p.name].values) for p in inputs]
    lead = np.asarray(posterior[values_to_rvs[names[0]].name].values).shape[:2]
    flat = [d.reshape(-1, *d.shape[2:]) for d in draws]
    n = int(np.prod(lead))
    results = [[] for _ in names]
    for i in range(n):
        outputs = fn(*[d[i].astype(p.dtype) for d, p in zip(flat, inputs, strict=True)])
        for out, value in zip(results, outputs, strict=True):
            out.append(np.asarray(value, dtype=float))
    return {
        name: np.stack(out).reshape(*lead, *out[0].shape)
        for name, out in zip(names, results, strict=True)
    }
