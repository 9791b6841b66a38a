"""ChainHistory: the buffer of a chain's states."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_kernel_steps.core.history import ChainHistory


def test_append_and_extend_keep_every_state_in_order_past_the_capacity():
    rng = np.random.default_rng(0)
    first, rest = rng.standard_normal((3, 2)), rng.standard_normal((10, 2))
    history = ChainHistory(2, capacity=4)
    for state in first:
        history.append(state)
    history.extend(rest)
    history.append(rest[0])
    expected = np.concatenate([first, rest, rest[:1]])
    assert len(history) == 14
    np.testing.assert_array_equal(history.points, expected)
    np.testing.assert_array_equal(history.tail(2), expected[-2:])
    rest[0] = 99.0  # the buffer holds copies
    assert not np.any(history.points == 99.0)


def test_subsample_draws_distinct_stored_states_from_start():
    history = ChainHistory(1)
    history.extend(np.arange(100.0)[:, None])
    sub = history.subsample(np.random.default_rng(1), 10, start=50)
    assert sub.shape == (10, 1)
    assert len(np.unique(sub)) == 10 and sub.min() >= 50
    np.testing.assert_array_equal(history.subsample(np.random.default_rng(1), 500, start=90),
                                  np.arange(90.0, 100.0)[:, None])  # fmt: skip
    with pytest.raises(ValueError, match="`size` must be at least 1"):
        history.subsample(np.random.default_rng(1), 0)
