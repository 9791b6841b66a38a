"""CKAM: the cycle schedule inside the step, exactness of the sampling phase, the bimodal target,
pm.sample integration, :func:`sampling_phase`, bad input."""

from __future__ import annotations

import math
import pickle

import cloudpickle
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

from pymc_kernel_steps.core import ChainHistory, gaussian_logpdf
from pymc_kernel_steps.core.moves import BlindJump, CosineWalk, Mixture, ModeHop
from pymc_kernel_steps.core.schedules import ckam_sampling_scale
from pymc_kernel_steps.core.transitions import ckam
from pymc_kernel_steps.options import Cycles, KAMProposal
from pymc_kernel_steps.steps.ckam import CKAM, sampling_phase

from ..helpers import CORRELATED_COV, CORRELATED_MEAN, assert_moments, correlated_gaussian_model

QUIET = dict(progressbar=False, compute_convergence_checks=False)

MEANS = np.array([[-8.0, 0.0], [8.0, 0.0]])
VARIANCES = np.array([0.5, 2.0])


def bimodal_model() -> pm.Model:
    """0.5 N([−8, 0], 0.5 I) + 0.5 N([8, 0], 2 I) (paper 004)."""
    with pm.Model() as model:
        x = pm.Flat("x", shape=2)
        sq = pt.sum((x[None, :] - MEANS) ** 2, axis=1)
        pm.Potential(
            "mixture", pt.logsumexp(math.log(0.5) - 0.5 * sq / VARIANCES - pt.log(VARIANCES))
        )
    return model


def _run_step(step, point, iterations, rng=0, tune=100, draws=1000):
    step.setup_chain(np.random.default_rng(rng), tune=tune, draws=draws)
    current, trace = dict(point), []
    for _ in range(iterations):
        current, stats_ = step.step(current)
        trace.append((current["x"].copy(), stats_[0]))
    return trace


# ---------------------------------------------------------------- the schedule inside the step
def test_sampling_scales_follow_the_cosine_schedule_and_start_at_nu_exp():
    model = correlated_gaussian_model()
    with model:
        step = CKAM(cycles=Cycles(length=150), rng=1)
    T, K = 150, step.chain.n_explore
    assert K == 60
    trace = _run_step(step, model.initial_point(), K)  # exactly the first exploration phase
    chain = step.chain
    assert chain.position == K and chain.kam.subsample is not None
    # continuity: ν_exp is the exploration's final ν and the schedule passes through it at K
    assert chain.nu_exp == pytest.approx(math.sqrt(chain.kam.nu2_scale.scale), rel=1e-12)
    assert ckam_sampling_scale(K, T, chain.nu0) == pytest.approx(chain.nu_exp, rel=1e-12)
    assert chain.nu0 == pytest.approx(2 * chain.nu_exp / (math.cos(math.pi * K / T) + 1))
    # and the first sampling proposal N(x, ν_K² Σ) is the KAM proposal at the phase change
    x = trace[-1][0]
    sigma = chain.walk.chol @ chain.walk.chol.T
    # (with whitening: the whitened KAM covariance mapped back, L R(u) Lᵀ)
    kam = chain.kam.nu2_scale.scale * chain.kam.feature_cov(chain.kam.white(x))
    kam.flat[:: step.dim + 1] += chain.kam.gamma_abs**2
    if step.whiten:
        kam = chain.kam.whitening.chol @ kam @ chain.kam.whitening.chol.T
    np.testing.assert_allclose(chain.nu_exp**2 * sigma, kam, rtol=1e-10, atol=1e-12)
    # the sampling phase is the mixture of the mode hop on the archive frozen here, the blind
    # jump with this cycle's S and the cosine walk (its exactness: the tests below)
    assert chain.sampling.moves == [chain.sampling_hop, chain.sampling_jump, chain.walk]
    rest = 1.0 - step.sampling_hops - step.sampling_jumps
    assert chain.sampling.weights == [step.sampling_hops, step.sampling_jumps, rest]
    assert chain.sampling_hop.archive_size == len(chain.history) >= 2
    assert chain.sampling_hop.noise_scale == chain.kam.gamma_abs
    assert chain.sampling_jump.chol is chain.jump.chol is not None

    nu0 = chain.nu0
    current = {"x": x}
    scales, flags, cycles = [], [], []
    for _ in range(T - K + 5):
        current, stats_ = step.step(current)
        scales.append(stats_[0]["scale"])
        flags.append(stats_[0]["exploring"])
        cycles.append(stats_[0]["cycle"])
    k = np.arange(K, T)
    np.testing.assert_allclose(scales[: T - K], nu0 / 2 * (np.cos(np.pi * k / T) + 1), rtol=1e-12)
    assert not any(flags[: T - K]) and all(flags[T - K :])
    assert cycles[T - K - 1] == 0 and cycles[T - K] == 1
    assert step.chain.cycle == 1 and step.chain.kam.subsample is None  # a new cycle forgets


def test_setup_chain_resets_the_cycle():
    model = correlated_gaussian_model()
    with model:
        step = CKAM(cycles=Cycles(length=150))
    _run_step(step, model.initial_point(), 200)
    assert step.chain.cycle == 1
    step.setup_chain(np.random.default_rng(1), tune=10, draws=10)
    assert (step.chain.cycle, step.chain.position, len(step.chain.history)) == (0, 0, 0)


def test_default_cycle_length_follows_tune_and_draws():
    with correlated_gaussian_model():
        step = CKAM()
    step.setup_chain(np.random.default_rng(0), tune=4000, draws=8000)
    assert step.chain.cycle_length == 600
    step.setup_chain(np.random.default_rng(0), tune=10**6, draws=10**6)
    assert step.chain.cycle_length == 1000
    step.setup_chain(np.random.default_rng(0), tune=100, draws=100)
    assert step.chain.cycle_length == step.min_cycle_length == 100  # 2 × 20 / 0.4


# ---------------------------------------------------------------- exactness of the sampling phase
# The sampling phase proposes from the step's `sampling` mixture (a mode hop on the archive frozen
# at the phase change, a blind jump, the cosine walk; see the first test for the step's wiring).
# Its exactness is checked on that mixture built from the core moves with explicit, known states.
SAMPLING_GAMMA = 0.3  # the mode hop's noise γ
SAMPLING_NU = 0.9  # the cosine walk's ν_k, fixed within one transition


def _sampling_mixture(archive, walk_chol, jump_chol, history=None):
    """The sampling-phase mixture of a default CKAM step on an explicit archive, ``Σ`` and ``S``:
    returns it with its mode hop, blind jump and cosine walk."""
    with correlated_gaussian_model():
        defaults = CKAM()
    archive = np.asarray(archive, dtype=float)
    if history is None:
        history = ChainHistory(archive.shape[1])
    for z in archive:
        history.append(z)
    hop = ModeHop(history, archive_size=len(archive))
    hop.noise_scale = SAMPLING_GAMMA
    jump = BlindJump(defaults.jump_scale, chol=jump_chol)
    walk = CosineWalk()
    walk.scale, walk.chol = SAMPLING_NU, walk_chol
    p_hop, p_jump = defaults.sampling_hops, defaults.sampling_jumps
    mixture = Mixture([(hop, p_hop), (jump, p_jump), (walk, 1.0 - p_hop - p_jump)])
    return mixture, hop, jump, walk


def _metropolis(move, logp, x, rng):
    """One Metropolis–Hastings transition with ``move``'s proposal and correction."""
    proposal = move.propose(rng, x)
    log_ratio = logp(proposal.x) - logp(x) + proposal.log_correction
    if math.log(rng.uniform()) < log_ratio:
        return proposal.x, True
    return x, False


def _correlated_archive(rng, size=40):
    return rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=size)


def _jump_chol(points):
    return np.linalg.cholesky(np.cov(points.T) * (2.38**2 / points.shape[1]))


def test_sampling_phase_detailed_balance_with_fixed_scale_and_sigma():
    """log r(x → y) = −log r(y → x) for N(x, ν² Σ) and the proposal is that Gaussian."""
    rng = np.random.default_rng(0)
    archive = _correlated_archive(rng)
    walk_chol = np.linalg.cholesky(CORRELATED_COV)
    mixture, _, _, walk = _sampling_mixture(archive, walk_chol, _jump_chol(archive))
    chol = SAMPLING_NU * walk_chol
    logp = stats.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV).logpdf
    increments = []
    for _ in range(3000):
        x = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV)
        proposal = mixture.propose(rng, x)
        y, log_correction = proposal.x, proposal.log_correction
        assert walk.scale == SAMPLING_NU  # proposing leaves the frozen scale alone
        forward = logp(y) - logp(x) + log_correction
        frozen = logp(y) - logp(x) + gaussian_logpdf(x, y, chol) - gaussian_logpdf(y, x, chol)
        backward = logp(x) - logp(y) + gaussian_logpdf(y, x, chol) - gaussian_logpdf(x, y, chol)
        np.testing.assert_allclose(forward, frozen, atol=1e-9)
        np.testing.assert_allclose(forward, -backward, atol=1e-9)
        if proposal.kind == "cosine_walk":  # (hops and jumps: see the mixture test below)
            increments.append(y - x)
    assert len(increments) > 1500
    # the random-walk component really is N(x, ν² Σ): whitened increments are standard normal
    white = np.linalg.solve(chol, np.array(increments).T).T
    for column in white.T:
        assert stats.kstest(column, "norm").pvalue > 1e-3
    np.testing.assert_allclose(np.cov(white.T), np.eye(4), atol=0.1)


def _sampling_component_logpdfs(mixture, hop, jump, walk, archive, x, y, rho_grid=2001):
    """log q(y | x) of each sampling-phase component (walk, hop, jump), written out from its
    definition: the cosine random walk, the mode hop over every ordered pair of the frozen
    archive, the blind jump integrated over its log-uniform ρ."""
    walk_term = gaussian_logpdf(y, x, walk.scale * walk.chol)
    n, d = archive.shape
    shifts = (archive[:, None, :] - archive[None, :, :])[~np.eye(n, dtype=bool)]
    delta = y - x - shifts
    gamma = SAMPLING_GAMMA
    hop_term = (
        -0.5 * np.sum(delta**2, axis=1) / gamma**2
        - d * math.log(gamma)
        - 0.5 * d * math.log(2 * math.pi)
    )
    hop_term = float(np.logaddexp.reduce(hop_term) - math.log(len(shifts)))
    u = (np.arange(rho_grid) + 0.5) / rho_grid
    rhos = jump.jump_scale**u  # ρ = 1 · (jump_scale / 1)^U
    jump_term = [gaussian_logpdf(y, x, rho * jump.chol) for rho in rhos]
    jump_term = float(np.logaddexp.reduce(jump_term) - math.log(rho_grid))
    return {"cosine_walk": walk_term, "mode_hop": hop_term, "blind_jump": jump_term}


def _sampling_mixture_logpdf(mixture, hop, jump, walk, archive, x, y):
    """log q(y | x) of the whole sampling-phase mixture."""
    terms = _sampling_component_logpdfs(mixture, hop, jump, walk, archive, x, y)
    p_hop, p_jump, p_walk = mixture.weights
    return float(
        np.logaddexp.reduce(
            [
                math.log(p_walk) + terms["cosine_walk"],
                math.log(p_hop) + terms["mode_hop"],
                math.log(p_jump) + terms["blind_jump"],
            ]
        )
    )


def test_sampling_phase_mixture_is_symmetric_and_proposes_what_it_says():
    """The sampling phase proposes from a mixture (random walk, mode hop on the archive frozen at
    the phase change, blind jump): q(y | x) = q(x | y) for the whole mixture, so the correction
    it returns (0) is log q(x | y) − log q(y | x); the components come with the stated
    probabilities and the archive does not grow as the history does."""
    rng = np.random.default_rng(2)
    archive = _correlated_archive(rng, 40)  # small: the mixture density sums over 40·39 pairs
    history = ChainHistory(4)
    mixture, hop, jump, walk = _sampling_mixture(
        archive, np.linalg.cholesky(CORRELATED_COV), _jump_chol(archive), history=history
    )
    for z in 100.0 + _correlated_archive(rng, 60):  # the history grows past the frozen archive
        history.append(z)
    moves = {"cosine_walk": 0, "mode_hop": 0, "blind_jump": 0}
    for i in range(4000):
        x = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV)
        proposal = mixture.propose(rng, x)
        y, log_correction = proposal.x, proposal.log_correction
        moves[proposal.kind] += 1
        assert log_correction == 0.0
        if i < 60:
            forward = _sampling_mixture_logpdf(mixture, hop, jump, walk, archive, x, y)
            backward = _sampling_mixture_logpdf(mixture, hop, jump, walk, archive, y, x)
            assert math.isfinite(forward)
            np.testing.assert_allclose(backward - forward, log_correction, atol=1e-9)
        if i < 300 and proposal.kind != "cosine_walk":
            # and each component on its own: the mixture's density above is dominated by the
            # broad walk, which would hide an asymmetric hop or jump
            forward = _sampling_component_logpdfs(mixture, hop, jump, walk, archive, x, y)
            backward = _sampling_component_logpdfs(mixture, hop, jump, walk, archive, y, x)
            kind = proposal.kind
            assert math.isfinite(forward[kind])
            np.testing.assert_allclose(backward[kind], forward[kind], atol=1e-9)
    assert hop.archive_size == 40 and hop.size == 40
    for move, p in (("mode_hop", mixture.weights[0]), ("blind_jump", mixture.weights[1])):
        assert abs(moves[move] / 4000 - p) < 4 * math.sqrt(p * (1 - p) / 4000), moves
    # a hop lands on x + (z_a − z_b) + γξ with z_a, z_b in the frozen archive
    shifts = (archive[:, None, :] - archive[None, :, :])[~np.eye(40, dtype=bool)]
    x = CORRELATED_MEAN.copy()
    hops = 0
    for _ in range(200):
        proposal = mixture.propose(rng, x)
        if proposal.kind == "mode_hop":
            hops += 1
            nearest = np.min(np.linalg.norm(proposal.x - x - shifts, axis=1))
            assert nearest < 6 * SAMPLING_GAMMA * math.sqrt(4)
    assert hops > 10


def test_sampling_phase_hops_and_jumps_draw_from_the_densities_above():
    """The hop lands at x ± (z_a − z_b) plus N(0, γ² I) noise and the jump at x + ρ S^{1/2} ξ
    with ξ standard normal: the densities the symmetry test writes out are the ones sampled."""
    rng = np.random.default_rng(6)
    archive = np.array([CORRELATED_MEAN, CORRELATED_MEAN + [10.0, -10.0, 10.0, -10.0]])
    jump_chol = np.linalg.cholesky(CORRELATED_COV)
    _, hop, jump, _ = _sampling_mixture(archive, jump_chol, jump_chol)
    shift = archive[1] - archive[0]
    x = CORRELATED_MEAN.copy()
    noise, steps = [], []
    for _ in range(2000):
        increment = hop.propose(rng, x).x - x
        nearest = min((increment - shift, increment + shift), key=np.linalg.norm)
        noise.append(nearest / SAMPLING_GAMMA)
        proposal = jump.propose(rng, x)
        steps.append(np.linalg.solve(jump_chol, proposal.x - x) / proposal.extra)
    for white in (np.array(noise), np.array(steps)):
        for column in white.T:
            assert stats.kstest(column, "norm").pvalue > 1e-3


def test_sampling_phase_move_leaves_the_target_invariant():
    """One sampling-phase transition (the mixture's Metropolis step) applied to exact draws keeps
    them exact."""
    rng = np.random.default_rng(1)
    archive = _correlated_archive(rng, 400)
    mixture, *_ = _sampling_mixture(
        archive, np.linalg.cholesky(CORRELATED_COV), _jump_chol(archive)
    )
    logp = stats.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV).logpdf
    draws = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=3000)
    moved, accepted = [], 0
    for x in draws:
        new, ok = _metropolis(mixture, logp, x, rng)
        moved.append(new)
        accepted += ok
    moved = np.array(moved)
    assert 0.2 < accepted / len(draws) < 0.99
    white = np.linalg.solve(np.linalg.cholesky(CORRELATED_COV), (moved - CORRELATED_MEAN).T).T
    for column in white.T:
        assert stats.kstest(column, "norm").pvalue > 1e-3


def test_sampling_phase_hops_move_exact_draws_between_modes_and_keep_them_exact():
    """On the bimodal target, with both modes in the frozen archive: one sampling-phase move
    applied to exact draws keeps them exact (mode weights and each mode's shape) and moves a
    good share of them to the other mode."""
    rng = np.random.default_rng(5)

    def exact(size):
        right = rng.uniform(size=size) < 0.5
        scale = np.sqrt(np.where(right, VARIANCES[1], VARIANCES[0]))[:, None]
        return MEANS[right.astype(int)] + scale * rng.standard_normal((size, 2))

    archive = exact(400)  # history of both modes: what the archive holds once both are found
    mixture, *_ = _sampling_mixture(archive, np.eye(2), _jump_chol(archive))

    def logp(x):
        sq = np.sum((x[None, :] - MEANS) ** 2, axis=1)
        return float(np.logaddexp.reduce(-0.5 * sq / VARIANCES - np.log(VARIANCES)))

    draws = exact(4000)
    moved, crossed = [], 0
    for x in draws:
        new, _ = _metropolis(mixture, logp, x, rng)
        moved.append(new)
        crossed += (new[0] > 0) != (x[0] > 0)
    moved = np.array(moved)
    right = moved[:, 0] > 0
    assert abs(right.mean() - 0.5) < 4 * 0.5 / math.sqrt(len(draws)), right.mean()
    assert crossed > 20, crossed
    for mode, mask in ((0, ~right), (1, right)):
        white = (moved[mask] - MEANS[mode]) / math.sqrt(VARIANCES[mode])
        for column in white.T:
            assert stats.kstest(column, "norm").pvalue > 1e-3


# ---------------------------------------------------------------- statistical checks
def _bimodal_sampling_phase(start: int):
    with bimodal_model():
        idata = pm.sample(
            step=CKAM(),
            tune=4000,
            draws=8000,
            chains=8,
            cores=4,
            random_seed=11,
            initvals={"x": MEANS[start]},
            **QUIET,
        )
    return sampling_phase(idata).posterior


def _mode_changes_per_1000(posterior) -> float:
    """Mode changes between consecutive sampling-phase draws (of the same phase), per 1000."""
    right = posterior["x"].values[..., 0] > 0
    consecutive = np.diff(posterior["draw"].values) == 1
    changes = (right[:, 1:] != right[:, :-1]) & consecutive
    return 1000 * changes.sum() / (consecutive.sum() * right.shape[0])


def _check_bimodal(posterior):
    draws = posterior["x"].values.reshape(-1, 2)
    right = draws[:, 0] > 0
    assert abs(right.mean() - 0.5) < 0.1, right.mean()
    np.testing.assert_allclose(draws[~right].mean(axis=0), MEANS[0], atol=0.15)
    np.testing.assert_allclose(draws[right].mean(axis=0), MEANS[1], atol=0.3)
    # the weights come from moves between the modes inside the sampling phases (about 14 per
    # 1000 draws; 0.1 to 0.4 when only the exploration phase changed modes), not from a few
    # lucky phase changes
    assert _mode_changes_per_1000(posterior) > 5


@pytest.mark.slow
def test_bimodal_finds_and_weighs_both_modes_from_the_left_mode():
    _check_bimodal(_bimodal_sampling_phase(start=0))


@pytest.mark.slow
def test_bimodal_finds_and_weighs_both_modes_from_the_right_mode():
    _check_bimodal(_bimodal_sampling_phase(start=1))


@pytest.mark.slow
def test_correlated_gaussian_moments_of_the_sampling_phase():
    with correlated_gaussian_model():
        idata = pm.sample(
            step=CKAM(), tune=1000, draws=10000, chains=4, cores=2, random_seed=5, **QUIET
        )
    draws = sampling_phase(idata).posterior["x"].values
    assert_moments(draws, CORRELATED_MEAN, np.diag(CORRELATED_COV))


# ---------------------------------------------------------------- pm.sample integration
def test_pm_sample_reproducible_with_two_processes():
    kwargs = dict(tune=300, draws=300, chains=2, cores=2, random_seed=42, **QUIET)
    with correlated_gaussian_model():
        first = pm.sample(step=CKAM(), **kwargs)
        second = pm.sample(step=CKAM(), **kwargs)
    np.testing.assert_array_equal(first.posterior.x.values, second.posterior.x.values)
    assert not np.array_equal(first.posterior.x.values[0], first.posterior.x.values[1])


def test_compound_with_nuts_and_stat_dtypes():
    with pm.Model():
        x = pm.Normal("x", 0.0, 1.0, shape=2)
        y = pm.Normal("y", x.sum(), 1.0)
        idata = pm.sample(
            step=[CKAM([x]), pm.NUTS([y])],
            tune=200,
            draws=300,
            chains=1,
            cores=1,
            random_seed=1,
            discard_tuned_samples=False,
            **QUIET,
        )
    sample_stats = idata.sample_stats
    for name, (dtype, _) in CKAM.stats_dtypes_shapes.items():
        if name in ("model_logp", "tune", "warning"):  # PyMC folds or drops these
            continue
        assert name in sample_stats, name
        assert sample_stats[name].dtype == np.dtype(dtype), name
    exploring = np.concatenate(
        [idata.warmup_sample_stats.exploring.values, sample_stats.exploring.values], axis=1
    )[0]
    assert exploring[0] and not exploring.all()
    cycles = np.concatenate([idata.warmup_sample_stats.cycle.values, sample_stats.cycle.values], 1)
    assert cycles[0, 0] == 0 and cycles[0, -1] >= 4  # cycles continue through tuning and draws
    assert np.unique(idata.posterior.y.values).size > 100


def test_sampling_phase_keeps_only_sampling_draws():
    with correlated_gaussian_model():
        idata = pm.sample(
            step=CKAM(cycles=Cycles(length=100)),
            tune=150,
            draws=450,
            chains=2,
            cores=1,
            random_seed=3,
            discard_tuned_samples=False,
            **QUIET,
        )
    selected = sampling_phase(idata)
    for group, stats_group in (
        ("posterior", "sample_stats"),
        ("warmup_posterior", "warmup_sample_stats"),
    ):
        flags = idata[stats_group].exploring.values[0]
        assert selected[group].sizes["draw"] == (~flags).sum()
        assert not selected[stats_group].exploring.values.any()
        np.testing.assert_array_equal(selected[group].x.values, idata[group].x.values[:, ~flags])
    # draws 150..599 of the chain: cycles of 100, exploring positions 0..39
    np.testing.assert_array_equal(
        selected.posterior.draw.values, [d for d in range(450) if (d + 150) % 100 >= 40]
    )
    with pytest.raises(ValueError, match="exploring"):
        sampling_phase(
            idata.map_over_datasets(lambda ds: ds.drop_vars("exploring", errors="ignore"))
        )


@pytest.mark.parametrize("prior_draws", [300, 1000])
def test_sampling_phase_keeps_the_prior_groups_as_they_are(prior_draws):
    """The prior's draws are not the chain's: fewer of them raised an IndexError, as many or
    more were cut silently by the chain's flags."""
    model = correlated_gaussian_model()
    with model:
        idata = pm.sample(
            step=CKAM(cycles=Cycles(length=100)),
            tune=100,
            draws=600,
            chains=1,
            cores=1,
            random_seed=3,
            **QUIET,
        )
        idata.update(pm.sample_prior_predictive(draws=prior_draws, random_seed=1))
    selected = sampling_phase(idata)
    prior = idata["prior"].to_dataset()
    assert prior.sizes["draw"] == prior_draws
    assert selected["prior"].to_dataset().identical(prior)
    assert selected.posterior.sizes["draw"] == (~idata.sample_stats.exploring.values[0]).sum()


def test_sampling_phase_of_something_else_is_a_clear_error():
    with correlated_gaussian_model():
        idata = pm.sample(
            step=CKAM(cycles=Cycles(length=100)),
            tune=100,
            draws=200,
            chains=1,
            cores=1,
            random_seed=3,
            **QUIET,
        )
    for wrong in (idata.posterior, idata.posterior.to_dataset(), [1, 2]):
        with pytest.raises(TypeError, match="`idata` must be the DataTree that pm.sample"):
            sampling_phase(wrong)
    shorter = idata.copy()
    shorter["posterior_predictive"] = idata.posterior.to_dataset().isel(draw=slice(0, 50))
    with pytest.raises(ValueError, match="posterior_predictive` has 50 draws"):
        sampling_phase(shorter)


def test_pickle_round_trip_steps_identically():
    model = correlated_gaussian_model()
    with model:
        step = CKAM(cycles=Cycles(length=100))
    clone = pickle.loads(cloudpickle.dumps(step))
    runs = [
        np.array([x for x, _ in _run_step(candidate, model.initial_point(), 250, rng=9)])
        for candidate in (step, clone)
    ]
    np.testing.assert_array_equal(runs[0], runs[1])


def test_a_cycle_without_kam_moves_samples_with_its_random_walk_in_the_start_s_frame():
    """A cycle whose history never allowed a KAM fit (a stuck chain) freezes the cycle's own
    random walk for its sampling phase: N(x, s² D²) with the start's scales D, not N(x, s² I)."""
    with pm.Model() as model:
        pm.Normal("x", 0.0, sigma=np.array([1e-3, 1e3]), shape=2)
        step = CKAM(cycles=Cycles(length=100))
    point = _run_step(step, model.initial_point(), 1)[-1][0]
    chain = step.chain
    frame = chain.start_scales
    assert frame is not None and frame[0] < 0.01 and frame[1] > 100
    assert not chain.kam.ready
    ckam.freeze_sampling_proposal(step.rng, chain.transition, point)
    sampling_cov = chain.nu_exp**2 * chain.walk.chol @ chain.walk.chol.T
    walk = chain.random_walk
    random_walk_cov = walk.scale.scale**2 * walk.metric.chol @ walk.metric.chol.T
    np.testing.assert_allclose(sampling_cov, random_walk_cov, rtol=1e-12)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (lambda: {"cycles": Cycles(exploration_fraction=0.0)}, "exploration_fraction"),
        (lambda: {"cycles": Cycles(exploration_fraction=1.0)}, "exploration_fraction"),
        (lambda: {"cycles": Cycles(exploration_fraction=-0.3)}, "exploration_fraction"),
        (lambda: {"cycles": Cycles(length=60)}, "too short.*at least 100"),
        (lambda: {"cycles": Cycles(length=1)}, "Cycles.length"),
        (lambda: {"proposal": KAMProposal(gamma=0.0)}, "gamma"),
        (lambda: {"cycles": Cycles(jump_scale=-1.0)}, "jump_scale"),
        (lambda: {"proposal": KAMProposal(subsample_size=1)}, "subsample_size"),
        (lambda: {"proposal": KAMProposal(target_accept=1.0)}, "target_accept"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    with correlated_gaussian_model():
        with pytest.raises(ValueError, match=match):
            CKAM(**kwargs())
