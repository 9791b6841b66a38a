"""The walkers of a tuning chain (:class:`~pymc_kernel_steps.core.TuningWalkers`): turns, the
state handed back at the end, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_kernel_steps.core import TuningWalkers


def test_walkers_start_at_the_point_and_take_turns_in_order():
    walkers = TuningWalkers.start(np.array([1.0, 2.0]), -3.0, count=3, end=10)
    assert walkers.count == 3 and not walkers.done
    np.testing.assert_array_equal(walkers.positions, [[1.0, 2.0]] * 3)
    turns = []
    for iteration in range(6):
        moved = np.array([float(iteration), 0.0])
        point, value = walkers.next_turn(moved, -float(iteration), iteration)
        turns.append(walkers.turn)
        # the walker whose turn it is now has the state it was left in
        np.testing.assert_array_equal(point, walkers.positions[walkers.turn])
        assert value == walkers.log_densities[walkers.turn]
    assert turns == [1, 2, 0, 1, 2, 0]
    # each walker holds the state it was given when it last moved: 3, 4, 5 by turns 0, 1, 2
    np.testing.assert_array_equal(walkers.positions[:, 0], [3.0, 4.0, 5.0])


def test_the_returned_state_is_a_copy():
    walkers = TuningWalkers.start(np.zeros(2), 0.0, count=2, end=10)
    point, _ = walkers.next_turn(np.ones(2), -1.0, 0)
    point[:] = 7.0
    assert not np.any(walkers.positions == 7.0)


def test_at_the_end_the_chain_goes_on_from_the_highest_walker():
    walkers = TuningWalkers.start(np.zeros(1), -5.0, count=3, end=3)
    walkers.next_turn(np.array([1.0]), -4.0, 0)  # walker 0
    walkers.next_turn(np.array([2.0]), -1.0, 1)  # walker 1: the highest
    walkers.next_turn(np.array([3.0]), -2.0, 2)  # walker 2
    point, value = walkers.next_turn(np.array([4.0]), -3.0, 3)  # walker 0 again, at the end
    assert walkers.done
    np.testing.assert_array_equal(point, [2.0])
    assert value == -1.0
    with pytest.raises(RuntimeError, match="stopped"):
        walkers.next_turn(point, value, 4)


def test_a_nan_start_is_minus_infinity():
    walkers = TuningWalkers.start(np.zeros(2), math.nan, count=2, end=4)
    assert np.all(walkers.log_densities == -math.inf)


@pytest.mark.parametrize("count", [0, 1])
def test_fewer_than_two_walkers_is_an_error(count):
    with pytest.raises(ValueError, match="count"):
        TuningWalkers.start(np.zeros(2), 0.0, count=count, end=4)


def test_the_start_must_be_one_state():
    with pytest.raises(ValueError, match="shape"):
        TuningWalkers.start(np.zeros((2, 2)), 0.0, count=2, end=4)
