"""What a new user trips on: a non-finite start, discrete variables, a forgotten ``step=``,
messages that mislead (the "new user" issue). Every step class is checked."""

from __future__ import annotations

import pymc as pm
import pytest
from pymc.exceptions import SamplingError

from pymc_kernel_steps import CKAM, KAMH, AdaptiveHMC, AdaptiveMetropolis, KMCFinite, KMCLite

ALL_STEPS = [KAMH, AdaptiveMetropolis, KMCLite, KMCFinite, CKAM, AdaptiveHMC]
QUIET = dict(progressbar=False, compute_convergence_checks=False)


@pytest.fixture(params=ALL_STEPS, ids=lambda cls: cls.__name__)
def any_step(request):
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
