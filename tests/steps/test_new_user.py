"""What a new user trips on: a non-finite start, discrete variables, a forgotten ``step=``,
messages that mislead (the "new user" issue). Every step class is checked."""

from __future__ import annotations

import logging

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.exceptions import SamplingError
from pytensor.graph.op import Op

from pymc_kernel_steps import CKAM, KAMH, AdaptiveHMC, AdaptiveMetropolis, KMCFinite, KMCLite
from pymc_kernel_steps.options import Trajectory

ALL_STEPS = [KAMH, AdaptiveMetropolis, KMCLite, KMCFinite, CKAM, AdaptiveHMC]
QUIET = dict(progressbar=False, compute_convergence_checks=False)


@pytest.fixture(params=ALL_STEPS, ids=lambda cls: cls.__name__)
def any_step(request):
    return request.param


@pytest.fixture(params=[KMCLite, KMCFinite], ids=lambda cls: cls.__name__)
def any_kmc(request):
    return request.param


# ---------------------------------------------------------------- A. a non-finite start
@pytest.mark.parametrize("cores", [1, 2])
def test_non_finite_start_raises_naming_the_variables_and_values(any_step, cores):
    """``initvals`` outside the support: an error naming the starting values, as NUTS gives,
    rather than all-NaN draws and a generic warning."""
    with pm.Model():
        pm.HalfNormal("s")
        pm.Normal("m")
        with pytest.raises(Exception) as info:
            pm.sample(
                step=any_step(),
                initvals={"s": -1.0},
                tune=20,
                draws=20,
                chains=cores,
                cores=cores,
                random_seed=1,
                **QUIET,
            )
    error = info.value
    messages = []
    while error is not None:
        messages.append(str(error))
        error = error.__cause__
    message = "\n".join(messages)
    if cores == 1:
        assert isinstance(info.value, SamplingError)
    assert "Initial evaluation of model at starting point failed" in message
    assert any_step.__name__ in message
    assert "'s_log__': nan" in message and "'m': 0.0" in message


def test_minus_infinite_start_is_an_error_too(any_step):
    with pm.Model():
        pm.Uniform("u", 0.0, 1.0, default_transform=None)
        with pytest.raises(SamplingError, match=r"'u': 2\.0"):
            pm.sample(
                step=any_step(),
                initvals={"u": 2.0},
                tune=20,
                draws=20,
                chains=1,
                cores=1,
                **QUIET,
            )


# ---------------------------------------------------------------- B. discrete variables
def test_vars_none_takes_the_continuous_variables_and_pymc_assigns_the_rest(any_step):
    with pm.Model():
        rate = pm.HalfNormal("rate", 3.0)
        pm.Poisson("k", rate)
        pm.Poisson("y", rate, observed=[1, 2, 3])
        step = any_step()
        assert [v.name for v in step.vars] == ["rate_log__"]
        idata = pm.sample(step=step, tune=50, draws=50, chains=1, cores=1, random_seed=2, **QUIET)
    k = idata.posterior["k"].values
    assert np.all(k >= 0) and len(np.unique(k)) > 1  # sampled by PyMC's Metropolis
    assert np.all(np.isfinite(idata.posterior["rate"].values))


def test_an_explicit_discrete_variable_is_an_error_naming_it(any_step):
    with pm.Model():
        rate = pm.HalfNormal("rate", 3.0)
        k = pm.Poisson("k", rate)
        with pytest.raises(ValueError, match="'k' is discrete"):
            any_step([rate, k])


def test_a_model_without_continuous_variables_is_an_error(any_step):
    with pm.Model():
        pm.Poisson("k", 3.0)
        with pytest.raises(ValueError, match="no continuous"):
            any_step()


# ---------------------------------------------------------------- D. messages that mislead
def test_target_accept_error_says_what_to_do(any_kmc):
    with pm.Model():
        pm.Normal("x", shape=2)
        with pytest.raises(ValueError) as info:
            any_kmc(trajectory=Trajectory(target_accept=0.9))
    message = str(info.value)
    assert "Trajectory(step_size_adaptation='dual_averaging', target_accept=0.9)" in message
    assert "diverging" in message and "does not bias the draws" in message
    with pm.Model():  # and the call it suggests works
        pm.Normal("x", shape=2)
        any_kmc(trajectory=Trajectory(step_size_adaptation="dual_averaging", target_accept=0.9))


@pytest.mark.parametrize("step_class", [KMCLite, KMCFinite, AdaptiveHMC])
def test_energy_stat_makes_plot_energy_work(step_class):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import arviz as az
    import matplotlib.pyplot as plt

    with pm.Model():
        pm.Normal("x", shape=3)
        idata = pm.sample(
            step=step_class(), tune=300, draws=300, chains=2, cores=1, random_seed=4, **QUIET
        )
    stats = idata.sample_stats
    energy = stats["energy"].values
    assert np.all(np.isfinite(energy))
    # the Hamiltonian: minus the log density plus a kinetic energy ½ pᵀM⁻¹p ≥ 0
    kinetic = energy + stats["lp"].values
    assert np.all(kinetic >= 0)
    # p ~ N(0, M) at every iteration: E[½ pᵀM⁻¹p] = d/2 = 1.5 (the kept momentum of a trajectory
    # is close to that in distribution)
    assert 1.0 < kinetic.mean() < 2.2
    az.plot_energy(idata, backend="matplotlib")
    plt.close("all")
    bfmi = az.bfmi(idata)["energy"].values
    assert np.all(np.isfinite(bfmi)) and np.all(bfmi > 0.3)


@pytest.mark.parametrize(
    "step_class, kwargs, name",
    [
        (KMCLite, {"step_size": "0.1"}, "step_size"),
        (KMCFinite, {"step_size": "0.1"}, "step_size"),
        (KMCLite, {"lengthscale": "1"}, "lengthscale"),
        (
            KMCLite,
            {"target_accept": "0.9", "step_size_adaptation": "dual_averaging"},
            "target_accept",
        ),
        (KMCLite, {"moves": "fixed", "random_walk_probability": "0.1"}, "random_walk_probability"),
        (KAMH, {"target_accept": "0.3"}, "target_accept"),
        (KAMH, {"gamma": "0.2"}, "gamma"),
        (CKAM, {"target_accept": "0.3"}, "target_accept"),
        (CKAM, {"exploration_fraction": "0.5"}, "exploration_fraction"),
        (AdaptiveHMC, {"step_size_bounds": ("0.1", 1.0)}, "step_size_bounds"),
    ],
)
def test_a_string_for_a_number_names_the_parameter(step_class, kwargs, name):
    with pm.Model():
        pm.Normal("x", shape=2)
        with pytest.raises(TypeError, match=rf"`(\w+\.)?{name}` must be a number, got '"):
            step_class(**kwargs)


def _pilot(**idata_kwargs):
    with pm.Model() as model:
        pm.HalfNormal("s", 2.0)
        pm.Uniform("u", -1.0, 3.0, shape=2)
        idata = pm.sample(
            step=KAMH(),
            tune=100,
            draws=50,
            chains=2,
            cores=1,
            random_seed=5,
            **QUIET,
            **idata_kwargs,
        )
    return model, idata


def test_history_without_include_transformed_uses_the_models_transforms():
    model, plain = _pilot()
    _, recorded = _pilot(idata_kwargs={"include_transformed": True})
    assert "s_log__" not in plain.posterior and "s_log__" in recorded.posterior
    with model:
        from_constrained = KMCLite(history=plain).warm_history
        from_recorded = KMCLite(history=recorded).warm_history
        from_posterior = KMCLite(history=plain.posterior, surrogate="score_matching").warm_history
    np.testing.assert_allclose(from_constrained, from_recorded, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(from_posterior, from_recorded, rtol=1e-10, atol=1e-12)
    expected_s = np.log(plain.posterior["s"].values.reshape(-1))
    np.testing.assert_allclose(from_constrained[:, 0], expected_s, rtol=1e-12)


def test_history_posterior_alone_with_the_regression_surrogate_says_what_to_pass():
    model, plain = _pilot()
    with model, pytest.raises(ValueError, match=r"`history` is a posterior alone.*history=idata"):
        KMCLite(history=plain.posterior)


# ---------------------------------------------------------------- E. friction
def test_accept_rate_is_the_running_mean_of_each_phase(any_step):
    with pm.Model():
        pm.Normal("x", shape=2)
        idata = pm.sample(
            step=any_step(),
            tune=100,
            draws=100,
            chains=1,
            cores=1,
            random_seed=6,
            discard_tuned_samples=False,
            **QUIET,
        )
    for group in ("warmup_sample_stats", "sample_stats"):
        accept = idata[group]["accept"].values[0]
        running = np.cumsum(accept) / np.arange(1, accept.size + 1)
        np.testing.assert_allclose(idata[group]["accept_rate"].values[0], running, rtol=1e-12)


def test_progress_bar_shows_the_mean_acceptance_and_no_nan_scale(any_step):
    with pm.Model():
        pm.Normal("x", shape=2)
        step = any_step()
    columns, fields = step._progressbar_config(2)
    assert columns[0].get_table_column().header == "Accept rate"
    (update,) = step._make_progressbar_update_functions()
    stats = {"accept": 0.0, "accept_rate": 0.4, "max_n_steps": 3}
    shown = update({**stats, step.progress_scale_stat: float("nan")})
    assert shown["accept_rate"] == 0.4 and shown["kernel_scale"] == ""
    shown = update({**stats, step.progress_scale_stat: 0.25})
    assert shown["kernel_scale"] == "0.25"
    assert set(shown) == set(fields)


# ---------------------------------------------------------------- I. a stuck start
def _ridge_regression_model() -> pm.Model:
    """A 3-d regression with flat priors and two nearly collinear predictors: the posterior is
    a ridge (correlation −0.99995, sds from 10⁻³ to 10⁻¹) around the start at 0."""
    rng = np.random.default_rng(0)
    n = 100
    x1 = rng.normal(size=n)
    predictors = np.column_stack([np.ones(n), x1, x1 + 0.01 * rng.normal(size=n)])
    y = 0.01 * rng.normal(size=n)
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=3)
        pm.Normal("y", predictors @ beta, 0.01, observed=y)
    return model


def test_a_ridge_posterior_accepts_within_a_few_dozen_iterations(any_step):
    """The first moves are sized from the model (second differences at the start), not for a
    round posterior of unit scale: before, every random-walk step accepted nothing for the first
    ~100 iterations here (the same count for every step)."""
    with _ridge_regression_model():
        idata = pm.sample(
            step=any_step(),
            tune=60,
            draws=1,
            chains=1,
            random_seed=1,
            discard_tuned_samples=False,
            **QUIET,
        )
    accepted = idata.warmup_sample_stats["accepted"].values[0]
    assert accepted.any()
    assert np.argmax(accepted > 0) < 30
    assert accepted.mean() > 0.1


def _uncentred_regression_model() -> tuple[pm.Model, np.ndarray, np.ndarray]:
    """Earnings in dollars on height in inches (uncentred), flat priors, started at 0: the
    posterior is a ridge 10⁵ conditional scales from the start, whose conditional scales there
    (10⁻⁷ to 10⁻²) are orders of magnitude below the posterior's (the intercept's sd is 10⁴).
    Returns the model, the least-squares coefficients (the posterior mean of ``beta``) and
    their posterior sds."""
    rng = np.random.default_rng(4)
    n = 200
    height = rng.normal(66.0, 4.0, size=n)
    earn = -60_000.0 + 1_300.0 * height + rng.normal(0.0, 19_000.0, size=n)
    design = np.column_stack([np.ones(n), height])
    coefficients, residuals, *_ = np.linalg.lstsq(design, earn, rcond=None)
    # flat beta, HalfFlat sigma (log-transformed): beta's marginal posterior is a Student t with
    # n - 2 - 1 degrees of freedom around the least-squares fit
    dof = n - 3
    scale2 = residuals[0] / dof * np.linalg.inv(design.T @ design)
    sds = np.sqrt(np.diag(scale2) * dof / (dof - 2))
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=2)
        sigma = pm.HalfFlat("sigma")
        pm.Normal("earn", beta[0] + beta[1] * height, sigma, observed=earn)
    return model, coefficients, sds


@pytest.mark.slow
@pytest.mark.parametrize("step_class", [KMCLite, KMCFinite], ids=lambda c: c.__name__)
def test_a_start_far_from_an_uncentred_regression_still_finds_it(step_class):
    """The scales measured at a start in a transient are not the posterior's: with them as the
    first moves' frame, KMCLite's and KMCFinite's chains on posteriordb's ``earn_height`` ended
    tuning on the ridge hundreds of thousands of dollars from the posterior (error-based ESS
    10⁻¹³ where it was 200-650 with the unit frame). A start that far keeps the unit frame."""
    model, mean, sds = _uncentred_regression_model()
    with model:
        idata = pm.sample(
            step=step_class(), tune=2500, draws=1000, chains=1, random_seed=1, **QUIET
        )
    beta = idata.posterior["beta"].values[0]
    np.testing.assert_array_less(np.abs(beta.mean(axis=0) - mean), 3 * sds)
    np.testing.assert_array_less(beta.std(axis=0), 3 * sds)
    np.testing.assert_array_less(sds / 3, beta.std(axis=0))


class _CountingUnitGaussian(Op):
    """``−½ xᵀx`` of a float64 vector, its evaluations counted; the gradient ``−x`` is a graph of
    its own, so the count is of the log density's evaluations only."""

    itypes = [pt.dvector]
    otypes = [pt.dscalar]

    def __init__(self):
        self.calls = 0

    def perform(self, node, inputs, output_storage):
        self.calls += 1
        (x,) = inputs
        output_storage[0][0] = np.asarray(-0.5 * float(x @ x))

    def pullback(self, inputs, outputs, cotangents):
        return [-inputs[0] * cotangents[0]]


def test_the_start_measurement_is_charged_to_the_first_iteration(any_step):
    """Each coordinate of a unit Gaussian takes one second difference (two evaluations), counted
    in the first iteration's `logp_evals` with the start's own evaluation: the stat counts every
    call of the model's compiled log density."""
    dim = 3
    counter = _CountingUnitGaussian()
    with pm.Model() as model:
        x = pm.Flat("x", shape=dim)
        pm.Potential("unit_gaussian", counter(x))
        step = any_step()
        before = counter.calls  # (compiling evaluates nothing)
        idata = pm.sample(
            step=step,
            tune=5,
            draws=5,
            chains=1,
            cores=1,
            random_seed=2,
            discard_tuned_samples=False,
            **QUIET,
        )
    calls = counter.calls - before  # every evaluation made during pm.sample
    evaluations = np.concatenate(
        [idata[g]["logp_evals"].values[0] for g in ("warmup_sample_stats", "sample_stats")]
    )
    assert evaluations.sum() == calls > 0
    assert evaluations[0] >= 1 + 2 * dim
    if any_step is not AdaptiveHMC:  # whose first iteration also searches a step size
        with pm.Model() as model:
            pm.Normal("x", shape=dim)
        assert evaluations[0] == any_step(model=model).start_evaluations(model.initial_point()) + 1
    np.testing.assert_allclose(step.chain.start_scales, np.ones(dim), rtol=1e-6)


# ---------------------------------------------------------------- J. scales 12 orders apart
SCALES = {"tiny": 1e-6, "mid": 1.0, "huge": 1e6}


def _between_chain_z(draws: np.ndarray) -> tuple[float, float]:
    """The largest ``|a − b| / √(MCSE_a² + MCSE_b²)`` over pairs of chains of ``draws`` (chain,
    draw), for their means and for their sds: how far the chains disagree, in units of their
    own Monte Carlo errors."""
    worst_mean = worst_sd = 0.0
    for i in range(len(draws)):
        for j in range(i):
            a, b = draws[i][None], draws[j][None]
            for method, stat in (("mean", np.mean), ("sd", np.std)):
                se = np.hypot(az.mcse(a, method=method), az.mcse(b, method=method))
                z = abs(stat(a) - stat(b)) / se
                if method == "mean":
                    worst_mean = max(worst_mean, float(z))
                else:
                    worst_sd = max(worst_sd, float(z))
    return worst_mean, worst_sd


def test_parameters_of_very_different_scales_get_their_moments_right(any_step):
    """``tiny ~ N(0, 10⁻⁶)``, ``mid ~ N(0, 1)``, ``huge ~ N(0, 10⁶)`` in one model, without
    reparametrisation (as ``pm.Metropolis`` manages): every scale's mean and sd pass MCSE
    z-tests, and the two chains agree, their means and sds within 4 of their combined MCSEs.
    Before, KAMH's `huge` did not move (sd 0.00x the truth) and AdaptiveHMC's `mid` had R-hat
    2.4 (its chains at different places: both checks fail on such draws).

    The chains' agreement was R-hat < 1.05, which for two chains of a few dozen effective
    draws is a coin flip: CKAM's `huge` had R-hat 1.051 on an AMD EPYC machine. A difference
    of two chains' means is normal with sd the root of the sum of their squared MCSEs, so the
    test accepts a false alarm of about 10⁻⁴ per comparison, on any random stream."""
    with pm.Model():
        for name, sd in SCALES.items():
            pm.Normal(name, 0.0, sd)
        idata = pm.sample(
            step=any_step(),
            tune=2000,
            draws=2000,
            chains=2,
            cores=1,
            random_seed=3,
            progressbar=False,
        )
    summary = az.summary(idata, kind="all")
    for name, sd in SCALES.items():
        row = summary.loc[name]
        assert abs(row["mean"]) / row["mcse_mean"] < 4, (name, row.to_dict())
        assert abs(row["sd"] - sd) / row["mcse_sd"] < 4, (name, row.to_dict())
        z_mean, z_sd = _between_chain_z(idata.posterior[name].values)
        assert z_mean < 4 and z_sd < 4, (name, z_mean, z_sd, row.to_dict())


def test_kamh_accepts_a_tiny_and_a_unit_parameter_at_a_healthy_rate():
    """With only ``tiny`` and a unit parameter KAMH accepted 1.3 % after tuning."""
    with pm.Model():
        pm.Normal("tiny", 0.0, 1e-6)
        pm.Normal("unit", 0.0, 1.0)
        idata = pm.sample(step=KAMH(), tune=2000, draws=1000, chains=1, random_seed=3, **QUIET)
    assert 0.1 < float(idata.sample_stats["accepted"].mean()) < 0.7


# ---------------------------------------------------------------- K. d = 100 with one chain
def _mixing_warnings(caplog, step_class, dim, tune, draws) -> list[str]:
    with pm.Model():
        pm.Normal("x", shape=dim)
        with caplog.at_level(logging.WARNING, logger="pymc"):
            pm.sample(
                step=step_class(),
                tune=tune,
                draws=draws,
                chains=1,
                random_seed=1,
                **QUIET,
            )
    return [r.getMessage() for r in caplog.records if "per parameter" in r.getMessage()]


@pytest.mark.parametrize(
    "step_class", [KAMH, AdaptiveMetropolis, KMCLite, KMCFinite, CKAM], ids=lambda c: c.__name__
)
def test_one_chain_at_d_100_warns_that_it_cannot_have_mixed(step_class, caplog):
    """A 100-d standard normal with one chain: the steps finish with sds off by a median
    34-63 % and, before, nothing warned (PyMC's R-hat needs two chains)."""
    messages = _mixing_warnings(caplog, step_class, dim=100, tune=500, draws=500)
    assert len(messages) == 1
    assert step_class.__name__ in messages[0] and "for 100 parameters" in messages[0]
    assert "may not have mixed" in messages[0]


@pytest.mark.parametrize("step_class", [AdaptiveMetropolis, KMCLite], ids=lambda c: c.__name__)
def test_an_easy_model_of_moderate_dimension_gets_no_such_warning(step_class, caplog):
    assert not _mixing_warnings(caplog, step_class, dim=10, tune=1000, draws=1000)


def test_adaptive_hmc_at_d_100_is_not_warned(caplog):
    """HMC trajectories cross the posterior in a few accepted moves: no per-parameter check."""
    assert not _mixing_warnings(caplog, AdaptiveHMC, dim=100, tune=500, draws=500)
