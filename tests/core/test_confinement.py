"""Confinement: built from the training points as the KMC steps built their loose wall radius,
stiffness and abort radius before it existed; its online enlargement, potential and checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_kernel_steps.core import Confinement


def test_built_from_points_it_holds_the_previous_loose_values():
    """The values the KMC steps computed inline (``_kmc._fit`` and ``SurrogateHMC.abort_radius``)
    before the confinement was one object, to the last bit."""
    rng = np.random.default_rng(0)
    for dim, n in ((1, 5), (3, 40), (12, 300)):
        points = rng.standard_normal((n, dim)) * rng.uniform(0.1, 3.0, size=dim)
        inv_mass = rng.uniform(0.2, 2.0, size=dim)
        wall_radius = 2.0 * float(np.sqrt(np.max(np.sum(points**2, 1))))
        wall_stiffness = 1.0 / float(np.mean(inv_mass))
        abort_radius = max(2.0 * wall_radius, 10.0 * math.sqrt(dim))
        confinement = Confinement.around(points, inv_mass)
        assert confinement.radius == wall_radius
        assert confinement.stiffness == wall_stiffness
        assert confinement.abort_radius == abort_radius
        # KMCFinite's online update: the wall moves out to twice a farther point, never in
        far = 3.0 * points[np.argmax(np.sum(points**2, 1))]
        for u, radius in (
            (far, max(wall_radius, 2.0 * float(np.sqrt(far @ far)))),
            (0 * far, wall_radius),
        ):
            moved = confinement.enclosing(u)
            assert moved.radius == radius
            assert moved.stiffness == wall_stiffness
            assert moved.abort_radius == max(2.0 * radius, 10.0 * math.sqrt(dim))


def test_the_default_is_no_confinement():
    """As the move's loose defaults were: no wall (R = inf, k = 0), no abort ball."""
    none = Confinement()
    assert (none.radius, none.stiffness, none.abort_radius) == (math.inf, 0.0, math.inf)
    assert none.far_field_curvature == 0.0
    assert none.potential(np.full(3, 1e6)) == 0.0


def test_potential_and_far_field_curvature():
    wall = Confinement(2.0, 3.0, 8.0)
    assert wall.potential(np.array([1.0, 1.0])) == 0.0  # inside the wall
    assert wall.potential(np.array([0.0, 5.0])) == pytest.approx(0.5 * 3.0 * 3.0**2)
    assert wall.far_field_curvature == 3.0
    assert Confinement(math.inf, 3.0).far_field_curvature == 0.0


def test_it_is_frozen_and_checks_its_values():
    wall = Confinement(1.0, 1.0, 2.0)
    with pytest.raises(AttributeError):
        wall.radius = 3.0
    for kwargs, match in (
        ({"radius": 0.0}, "radius"),
        ({"radius": math.nan}, "radius"),
        ({"stiffness": -1.0}, "stiffness"),
        ({"stiffness": math.inf}, "stiffness"),
        ({"abort_radius": -1.0}, "abort_radius"),
    ):
        with pytest.raises(ValueError, match=match):
            Confinement(**kwargs)
    with pytest.raises(ValueError, match="points"):
        Confinement.around(np.zeros((0, 2)), np.ones(2))
