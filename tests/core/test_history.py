"""ChainHistory: the buffer of a chain's states."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_kernel_steps.core.history import ChainHistory, first_visits


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


def test_first_visits_are_numpys_unique_rows_in_order_of_first_occurrence():
    rng = np.random.default_rng(3)
    distinct = rng.normal(size=(40, 5))
    distinct[3, 2] = 0.0
    points = distinct[rng.integers(0, 40, size=300)]  # repeats, as after rejections
    _, expected = np.unique(points, axis=0, return_index=True)
    np.testing.assert_array_equal(first_visits(points), np.sort(expected))


def test_first_visits_treat_minus_zero_as_zero_and_handle_edge_shapes():
    points = np.array([[0.0, 1.0], [-0.0, 1.0], [2.0, 3.0], [0.0, 1.0]])
    np.testing.assert_array_equal(first_visits(points), [0, 2])
    assert first_visits(np.zeros((0, 3))).shape == (0,)
    np.testing.assert_array_equal(first_visits(np.ones((5, 1))), [0])
    with pytest.raises(ValueError, match="shape"):
        first_visits(np.ones(4))


def test_generator_from_data_is_a_function_of_the_values_alone():
    from pymc_kernel_steps.core.history import generator_from_data

    states = np.random.default_rng(0).standard_normal((50, 3))
    values = states.sum(axis=1)
    first = generator_from_data(states, values).integers(2**63, size=4)
    np.testing.assert_array_equal(
        generator_from_data(states.copy(), values.copy()).integers(2**63, size=4), first
    )
    changed = states.copy()
    changed[7, 1] += 1e-12
    for other in ((changed, values), (states,), (states.reshape(25, 6), values)):
        assert not np.array_equal(generator_from_data(*other).integers(2**63, size=4), first)
