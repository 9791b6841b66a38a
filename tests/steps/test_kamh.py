"""KAMH and AdaptiveMetropolis: exactness, pm.sample integration, bad input."""

from __future__ import annotations

import pickle

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_kernel_steps import KAMH, AdaptiveMetropolis, GaussianKernel
from pymc_kernel_steps.core import (
    LinearKernel,
    Whitening,
    gaussian_logpdf,
    kamh_covariance,
    median_lengthscale,
)
from pymc_kernel_steps.core import whitening as whitening_module
from pymc_kernel_steps.core.moves import MOVE_KINDS, RW_FACTOR, KAMMove
from pymc_kernel_steps.core.transitions import kamh
from pymc_kernel_steps.options import Climb, KAMProposal

from ..helpers import (
    CORRELATED_COV,
    CORRELATED_MEAN,
    NULL_MOVES,
    correlated_gaussian_model,
    sample_stuck_on_a_lucky_estimate,
)

STEPS = [KAMH, AdaptiveMetropolis]


def _sample(model, step_factory, **kwargs):
    options = dict(
        tune=1000,
        draws=3000,
        chains=2,
        cores=1,
        random_seed=7,
        progressbar=False,
        compute_convergence_checks=False,
    )
    options.update(kwargs)
    with model:
        return pm.sample(step=step_factory(), **options)


# ---------------------------------------------------------------- detailed balance
def _frozen_kamh_log_ratio(logp, x, y, Z, kernel, gamma, nu2):
    """log r(x → y) of the KAMH transition with frozen (Z, kernel, γ, ν²)."""
    chol_x = np.linalg.cholesky(kamh_covariance(x, Z, kernel, gamma, nu2))
    chol_y = np.linalg.cholesky(kamh_covariance(y, Z, kernel, gamma, nu2))
    return logp(y) - logp(x) + gaussian_logpdf(x, y, chol_y) - gaussian_logpdf(y, x, chol_x)


def test_kamh_uses_the_kam_move():
    """The step's proposal is the core's KAM move (whose exactness the tests below check)."""
    with correlated_gaussian_model():
        step = KAMH(rng=1)
    assert isinstance(step.chain.kam, KAMMove)


@pytest.mark.parametrize("whiten", [True, False])
def test_kamh_detailed_balance_with_frozen_adaptation(whiten):
    """The KAM move's ratio equals the frozen KAMH ratio (computed in the whitened coordinates,
    where the kernel acts) and is antisymmetric for random pairs."""
    rng = np.random.default_rng(0)
    Z = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=60)
    whitening = Whitening.from_points(Z[:30]) if whiten else Whitening.identity(4)
    gamma, nu2 = 0.4, 0.8
    kam = KAMMove(4, fixed_nu2=nu2)  # a frozen KAMH state: sub-sample, kernel, γ, ν²
    kam.whitening = whitening if whiten else None
    kam.subsample = whitening.whiten(Z)
    kam.kernel = GaussianKernel(1.3)
    kam.gamma_abs = gamma
    logp = stats.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV).logpdf
    Zw, w = kam.subsample, whitening.whiten
    for _ in range(20):
        x = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV)
        proposal = kam.propose(rng, x)
        y, log_correction = proposal.x, proposal.log_correction
        forward = logp(y) - logp(x) + log_correction
        # in whitened coordinates the target's log density differs by a constant only
        reference = _frozen_kamh_log_ratio(
            lambda u: logp(whitening.unwhiten(u)), w(x), w(y), Zw, kam.kernel, gamma, nu2
        )
        backward = _frozen_kamh_log_ratio(
            lambda u: logp(whitening.unwhiten(u)), w(y), w(x), Zw, kam.kernel, gamma, nu2
        )
        np.testing.assert_allclose(forward, reference, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(forward, -backward, rtol=1e-8, atol=1e-8)
        # the proposal is genuinely asymmetric for a Gaussian kernel
        assert abs(log_correction) > 1e-8


def _fitted_kam(points, kernel_class, whiten):
    """A KAM move fitted to ``points`` as KAMH fits it: whitening by the points, the median
    heuristic's lengthscale (a Gaussian kernel), γ relative to the points' spread and ν² giving
    the learned part the optimal random walk's total variance at the last point."""
    dim = points.shape[1]
    with pm.Model():
        pm.Flat("x", shape=dim)
        gamma = KAMH().gamma
    whitening = Whitening.from_points(points) if whiten else Whitening.identity(dim)
    subsample = whitening.whiten(points)
    kernel = (
        GaussianKernel(median_lengthscale(subsample))
        if kernel_class is GaussianKernel
        else kernel_class()
    )
    kam = KAMMove(dim)
    kam.whitening = whitening if whiten else None
    kam.subsample, kam.kernel = subsample, kernel
    kam.gamma_abs = gamma * kam.reference_scale(subsample, gamma, whitened=whiten)
    trace = float(np.trace(kam.feature_cov(subsample[-1])))
    kam.fixed_nu2 = RW_FACTOR**2 / trace
    return kam, whitening


def _log_proposal_density(kam, whitening, x, y):
    """log q(y | x) of a KAM move in the model's coordinates."""
    u_x, u_y = whitening.whiten(x), whitening.whiten(y)
    chol = np.linalg.cholesky(kam.covariance(kam.feature_cov(u_x)))
    return gaussian_logpdf(u_y, u_x, chol) - whitening.log_det()


@pytest.mark.parametrize("kernel_class", [GaussianKernel, LinearKernel])  # KAMH, AM
def test_whitened_kamh_is_affine_invariant(kernel_class, monkeypatch):
    """A linear change of coordinates x' = A x + c leaves the learned proposal unchanged: with
    the same history (mapped), the proposal densities differ by the Jacobian only, and the
    learned part's scale (hence ν²) is the same. (The shrinkage of a small history's correlation
    matrix towards the identity is the one part that is not invariant; it is switched off here
    and vanishes as the history grows.)"""
    monkeypatch.setattr(whitening_module, "SHRINKAGE", 0.0)
    rng = np.random.default_rng(3)
    dim = 4
    rotation = np.linalg.qr(rng.normal(size=(dim, dim)))[0]
    A = rotation @ np.diag([1e-2, 0.1, 1.0, 10.0])  # rotate and rescale
    c = rng.normal(size=dim) * 50
    history = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=400)
    history[:, 1] += 0.3 * history[:, 0] ** 2  # a curved history, so the kernel matters

    kam, frame = _fitted_kam(history, kernel_class, whiten=True)
    kam_mapped, frame_mapped = _fitted_kam(history @ A.T + c, kernel_class, whiten=True)
    assert kam_mapped.nu2 == pytest.approx(kam.nu2, rel=1e-6)
    assert kam_mapped.gamma_abs == pytest.approx(kam.gamma_abs, rel=1e-12)
    log_jacobian = np.log(abs(np.linalg.det(A)))
    for _ in range(10):
        x, y = history[rng.integers(400)], history[rng.integers(400)] + 0.1 * rng.normal(size=dim)
        q = _log_proposal_density(kam, frame, x, y)
        q_mapped = _log_proposal_density(kam_mapped, frame_mapped, A @ x + c, A @ y + c)
        np.testing.assert_allclose(q_mapped, q - log_jacobian, rtol=1e-6, atol=1e-6)
        # and the move proposes from that density: its correction is the density's ratio
        proposal = kam_mapped.propose(rng, A @ x + c)
        expected = _log_proposal_density(
            kam_mapped, frame_mapped, proposal.x, A @ x + c
        ) - _log_proposal_density(kam_mapped, frame_mapped, A @ x + c, proposal.x)
        np.testing.assert_allclose(proposal.log_correction, expected, atol=1e-8)
    # without whitening the proposal is not invariant
    raw, identity = _fitted_kam(history @ A.T + c, kernel_class, whiten=False)
    x, y = history[0], history[1]
    q_raw = _log_proposal_density(raw, identity, A @ x + c, A @ y + c)
    assert abs(q_raw - (_log_proposal_density(kam, frame, x, y) - log_jacobian)) > 1e-3


def test_lengthscale_chosen_during_tuning_then_frozen():
    """The default kernel tries its lengthscale candidates during tuning, each with ν² scaled to
    the same total variance, and keeps the one with the largest squared jump afterwards."""
    with correlated_gaussian_model():
        step = KAMH()
        idata = pm.sample(
            step=step, tune=800, draws=300, chains=1, cores=1, random_seed=3,
            discard_tuned_samples=False, progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip
    chain = step.chain
    warm = idata.warmup_sample_stats.lengthscale.values[0]
    tried = np.unique(np.round(warm[~np.isnan(warm)] / chain.candidates[0].lengthscale, 6))
    assert len(np.unique(warm[~np.isnan(warm)])) > 4  # several candidates, refreshed bases
    assert tried.size > 1
    drawn = idata.sample_stats.lengthscale.values[0]
    assert np.unique(drawn).size == 1
    jumps = np.where(chain.candidate_search.counts > 0, chain.candidate_search.scores, -np.inf)
    assert drawn[0] == chain.candidates[int(np.argmax(jumps))].lengthscale
    # each candidate has its own ν², and the one in use after tuning is the chosen one's
    assert len(chain.candidate_nu2_scales) == len(chain.candidates)
    assert chain.kam.nu2_scale is chain.candidate_nu2_scales[chain.candidate]
    assert np.unique(idata.sample_stats.nu2.values).size == 1


def test_a_candidate_s_score_is_the_squared_jump_weighted_by_the_chance_of_a_rejection(
    monkeypatch,
):
    """Each KAM move while the candidates are tried adds ``(1 − accepted) α ‖u* − u‖²`` to its
    candidate's moving average (expectation ``α (1 − α) ‖u* − u‖²``), with ``u`` the state it
    was proposed from; the candidate with the largest average is kept."""
    with correlated_gaussian_model() as model:
        step = KAMH(warmup=[Climb()])
    step.setup_chain(np.random.default_rng(0), tune=1000, draws=10)
    point = model.initial_point()
    kam_code = MOVE_KINDS.index("kam")
    propose = kamh.propose
    weight = 0.02
    accepted = rejected = 0
    for _ in range(1000):
        chain = step.chain
        search = chain.candidate_search
        before = None if search is None else search.scores.copy()
        counts = None if search is None else search.counts.copy()
        start = None if chain.current_point is None else chain.current_point.copy()
        frozen = chain.candidate_frozen
        whitening = chain.kam.whitening  # a refresh after the decision replaces it
        proposals = []

        def recording(rng, state, proposals=proposals):
            proposal = propose(rng, state)
            proposals.append(proposal.x.copy())
            return proposal

        monkeypatch.setattr(kamh, "propose", recording)
        point, stats = step.step(point)
        monkeypatch.undo()
        if before is None or frozen or stats[0]["move"] != kam_code:
            continue
        (k,) = np.flatnonzero(chain.candidate_search.counts != counts)
        score = (chain.candidate_search.scores[k] - (1 - weight) * before[k]) / weight
        if stats[0]["accepted"]:
            assert score == pytest.approx(0.0, abs=1e-9)
            accepted += 1
        else:
            jump = (proposals[-1] - start) @ whitening.inv_chol.T
            np.testing.assert_allclose(
                score, stats[0]["accept"] * float(jump @ jump), rtol=1e-8, atol=1e-12
            )
            rejected += 1
    assert accepted >= 10 and rejected >= 10
    jumps = np.where(chain.candidate_search.counts > 0, chain.candidate_search.scores, -np.inf)
    step.stop_tuning()
    assert chain.candidate == int(np.argmax(jumps))


def test_competence():
    with pm.Model():
        k = pm.Poisson("k", 3.0)
        x = pm.Normal("x")
    assert KAMH.competence(k, False) == pm.step_methods.compound.Competence.INCOMPATIBLE
    assert KAMH.competence(x, False) == pm.step_methods.compound.Competence.COMPATIBLE


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"subsample_size": 0}, "subsample_size"),
        ({"gamma": -1.0}, "gamma"),
        ({"gamma": float("nan")}, "gamma"),
        ({"nu2": 0.0}, "nu2"),
        ({"target_accept": 1.5}, "target_accept"),
        ({"refresh_interval": 0}, "refresh_interval"),
        ({"min_history": 1}, "min_history"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    with correlated_gaussian_model():
        with pytest.raises(ValueError, match=match):
            KAMH(**kwargs)


@pytest.mark.parametrize("cls", [KAMH, AdaptiveMetropolis])
def test_unknown_keyword_names_the_public_class(cls):
    with correlated_gaussian_model():
        with pytest.raises(TypeError, match=rf"^{cls.__name__}\.__init__\(\).*subsample"):
            cls(subsample=10)


def test_adaptive_metropolis_signature_is_explicit_and_has_no_kernel():
    import inspect

    parameters = inspect.signature(AdaptiveMetropolis).parameters
    assert "kwargs" not in parameters and "kernel" not in parameters
    # moves="learned" is KAMH's; AdaptiveMetropolis stays the baseline (Haario's)
    assert set(parameters) == set(inspect.signature(KAMH).parameters) - {"moves"}
    with correlated_gaussian_model():
        with pytest.raises(TypeError, match="kernel"):
            AdaptiveMetropolis(kernel=GaussianKernel(1.0))
        with pytest.raises(ValueError, match="linear"):
            AdaptiveMetropolis(proposal=KAMProposal(kernel=GaussianKernel(1.0)))


def test_pickle_round_trip_steps_identically():
    """A cloudpickled step (as sent to spawn/forkserver workers) makes the same transitions."""
    model = correlated_gaussian_model()
    with model:
        step = KAMH(proposal=KAMProposal(min_history=20))
    clone = pickle.loads(cloudpickle.dumps(step))
    point = model.initial_point()
    runs = []
    for candidate in (step, clone):
        candidate.setup_chain(np.random.default_rng(9), tune=100, draws=50)
        current, draws = dict(point), []
        for _ in range(150):
            current, _ = candidate.step(current)
            draws.append(current["x"])
        runs.append(np.array(draws))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert clone.chain.kam.ready  # the KAMH phase was reached


def test_frozen_after_tuning():
    """By default the kernel is fixed after tuning: ν², γ and the lengthscale stop changing."""
    model = correlated_gaussian_model()
    with model:
        idata = pm.sample(
            step=KAMH(),
            tune=500,
            draws=300,
            chains=1,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    for name in ("nu2", "gamma", "lengthscale"):
        values = idata.sample_stats[name].values
        assert np.all(values == values[0, 0]), name


def test_diminishing_adaptation_keeps_adapting():
    model = correlated_gaussian_model()
    with model:
        idata = pm.sample(
            step=KAMH(adapt_after_tuning=True),
            tune=300,
            draws=300,
            chains=1,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    assert np.unique(idata.sample_stats.nu2.values).size > 10


def test_a_chain_stuck_on_one_state_keeps_its_learned_proposal():
    """A pseudo-marginal chain that accepts one lucky estimate sits on one state: the recent
    history then holds that state only, the kernel's features vanish there, and ν² used to be
    rescaled to ~1e59 until every proposal was degenerate and rejected without evaluation
    (seen on the ABC target). The learned proposal must stay as it was, every proposal be
    evaluated but the null snooker moves onto the stuck state itself, and ν² stay within its
    bounds."""
    stats_ = sample_stuck_on_a_lucky_estimate(KAMH)
    assert stats_["accepted"][450:].sum() == 0  # stuck on the lucky estimate, as it should be
    null = np.isin(stats_["move"][1:], NULL_MOVES)
    assert np.all((stats_["logp_evals"][1:] >= 1) | null)  # every other proposal evaluated
    nu2 = stats_["nu2"][np.isfinite(stats_["nu2"])]
    assert nu2.size and nu2.max() < 1e8
