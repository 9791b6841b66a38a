"""Logistic regression on Pima.tr: data, black box against twin against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from pymc_kernel_steps_bench import targets as T


def test_pima_data():
    X, y = T.pima_data()
    assert X.shape == (200, 8) and y.shape == (200,)
    np.testing.assert_array_equal(X[:, 0], 1.0)
    np.testing.assert_allclose(X[:, 1:].std(0, ddof=1), 1.0)
    assert y.sum() == 68  # Pima.tr has 68 diabetic women


def test_black_box_twin_and_numpy_agree():
    X, y = T.pima_data()
    box, twin = T.pima_logistic_model(), T.pima_logistic_model(black_box=False)
    [op] = T.counting_ops(box)
    assert T.counting_ops(twin) == []
    f_box, f_twin = box.compile_logp(), twin.compile_logp()
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = rng.normal(0, 1, 8)
        p = expit(X @ w)
        expected = np.sum(y * np.log(p) + (1 - y) * np.log1p(-p))
        expected += stats.norm.logpdf(w, 0, 5).sum() + 8 * np.log(5 * np.sqrt(2 * np.pi))
        assert f_box({"w": w}) == pytest.approx(expected, rel=1e-10)
        assert f_twin({"w": w}) == pytest.approx(expected, rel=1e-10)
    assert op.n_calls == 3
    with pytest.raises(ValueError, match="prior_sd"):
        T.pima_logistic_model(prior_sd=0.0)
