"""KMCLite (with the paper's score-matched surrogate; the regression surrogate, KMCLite's
default, has its own module) and KMCFinite: exactness with a frozen surrogate, adaptation,
pm.sample, bad input."""

from __future__ import annotations

import copy
import pickle
from functools import partial

import cloudpickle
import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps import KMCFinite, KMCLite
from pymc_kernel_steps.core import kinetic_energy
from pymc_kernel_steps.options import FiniteFeatures, Regression

from ..helpers import (
    CORRELATED_COV,
    CORRELATED_MEAN,
    NULL_MOVES,
    ScoreMatchingKMCLite,
    assert_moments,
    correlated_gaussian_model,
    sample_stuck_on_a_lucky_estimate,
)

KMC_STEPS = [ScoreMatchingKMCLite, KMCFinite]
QUIET = dict(progressbar=False, compute_convergence_checks=False)


@pytest.fixture(params=KMC_STEPS, ids=lambda cls: cls.__name__)
def kmc_class(request):
    return request.param


def _frozen_step(cls, model, history, seed=0, draws=1, freeze=True, **kwargs):
    """A step warm-started on ``history`` (``history=``: its surrogate fitted to it with fixed
    ℓ, λ before the first iteration) and then frozen, for a chain of ``draws`` iterations."""
    kwargs = {"lengthscale": 2.0, "regularization": 1.0, **kwargs}
    with model:
        step = cls(history=history, **kwargs)
    step.setup_chain(np.random.default_rng(seed), tune=1, draws=draws)
    if freeze:
        step.stop_tuning()
    return step


def _run(step, start, iterations):
    point = {"x": np.array(start, dtype=float)}
    draws = np.empty((iterations, len(start)))
    for i in range(iterations):
        point, _ = step.step(point)
        draws[i] = point["x"]
    return draws


# ---------------------------------------------------------------- exactness
def assert_frozen_trajectories_reversible(step, rng, trials=10):
    """The step's surrogate HMC move from states of the correlated Gaussian: the trajectory it
    reports ends at the proposal, the one from (y, −p') returns to (x, −p), and the log
    correction is the kinetic-energy change. A trajectory aborted (all NaN: it left the abort
    ball, or diverged) is skipped; at most a fifth may be."""
    hmc = step.chain.hmc
    aborted = 0
    for _ in range(trials):
        x = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV)
        proposal = hmc.propose(rng, x)
        trajectory = proposal.extra
        momentum, y = trajectory.momentum, proposal.x
        assert step.n_steps_range[0] <= trajectory.n_steps <= step.n_steps_range[1]
        integrate = partial(
            hmc.integrate, step_size=trajectory.step_size, n_steps=trajectory.n_steps
        )
        end, end_momentum = integrate(hmc.frame.whiten(x), momentum)
        np.testing.assert_allclose(y, hmc.frame.unwhiten(end), rtol=1e-12)
        if not np.all(np.isfinite(y)):  # rejected without evaluating the model
            assert not proposal.evaluated
            aborted += 1
            continue
        assert proposal.log_correction == pytest.approx(
            kinetic_energy(momentum, hmc.inv_mass) - kinetic_energy(end_momentum, hmc.inv_mass)
        )
        back, back_momentum = integrate(hmc.frame.whiten(y), -end_momentum)
        np.testing.assert_allclose(hmc.frame.unwhiten(back), x, atol=1e-8)
        np.testing.assert_allclose(-back_momentum, momentum, atol=1e-8)
        assert np.linalg.norm(y - x) > 1e-3  # the trajectory moves
    assert aborted <= trials // 5


def test_frozen_proposal_is_reversible_and_ratio_is_the_hamiltonian(kmc_class):
    """Replaying the step's draws: the trajectory from (y, −p') returns to (x, −p), and the log
    correction is the kinetic-energy change, antisymmetric between the two directions."""
    rng = np.random.default_rng(1)
    history = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=300)
    step = _frozen_step(
        kmc_class, correlated_gaussian_model(), history, moves="fixed", random_walk_probability=0.0
    )
    assert_frozen_trajectories_reversible(step, rng)


def test_diverging_marks_non_finite_trajectories_and_unevaluated_proposals(kmc_class):
    """`diverging` is True for a trajectory that ends where the true log density is -inf and
    for a proposal rejected without evaluation; never for random-walk moves or ordinary
    rejections."""
    import pytensor.tensor as pt

    rng = np.random.default_rng(4)
    history = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=300)
    model = correlated_gaussian_model()
    with model:  # a hard wall through the bulk: many trajectories end outside the support
        pm.Potential("wall", pt.switch(model["x"][0] > CORRELATED_MEAN[0], -np.inf, 0.0))
    step = _frozen_step(kmc_class, model, history, moves="fixed", random_walk_probability=0.3)
    point = {"x": np.array(CORRELATED_MEAN, dtype=float) - 0.5}
    seen = []
    for _ in range(300):
        point, (stats,) = step.step(point)
        seen.append(stats)
    diverging = np.array([s["diverging"] for s in seen])
    surrogate = np.array([s["surrogate"] for s in seen])
    finite_energy = np.isfinite([s["energy_error"] for s in seen])
    np.testing.assert_array_equal(diverging, surrogate & ~finite_energy)
    assert 0 < diverging.sum() < len(seen)
    assert not diverging[~surrogate].any()

    def degenerate(*args):  # a trajectory that blew up: rejected without evaluating
        return np.full(step.dim, np.nan), np.full(step.dim, np.nan)

    step = _frozen_step(kmc_class, model, history, moves="fixed", random_walk_probability=0.0)
    step.chain.surrogate.trajectory = degenerate  # trajectories only, all of them blown up
    point, (stats,) = step.step(point)
    point, (stats,) = step.step(point)  # (the first iteration evaluates the starting point)
    assert stats["diverging"] and stats["logp_evals"] == 0


@pytest.mark.parametrize(("abort_every", "warned"), [(1, True), (10, False)])
def test_aborted_trajectories_are_counted_apart_and_warned_of_when_they_dominate(
    kmc_class, abort_every, warned
):
    """An aborted surrogate trajectory (it diverged, or left the abort ball) is rejected without
    evaluating the model and marked ``diverging``. One in ten is the price of long steps where
    the surrogate is steep and earns no warning (nor counts as a degenerate proposal); when
    every trajectory aborts, the end-of-chain warning says so and names the stat."""
    rng = np.random.default_rng(5)
    history = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=300)
    step = _frozen_step(
        kmc_class,
        correlated_gaussian_model(),
        history,
        draws=199,
        moves="fixed",
        random_walk_probability=0.0,
    )  # a chain of 200 iterations, for the end-of-chain warning
    trajectory, calls = step.chain.surrogate.trajectory, {"n": 0}

    def sometimes_aborted(*args):
        calls["n"] += 1
        if calls["n"] % abort_every == 0:
            return np.full(step.dim, np.nan), np.ones(step.dim)
        return trajectory(*args)

    step.chain.surrogate.trajectory = sometimes_aborted
    point, warnings, diverging = {"x": CORRELATED_MEAN.copy()}, [], 0
    for i in range(200):
        point, (stats,) = step.step(point)
        if stats["diverging"] and i > 0:  # the first iteration evaluates the starting point
            assert stats["logp_evals"] == 0
        diverging += stats["diverging"]
        warnings.append(stats["warning"])
    assert diverging == 200 // abort_every
    # counted apart: not as degenerate proposals (whose warning would say so)
    assert warnings[-1] is None or "degenerate" not in warnings[-1].message
    assert all(w is None for w in warnings[:-1])
    if warned:
        assert "200 of 200 surrogate trajectories diverged" in warnings[-1].message
        assert "`diverging`" in warnings[-1].message
        # and what to do, since PyMC's divergence check advises NUTS's 'Increase target_accept'
        assert "200 of 200 draws after tuning are `diverging`" in warnings[-1].message
        assert "'Increase `target_accept`' is NUTS's" in warnings[-1].message
    else:
        assert warnings[-1] is None


@pytest.mark.slow
def test_frozen_wrong_surrogate_still_samples_the_target(kmc_class):
    """A surrogate fitted to the wrong distribution (shifted, uncorrelated, too wide) only costs
    efficiency: with the true density in the acceptance ratio the moments are the target's."""
    rng = np.random.default_rng(2)
    wrong = rng.normal(CORRELATED_MEAN + 0.5, 1.5, size=(400, 4))
    step = _frozen_step(
        kmc_class,
        correlated_gaussian_model(),
        wrong,
        seed=3,
        moves="fixed",
        random_walk_probability=0.0,
    )
    draws = _run(step, CORRELATED_MEAN, 12000)
    assert_moments(draws[None], CORRELATED_MEAN, np.diag(CORRELATED_COV))


# ---------------------------------------------------------------- adaptation and stats
def test_random_walk_phase_then_surrogate_then_frozen(kmc_class):
    model = correlated_gaussian_model()
    with model:
        step = kmc_class(min_history=60, moves="fixed", random_walk_probability=0.1)
        idata = pm.sample(
            step=step, tune=400, draws=200, chains=1, cores=1, random_seed=4,
            discard_tuned_samples=False, **QUIET,
        )  # fmt: skip
    warm = idata.warmup_sample_stats
    surrogate = warm.surrogate.values[0]
    # the first fit: at min_history states, once the random walk has made 20 accepted moves
    first = int(np.argmax(warm.refit.values[0]))
    assert first >= 59
    assert warm.accepted.values[0, : first + 1].sum() >= 20
    assert warm.accepted.values[0, :first].sum() < 20 or first == 59
    assert not surrogate[: first + 1].any()
    # afterwards a trajectory, except for the random-walk share of the mixture and the
    # coordinate-wise tuning moves
    later = surrogate[first + 1 :]
    expected = (1 - kmc_class.coordinate_share_late) * (1 - 0.1)
    assert abs(later.mean() - expected) < 4 * np.sqrt(expected * (1 - expected) / later.size)
    assert np.all(np.isnan(warm.step_size.values[0, : first + 1]))
    np.testing.assert_array_equal(warm.n_history.values[0], np.arange(1, 401))
    post = idata.sample_stats
    assert not post.refit.values.any()
    for name in ("lengthscale",):
        assert np.unique(post[name].values).size == 1
    trajectories = post.surrogate.values
    assert np.all(post.n_steps.values[trajectories] >= 10)
    assert np.all(post.n_steps.values[trajectories] <= 30)
    assert np.all(post.n_steps.values[~trajectories] == 0)
    assert np.unique(post.step_size.values[trajectories]).size > 100  # jittered per iteration


def test_step_size_adaptation_targets(kmc_class):
    """Dual averaging responds to its target: a lower target acceptance gives larger steps and,
    while it adapts, a lower acceptance. The targets stay clear of the step sizes where the
    response stops: target 0.3 asks for steps past the stability limit of the surrogate's far
    field, where every step is capped (it froze ε = 0.64 against 1.23 at target 0.5); before the
    cap it once froze ε = 2.07 on this whitened 4-d Gaussian, past the limit 2 of even the exact
    Gaussian. The surrogate's error caps the acceptance and makes it non-monotone in the step
    size near that limit, the reason why the ESJD search is the default; see docs/samplers.md."""
    results = {}
    for target in (0.5, 0.8):
        with correlated_gaussian_model():
            idata = pm.sample(
                step=kmc_class(step_size_adaptation="dual_averaging", target_accept=target),
                tune=1500, draws=1000, chains=1, cores=1, random_seed=5,
                discard_tuned_samples=False, **QUIET,
            )  # fmt: skip
        stats, warm = idata.sample_stats, idata.warmup_sample_stats
        trajectories = stats.surrogate.values
        adapting = warm.surrogate.values[0] & (np.arange(1500) >= 750)
        results[target] = (
            float(np.median(stats.step_size.values[trajectories])),
            float(warm.accept.values[0][adapting].mean()),
        )
    assert results[0.5][0] > results[0.8][0]
    assert results[0.5][1] < results[0.8][1]


def _half_normal_model():
    """A half-normal on x ≤ 0 whose log density is NaN for x > 0: the mode sits at the edge of
    the support, and a score-matched surrogate of it is far steeper than the target."""
    import pytensor.tensor as pt

    model = pm.Model()
    with model:
        x = pm.Flat("x", shape=1)
        pm.Potential("half", pt.switch(x[0] > 0, np.nan, -0.5 * x[0] ** 2))
    return model


def test_frozen_step_size_is_within_the_surrogates_stability_limit(kmc_class):
    """A step size past the leapfrog's stability limit on the surrogate is never frozen: there
    every trajectory blows up and is rejected (a frozen KMCLite once accepted 0 of 240
    trajectories on this target, with a surrogate gradient ~100× the target's and ε = 1 against
    a limit of ~0.25). The frozen step size keeps the surrogate's own Hamiltonian, and
    trajectories are accepted."""
    rng = np.random.default_rng(12)
    history = -np.abs(rng.standard_normal((300, 1)))
    step = _frozen_step(
        kmc_class, _half_normal_model(), history, lengthscale=3.0, regularization=1e-3,
        step_size=2.0, moves="fixed", random_walk_probability=0.0,
    )  # fmt: skip
    chain = step.chain
    assert chain.step_size < 2.0
    trials = np.random.default_rng(13)
    starts = chain.whitening.whiten(history[trials.integers(300, size=40)])
    momenta = trials.standard_normal((40, 1)) / np.sqrt(chain.inv_mass)
    n_steps = trials.integers(10, 31, size=40)
    assert chain.hmc.surrogate_acceptance(chain.step_size, starts, momenta, n_steps) >= 0.5
    assert chain.hmc.surrogate_acceptance(2.0, starts, momenta, n_steps) < 0.1
    point, accepted = {"x": np.array([-0.5])}, []
    for _ in range(200):
        point, (stats,) = step.step(point)
        accepted.append(stats["accepted"])
    assert np.mean(accepted) > 0.3


def test_stability_check_leaves_a_stable_step_size_and_the_random_stream_alone(kmc_class):
    """On a well-fitted surrogate the check keeps the step size, and it draws from its own
    generator: the chain's random stream is the same with and without it."""
    rng = np.random.default_rng(14)
    history = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=300)
    step = _frozen_step(
        kmc_class, correlated_gaussian_model(), history, step_size=0.3, freeze=False
    )
    recent = step.chain.history.points[150:]  # the states the check starts from
    assert step.chain.hmc.stable_step_size(0.3, recent, threshold=0.5) == 0.3
    state = copy.deepcopy(step.rng.bit_generator.state)
    step.stop_tuning()  # which checks the tuned step size
    assert step.rng.bit_generator.state == state


def test_no_trajectory_runs_past_the_far_field_stability_limit(kmc_class):
    """Beyond the confining wall only its curvature acts, and a leapfrog step past
    ``2/√(max M⁻¹ · stiffness)`` grows a trajectory that leaves the history geometrically (a
    regression trajectory on the glass model reached 10⁹ during tuning and the model was
    evaluated there; here, 1.2× the limit sends proposals to 10¹³). Whatever the tuner asks for,
    every proposal's step size stays below the limit, and proposals stay within a few wall radii
    (the leapfrog's amplitude error near its limit carries some past the wall, and past twice
    the wall radius a trajectory is aborted: rejected without evaluating the model)."""
    rng = np.random.default_rng(15)
    history = rng.multivariate_normal(CORRELATED_MEAN, CORRELATED_COV, size=300)
    model = correlated_gaussian_model()
    # in the model's coordinates (whiten=False), where the warm start fits what the test was
    # written for: the surrogate of the states as they are
    step = _frozen_step(
        kmc_class, model, history, moves="fixed", random_walk_probability=0.0, whiten=False
    )
    limit = step.chain.far_field_step_size_limit
    hmc = copy.deepcopy(step.chain.hmc)  # the frozen move, out of the step
    expected = 0.9 * 2.0 / np.sqrt(np.max(hmc.inv_mass) * hmc.confinement.stiffness)
    assert limit == pytest.approx(expected)
    hmc.step_size = 20.0 * limit  # as a tuner that drifted past it
    aborted, proposals = 0, np.random.default_rng(16)
    for _ in range(50):
        proposal = hmc.propose(proposals, history[-1])
        assert proposal.extra.step_size <= limit
        u = hmc.frame.whiten(proposal.x)
        if not np.all(np.isfinite(u)):
            aborted += 1
            continue
        assert np.sqrt(u @ u) <= hmc.confinement.abort_radius
    assert aborted <= 10  # at 1.2× the limit every trajectory grows geometrically: 50 of 50
    unconfined = _frozen_step(kmc_class, model, history, confine=False)
    assert unconfined.chain.far_field_step_size_limit == np.inf


def test_adapt_after_tuning_keeps_refitting():
    model = correlated_gaussian_model()
    with model:
        idata = pm.sample(
            step=KMCLite(surrogate=Regression(refit_interval=20), adapt_after_tuning=True),
            tune=300, draws=600, chains=1, cores=1, random_seed=6, **QUIET,
        )  # fmt: skip
    assert idata.sample_stats.refit.values.sum() > 3


def test_finite_updates_online_during_tuning():
    model = correlated_gaussian_model()
    with model:
        step = KMCFinite(surrogate=FiniteFeatures(n_features=50, min_history=50))
        idata = pm.sample(
            step=step, tune=200, draws=10, chains=1, cores=1, random_seed=8,
            discard_tuned_samples=False, **QUIET,
        )  # fmt: skip
    # the batch fit at the last selection used the recent half of the history; every tuning
    # state since entered online. The first fit (the first `refit`) selects, and each selection
    # the next when the history has doubled.
    stats = idata.warmup_sample_stats
    selected_at = int(stats.n_history.values[0][np.argmax(stats.refit.values[0])])
    while 2 * selected_at <= 200:
        selected_at *= 2
    assert step.chain.surrogate.n_points == 200 - selected_at // 2


def test_unwhitened_option_samples():
    model = correlated_gaussian_model()
    with model:
        idata = pm.sample(
            step=ScoreMatchingKMCLite(whiten=False, confine=False), tune=600, draws=600,
            chains=1, cores=1, random_seed=9, **QUIET,
        )  # fmt: skip
    assert float(idata.sample_stats.accept.mean()) > 0.2


def assert_pickled_clone_steps_identically(step, model):
    """The step and its cloudpickle round trip, each run for 150 tuning and 20 frozen
    iterations from the same seed, give identical draws; returns the clone."""
    clone = pickle.loads(cloudpickle.dumps(step))
    runs = []
    for candidate in (step, clone):
        candidate.setup_chain(np.random.default_rng(10), tune=150, draws=20)
        point, draws = model.initial_point(), []
        for i in range(170):
            if i == 150:
                candidate.stop_tuning()
            point, _ = candidate.step(point)
            draws.append(point["x"])
        runs.append(np.array(draws))
    np.testing.assert_array_equal(runs[0], runs[1])
    return clone


def test_pickle_round_trip_steps_identically(kmc_class):
    model = correlated_gaussian_model()
    with model:
        step = kmc_class(min_history=30)
    clone = assert_pickled_clone_steps_identically(step, model)
    assert clone.chain.surrogate is not None


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_steps": 0}, "n_steps"),
        ({"n_steps": (5, 2)}, "n_steps"),
        ({"n_steps": (1, 2, 3)}, "n_steps"),
        ({"step_size": -0.1}, "step_size"),
        ({"step_size_adaptation": "newton"}, "step_size_adaptation"),
        ({"target_accept": 1.0, "step_size_adaptation": "dual_averaging"}, "target_accept"),
        ({"target_accept": 0.8}, "step_size_adaptation='dual_averaging'"),
        ({"step_size_jitter": 1.0}, "Trajectory.jitter"),
        ({"lengthscale": -1.0}, "lengthscale"),
        ({"lengthscale": float("nan")}, "lengthscale"),
        ({"regularization": 0.0}, "regularization"),
        ({"min_history": 1}, "min_history"),
        ({"moves": "fixed", "random_walk_probability": 1.0}, "random_walk_probability"),
        ({"moves": "fixed", "random_walk_probability": -0.1}, "random_walk_probability"),
    ],
)
def test_bad_parameters_raise(kmc_class, kwargs, match):
    with correlated_gaussian_model():
        with pytest.raises(ValueError, match=match):
            kmc_class(**kwargs)


@pytest.mark.parametrize(
    "cls, kwargs, match",
    [
        (KMCLite, {"subsample_size": 0}, "subsample_size"),
        (KMCFinite, {"n_features": 0}, "n_features"),
        (KMCLite, {"refit_interval": 0}, "refit_interval"),
    ],
)
def test_bad_sizes_raise(cls, kwargs, match):
    with correlated_gaussian_model():
        with pytest.raises(ValueError, match=match):
            cls(**kwargs)


@pytest.mark.parametrize("public_class", [KMCLite, KMCFinite], ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("keyword", ["n_feature", "refit_interval_typo"])
def test_unknown_keyword_names_the_public_class(public_class, keyword):
    with correlated_gaussian_model():
        with pytest.raises(TypeError, match=rf"^{public_class.__name__}\.__init__\(\).*{keyword}"):
            public_class(**{keyword: 1})


def test_finite_has_no_refit_interval():
    """KMCFinite updates its fit with every adapting iteration: a refit interval would do
    nothing, so it is not accepted."""
    with correlated_gaussian_model():
        with pytest.raises(TypeError, match="refit_interval"):
            KMCFinite(refit_interval=10)


@pytest.mark.parametrize("kmc_class", [KMCLite, KMCFinite], ids=lambda cls: cls.__name__)
def test_signature_and_help_show_the_real_parameters(kmc_class):
    import inspect
    import pydoc

    parameters = inspect.signature(kmc_class).parameters
    assert "kwargs" not in parameters and "deprecated" not in parameters
    for name in ("surrogate", "trajectory", "moves", "warmup", "history", "rng"):
        assert name in parameters
    text = pydoc.render_doc(kmc_class, renderer=pydoc.plaintext)
    assert "Create the ArrayStepShared object" not in text
    assert "trajectory : Trajectory" in text


@pytest.mark.slow
def test_vanishing_adaptation_through_the_draws_keeps_the_moments(kmc_class):
    """adapt_after_tuning=True (the papers' vanishing adaptation) still gives the target's
    moments on the correlated Gaussian."""
    with correlated_gaussian_model():
        idata = pm.sample(
            step=kmc_class(adapt_after_tuning=True), tune=1000, draws=4000, chains=2, cores=1,
            random_seed=11, **QUIET,
        )  # fmt: skip
    assert idata.sample_stats.refit.values.any()
    draws = np.asarray(idata.posterior.x.values)
    assert_moments(draws, CORRELATED_MEAN, np.diag(CORRELATED_COV))


def test_a_chain_stuck_on_one_state_keeps_its_surrogate(kmc_class):
    """A pseudo-marginal chain that accepts one lucky estimate sits on one state; the history
    then holds that state only and the hyper-parameter selection crashed (the median heuristic
    of identical states), seen on the ABC target. The surrogate must be kept and sampling go on
    with every proposal evaluated, but for trajectories aborted far out (``diverging``: while
    tuning, the step-size search tries long steps from the stuck state)."""
    stats_ = sample_stuck_on_a_lucky_estimate(kmc_class)
    assert stats_["accepted"][450:].sum() == 0  # stuck on the lucky estimate, as it should be
    assert stats_["surrogate"][-300:].any()  # the surrogate fitted before is still used
    # not evaluated: aborted trajectories, and snooker moves onto the state itself (the
    # population is copies of the stuck state), which are null moves
    evaluated = stats_["logp_evals"][1:] >= 1
    null = np.isin(stats_["move"][1:], NULL_MOVES)
    assert np.all(evaluated | stats_["diverging"][1:].astype(bool) | null)
    assert np.all((evaluated | null)[-300:])


# ---------------------------------------------------------------- warm start (history=)
def _wrong_warm_states(n=400, seed=5):
    """States from a Gaussian that is shifted and differently shaped from the target, so that a
    surrogate fitted to them is wrong: exactness must not depend on them."""
    rng = np.random.default_rng(seed)
    return CORRELATED_MEAN + 0.5 + 1.5 * rng.standard_normal((n, 4))


@pytest.mark.slow
def test_warm_start_fits_before_the_first_draw_and_the_fixed_kernel_samples_the_target(
    kmc_class,
):
    """A kernel fitted to wrong warm-start states, fixed (tune=0), samples the target (MCSE
    z-tests). Four chains of 3000 draws: with two, seed 7 gave ScoreMatchingKMCLite a bulk
    ESS of 93 on one coordinate (200-240 on the others), under the 100 below which the
    z-tests mean nothing (a run that tests nothing, not a wrong kernel); four chains double
    the ESS and show more of the chains' disagreement in the MCSE."""
    states = _wrong_warm_states()
    given = states.copy()
    with correlated_gaussian_model():
        step = kmc_class(history=states)
        idata = pm.sample(step=step, tune=0, draws=3000, chains=4, cores=1, random_seed=3, **QUIET)
    stats = idata.sample_stats
    # every chain starts from the given states, with a surrogate and no random-walk phase
    np.testing.assert_array_equal(stats.n_history.values[:, 0], len(states) + 1)
    assert stats.surrogate.values[:, :20].any(axis=1).all()
    assert not stats.refit.values.any()  # tune=0: nothing adapts, the kernel is fixed
    np.testing.assert_array_equal(states, given)  # the user's array is not modified
    assert_moments(np.asarray(idata.posterior.x.values), CORRELATED_MEAN, np.diag(CORRELATED_COV))


def test_warm_start_chooses_the_lengthscale_once_for_every_chain(kmc_class, monkeypatch):
    """The score-matching surrogates' (ℓ, λ) of a warm start are chosen by cross-validation
    once, when the step is built (from the states alone), not again in every chain: the
    chains and a pickled copy get the same, whatever their generators."""
    import pymc_kernel_steps.core.surrogates.score_matching as fitters

    calls = []

    def spy(*args, **kwargs):
        calls.append(1)
        return select_hyperparameters(*args, **kwargs)

    select_hyperparameters = fitters.select_hyperparameters
    monkeypatch.setattr(fitters, "select_hyperparameters", spy)
    with correlated_gaussian_model():
        step = kmc_class(history=_wrong_warm_states())
    assert len(calls) == 1
    chosen = []
    for candidate, seed in ((step, 0), (step, 1), (pickle.loads(cloudpickle.dumps(step)), 2)):
        candidate.setup_chain(np.random.default_rng(seed), tune=0, draws=10)
        chosen.append((candidate.chain.lengthscale, candidate.chain.regularization))
    assert len(calls) == 1
    assert len(set(chosen)) == 1, chosen


def test_warm_start_with_tune_0_gives_every_move_of_the_fixed_mixture_the_states(kmc_class):
    # the history is given before the mixture freezes: differential evolution and snooker draw
    # from the given states and the envelope is fitted to them (not left unready for good)
    states = _wrong_warm_states()
    with correlated_gaussian_model():
        step = kmc_class(history=states)
    step.setup_chain(np.random.default_rng(1), tune=0, draws=10)
    learned = step.chain.learned_moves
    assert learned.frozen
    assert all(move.ready for move in learned.moves), [m.kind for m in learned.moves]
    de = learned.moves[1]
    assert de.population_size - de.population_start >= len(states) // 2


def test_warm_start_from_an_earlier_run_with_transformed_variables(kmc_class):
    def model():
        with pm.Model() as m:
            s = pm.HalfNormal("s", 2.0)
            pm.Normal("x", 0.0, s, shape=2)
        return m

    with model():
        pilot_step = kmc_class(min_history=50)
        plain = pm.sample(step=pilot_step, tune=100, draws=100, chains=1, random_seed=1, **QUIET)
        # without include_transformed, s_log__ is computed from the draws of s
        from_constrained = kmc_class(history=plain).warm_history
        np.testing.assert_allclose(
            from_constrained[:, 0], np.log(plain.posterior.s.values.reshape(-1)), rtol=1e-12
        )
        pilot = pm.sample(
            step=kmc_class(min_history=50), tune=100, draws=100, chains=2, random_seed=1,
            idata_kwargs={"include_transformed": True}, **QUIET,
        )  # fmt: skip
        step = kmc_class(history=pilot)
        assert step.warm_history.shape == (200, 3)
        # the step's coordinates: s_log__ then x, as pm.sample ravels them
        np.testing.assert_allclose(
            step.warm_history[:, 0], pilot.posterior.s_log__.values.reshape(-1)
        )
        step.setup_chain(np.random.default_rng(0), tune=10, draws=10)
        assert step.chain.surrogate is not None
        assert len(step.chain.history) == 200
        clone = cloudpickle.loads(cloudpickle.dumps(step))
        np.testing.assert_array_equal(clone.warm_history, step.warm_history)


@pytest.mark.parametrize(
    "history, match",
    [
        (np.zeros((50, 3)), r"`history` must have shape \(n, 4\)"),
        (np.zeros(4), r"`history` must have shape \(n, 4\)"),
        (np.ones((50, 4)), r"most recent half holds 1 distinct states; .* at least 10"),
        (  # distinct states, then a chain stuck on one: the half a fit learns from is stuck
            np.vstack([np.arange(200.0)[:, None] * np.ones(4), np.ones((300, 4))]),
            r"`history`'s most recent half holds 1 distinct states",
        ),
        (np.full((50, 4), np.nan), r"`history` holds non-finite values"),
        ("states", r"`history` must have shape|`history` must be an ArviZ"),
    ],
)
def test_bad_warm_start_names_the_parameter(kmc_class, history, match):
    with correlated_gaussian_model(), pytest.raises((ValueError, TypeError), match=match):
        kmc_class(history=history)


def test_a_multitrace_as_warm_start_is_named(kmc_class):
    """pm.sample(return_inferencedata=False) gives a MultiTrace, which NumPy cannot convert
    (NotImplementedError without a message): the error says what `history` takes."""
    with correlated_gaussian_model():
        trace = pm.sample(
            tune=20, draws=30, chains=1, cores=1, step=pm.Metropolis(), random_seed=1,
            return_inferencedata=False, progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip
        with pytest.raises(TypeError, match=r"`history` must be an ArviZ DataTree.*MultiTrace"):
            kmc_class(history=trace)
