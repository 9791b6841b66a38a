"""The constructor parameters every step shares, documented once.

A class docstring names them with a line ``<shared: name, name, ...>`` in its Parameters section;
:func:`with_shared_parameters` puts their text there (what ``help()`` and the documentation show).
"""

from __future__ import annotations

import re

__all__ = ["SHARED_PARAMETERS", "with_shared_parameters"]

SHARED_PARAMETERS = {
    "vars": """vars : list of variables, optional
    Continuous variables to sample (default: all continuous free variables of the model;
    ``pm.sample`` assigns discrete ones to PyMC's step methods).""",
    "adapt_after_tuning": """adapt_after_tuning : bool, default False
    Keep adapting through the draws with vanishing probability ``a_t = (1 + t/100)^(-1/2)``
    (the papers' diminishing adaptation). By default everything (the learned proposal, or
    the surrogate, step size and mass matrix) is frozen after tuning and the draws come from
    a fixed, exact Metropolis–Hastings kernel.""",
    "scouts": """scouts : int, default 4
    Random walks of 50 iterations each, run in turn from the initial point at the start of
    tuning; the chain goes on from the one at the highest log density, so that a start in
    the basin of a minor mode rarely decides where the chain spends its tuning. 1 turns
    them off; they are skipped when they would take more than a tenth of tuning (with the
    default, fewer than 2000 tuning iterations), for a noisy (pseudo-marginal) log density,
    and after a warm start (``history``, where a step has it).""",
    "model": """model : pymc.Model, optional
    The model (default: the one of the enclosing ``with`` block).""",
    "initial_point": """initial_point : dict, optional
    Values at which the variables outside the block are taken when compiling (default: the
    model's initial point).""",
    "compile_kwargs": """compile_kwargs : dict, optional
    Passed to :func:`pymc.pytensorf.compile` (for example ``{"mode": "CVM"}`` for a cheap
    Python ``Op``); those given to ``pm.sample`` do not reach a step you construct.""",
    "rng": """rng : int or numpy.random.Generator, optional
    Random state; ``pm.sample(random_seed=...)`` reseeds it for every chain.""",
    "blocked": """blocked : bool, default True
    Accepted for PyMC's interface; the step always updates its variables jointly.""",
}

_MARKER = re.compile(r"^(?P<indent>[ ]*)<shared: (?P<names>[a-z_, ]+)>$")


def with_shared_parameters(cls):
    """Class decorator: replace each ``<shared: ...>`` line of the docstring by the named
    parameters' documentation, indented as the line."""
    lines = []
    for line in cls.__doc__.split("\n"):
        match = _MARKER.match(line)
        if match is None:
            lines.append(line)
            continue
        indent = match["indent"]
        for name in (n.strip() for n in match["names"].split(",")):
            lines.extend(indent + text for text in SHARED_PARAMETERS[name].split("\n"))
    cls.__doc__ = "\n".join(lines)
    return cls
