"""The posteriordb suite: vendored files, translations checked against the reference draws."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_kernel_steps_bench import posteriordb
from pymc_kernel_steps_bench.posteriordb import models
from pymc_kernel_steps_bench.posteriordb.vendor import stan_draws_to_arrays

#: |z| above which a translation fails: Bonferroni over the suite's ~250 z-scores at a
#: family-wise 0.2 % (a deterministic test with fixed seeds: a wrong model moves far more)
Z_LIMIT = 4.5


def test_the_suite_has_the_fifteen_posteriors_with_their_files():
    assert len(posteriordb.POSTERIORS) == 15
    assert (posteriordb.DATA_DIR / "LICENSE-posteriordb").read_text().count("BSD 3-Clause") == 1
    for name in posteriordb.POSTERIORS:
        draws = posteriordb.reference_draws(name)
        assert draws.shape[:2] == (10, 1000)
        assert draws.shape[2] == len(posteriordb.labels(name))
        assert np.all(np.isfinite(draws))
        assert isinstance(posteriordb.load_data(name), dict)


def test_stan_draws_become_arrays_with_zero_based_indices():
    chains = [
        {
            "a": [1.0, 2.0],
            "b[1]": [3.0, 4.0],
            "b[2]": [5.0, 6.0],
            "m[2,1]": [7.0, 8.0],
            "m[1,1]": [0.0, 0.0],
            "m[1,2]": [0.0, 0.0],
            "m[2,2]": [0.0, 0.0],
        },
    ]
    arrays = stan_draws_to_arrays(chains)
    assert arrays["a"].shape == (1, 2)
    np.testing.assert_array_equal(arrays["b"][0, :, 1], [5.0, 6.0])
    np.testing.assert_array_equal(arrays["m"][0, :, 1, 0], [7.0, 8.0])
    with pytest.raises(ValueError, match="missing elements"):
        stan_draws_to_arrays([{"b[1]": [1.0], "b[3]": [2.0]}])


def test_an_unknown_posterior_is_named():
    with pytest.raises(ValueError, match="unknown name 'nope'"):
        posteriordb.model("nope")


def test_the_ode_jacobian_matches_finite_differences():
    data = posteriordb.load_data("hudson_lynx_hare-lotka_volterra")
    ts = np.asarray(data["ts"])
    params = np.array([0.55, 0.028, 0.80, 0.024, 33.9, 5.9])
    z, jacobian = models.lotka_volterra_solve(params[:4], params[4:], ts, sensitivities=True)
    assert np.allclose(z, models.lotka_volterra_solve(params[:4], params[4:], ts), rtol=1e-3)
    for i in range(6):
        step = 1e-5 * params[i]
        up, down = params.copy(), params.copy()
        up[i] += step
        down[i] -= step
        numeric = (
            models.lotka_volterra_solve(up[:4], up[4:], ts)
            - models.lotka_volterra_solve(down[:4], down[4:], ts)
        ) / (2 * step)
        scale = np.abs(jacobian[:, :, i]).max()
        np.testing.assert_allclose(jacobian[:, :, i], numeric, atol=2e-2 * scale)


def test_a_failed_ode_solve_is_a_log_density_of_minus_infinity():
    data = posteriordb.load_data("hudson_lynx_hare-lotka_volterra")
    z = models.lotka_volterra_solve([50.0, 0.0, 0.0, 0.0], [30.0, 4.0], np.asarray(data["ts"]))
    assert np.all(np.isinf(z))
    model = posteriordb.model("hudson_lynx_hare-lotka_volterra", gradient=False)
    point = model.initial_point()
    point["theta_interval__"] = np.array([20.0, -20.0, -20.0, -20.0])
    assert model.compile_logp()(point) == -np.inf


#: posteriors whose check runs NUTS with a dense metric, the covariance of the reference draws
#: (in the unconstrained space), instead of PyMC's diagonal adaptation. NUTS samples the model's
#: posterior exactly with any fixed metric, right or wrong translation; the metric only sets how
#: many gradients a draw costs. On the Lotka–Volterra ODE (5-15 ms a gradient, strongly
#: correlated parameters) PyMC's diagonal metric takes trees of depth 5 (about 30 gradients a
#: draw, 21,600 in the run); the dense one takes depth 2-3 (about 7, 5,200 in the run) for two to
#: four times the effective sample size (smaller Monte Carlo errors: a stricter check). The
#: regressions with correlated predictors: a fifth to a quarter of the CPU time.
DENSE_METRIC = {
    "hudson_lynx_hare-lotka_volterra",
    "diamonds-diamonds",
    "kidiq-kidscore_interaction",
    "earnings-earn_height",
}


def _nuts_with_the_reference_metric(model, name):
    """A NUTS step of ``model`` (in its context) with the reference draws' covariance as metric."""
    import pymc as pm
    from pymc.step_methods.hmc.quadpotential import QuadPotentialFull

    reference = posteriordb.reference_draws(name)
    reference = reference.reshape(-1, reference.shape[-1])
    point, columns, start = model.initial_point(), [], 0
    for rv in model.free_RVs:  # the compared variables: the free ones, in the same order
        size = point[model.rvs_to_values[rv].name].size  # elementwise transforms only
        values = reference[:, start : start + size]
        start += size
        transform = model.rvs_to_transforms[rv]
        if transform is not None:
            values = transform.forward(values, *rv.owner.inputs).eval()
        columns.append(values)
    assert start == reference.shape[1]
    with model:
        return pm.NUTS(potential=QuadPotentialFull(np.cov(np.concatenate(columns, axis=1).T)))


@pytest.mark.translation
@pytest.mark.parametrize("name", list(posteriordb.POSTERIORS))
def test_translation_agrees_with_the_reference_draws(name):
    kwargs = {}
    if name in DENSE_METRIC:
        model = posteriordb.model(name, gradient=True)
        kwargs = {"pymc_model": model, "step": _nuts_with_the_reference_metric(model, name)}
    result = posteriordb.check_translation(name, random_seed=1, **kwargs)
    worst = max(np.abs(result["z_mean"]).max(), np.abs(result["z_sd"]).max())
    assert worst < Z_LIMIT, {
        label: (round(zm, 2), round(zs, 2))
        for label, zm, zs in zip(result["labels"], result["z_mean"], result["z_sd"], strict=True)
    }


@pytest.mark.translation
def test_a_wrong_translation_fails_the_check():
    import pymc as pm

    data = posteriordb.load_data("eight_schools-eight_schools_noncentered")
    with pm.Model() as wrong:  # tau ~ half-Cauchy(0, 1) instead of (0, 5)
        theta_trans = pm.Normal("theta_trans", 0.0, 1.0, shape=8)
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 1.0)
        theta = pm.Deterministic("theta", theta_trans * tau + mu)
        pm.Normal("y", theta, np.asarray(data["sigma"]), observed=np.asarray(data["y"]))
    result = posteriordb.check_translation(
        "eight_schools-eight_schools_noncentered", random_seed=1, pymc_model=wrong
    )
    assert max(np.abs(result["z_mean"]).max(), np.abs(result["z_sd"]).max()) > Z_LIMIT
