"""The envelope move: an independence proposal from a mixture of a multivariate t and a product
of univariate t's with a given mean and covariance factor. Its correction is checked against
scipy's densities, its proposals against each component's law, its importance weight against
a posterior with one heavy coordinate, and a chain of it alone, with a deliberately poor
envelope, keeps the target."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pymc_kernel_steps.core import Whitening
from pymc_kernel_steps.core.moves import Envelope
from tests.core.test_differential_evolution import TARGET_MEAN, TARGET_VAR, target_logp
from tests.helpers import assert_moments


def _metric(mean, cov) -> Whitening:
    chol = np.linalg.cholesky(cov)
    return Whitening(np.asarray(mean, dtype=float), chol, np.linalg.inv(chol))


COV = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])


def _mixture_logpdf(x, mean, cov, dof, share):
    """The envelope's log density from scipy: ``(1 − share)`` multivariate t plus ``share``
    univariate t's of ``u = L⁻¹(x − μ)``, with the Jacobian of ``x = μ + L u``."""
    chol = np.linalg.cholesky(cov)
    u = np.linalg.solve(chol, np.asarray(x) - mean)
    log_jacobian = np.log(np.diag(chol)).sum()
    multivariate = stats.multivariate_t(loc=mean, shape=cov, df=dof).logpdf(x)
    product = stats.t(dof).logpdf(u).sum() - log_jacobian
    terms = [np.log1p(-share) + multivariate if share < 1 else -np.inf]
    terms.append(np.log(share) + product if share > 0 else -np.inf)
    return np.logaddexp(*terms)


@pytest.mark.parametrize("share", [0.0, 0.5, 0.2, 1.0])
def test_correction_is_the_ratio_of_the_mixture_densities(share):
    mean = np.array([1.0, -2.0, 0.5])
    envelope = Envelope(dof=3.0, metric=_metric(mean, COV), product_share=share)
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.normal(scale=3.0, size=3)
        proposal = envelope.propose(rng, x)
        expected = _mixture_logpdf(x, mean, COV, 3.0, share) - _mixture_logpdf(
            proposal.x, mean, COV, 3.0, share
        )
        assert proposal.log_correction == pytest.approx(expected, rel=1e-10, abs=1e-10)
        assert proposal.kind == "envelope"


def test_proposals_follow_the_t_and_do_not_depend_on_the_state():
    """``product_share=0``: ‖L⁻¹(x* − μ)‖² / d of a multivariate t with ν degrees of freedom is
    F(d, ν)."""
    dof, mean = 4.0, np.array([1.0, -2.0, 0.5])
    envelope = Envelope(dof=dof, metric=_metric(mean, COV), product_share=0.0)
    rng = np.random.default_rng(1)
    far, near = np.full(3, 50.0), mean.copy()
    points = np.array([envelope.propose(rng, far if i % 2 else near).x for i in range(4000)])
    u = envelope.metric.whiten(points)
    statistic = (u**2).sum(axis=1) / 3
    assert stats.kstest(statistic, stats.f(3, dof).cdf).pvalue > 1e-3
    # the direction is uniform and the same from either state
    assert stats.ks_2samp(u[::2, 0], u[1::2, 0]).pvalue > 1e-3


def test_the_mixture_draws_its_components_in_their_shares():
    """Default mixture: each whitened coordinate's law is ``½ (t_ν marginal of the multivariate
    t, itself t_ν) + ½ t_ν``, i.e. t_ν; the squared radius follows the mixture of ``d F(d, ν)``
    and a sum of ``d`` squared t_ν's (compared with scipy draws of the two)."""
    dof, mean, d = 4.0, np.array([1.0, -2.0, 0.5]), 3
    envelope = Envelope(dof=dof, metric=_metric(mean, COV))
    rng = np.random.default_rng(2)
    u = envelope.metric.whiten(np.array([envelope.propose(rng, mean).x for _ in range(6000)]))
    assert stats.kstest(u[:, 1], stats.t(dof).cdf).pvalue > 1e-3
    reference_rng = np.random.default_rng(3)
    multivariate = d * stats.f(d, dof).rvs(size=3000, random_state=reference_rng)
    product = (stats.t(dof).rvs(size=(3000, d), random_state=reference_rng) ** 2).sum(axis=1)
    radius = (u**2).sum(axis=1)
    assert stats.ks_2samp(radius, np.concatenate([multivariate, product])).pvalue > 1e-3
    # the product's share alone would not pass: the radius is a mixture of the two
    assert stats.ks_2samp(radius, product).pvalue < 1e-3


def test_the_weight_stays_bounded_along_a_heavy_coordinate():
    """Four standard normals and a LogNormal(0, 0.7), the envelope at their exact mean and
    covariance: over 100,000 posterior draws the multivariate t alone has importance weights
    ``π/q`` up to hundreds of times their median (the chain it sends out there stays); the
    mixture keeps them within a few times."""
    rng = np.random.default_rng(4)
    n = 100_000
    draws = rng.standard_normal((n, 5))
    draws[:, 4] = np.exp(0.7 * draws[:, 4])
    log_pi = stats.norm.logpdf(draws[:, :4]).sum(axis=1) + stats.lognorm(0.7).logpdf(draws[:, 4])
    moment = np.exp(0.7**2 / 2)
    mean = np.array([0, 0, 0, 0, moment])
    cov = np.diag([1.0, 1, 1, 1, np.exp(0.7**2) * (np.exp(0.7**2) - 1)])

    def spread(share):
        envelope = Envelope(metric=_metric(mean, cov), product_share=share)
        log_w = log_pi - np.array([envelope.log_density(x) for x in draws])
        return np.max(log_w) - np.median(log_w)

    assert spread(0.0) > np.log(100)
    assert spread(0.5) < np.log(4)


def test_a_chain_of_the_envelope_alone_keeps_the_target_whatever_the_envelope():
    """Metropolis–Hastings with only the envelope, shifted and wider than the target: exact (a
    z-test of both moments); without its correction the draws are biased."""
    metric = _metric(TARGET_MEAN + 0.5, np.diag([2.0, 2.0, 6.0]))

    def chains(drop_correction=False, n=6000, n_chains=4):
        out = np.empty((n_chains, n, 3))
        for c in range(n_chains):
            rng = np.random.default_rng(c)
            envelope = Envelope(metric=metric)
            x = TARGET_MEAN.copy()
            logp = target_logp(x)
            for i in range(n):
                proposal = envelope.propose(rng, x)
                proposal_logp = target_logp(proposal.x)
                correction = 0.0 if drop_correction else proposal.log_correction
                if math.log(rng.uniform()) < proposal_logp - logp + correction:
                    x, logp = proposal.x, proposal_logp
                out[c, i] = x
        return out

    assert_moments(chains(), TARGET_MEAN, TARGET_VAR)
    with pytest.raises(AssertionError, match="z-scores"):
        assert_moments(chains(drop_correction=True), TARGET_MEAN, TARGET_VAR)


def test_the_envelope_waits_for_its_metric_and_checks_its_dof():
    assert not Envelope().ready
    assert Envelope(metric=Whitening.identity(2)).ready
    for dof in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="`dof`"):
            Envelope(dof=dof)
    for share in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError, match="`product_share`"):
            Envelope(product_share=share)
