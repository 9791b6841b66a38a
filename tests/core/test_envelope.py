"""The envelope move: an independence proposal from a multivariate t with a given mean and
covariance factor. Its correction is checked against scipy's density, its proposals against the
t's radial law, and a chain of it alone, with a deliberately poor envelope, keeps the target."""

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


def test_correction_is_the_ratio_of_the_t_densities():
    envelope = Envelope(dof=3.0, metric=_metric([1.0, -2.0, 0.5], COV))
    reference = stats.multivariate_t(loc=[1.0, -2.0, 0.5], shape=COV, df=3.0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.normal(scale=3.0, size=3)
        proposal = envelope.propose(rng, x)
        expected = reference.logpdf(x) - reference.logpdf(proposal.x)
        assert proposal.log_correction == pytest.approx(expected, rel=1e-10, abs=1e-10)
        assert proposal.kind == "envelope"


def test_proposals_follow_the_t_and_do_not_depend_on_the_state():
    """‖L⁻¹(x* − μ)‖² / d of a multivariate t with ν degrees of freedom is F(d, ν)."""
    dof, mean = 4.0, np.array([1.0, -2.0, 0.5])
    envelope = Envelope(dof=dof, metric=_metric(mean, COV))
    rng = np.random.default_rng(1)
    far, near = np.full(3, 50.0), mean.copy()
    points = np.array([envelope.propose(rng, far if i % 2 else near).x for i in range(4000)])
    u = envelope.metric.whiten(points)
    statistic = (u**2).sum(axis=1) / 3
    assert stats.kstest(statistic, stats.f(3, dof).cdf).pvalue > 1e-3
    # the direction is uniform and the same from either state
    assert stats.ks_2samp(u[::2, 0], u[1::2, 0]).pvalue > 1e-3


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
