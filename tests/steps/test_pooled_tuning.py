"""The pooled-tuning hook of the steps: ``tuning_data()`` exports a chain's own tuning data,
``absorb_tuning_data(others)`` makes its next fits learn from other chains' too (only while
tuning). Tested through the public interface, running chains as PyMC does."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from pymc_kernel_steps import CKAM, KAMH, KMCFinite, KMCLite
from pymc_kernel_steps.steps.base import TuningData

DIM = 2


def _model() -> pm.Model:
    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0, shape=DIM)
    return model


class _Chain:
    """One chain driven as PyMC's parallel sampler drives it (``setup_chain``, ``step``,
    ``stop_tuning``), keeping every state."""

    def __init__(self, step, model, tune: int, draws: int, seed: int):
        self.step, self.tune = step, tune
        step.setup_chain(np.random.default_rng(seed), tune, draws)
        self.point = model.initial_point()
        self.states, self.done = [], 0

    def run(self, iterations: int) -> None:
        for _ in range(iterations):
            if self.done == self.tune:
                self.step.stop_tuning()
            self.point, _ = self.step.step(self.point)
            self.states.append(np.array(self.point["x"], copy=True))
            self.done += 1


def _chain(step_class, tune=300, draws=50, seed=1, **kwargs) -> _Chain:
    model = _model()
    with model:
        step = step_class(**kwargs)
    return _Chain(step, model, tune, draws, seed)


def _far_away_data(n=400, seed=9) -> TuningData:
    """Another chain's data, from N(5, 0.5²): nothing like this chain's."""
    rng = np.random.default_rng(seed)
    states = 5.0 + 0.5 * rng.standard_normal((n, DIM))
    return TuningData(states, states, -0.5 * np.sum(states**2, axis=1))


@pytest.mark.parametrize("step_class", [KMCLite, KAMH])
def test_tuning_data_is_the_recent_half_of_the_history(step_class):
    chain = _chain(step_class)
    chain.run(120)
    data = chain.step.tuning_data()
    np.testing.assert_array_equal(data.states, np.array(chain.states[60:]))


def test_kmclite_exports_its_evaluations_with_their_log_densities():
    chain = _chain(KMCLite)
    chain.run(120)
    data = chain.step.tuning_data()
    assert len(data.points) >= 120  # one per proposal evaluated, and the starting point
    logp = _model().compile_logp()
    for point, value in zip(data.points[::30], data.log_densities[::30], strict=True):
        assert value == pytest.approx(float(logp({"x": point})), rel=1e-12)


@pytest.mark.parametrize("step_class", [KMCLite, KAMH])
def test_absorbed_data_is_never_exported_again(step_class):
    chain = _chain(step_class)
    chain.run(120)
    before = chain.step.tuning_data()
    chain.step.absorb_tuning_data([_far_away_data()])
    after = chain.step.tuning_data()
    for field in ("states", "points", "log_densities"):
        np.testing.assert_array_equal(getattr(after, field), getattr(before, field))


@pytest.mark.parametrize("step_class", [KMCLite, KAMH])
def test_the_next_fits_learn_from_the_absorbed_data(step_class):
    """Two chains with one seed move together until one absorbs another chain's data."""
    pooled, alone = _chain(step_class), _chain(step_class)
    for chain in (pooled, alone):
        chain.run(150)
    np.testing.assert_array_equal(pooled.states, alone.states)
    pooled.step.absorb_tuning_data([_far_away_data()])
    for chain in (pooled, alone):
        chain.run(100)
    assert not np.array_equal(pooled.states[150:], alone.states[150:])


def test_absorbing_nothing_changes_nothing_in_kamh():
    pooled, alone = _chain(KAMH), _chain(KAMH)
    for chain in (pooled, alone):
        chain.run(100)
    pooled.step.absorb_tuning_data([])
    for chain in (pooled, alone):
        chain.run(100)
    np.testing.assert_array_equal(pooled.states, alone.states)


def test_absorbing_is_refused_after_tuning():
    chain = _chain(KMCLite, tune=100)
    chain.run(101)
    with pytest.raises(RuntimeError, match="tuning is over"):
        chain.step.absorb_tuning_data([_far_away_data()])


@pytest.mark.parametrize("step_class", [KMCFinite, CKAM])
def test_steps_that_do_not_pool_say_so(step_class):
    chain = _chain(step_class)
    assert not step_class.pools_tuning_data
    with pytest.raises(TypeError, match=step_class.__name__):
        chain.step.absorb_tuning_data([_far_away_data()])


def test_absorbing_is_refused_with_adapt_after_tuning():
    chain = _chain(KMCLite, adapt_after_tuning=True)
    with pytest.raises(ValueError, match="adapt_after_tuning"):
        chain.step.absorb_tuning_data([_far_away_data()])


def test_tuning_data_of_another_dimension_is_refused():
    chain = _chain(KMCLite)
    states = np.zeros((10, DIM + 1))
    with pytest.raises(ValueError, match="dimension"):
        chain.step.absorb_tuning_data([TuningData(states, states, np.zeros(10))])


def test_non_finite_tuning_data_and_a_single_one_are_refused_when_absorbed():
    """Not later, mid-tuning, by a fit that cannot say where its NaN came from."""
    chain = _chain(KMCLite)
    states = np.full((10, DIM), np.nan)
    with pytest.raises(ValueError, match="must be finite"):
        chain.step.absorb_tuning_data([TuningData(states, np.zeros((0, DIM)), np.zeros(0))])
    with pytest.raises(TypeError, match="a sequence of TuningData.*got one"):
        chain.step.absorb_tuning_data(_far_away_data())
