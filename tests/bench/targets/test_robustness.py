"""The robustness targets: log densities against scipy, stated moments against exact draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pymc_kernel_steps_bench.blackbox import black_box
from pymc_kernel_steps_bench.targets import counting_ops
from pymc_kernel_steps_bench.targets import robustness as R

NAMES = list(R.ROBUSTNESS_TARGETS)
DRAWS = 400_000


def _scipy_logp(name: str, x: np.ndarray) -> float:
    """The log density written independently with scipy (``flower8`` unnormalised)."""
    norm = stats.norm.logpdf
    if name == "curved6":
        x1 = x[0]
        return float(
            norm(x1, 0, 1.5)
            + norm(x[1], 2 * math.sin(x1), 0.5)
            + norm(x[2], 1.5 * math.log(math.cosh(x1)), 0.5)
            + norm(x[3], 2 * math.tanh(1.5 * x1), 0.4)
            + norm(x[4], 1.5 * math.cos(1.3 * x1), 0.6)
            + norm(x[5], 0, 0.5 * math.exp(0.4 * x1))
        )
    if name == "mixed4":
        return float(
            stats.t.logpdf(x[0], 5)
            + norm(x[1], 1.5 * math.sin(1.5 * x[0]), 0.4)
            + stats.logistic.logpdf(x[2])
            + stats.gumbel_r.logpdf(x[3])
        )
    if name == "flower8":
        pairs = x.reshape(4, 2)
        r = np.hypot(pairs[:, 0], pairs[:, 1])
        theta = np.arctan2(pairs[:, 1], pairs[:, 0])
        return float(-0.5 * np.sum(((r - 3 - np.cos(5 * theta)) / 0.35) ** 2))
    if name == "flower8r":
        return _scipy_logp("flower8", R.flower_rotation() @ x)
    if name == "skewed5":
        corr = np.full((4, 4), 0.6) + 0.4 * np.eye(4)
        chol = np.linalg.cholesky(corr)
        z = np.linalg.solve(chol, x[:4])
        return float(
            np.sum(stats.skewnorm.logpdf(z, 6.0))
            - np.sum(np.log(np.diag(chol)))
            + stats.lognorm.logpdf(x[4], 0.7)
        )
    if name == "funnel5":
        return float(norm(x[0], 0, 1.5) + np.sum(norm(x[1:], 0, math.exp(x[0] / 2))))
    raise AssertionError(name)


@pytest.mark.parametrize("name", NAMES)
def test_the_log_density_matches_scipy(name):
    target = R.ROBUSTNESS_TARGETS[name]
    logp = R.robustness_model(name).compile_logp()
    points = target.sample(np.random.default_rng(0), 20)
    points[:5] *= 2.5  # and some points in the tails
    np.testing.assert_allclose(
        [logp({"x": x}) for x in points], [_scipy_logp(name, x) for x in points], rtol=1e-9
    )


def test_the_skewed_target_is_zero_off_its_support():
    logp = R.robustness_model("skewed5").compile_logp()
    assert logp({"x": np.array([0.5, 0.5, 0.5, 0.5, -0.1])}) == -np.inf


@pytest.mark.parametrize("name", NAMES)
def test_the_stated_moments_match_exact_draws(name):
    """E[x] and E[x²] against 400,000 exact draws: |z| < 4.5 on every coordinate."""
    target = R.ROBUSTNESS_TARGETS[name]
    m1, m2, m4 = target.raw_moments()
    draws = target.sample(np.random.default_rng(1), DRAWS)
    assert draws.shape == (DRAWS, target.dim)
    for power, truth in ((1, m1), (2, m2)):
        values = draws**power
        z = (values.mean(axis=0) - truth) / (values.std(axis=0) / math.sqrt(DRAWS))
        assert np.all(np.abs(z) < 4.5), (power, z)
    assert np.all(m4 >= m2**2)  # Var(x²) >= 0: the fourth moments are consistent


def test_the_rotated_flowers_fourth_moments_match_exact_draws():
    """``flower8r``'s E[x⁴] comes from the pairs' isotropy up to the fourth moment: checked
    against exact draws, and it differs from ``flower8``'s (the rotation mixes the pairs)."""
    _, _, m4 = R.ROBUSTNESS_TARGETS["flower8r"].raw_moments()
    draws = R.ROBUSTNESS_TARGETS["flower8r"].sample(np.random.default_rng(3), DRAWS)
    values = draws**4
    z = (values.mean(axis=0) - m4) / (values.std(axis=0) / math.sqrt(DRAWS))
    assert np.all(np.abs(z) < 4.5), z
    _, _, unrotated = R.ROBUSTNESS_TARGETS["flower8"].raw_moments()
    assert np.all(m4 > unrotated[0] * 1.1)
    rotation = R.flower_rotation()
    np.testing.assert_allclose(rotation @ rotation.T, np.eye(8), atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_the_black_box_keeps_the_log_density(name):
    model = R.robustness_model(name)
    twin = black_box(model)
    (op,) = counting_ops(twin)
    original, boxed = model.compile_logp(), twin.compile_logp()
    op.reset()
    for x in R.ROBUSTNESS_TARGETS[name].sample(np.random.default_rng(2), 5):
        np.testing.assert_allclose(boxed({"x": x}), original({"x": x}), rtol=1e-12)
    assert op.n_calls == 5


def test_the_quadratures_have_converged():
    coarse = R._flower_pair_moments(n_theta=1024, n_r=200)
    fine = R._flower_pair_moments(n_theta=4096, n_r=400)
    np.testing.assert_allclose(coarse, fine, rtol=1e-10, atol=1e-12)


def test_the_reference_holds_variances_of_x_and_x_squared():
    ref = R.robustness_reference("funnel5")
    np.testing.assert_allclose(ref.var[0], 1.5**2)
    np.testing.assert_allclose(ref.var[1:], math.exp(1.5**2 / 2))
    np.testing.assert_allclose(ref.var_sq[1:], 3 * math.exp(2 * 1.5**2) - math.exp(1.5**2))


def test_an_unknown_target_is_named():
    with pytest.raises(ValueError, match="unknown robustness target 'banana'"):
        R.robustness_model("banana")
