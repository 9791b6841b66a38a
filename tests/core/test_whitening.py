"""The whitening of a chain's history: a coordinate the history never left."""

import numpy as np
import pytest

from pymc_kernel_steps.core.whitening import Whitening, moved_coordinates


def _history_with_a_constant_coordinate():
    rng = np.random.default_rng(0)
    points = np.column_stack([rng.normal(size=52), np.full(52, 0.6), rng.normal(size=52)])
    assert points[:, 1].var() > 0  # the rounding error the whitening must not take for spread
    return points


def test_moved_coordinates_are_those_that_take_two_values():
    points = _history_with_a_constant_coordinate()
    np.testing.assert_array_equal(moved_coordinates(points), [True, False, True])
    np.testing.assert_array_equal(moved_coordinates(points[:1]), [False, False, False])


def test_a_coordinate_the_history_never_left_gets_the_fallback_variance():
    """On a Lotka-Volterra chain whose history stayed at one value of a parameter the rounding
    error (variance 1e-29) was taken for the spread: the whitened proposals reached 1e13 and the
    regression surrogate fitted there drove the step size to 1e-8."""
    points = _history_with_a_constant_coordinate()
    frame = Whitening.from_points(points, fallback_variance=[1.0, 0.25, 1.0])
    covariance = frame.chol @ frame.chol.T
    assert covariance[1, 1] == pytest.approx(0.25, rel=1e-9)
    assert covariance[0, 1] == covariance[1, 2] == 0.0
    np.testing.assert_allclose(np.diag(covariance)[[0, 2]], points[:, [0, 2]].var(0), rtol=1e-6)
