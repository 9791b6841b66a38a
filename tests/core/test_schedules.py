"""The cKAM cosine schedule (paper 004, Algorithm 2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_kernel_steps.core.schedules import (
    ckam_nu0,
    ckam_sampling_scale,
    cycle_position,
    exploration_length,
    is_exploring,
)


def test_nu0_formula():
    assert ckam_nu0(1.0, 0.5) == pytest.approx(2.0)  # cos(π/2) = 0
    assert ckam_nu0(0.3, 0.4) == pytest.approx(0.6 / (math.cos(0.4 * math.pi) + 1))
    np.testing.assert_allclose(
        ckam_nu0(np.array([1.0, 2.0]), 0.25), np.array([2.0, 4.0]) / (math.cos(0.25 * math.pi) + 1)
    )


def test_sampling_scale_matches_formula_over_a_cycle():
    T, nu0 = 250, 1.7
    k = np.arange(3 * T)  # three cycles: the schedule repeats
    expected = nu0 / 2 * (np.cos(np.pi * np.mod(k, T) / T) + 1)
    np.testing.assert_allclose(ckam_sampling_scale(k, T, nu0), expected, rtol=1e-14)
    assert ckam_sampling_scale(0, T, nu0) == pytest.approx(nu0)
    assert ckam_sampling_scale(T, T, nu0) == pytest.approx(nu0)
    values = ckam_sampling_scale(np.arange(T), T, nu0)
    assert np.all(np.diff(values) < 0) and values[-1] < 1e-3 * nu0


@pytest.mark.parametrize("beta", [0.1, 0.4, 0.5, 0.75])
def test_nu0_continuity_at_the_phase_change(beta):
    """The cosine schedule passes through ν_exp at position β T_c."""
    nu_exp, T = 0.83, 1000
    nu0 = ckam_nu0(nu_exp, beta)
    assert ckam_sampling_scale(round(beta * T), T, nu0) == pytest.approx(nu_exp, rel=1e-12)


def test_phases():
    assert exploration_length(1000, 0.4) == 400
    assert exploration_length(101, 0.4) == 41
    assert exploration_length(10, 0.99) == 9  # at least one sampling iteration
    flags = is_exploring(np.arange(2000), 1000, 0.4)
    assert flags[:400].all() and not flags[400:1000].any() and flags[1000:1400].all()
    cycle, position = cycle_position(np.array([0, 999, 1000, 2501]), 1000)
    np.testing.assert_array_equal(cycle, [0, 0, 1, 2])
    np.testing.assert_array_equal(position, [0, 999, 0, 501])


@pytest.mark.parametrize("beta", [0.0, 1.0, -0.2, 1.5])
def test_bad_fraction_raises(beta):
    with pytest.raises(ValueError, match="exploration_fraction"):
        ckam_nu0(1.0, beta)
    with pytest.raises(ValueError, match="exploration_fraction"):
        exploration_length(100, beta)
