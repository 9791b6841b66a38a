"""Step classes under test. Every generic contract test runs for each of them."""

from __future__ import annotations

import pytest

from pymc_kernel_steps import KAMH, AdaptiveMetropolis, KMCFinite, KMCLite

# CKAM has its own moment tests: its draws are π-distributed only in the sampling phases.
STEP_CLASSES = [KAMH, AdaptiveMetropolis, KMCLite, KMCFinite]


@pytest.fixture(params=STEP_CLASSES, ids=lambda cls: cls.__name__)
def step_class(request):
    return request.param
