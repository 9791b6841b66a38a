"""Step classes under test. Every generic contract test runs for each of them."""

from __future__ import annotations

import pytest

from pymc_kernel_steps import KAMH, AdaptiveMetropolis

STEP_CLASSES = [KAMH, AdaptiveMetropolis]
try:  # added by the KMC issue
    from pymc_kernel_steps import KMCFinite, KMCLite

    STEP_CLASSES += [KMCLite, KMCFinite]
except ImportError:  # pragma: no cover
    pass


@pytest.fixture(params=STEP_CLASSES, ids=lambda cls: cls.__name__)
def step_class(request):
    return request.param
