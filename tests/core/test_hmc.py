"""HMC with a gradient: leapfrog, the exactness of the transition, the step-size search."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from pymc_kernel_steps.core.hmc import (
    HamiltonianState,
    find_step_size,
    hmc_transition,
    leapfrog_with_logp,
    regularized_variance,
)
from pymc_kernel_steps.core.integrators import kinetic_energy, leapfrog

from ..helpers import assert_moments

COV = np.array([[2.0, 0.8, 0.0], [0.8, 1.0, 0.3], [0.0, 0.3, 0.5]])
PRECISION = np.linalg.inv(COV)


def gaussian(q):
    return -0.5 * q @ PRECISION @ q, -PRECISION @ q


def banana(q, b=0.1):  # log π = −x²/200 − ½(y + b x² − 100 b)²
    x, y = q
    r = y + b * x**2 - 100 * b
    return -(x**2) / 200 - 0.5 * r**2, np.array([-x / 100 - r * 2 * b * x, -r])


def test_leapfrog_matches_the_reference_integrator_and_returns_logp():
    q0, p0 = np.array([3.0, 1.0]), np.array([0.7, -1.2])
    inv_mass = np.array([2.0, 0.5])
    end, p1, evaluations = leapfrog_with_logp(
        banana, HamiltonianState.at(banana, q0), p0, 0.05, 40, inv_mass
    )
    q_ref, p_ref = leapfrog(lambda q: banana(q)[1], q0, p0, 0.05, 40, inv_mass)
    np.testing.assert_allclose(end.position, q_ref, rtol=1e-12)
    np.testing.assert_allclose(p1, p_ref, rtol=1e-12)
    assert end.logp == banana(end.position)[0]
    np.testing.assert_array_equal(end.grad, banana(end.position)[1])
    assert evaluations == 40


def test_leapfrog_is_reversible_and_volume_preserving():
    inv_mass = np.array([2.0, 0.5])
    q0, p0 = np.array([3.0, 1.0]), np.array([0.7, -1.2])

    def flow(z):
        end, p, _ = leapfrog_with_logp(
            banana, HamiltonianState.at(banana, z[:2]), z[2:], 0.05, 100, inv_mass
        )
        return np.r_[end.position, p]

    z1 = flow(np.r_[q0, p0])
    assert np.abs(z1[:2] - q0).max() > 0.5  # it moved
    back = flow(np.r_[z1[:2], -z1[2:]])
    np.testing.assert_allclose(back[:2], q0, atol=1e-10)
    np.testing.assert_allclose(-back[2:], p0, atol=1e-10)
    # Jacobian of the map (q, p) -> (q', p') by central differences: determinant 1
    h = 1e-6
    z0 = np.r_[q0, p0]
    jacobian = np.empty((4, 4))
    for j in range(4):
        e = np.zeros(4)
        e[j] = h
        jacobian[:, j] = (flow(z0 + e) - flow(z0 - e)) / (2 * h)
    assert np.linalg.det(jacobian) == pytest.approx(1.0, abs=1e-6)


def test_non_finite_gradient_stops_the_trajectory():
    def cliff(q):
        return (-math.inf, np.full(1, np.nan)) if q[0] > 1 else (-0.5 * q[0] ** 2, -q)

    state = HamiltonianState.at(cliff, [0.0])
    end, _, evaluations = leapfrog_with_logp(cliff, state, np.array([3.0]), 0.2, 20, np.ones(1))
    assert end.logp == -math.inf and evaluations < 20


def test_transition_accepts_with_the_hamiltonian_difference():
    """Replaying the random numbers: L_r, the momentum and the uniform are drawn in the documented
    order, the log acceptance ratio is H(x, p) − H(x*, p*), and the reverse move from
    (x*, −p*) has the opposite ratio (detailed balance)."""
    rng = np.random.default_rng(0)
    inv_mass = np.array([1.5, 0.7])
    state = HamiltonianState.at(banana, [2.0, 0.5])
    accepted = 0
    for _ in range(30):
        replay = copy.deepcopy(rng)
        new, info = hmc_transition(rng, state, banana, 0.3, 8, inv_mass)
        n_steps = int(replay.integers(1, 9))
        momentum = replay.standard_normal(2) / np.sqrt(inv_mass)
        log_u = math.log(replay.uniform())
        assert n_steps == info["n_steps"]
        end, end_momentum, _ = leapfrog_with_logp(banana, state, momentum, 0.3, n_steps, inv_mass)
        np.testing.assert_array_equal(info["proposal"], end.position)
        log_ratio = (banana(end.position)[0] - kinetic_energy(end_momentum, inv_mass)) - (
            state.logp - kinetic_energy(momentum, inv_mass)
        )
        assert info["log_accept_ratio"] == pytest.approx(log_ratio, rel=1e-10, abs=1e-12)
        assert info["energy_error"] == pytest.approx(-log_ratio, rel=1e-10, abs=1e-12)
        assert info["accept_prob"] == pytest.approx(min(1.0, math.exp(log_ratio)))
        assert info["accepted"] == (log_u < log_ratio)
        expected = end.position if info["accepted"] else state.position
        np.testing.assert_array_equal(new.position, expected)
        jump = np.sum((end.position - state.position) ** 2 / inv_mass)
        assert info["esjd_term"] == pytest.approx(info["accept_prob"] * jump)
        back, back_momentum, _ = leapfrog_with_logp(
            banana, end, -end_momentum, 0.3, n_steps, inv_mass
        )
        np.testing.assert_allclose(back.position, state.position, atol=1e-9)
        reverse = (back.logp - kinetic_energy(back_momentum, inv_mass)) - (
            end.logp - kinetic_energy(end_momentum, inv_mass)
        )
        assert reverse == pytest.approx(-log_ratio, abs=1e-8)
        accepted += info["accepted"]
        state = new
    assert 0 < accepted < 30


def test_number_of_steps_is_uniform_on_one_to_L():
    rng = np.random.default_rng(1)
    state = HamiltonianState.at(gaussian, np.zeros(3))
    counts = np.zeros(6)
    for _ in range(3000):
        state, info = hmc_transition(rng, state, gaussian, 0.3, 5, np.ones(3))
        counts[info["n_steps"]] += 1
    assert counts[0] == 0
    expected = 3000 / 5
    assert np.all(np.abs(counts[1:] - expected) < 4 * math.sqrt(expected * 0.8))


def test_fixed_parameters_sample_the_gaussian():
    rng = np.random.default_rng(2)
    inv_mass = np.diag(COV).copy()
    state = HamiltonianState.at(gaussian, np.zeros(3))
    draws = np.empty((2, 5000, 3))
    for chain in range(2):
        for i in range(5000):
            state, _ = hmc_transition(rng, state, gaussian, 0.5, 6, inv_mass)
            draws[chain, i] = state.position
    assert_moments(draws, np.zeros(3), np.diag(COV))


def test_step_size_search_is_in_the_mass_matrix_metric():
    """On N(0, σ² I) with M⁻¹ = σ² I the search finds the same step size for every σ (the
    dynamics in whitened coordinates are the same), and with M⁻¹ = I it scales with σ."""

    def scaled(sigma):
        def logp_and_grad(q):
            return -0.5 * q @ q / sigma**2, -q / sigma**2

        return logp_and_grad

    start = np.array([0.3, -1.0, 0.5, 2.0])
    found = {}
    for sigma in (1.0, 100.0):
        fn = scaled(sigma)
        state = HamiltonianState.at(fn, sigma * start)
        whitened, _ = find_step_size(np.random.default_rng(3), state, fn, np.full(4, sigma**2))
        plain, evaluations = find_step_size(
            np.random.default_rng(3), state, fn, np.ones(4), initial=sigma
        )
        found[sigma] = (whitened, plain)
        assert evaluations > 5
    assert found[100.0][0] == pytest.approx(found[1.0][0], rel=1e-9)
    assert found[100.0][1] == pytest.approx(100 * found[1.0][1], rel=1e-9)
    # and at that step size one leapfrog step is accepted with probability around ½
    fn = scaled(1.0)
    rng = np.random.default_rng(4)
    step_size = found[1.0][0]
    probabilities = []
    for _ in range(200):
        state = HamiltonianState.at(fn, rng.standard_normal(4))
        _, info = hmc_transition(rng, state, fn, step_size, 1, np.ones(4))
        probabilities.append(info["accept_prob"])
    assert 0.25 < np.mean(probabilities) < 0.9


def test_regularized_variance():
    points = np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 1.0], [6.0, 1.0], [8.0, 1.0]])
    variance = regularized_variance(points)
    np.testing.assert_allclose(variance, [0.5 * 10.0 + 0.5e-3, 0.5e-3])


def test_explicit_momentum_trajectory_energy_error_and_reversal():
    """With explicit momenta and a non-unit mass: the trajectory is the reference leapfrog's,
    the log acceptance ratio H(x, p) − H(x*, p*) is reversed exactly by the move from
    (x*, −p*), and the energy error is second order in the step size."""
    rng = np.random.default_rng(5)
    inv_mass = np.array([2.0, 0.7, 0.4])

    def log_ratio(start, momentum, step_size, n_steps):
        end, end_momentum, _ = leapfrog_with_logp(
            gaussian, start, momentum, step_size, n_steps, inv_mass
        )
        ratio = (end.logp - kinetic_energy(end_momentum, inv_mass)) - (
            start.logp - kinetic_energy(momentum, inv_mass)
        )
        return end, end_momentum, ratio

    for _ in range(10):
        state = HamiltonianState.at(gaussian, rng.multivariate_normal(np.zeros(3), COV))
        momentum = rng.standard_normal(3) / np.sqrt(inv_mass)
        end, end_momentum, ratio = log_ratio(state, momentum, 0.2, 12)
        q_ref, p_ref = leapfrog(
            lambda q: gaussian(q)[1], state.position, momentum, 0.2, 12, inv_mass
        )
        np.testing.assert_allclose(end.position, q_ref, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(end_momentum, p_ref, rtol=1e-12, atol=1e-14)
        assert abs(ratio) > 1e-6  # a real energy error: the check below is not trivial
        back, back_momentum, reverse = log_ratio(end, -end_momentum, 0.2, 12)
        np.testing.assert_allclose(back.position, state.position, atol=1e-10)
        np.testing.assert_allclose(-back_momentum, momentum, atol=1e-10)
        assert reverse == pytest.approx(-ratio, abs=1e-9)
        # the same trajectory length with half the step size: a quarter of the energy error
        errors = [abs(log_ratio(state, momentum, 0.2 / k, 12 * k)[2]) for k in (4, 8)]
        assert errors[1] / errors[0] == pytest.approx(0.25, abs=0.08)
