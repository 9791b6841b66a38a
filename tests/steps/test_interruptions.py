"""Ctrl-C during sampling and resuming a pickled step mid-chain."""

from __future__ import annotations

import cloudpickle
import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps_bench.targets import CountingLogp


class InterruptAfter:
    """A log density that raises KeyboardInterrupt (Ctrl-C) at its ``n``-th call."""

    def __init__(self, n):
        self.n, self.calls = n, 0

    def __call__(self, x):
        self.calls += 1
        if self.calls == self.n:
            raise KeyboardInterrupt
        return -0.5 * float(x @ x)


def test_ctrl_c_returns_the_draws_so_far_like_pymc_steps(step_class):
    """PyMC stops a sequential run at Ctrl-C and returns what it has; our steps must let the
    interrupt through untouched (not wrap it into a LogDensityError)."""
    draws = {}
    for name, make in (("ours", step_class), ("pymc", pm.Metropolis)):
        with pm.Model():
            x = pm.Flat("x", shape=2)
            pm.Potential("loglik", CountingLogp(InterruptAfter(1500))(x))
            idata = pm.sample(
                step=make(), tune=100, draws=2000, chains=1, cores=1, random_seed=1,
                progressbar=False, compute_convergence_checks=False,
            )  # fmt: skip
        draws[name] = idata.posterior.sizes["draw"]
    assert 0 < draws["ours"] < 2000  # interrupted, draws so far returned
    assert 0 < draws["pymc"] < 2000  # as for PyMC's own step


def test_pickled_step_resumes_identically_mid_chain(step_class):
    with pm.Model() as model:
        pm.Normal("x", shape=3)
        step = step_class()
    step.setup_chain(np.random.default_rng(5), tune=300, draws=300)
    point = model.initial_point()
    for _ in range(400):  # into the draws, with a learned proposal
        if step.chain.iteration == 300:
            step.stop_tuning()
        point, _ = step.step(point)
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    runs = []
    for candidate in (step, clone):
        current, out = dict(point), []
        for _ in range(200):
            current, _ = candidate.step(current)
            out.append(current["x"])
        runs.append(np.array(out))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert np.unique(runs[0], axis=0).shape[0] > 10  # the chain moves


def _go_on(step, point, iterations):
    draws = []
    for _ in range(iterations):
        point, _ = step.step(point)
        draws.append(point["x"].copy())
    return point, np.array(draws)


def test_a_sampling_state_round_trip_resumes_identically_and_another_step_s_is_refused():
    """PyMC's ``sampling_state``: restoring a state into a fresh step of the same kind gives
    the same draws as going on; a state of another kind of step (whose chain state has other
    fields) is refused, naming the field, instead of failing later inside the step."""
    from pymc_kernel_steps import KAMH, KMCLite

    from ..helpers import correlated_gaussian_model

    with correlated_gaussian_model() as model:
        steps = {cls: cls() for cls in (KMCLite, KAMH)}
    for step in steps.values():
        step.setup_chain(np.random.default_rng(0), 300, 100)
        point, _ = _go_on(step, model.initial_point(), 250)  # well into tuning
        state = step.sampling_state
        _, going_on = _go_on(step, point, 30)
        with model:
            fresh = type(step)()
        fresh.setup_chain(np.random.default_rng(9), 300, 100)
        fresh.sampling_state = state
        _, resumed = _go_on(fresh, point, 30)
        np.testing.assert_array_equal(going_on, resumed)
        assert len(np.unique(resumed[:, 0])) > 1  # the chain moved
    before = steps[KAMH].sampling_state
    refused = r"a 'kamh' step\) cannot take the sampling state of a 'kmc_lite'"
    with pytest.raises(ValueError, match=refused):
        steps[KAMH].sampling_state = steps[KMCLite].sampling_state
    after = steps[KAMH].sampling_state  # nothing was set, the generator included
    assert after.rng == before.rng and after.chain.iteration == before.chain.iteration
