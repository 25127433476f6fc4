"""Exact and empirical error measures against direct calculations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from countdp.evaluate.metrics import binomial_distribution, empirical_error, expected_error
from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.values.objectives import objective_value, parse_objective


def test_uniform_mechanism_error_is_n_over_n_plus_1_for_any_input():
    n = 7
    for q in (binomial_distribution(n, 0.3), np.eye(n + 1)[2]):
        assert expected_error(uniform(n), q, "L0") == pytest.approx(n / (n + 1))


def test_l0d_is_more_than_d_steps_off():
    n = 6
    q = np.eye(n + 1)[0]  # true count 0: output i is off by i
    P = uniform(n)
    for d in range(n + 1):
        assert expected_error(P, q, f"L0d:{d}") == pytest.approx((n - d) / (n + 1))
    assert expected_error(P, q, "L0d:0") == pytest.approx(expected_error(P, q, "L0"))


def test_l1_l2_rmse_of_uniform_at_zero():
    n = 4
    q = np.eye(n + 1)[0]
    P = uniform(n)
    assert expected_error(P, q, "L1") == pytest.approx(np.mean(np.arange(n + 1)))
    assert expected_error(P, q, "L2") == pytest.approx(np.mean(np.arange(n + 1) ** 2))
    assert expected_error(P, q, "RMSE") == pytest.approx(np.sqrt(np.mean(np.arange(n + 1) ** 2)))


def test_objective_l0_rescaling_and_trace_formula():
    n, a = 9, 0.8
    P = explicit_fair(n, a)
    assert objective_value(P, "L0") == pytest.approx((n + 1) / n - np.trace(P) / n)
    assert objective_value(P, "L0d:0") == pytest.approx(objective_value(P, "L0"))
    # objective = (n+1)/n * expected release error under the same prior
    w = binom.pmf(np.arange(n + 1), n, 0.2)
    assert objective_value(P, "L0", w) == pytest.approx((n + 1) / n * expected_error(P, w, "L0"))


def test_empirical_measures_on_arrays():
    true = np.array([0, 1, 2, 3])
    released = np.array([0, 3, 1, 3])
    assert empirical_error(true, released, "L0") == 0.5
    assert empirical_error(true, released, "L0d:1") == 0.25
    assert empirical_error(true, released, "L1") == pytest.approx(3 / 4)
    assert empirical_error(true, released, "RMSE") == pytest.approx(np.sqrt(5 / 4))


def test_binomial_distribution():
    np.testing.assert_allclose(binomial_distribution(3, 0.5), [1 / 8, 3 / 8, 3 / 8, 1 / 8])
    with pytest.raises(ValueError, match="p must be"):
        binomial_distribution(3, 1.2)


def test_gm_l0_under_point_prior_at_zero_is_small():
    a = 0.9
    assert expected_error(geometric(5, a), np.eye(6)[0], "L0") == pytest.approx(a / (1 + a))


@pytest.mark.parametrize("text, name, d", [("L0", "L0", 0), ("l0d:3", "L0d", 3), ("L0d1", "L0d", 1)])
def test_parse_objective(text, name, d):
    obj = parse_objective(text)
    assert (obj.name, obj.d) == (name, d)


@pytest.mark.parametrize("bad", ["L3", "L0d", "L0d:-1", "", "max"])
def test_parse_objective_rejects(bad):
    with pytest.raises(ValueError, match="objective"):
        parse_objective(bad)


def test_shape_mismatch():
    with pytest.raises(ValueError, match="same shape"):
        empirical_error(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="input_distribution"):
        expected_error(uniform(3), [0.5, 0.5], "L0")
