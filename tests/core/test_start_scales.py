"""Conditional scales at a chain's start from second differences of the log density."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_kernel_steps.core import conditional_scales


class Counted:
    """A log density that counts its calls."""

    def __init__(self, log_density):
        self.log_density = log_density
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return self.log_density(x)


def test_gaussian_scales_spanning_twelve_orders_are_found_exactly():
    sd = np.array([1e-6, 1.0, 1e6])
    log_density = Counted(lambda x: -0.5 * float(np.sum((x / sd) ** 2)))
    x = np.array([3e-7, -0.5, 2e5])
    found = conditional_scales(log_density, x, log_density(x))
    np.testing.assert_allclose(found.scales, sd, rtol=1e-6)
    # the unit coordinate is found with the first difference, the others take a second one
    assert found.evaluations == log_density.calls - 1 == 2 + 4 + 4


def test_a_correlated_gaussian_gives_the_conditional_standard_deviations():
    covariance = np.array([[1.0, -0.999], [-0.999, 1.0]])
    precision = np.linalg.inv(covariance)
    log_density = lambda x: -0.5 * float(x @ precision @ x)  # noqa: E731
    x = np.array([0.3, 0.1])
    found = conditional_scales(log_density, x, log_density(x))
    np.testing.assert_allclose(found.scales, 1.0 / np.sqrt(np.diag(precision)), rtol=1e-8)


def test_a_probe_outside_the_support_shrinks_the_step():
    # log density of an Exponential(1) in x > 0, started at 0.05: x ± 1 leaves the support
    log_density = lambda x: -float(x[0]) - 0.5 * float(x[1]) ** 2 if x[0] > 0 else -math.inf  # noqa: E731
    x = np.array([0.05, 0.0])
    found = conditional_scales(log_density, x, log_density(x))
    assert math.isnan(found.scales[0])  # linear in x₀ where the probes are finite: no scale
    assert found.scales[1] == pytest.approx(1.0)
    assert found.relative_to(1.0)[0] == 1.0


def test_a_nan_probe_counts_as_outside_and_evaluations_are_counted():
    log_density = Counted(lambda x: math.nan if abs(x[0]) > 0.5 else -2.0 * float(x[0]) ** 2)
    found = conditional_scales(log_density, np.zeros(1), 0.0)
    assert found.scales[0] == pytest.approx(0.5)
    assert found.evaluations == log_density.calls


def test_the_frame_keeps_unit_scales_within_a_factor_hundred_and_measured_ones_beyond():
    sd = np.array([1e-6, 0.005, 0.05, 1.0, 80.0, 1e6])
    log_density = lambda x: -0.5 * float(np.sum((x / sd) ** 2))  # noqa: E731
    found = conditional_scales(log_density, np.zeros(6), 0.0)
    np.testing.assert_allclose(found.frame(), [1e-6, 0.005, 1.0, 1.0, 1.0, 1e6], rtol=1e-6)
    np.testing.assert_allclose(found.frame(tolerance=1.0), sd, rtol=1e-6)
    with pytest.raises(ValueError, match="tolerance"):
        found.frame(tolerance=0.5)


def test_the_slopes_are_central_differences_in_units_of_the_scale():
    sd = np.array([1e-6, 1.0, 1e6])
    log_density = lambda x: -0.5 * float(np.sum((x / sd) ** 2))  # noqa: E731
    x = np.array([3e-7, -0.5, 2e5])
    found = conditional_scales(log_density, x, log_density(x))
    np.testing.assert_allclose(found.slopes, -x / sd**2, rtol=1e-6)
    # for a Gaussian, |x_j − μ_j| / sd_j: the start's distance from the mode in sds
    np.testing.assert_allclose(found.standardized_slopes, np.abs(x) / sd, rtol=1e-6)
    assert not found.far_from_posterior


@pytest.mark.parametrize("offset, far", [(0.0, False), (4.0, False), (6.0, True), (1e4, True)])
def test_a_start_far_from_the_posterior_keeps_the_unit_frame(offset, far):
    """The conditional scales of a start in a transient describe the transient: beyond
    ``FAR_START_Z`` conditional sds from the mode the frame stays the unit one."""
    from pymc_kernel_steps.core.start_scales import FAR_START_Z

    assert 4.0 < FAR_START_Z < 6.0
    sd = np.array([1e-6, 1.0])
    log_density = lambda x: -0.5 * float(np.sum((x / sd) ** 2))  # noqa: E731
    x = np.array([0.0, offset])
    found = conditional_scales(log_density, x, log_density(x))
    np.testing.assert_allclose(found.scales, sd, rtol=1e-6)
    assert found.far_from_posterior is far
    np.testing.assert_allclose(found.frame(), [1.0, 1.0] if far else [1e-6, 1.0], rtol=1e-6)


def test_a_correlated_start_off_the_ridge_is_far():
    """A point off a thin ridge (correlation −0.999) by 0.1 in one coordinate lies 2.2 conditional
    sds from the conditional mode: near; by 1.0, 22: far."""
    covariance = np.array([[1.0, -0.999], [-0.999, 1.0]])
    precision = np.linalg.inv(covariance)
    log_density = lambda x: -0.5 * float(x @ precision @ x)  # noqa: E731
    for step, far in [(0.1, False), (1.0, True)]:
        x = np.array([step, 0.0])
        assert conditional_scales(log_density, x, log_density(x)).far_from_posterior is far


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="value"):
        conditional_scales(lambda x: 0.0, np.zeros(2), -math.inf)
    with pytest.raises(ValueError, match="first_step"):
        conditional_scales(lambda x: 0.0, np.zeros(2), 0.0, first_step=0.0)
    with pytest.raises(ValueError, match="max_rounds"):
        conditional_scales(lambda x: 0.0, np.zeros(2), 0.0, max_rounds=0)
