"""What a step samples: its model, the initial point and the value variables of ``vars``, each
checked with an error that names the parameter (PyMC's own code would fail later, inside the
step, with an error about its internals or blaming the model)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pymc.model import Model, modelcontext
from pymc.util import get_value_vars_from_user_vars
from pymc.vartypes import discrete_types
from pytensor.graph.basic import Variable

__all__ = ["step_initial_point", "step_model", "step_value_vars"]


def step_model(model) -> Model:
    """``model``, or the model of the enclosing ``with`` block when it is None."""
    if model is not None and not isinstance(model, Model):
        raise TypeError(
            "`model` must be a pymc.Model (or None: the model of the enclosing `with` block), "
            f"got {model!r} of type {type(model).__name__}."
        )
    return modelcontext(model)


def step_initial_point(initial_point, model: Model) -> Mapping:
    """``initial_point``, or the model's when it is None: a mapping from the name of every value
    variable of the model to its value."""
    if initial_point is None:
        return model.initial_point()
    names = [v.name for v in model.value_vars]
    if not isinstance(initial_point, Mapping):
        raise TypeError(
            "`initial_point` must be a dict from the model's value variables' names "
            f"({names}) to their values, as model.initial_point() returns, got "
            f"{initial_point!r} of type {type(initial_point).__name__}."
        )
    missing = [name for name in names if name not in initial_point]
    if missing:
        raise ValueError(
            f"`initial_point` has no value for {missing}: it maps every value variable of the "
            f"model ({names}) to its value, as model.initial_point() returns."
        )
    return initial_point


def step_value_vars(step_name: str, vars, model: Model) -> list:
    """The value variables of ``vars`` (the model's continuous ones when it is None), each once
    and each continuous."""
    if vars is None:
        # as PyMC's own continuous samplers do: take the variables this step can sample and
        # leave the discrete ones to pm.sample, which assigns them to its own step methods
        value_vars = model.continuous_value_vars
        if not value_vars:
            discrete = ", ".join(f"{v.name!r} is discrete ({v.dtype})" for v in model.value_vars)
            raise ValueError(
                f"{step_name} samples continuous variables only, and the model has no "
                f"continuous free variables ({discrete}). Use pm.Metropolis or "
                "pm.CategoricalGibbsMetropolis for discrete ones."
            )
        return value_vars
    given = vars if isinstance(vars, Sequence) and not isinstance(vars, str) else [vars]
    for var in given:
        if not isinstance(var, Variable):
            raise TypeError(
                "`vars` must be the model's free variables (e.g. [x, sigma], as pm.Normal(...) "
                f"returns them) or None, got {var!r} of type {type(var).__name__}."
            )
    try:
        value_vars = get_value_vars_from_user_vars(list(given), model)
    except ValueError as error:
        raise ValueError(f"`vars`: {error}") from None
    names = [v.name for v in value_vars]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"`vars` names {repeated} more than once (a variable, or a variable and its value "
            "variable): list each variable once."
        )
    for var in value_vars:
        if var.dtype in discrete_types:
            raise ValueError(
                f"{step_name} samples continuous variables only, but variable {var.name!r} is "
                f"discrete ({var.dtype}). Assign it to another step method, e.g. pm.Metropolis "
                "or pm.CategoricalGibbsMetropolis."
            )
    return value_vars
