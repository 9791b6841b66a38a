"""The CKAM transition (``core.transitions.ckam``) without PyMC: the cycles of paper 004 (the
schedule, adaptation only in the exploration phase, a sampling proposal frozen at the phase
change), the proposals' Hastings corrections against brute force, the moments of chains on targets
with known answers (MCSE z-tests over independent chains), :func:`freeze` and unusable log
densities.

DESIGN.md (cKAM schedule, 004 Alg. 2): cycle length T_c, exploration fraction β; ν₀ = 2ν_exp /
(cos(βπ) + 1); sampling-phase scale ν_t = (ν₀/2)(cos(π · mod(t−1, T_c)/T_c) + 1); sampling proposal
N(x, ν_t² Σ) with Σ = (γ/ν_exp)² I + M H Mᵀ frozen at the phase change; the subsample comes from the
current cycle only.
"""

from __future__ import annotations

import copy
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from pymc_kernel_steps.core.transitions import ckam
from tests.core.chains import iterations_with_stats

ROOT = Path(__file__).resolve().parents[2]

#: T_c = 100 and β = 0.4: K = 40 exploration iterations, the first 20 (``history_needed`` in
#: 2-d) of them random-walk moves
CYCLE, EXPLORE, RANDOM_WALK = 100, 40, 20
COVARIANCE = np.array([[4.0, 1.8], [1.8, 1.0]])


def test_importing_the_transition_does_not_load_pymc():
    code = (
        "import sys, pymc_kernel_steps.core.transitions.ckam\n"
        "names = ('pymc', 'pytensor', 'pymc_kernel_steps.steps')\n"
        "loaded = [m for m in names if m in sys.modules]\n"
        "assert not loaded, loaded"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------- targets
PRECISION = np.linalg.inv(COVARIANCE)


def gaussian_log_density(x):
    return -0.5 * float(x @ PRECISION @ x)


#: the twisted Gaussian of Haario et al. (1999): y ~ N(0, diag(100, 1)), x₁ = y₁,
#: x₂ = y₂ + b (y₁² − 100); E x = 0, Var x₁ = 100, Var x₂ = 1 + 2 · 100² b². (b = 0.01: curved,
#: and mixed well enough by chains short enough for a unit test; b = 0.03 needs far longer ones)
BANANA_B = 0.01


def banana_log_density(x):
    twist = x[1] - BANANA_B * (x[0] ** 2 - 100.0)
    return -(x[0] ** 2) / 200.0 - 0.5 * twist**2


def settings(**changes) -> ckam.CKAMSettings:
    return ckam.CKAMSettings(dim=2, cycle_length=CYCLE, exploration_fraction=0.4, **changes)


def start(log_density, settings_, point=(1.0, -1.0)):
    point = np.asarray(point, dtype=float)
    return ckam.init(point, log_density(point), settings_)


def run(log_density, settings_, iterations, seed, observe=None):
    """A chain of ``iterations``; its states, whether each iteration explored, and its state.
    ``observe(state, info)`` is called after every iteration."""
    rng = np.random.default_rng(seed)
    state = start(log_density, settings_)
    states, exploring = np.empty((iterations, settings_.dim)), np.empty(iterations, dtype=bool)
    for i in range(iterations):
        state, info = ckam.step(rng, state, log_density)
        states[i], exploring[i] = state.position, info.exploring
        if observe is not None:
            observe(state, info)
    return states, exploring, state


# --------------------------------------------------------------------------- the cycles
def test_the_cycles_follow_the_schedule():
    """Each cycle explores for its first K = ceil(β T_c) iterations (random walk until the
    cycle holds ``history_needed`` states, then KAM moves, jumps and hops) and samples for the
    rest with the cosine scale ν_k = (ν₀/2)(cos(πk/T_c) + 1), ν₀ = 2ν_exp / (cos(πK/T_c) + 1),
    which passes through ν_exp at k = K."""
    assert settings().exploration_length == EXPLORE
    rng = np.random.default_rng(0)
    state = start(gaussian_log_density, settings())
    exploration_kinds = {"random_walk", "kam", "blind_jump", "mode_hop"}
    sampling_kinds = {"cosine_walk", "blind_jump", "mode_hop"}
    kams = 0
    for i in range(4 * CYCLE):
        k = i % CYCLE
        state, info = ckam.step(rng, state, gaussian_log_density)
        assert info.cycle == i // CYCLE and info.exploring == (k < EXPLORE)
        kind = info.proposal.kind
        if k < RANDOM_WALK:
            assert kind == "random_walk", (i, kind)
        elif k < EXPLORE:
            assert kind in exploration_kinds - {"random_walk"}, (i, kind)
            kams += kind == "kam"
        else:
            assert kind in sampling_kinds, (i, kind)
            nu0 = 2.0 * state.nu_exp / (math.cos(math.pi * EXPLORE / CYCLE) + 1.0)
            assert state.nu0 == pytest.approx(nu0, rel=1e-12)
            scale = 0.5 * nu0 * (math.cos(math.pi * k / CYCLE) + 1.0)
            assert info.scale == pytest.approx(scale, rel=1e-12)
        if k == EXPLORE - 1:  # the phase change: the walk starts at the exploration's scale
            assert state.nu_exp == pytest.approx(math.sqrt(state.kam.nu2_scale.scale))
            assert 0.5 * state.nu0 * (math.cos(math.pi * EXPLORE / CYCLE) + 1.0) == (
                pytest.approx(state.nu_exp, rel=1e-12)
            )
        assert state.cycle_position == (k + 1) % CYCLE
        if k == CYCLE - 1:  # a new cycle forgets the sub-sample
            assert state.cycle == i // CYCLE + 1 and state.kam.subsample is None
    assert kams >= 4  # one KAM move in each cycle's pattern at least


def test_the_sub_sample_comes_from_the_current_cycle_only():
    rng = np.random.default_rng(1)
    state = start(gaussian_log_density, settings())
    checked = 0
    for _ in range(3 * CYCLE):
        state, _ = ckam.step(rng, state, gaussian_log_density)
        if state.kam.subsample is None:
            continue
        cycle = {tuple(p) for p in state.history.points[state.cycle_start :]}
        rows = {tuple(z) for z in state.kam.subsample}  # not whitened by default
        assert rows <= cycle
        checked += 1
    assert checked > 100


def _adapted(state):
    """Everything the chain learns: the exploration's scales, sub-sample and jumps, and the
    sampling proposal frozen at the phase change."""
    kam = state.kam
    return (
        state.random_walk.scale.log_scale,
        None if kam.nu2_scale is None else kam.nu2_scale.log_scale,
        None if kam.subsample is None else kam.subsample.copy(),
        kam.gamma_abs,
        None if state.jump.chol is None else state.jump.chol.copy(),
        None if state.walk.chol is None else state.walk.chol.copy(),
        state.nu_exp,
        state.nu0,
        state.sampling_hop.archive_size,
        state.sampling_hop.noise_scale,
        None if state.sampling_jump.chol is None else state.sampling_jump.chol.copy(),
        list(state.sampling.weights),
    )


def _same(a, b) -> bool:
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
                return False
            if not np.array_equal(x, y):
                return False
        elif x != y and not (isinstance(x, float) and math.isnan(x) and math.isnan(y)):
            return False
    return True


def test_adaptation_happens_only_in_the_exploration_phase():
    """Through a sampling phase nothing the chain learned changes, and the proposal at cycle
    position k is the one a copy of the state frozen at the phase change makes from the same
    point with the same random numbers: a fixed kernel, whatever the phase's own draws. In the
    exploration phase the scales do adapt."""
    rng = np.random.default_rng(2)
    state = start(banana_log_density, settings())
    frozen = frozen_state = None
    explored_changes = 0
    for i in range(5 * CYCLE):
        k = i % CYCLE
        before = _adapted(state)
        if k >= EXPLORE:  # a sampling iteration
            assert _same(before, frozen)
            probe = copy.deepcopy(frozen_state)
            probe.position, probe.cycle_position = state.position.copy(), k
            seed = int(rng.integers(2**32))
            expected = ckam.propose(np.random.default_rng(seed), probe).x
            live = ckam.propose(np.random.default_rng(seed), state).x
            np.testing.assert_array_equal(live, expected)
        state, _ = ckam.step(rng, state, banana_log_density)
        if k < EXPLORE - 1:
            explored_changes += not _same(before, _adapted(state))
        if k == EXPLORE - 1:  # the phase change
            frozen, frozen_state = _adapted(state), copy.deepcopy(state)
        if k >= EXPLORE and k < CYCLE - 1:
            assert _same(_adapted(state), frozen)
    assert explored_changes > 100  # the random walk's and the KAM moves' Robbins–Monro


# --------------------------------------------------------------------------- Hastings corrections
def _feature_covariance(kam, x):
    """Mᵀ H M at ``x`` from the kernel's gradient by finite differences (no code of the
    package's proposal): rows of M are 2∇ₓk(x, z_i), H = I − 11ᵀ/n."""
    z = kam.subsample
    n, d = z.shape
    h = 1e-6
    M = np.empty((n, d))
    for j in range(d):
        e = np.zeros(d)
        e[j] = h
        M[:, j] = [2.0 * (kam.kernel(x + e, zi) - kam.kernel(x - e, zi)) / (2 * h) for zi in z]
    H = np.eye(n) - np.ones((n, n)) / n
    return M.T @ H @ M


def _schedule(state, k):
    """ν_k = (ν₀/2)(cos(πk/T_c) + 1)."""
    return 0.5 * state.nu0 * (math.cos(math.pi * k / state.settings.cycle_length) + 1.0)


def _sampling_log_density(state, k, x, y, rho_grid=2001):
    """log q(y | x) of the sampling phase's mixture, written out from its definition: the cosine
    walk N(x, ν_k² Σ), the mode hop over every ordered pair of the frozen archive with noise
    N(0, γ² I), the blind jump N(x, ρ² S) integrated over its log-uniform ρ ∈ [1, jump_scale]."""
    settings_ = state.settings
    walk_cov = _schedule(state, k) ** 2 * state.walk.chol @ state.walk.chol.T
    walk = stats.multivariate_normal(x, walk_cov).logpdf(y)
    archive = state.history.points[: state.sampling_hop.archive_size]
    n, d = archive.shape
    shifts = (archive[:, None, :] - archive[None, :, :])[~np.eye(n, dtype=bool)]
    gamma = state.sampling_hop.noise_scale
    residual = y - x - shifts
    hop = (
        -0.5 * np.sum(residual**2, axis=1) / gamma**2
        - d * math.log(gamma)
        - 0.5 * d * math.log(2 * math.pi)
    )
    hop = np.logaddexp.reduce(hop) - math.log(len(shifts))
    rhos = settings_.jump_scale ** ((np.arange(rho_grid) + 0.5) / rho_grid)
    jump_cov = state.sampling_jump.chol @ state.sampling_jump.chol.T
    unit = stats.multivariate_normal(np.zeros(d), jump_cov)
    jump = unit.logpdf((y - x)[None, :] / rhos[:, None]) - d * np.log(rhos)  # N(y; x, ρ² S)
    jump = np.logaddexp.reduce(jump) - math.log(rho_grid)
    p_walk = 1.0 - settings_.sampling_hops - settings_.sampling_jumps
    return float(
        np.logaddexp.reduce(
            [
                math.log(p_walk) + walk,
                math.log(settings_.sampling_hops) + hop,
                math.log(settings_.sampling_jumps) + jump,
            ]
        )
    )


def test_the_frozen_sampling_proposal_is_what_the_paper_says():
    """At the phase change ν_exp² Σ is the KAM covariance γ² I + ν² Mᵀ H M at the state (M by
    finite differences), so that the sampling phase starts with the exploration's proposal."""
    rng = np.random.default_rng(3)
    state = start(gaussian_log_density, settings())
    for _ in range(EXPLORE):
        state, _ = ckam.step(rng, state, gaussian_log_density)
    kam, x = state.kam, state.position
    expected = kam.gamma_abs**2 * np.eye(2) + kam.nu2 * _feature_covariance(kam, x)
    sigma = state.walk.chol @ state.walk.chol.T
    np.testing.assert_allclose(state.nu_exp**2 * sigma, expected, rtol=1e-6, atol=1e-9)


def test_the_sampling_proposal_s_correction_is_its_hastings_ratio():
    """In the sampling phase the log ratio ``step`` accepts with is log π(y) − log π(x) plus
    log q(x | y) − log q(y | x) of the whole mixture, by brute force (the correction is 0: the
    mixture is symmetric); the walk's increments are N(0, ν_k² Σ)."""
    rng = np.random.default_rng(4)
    log_density = banana_log_density
    state = start(log_density, settings())
    checked, increments = 0, []
    for i in range(10 * CYCLE):
        k = i % CYCLE
        x = state.position.copy()
        state, info = ckam.step(rng, state, log_density)
        if info.exploring or k == CYCLE - 1:
            continue
        y = info.proposal.x
        if info.proposal.kind == "cosine_walk":
            white = np.linalg.solve(state.walk.chol, y - x) / _schedule(state, k)
            increments.append(white)
        if checked < 40 and i >= CYCLE:  # an archive of more than one cycle
            forward = _sampling_log_density(state, k, x, y)
            backward = _sampling_log_density(state, k, y, x)
            expected = log_density(y) - log_density(x) + backward - forward
            assert info.log_accept_ratio == pytest.approx(expected, abs=1e-8)
            there = log_density(x) + forward + min(0.0, info.log_accept_ratio)
            back = log_density(y) + backward + min(0.0, -expected)
            assert there == pytest.approx(back, abs=1e-8)  # detailed balance
            checked += 1
    assert checked == 40
    increments = np.array(increments)
    assert len(increments) > 300
    for column in increments.T:
        assert stats.kstest(column, "norm").pvalue > 1e-3
    # and their scale: E ξ² = 1, with sd √(2 / count) for the mean of the squares
    squares = increments.ravel() ** 2
    assert abs(squares.mean() - 1.0) < 4.0 * math.sqrt(2.0 / squares.size)


def test_the_exploration_s_kam_moves_carry_their_hastings_correction():
    """With the adaptation state of the proposal's iteration (before ``step`` adapts), a KAM
    move's log ratio is log π(y) − log π(x) + log N(x; y, R(y)) − log N(y; x, R(x)),
    R = γ² I + ν² Mᵀ H M by brute force."""
    rng = np.random.default_rng(5)
    log_density = banana_log_density
    state = start(log_density, settings())
    checked = 0
    for _ in range(4 * CYCLE):
        kam = copy.deepcopy(state.kam)
        x = state.position.copy()
        state, info = ckam.step(rng, state, log_density)
        if info.proposal.kind != "kam":
            continue
        y = info.proposal.x

        def covariance(point, kam=kam):
            return kam.gamma_abs**2 * np.eye(2) + kam.nu2 * _feature_covariance(kam, point)

        forward = stats.multivariate_normal(x, covariance(x)).logpdf(y)
        backward = stats.multivariate_normal(y, covariance(y)).logpdf(x)
        expected = log_density(y) - log_density(x) + backward - forward
        assert info.log_accept_ratio == pytest.approx(expected, abs=1e-5)
        checked += 1
    assert checked >= 4


# --------------------------------------------------------------------------- invariance
def chain_t_statistics(log_density, truth, chains, iterations, burn_in):
    """The sampling phases' estimates of E x and E x² over independent chains (after
    ``burn_in`` iterations): (mean of the chains' estimates − truth) / (their sd / √chains), a t
    statistic with ``chains − 1`` degrees of freedom. One chain's effective sample size
    overstates its precision where the tails are visited in rare excursions (the banana)."""
    estimates = []
    for seed in range(chains):
        states, exploring, _ = run(log_density, settings(), iterations, seed=100 + seed)
        draws = states[burn_in:][~exploring[burn_in:]]
        estimates.append(np.concatenate([draws.mean(axis=0), (draws**2).mean(axis=0)]))
    estimates = np.array(estimates)
    error = estimates.std(axis=0, ddof=1) / math.sqrt(chains)
    return (estimates.mean(axis=0) - truth) / error


def test_chains_on_a_correlated_gaussian_have_its_moments():
    truth = np.array([0.0, 0.0, COVARIANCE[0, 0], COVARIANCE[1, 1]])
    t = chain_t_statistics(gaussian_log_density, truth, chains=12, iterations=5000, burn_in=500)
    assert np.all(np.abs(t) < 4.5), t


def test_chains_on_the_banana_have_its_moments():
    truth = np.array([0.0, 0.0, 100.0, 1.0 + 2.0 * 100.0**2 * BANANA_B**2])
    t = chain_t_statistics(banana_log_density, truth, chains=12, iterations=8000, burn_in=1000)
    assert np.all(np.abs(t) < 4.5), t


# --------------------------------------------------------------------------- freeze
def test_freeze_changes_nothing_and_the_cycles_go_on():
    """The cycles, and their exploration's adaptation, continue through the draws: a frozen
    state steps as the state itself would."""
    rng = np.random.default_rng(6)
    state = start(gaussian_log_density, settings())
    for _ in range(150):
        state, _ = ckam.step(rng, state, gaussian_log_density)
    twin = copy.deepcopy(state)
    frozen = ckam.freeze(state)
    assert frozen is state
    seeds = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(200):
        frozen, info = ckam.step(seeds[0], frozen, gaussian_log_density)
        twin, twin_info = ckam.step(seeds[1], twin, gaussian_log_density)
        np.testing.assert_array_equal(frozen.position, twin.position)
        assert info.scale == twin_info.scale
    assert frozen.cycle == 3 and frozen.kam.nu2_scale.iteration > 0


# --------------------------------------------------------------------------- unusable values
@pytest.mark.parametrize("iterations", [0, EXPLORE + 5], ids=["random_walk", "sampling"])
def test_an_unusable_log_density_is_rejected_and_reported(iterations):
    rng = np.random.default_rng(0)
    state = start(gaussian_log_density, settings())
    for _ in range(iterations):
        state, _ = ckam.step(rng, state, gaussian_log_density)
    position, log_density = state.position.copy(), state.log_density
    for value in (math.nan, math.inf):
        state, info = ckam.step(rng, state, lambda x, value=value: value)
        assert not info.accepted and info.accept_prob == 0.0 and info.evaluations == 1
        assert info.log_accept_ratio == -math.inf
        assert math.isnan(info.log_density) or info.log_density == math.inf
        np.testing.assert_array_equal(state.position, position)
        assert state.log_density == log_density
        assert info.exploring == (iterations < EXPLORE)


# --------------------------------------------------------------------------- sample stats
def test_the_sample_stats_are_the_declared_ones_and_describe_the_iteration():
    state = start(gaussian_log_density, settings())
    observed = []
    chain = iterations_with_stats(ckam, state, gaussian_log_density, 3 * CYCLE, -1, seed=2)
    for _, _, info, iteration_stats in chain:
        assert (
            iteration_stats["exploring"] == info.exploring
            and iteration_stats["cycle"] == info.cycle
        )
        assert iteration_stats["scale"] == info.scale
        assert iteration_stats["jump"] == (info.proposal.kind in ckam.JUMP_KINDS)
        observed.append(iteration_stats)
    assert {s["exploring"] for s in observed} == {True, False}
    assert len({s["cycle"] for s in observed}) == 3
    assert any(s["jump"] for s in observed)
