"""Transitions of a frozen step from chosen starting points."""

from __future__ import annotations

import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps_bench.tails import tail_acceptance, tail_starts


def test_tail_starts_move_one_coordinate_by_k_sds():
    draws = np.zeros((2, 3))
    starts, ks = tail_starts(
        draws, np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.5, 2.0]), 1, [3, -5]
    )
    np.testing.assert_allclose(starts[:, 1], [3.5, 3.5, -0.5, -0.5])
    np.testing.assert_allclose(starts[:, [0, 2]], 0.0)
    np.testing.assert_allclose(ks, [3, 3, -5, -5])


def test_a_frozen_step_is_started_from_every_point():
    with pm.Model() as model:
        x = pm.Flat("x", shape=2)
        pm.Potential("gaussian", -0.5 * pm.math.sum(x**2))
    starts = np.array([[6.0, 0.0], [0.0, -6.0]])
    frame = tail_acceptance(model, pks.AdaptiveMetropolis, starts, tune=300, repeats=10)
    assert list(frame["start"]) == [0] * 10 + [1] * 10
    moved = frame[frame["accepted"]]
    assert len(moved) > 0
    # a symmetric proposal from the start itself: min(1, π(start + jump) / π(start))
    for _, row in moved.iterrows():
        start = starts[row["start"]]
        ratio = np.exp(-0.5 * np.sum((start + row["jump"]) ** 2) + 0.5 * np.sum(start**2))
        np.testing.assert_allclose(row["accept"], min(1.0, ratio), rtol=1e-9)
    np.testing.assert_allclose(np.stack(frame.loc[~frame["accepted"], "jump"]), 0.0)
