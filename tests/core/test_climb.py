"""The climb from a start far from the posterior (``core.climb``): where it ends, what it counts,
and what it does where the log density fails."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_kernel_steps.core import Climb, ascend, climb, climb_budget

CENTRE = np.array([100.0, -50.0, 20.0, 0.0, 7.0])
SCALES = np.array([1.0, 2.0, 0.5, 3.0, 1.0])


def gaussian(x):
    return -0.5 * float(np.sum(((np.asarray(x) - CENTRE) / SCALES) ** 2))


class Recorder:
    """A log density that records every point it is asked about."""

    def __init__(self, log_density):
        self.log_density = log_density
        self.points: list[np.ndarray] = []
        self.values: list[float] = []

    def __call__(self, x):
        value = self.log_density(x)
        self.points.append(np.array(x, dtype=float))
        self.values.append(value)
        return value


def test_budget_is_sixty_per_dimension_plus_one_and_at_most_600():
    assert climb_budget(1) == 120
    assert climb_budget(5) == 360
    assert climb_budget(9) == 600
    assert climb_budget(50) == 600


def test_a_far_start_climbs_into_the_band_d_over_2_below_the_peak():
    x0 = np.zeros(5)
    recorder = Recorder(gaussian)
    found = climb(recorder, x0, gaussian(x0))
    assert isinstance(found, Climb)
    # the peak (0) is found, and the chain starts where log π is typical of a draw: within d/2
    assert found.peak_value > -1e-3
    assert -2.5 <= found.value <= found.peak_value
    assert found.value == pytest.approx(gaussian(found.point))
    # it is the first point evaluated in that band
    first = next(i for i, v in enumerate(recorder.values) if v >= found.peak_value - 2.5)
    np.testing.assert_array_equal(found.point, recorder.points[first])
    # the count is exact (the start's value was given: not evaluated again) and in budget
    assert found.evaluations == len(recorder.values) <= climb_budget(5)


def test_a_start_in_the_band_stays_where_it_is():
    x0 = CENTRE + 0.5 * SCALES
    found = climb(gaussian, x0, gaussian(x0))
    np.testing.assert_array_equal(found.point, x0)
    assert found.value == gaussian(x0)
    assert found.peak_value >= found.value


def test_the_budget_is_never_exceeded():
    recorder = Recorder(gaussian)
    found = climb(recorder, np.zeros(5), gaussian(np.zeros(5)), max_evaluations=7)
    assert found.evaluations == len(recorder.values) <= 7
    assert found.value >= gaussian(np.zeros(5))


def test_ascend_counts_the_start_unless_its_value_is_given():
    recorder = Recorder(gaussian)
    ascent = ascend(recorder, np.zeros(5), 50)
    assert ascent.evaluations == len(recorder.values) <= 50
    np.testing.assert_array_equal(recorder.points[0], np.zeros(5))
    assert ascent.best_value == max(recorder.values)
    np.testing.assert_array_equal(ascent.best, recorder.points[int(np.argmax(recorder.values))])


def test_ascend_leaves_the_reserve_unspent():
    ascent = ascend(gaussian, np.zeros(5), 60, reserve=10)
    assert ascent.evaluations <= 50


def test_failures_count_as_outside_the_support():
    """A log density that raises, is NaN or −inf somewhere: the climb goes on inside."""

    def half_space(x):
        if x[0] < 0.5:
            raise FloatingPointError("outside")
        if x[1] > 30.0:
            return math.nan
        return gaussian(x)

    x0 = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
    found = climb(half_space, x0, half_space(x0))
    assert math.isfinite(found.value)
    assert found.point[0] >= 0.5 and found.point[1] <= 30.0
    assert found.value > half_space(x0) + 1000


def test_nothing_better_returns_the_start():
    def peak_at_start(x):
        return -float(np.sum(np.abs(x))) * 1e6 if np.any(x != 0) else 0.0

    x0 = np.zeros(3)
    found = climb(peak_at_start, x0, 0.0)
    np.testing.assert_array_equal(found.point, x0)
    assert found.value == found.peak_value == 0.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"x0": np.array([0.0, np.nan])}, "`x0`"),
        ({"x0": np.zeros(0)}, "`x0`"),
        ({"max_evaluations": 0}, "`max_evaluations`"),
        ({"max_evaluations": 2.5}, "`max_evaluations`"),
        ({"value0": math.nan}, "`value0`"),
        ({"value0": -math.inf}, "`value0`"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, message):
    arguments = {"x0": np.zeros(2), "value0": -1.0, "max_evaluations": 10, **kwargs}
    with pytest.raises(ValueError, match=message):
        climb(gaussian, **arguments)


def test_ascend_rejects_a_negative_reserve():
    with pytest.raises(ValueError, match="`reserve`"):
        ascend(gaussian, np.zeros(2), 10, reserve=-1)
