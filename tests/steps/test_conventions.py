"""PyMC's conventions as a user meets them: help(), signatures, unknown keywords, the stats that
reach the DataTree."""

from __future__ import annotations

import inspect
import pydoc
import re

import numpy as np
import pymc as pm
import pytest
from pymc.step_methods.compound import BlockedStep

import pymc_kernel_steps
from pymc_kernel_steps import CKAM, KMCLite
from pymc_kernel_steps.options import Cycles, FixedMoves, KAMProposal, Regression, Trajectory

from ..helpers import correlated_gaussian_model

#: every step class the package exports (a new one is covered as soon as it is in ``__all__``)
PUBLIC_STEPS = [
    obj
    for obj in (getattr(pymc_kernel_steps, name) for name in pymc_kernel_steps.__all__)
    if isinstance(obj, type) and issubclass(obj, BlockedStep)
]


def test_the_public_steps_are_found():
    names = {cls.__name__ for cls in PUBLIC_STEPS}
    assert {"KAMH", "AdaptiveMetropolis", "KMCLite", "KMCFinite", "CKAM"} <= names


QUIET = dict(progressbar=False, compute_convergence_checks=False)


@pytest.fixture(params=PUBLIC_STEPS, ids=lambda cls: cls.__name__)
def public_step(request):
    return request.param


def _documented_parameters(cls) -> set[str]:
    """Names in the numpydoc Parameters section of the class docstring."""
    doc = inspect.getdoc(cls)
    section = doc.split("Parameters\n----------\n", 1)[1]
    section = re.split(r"\n\n[A-Z][A-Za-z ]+\n-+\n", section, maxsplit=1)[0]
    names = set()
    for line in section.splitlines():
        if line and not line.startswith(" "):
            for name in line.split(" : ")[0].split(","):
                names.add(name.strip())
    return names


def test_signature_is_explicit_and_fully_documented(public_step):
    parameters = inspect.signature(public_step).parameters
    kinds = {p.kind for p in parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds
    assert inspect.Parameter.VAR_POSITIONAL not in kinds
    assert _documented_parameters(public_step) == set(parameters)


def test_help_shows_own_docs_not_pymcs(public_step):
    text = pydoc.render_doc(public_step, renderer=pydoc.plaintext)
    assert "Create the ArrayStepShared object" not in text
    header = text.split("Method resolution order")[0]  # the signature and the docstring
    assert "**kwargs" not in header
    for name in inspect.signature(public_step).parameters:
        # documented in the class docstring that help() shows ("a, b : float" lines too)
        assert re.search(rf"\|  ([a-z_0-9]+, )*{name}(, [a-z_0-9]+)* : ", header), name


def test_unknown_keyword_is_a_type_error_naming_the_class(public_step):
    with correlated_gaussian_model():
        with pytest.raises(TypeError, match=rf"^{public_step.__name__}\.__init__\(\).*'no_such'"):
            public_step(no_such=1)


@pytest.mark.parametrize(
    "options, flag",
    [
        (lambda: {"proposal": KAMProposal(whiten="no")}, "whiten"),
        (lambda: {"cycles": Cycles(mode_jumps="no")}, "mode_jumps"),
    ],
    ids=["whiten", "mode_jumps"],
)
def test_ckam_flags_must_be_bools(options, flag):
    with correlated_gaussian_model():
        with pytest.raises(TypeError, match=flag):
            CKAM(**options())


def test_what_the_datatree_shows():
    """`model_logp` arrives as `lp`; `tune` and `warning` are consumed by PyMC (what the docs
    say); KMC's `diverging` is there for ArviZ."""
    with correlated_gaussian_model():
        idata = pm.sample(step=KMCLite(), tune=200, draws=50, chains=1, random_seed=3, **QUIET)
    stats = set(idata.sample_stats.data_vars)
    assert "lp" in stats and "model_logp" not in stats
    assert "tune" not in stats and "warning" not in stats
    assert idata.sample_stats.diverging.dtype == np.bool_


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"rng": "abc"}, TypeError, r"`rng` must be None, a non-negative integer"),
        ({"rng": -1}, ValueError, r"`rng` must be None, a non-negative integer.*got -1"),
        ({"rng": 2.5}, TypeError, r"`rng` must be None.*got 2.5 of type float"),
        ({"rng": True}, TypeError, r"`rng` must be a seed, not a bool"),
        ({"compile_kwargs": "CVM"}, TypeError, r"`compile_kwargs` must be a dict.*'CVM'"),
        ({"model": "m"}, TypeError, r"`model` must be a pymc.Model.*'m' of type str"),
        ({"model": [1]}, TypeError, r"`model` must be a pymc.Model"),
        ({"initial_point": "x"}, TypeError, r"`initial_point` must be a dict.*\['x'\]"),
        ({"initial_point": {}}, ValueError, r"`initial_point` has no value for \['x'\]"),
        ({"vars": [5]}, TypeError, r"`vars` must be the model's free variables.*5 of type int"),
        ({"vars": "x"}, TypeError, r"`vars` must be the model's free variables.*'x' of type str"),
    ],
)
def test_bad_shared_parameters_name_themselves(public_step, kwargs, error, match):
    with correlated_gaussian_model():
        with pytest.raises(error, match=match):
            public_step(**kwargs)


def test_a_variable_listed_twice_is_named(public_step):
    """``[x, x, s]`` (a typo for ``[x, y, s]``?) was accepted, and ``pm.sample`` then failed
    inside the model's log density with an IndexError blamed on the model."""
    with pm.Model() as model:
        x = pm.Normal("x", size=2)
        s = pm.HalfNormal("s")
        with pytest.raises(ValueError, match=r"`vars` names \['x'\] more than once"):
            public_step([x, x, s])
        with pytest.raises(ValueError, match=r"`vars` names \['s_log__'\] more than once"):
            public_step([s, model.rvs_to_values[s]])
        with pytest.raises(ValueError, match=r"`vars`: The following variables are not"):
            public_step([pm.Normal.dist()])


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: KMCLite(surrogate=np.array(["regression"])), r"`surrogate` must be a"),
        (lambda: Regression(trend=["auto"]), r"`Regression.trend` must be one of"),
        (
            lambda: Trajectory(step_size_adaptation=np.array(["esjd", "esjd"])),
            r"`Trajectory.step_size_adaptation` must be one of",
        ),
        (lambda: Trajectory(tuning=("bayesopt",)), r"`Trajectory.tuning` must be one of"),
    ],
    ids=["surrogate", "trend", "step_size_adaptation", "tuning"],
)
def test_an_option_given_as_an_array_is_refused_by_name(build, match):
    with correlated_gaussian_model():
        with pytest.raises((TypeError, ValueError), match=match):
            build()


def test_good_seeds_are_accepted():
    with correlated_gaussian_model():
        for rng in (
            None, 0, np.int64(3), [1, 2], np.array([3, 4]), np.random.SeedSequence(1),
            np.random.PCG64(5), np.random.default_rng(2),
        ):  # fmt: skip
            KMCLite(rng=rng)
        KMCLite(compile_kwargs={})


@pytest.mark.parametrize("share", [1.5, -0.1, "0.2"])
def test_a_bad_random_walk_share_is_named_before_the_advice_on_moves(share):
    with correlated_gaussian_model():
        with pytest.raises((TypeError, ValueError), match=r"random_walk_probability` must"):
            KMCLite(moves=FixedMoves(random_walk_probability=share))


def test_an_op_that_stores_a_python_float_gets_a_hint():
    import pytensor.tensor as pt
    from pytensor.graph.op import Op

    from pymc_kernel_steps import LogDensityError

    class FloatLogLike(Op):
        itypes, otypes = [pt.dvector], [pt.dscalar]

        def perform(self, node, inputs, outputs):
            outputs[0][0] = -0.5 * float(inputs[0] @ inputs[0])  # a Python float: wrong

    with pm.Model():
        x = pm.Flat("x", shape=2)
        pm.Potential("loglik", FloatLogLike()(x))
        with pytest.raises(LogDensityError, match=r"np\.asarray\(value, dtype='float64'\)"):
            pm.sample(step=KMCLite(), tune=10, draws=10, chains=1, cores=1, **QUIET)
