"""Malformed inputs to validators and checkers: always ValueError, with a message naming the problem.

Several of these pinned validators that once misbehaved (wrong exception type or silent
acceptance: complex matrices, measure names, tolerances, generators, fractional counts).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdp.design.designer import design_named
from countdp.evaluate.metrics import binomial_distribution, empirical_error, expected_error
from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.mechanisms.properties import check_all, check_dp, check_property
from countdp.privacy.certify import certify, is_alpha_dp
from countdp.privacy.sampling import release
from countdp.validation import check_alpha, check_distribution, check_matrix, check_n
from countdp.values.objectives import objective_value, parse_objective
from countdp.values.properties import parse_properties

P3 = geometric(3, 0.5)
GM3 = design_named("GM", 3, "1/2")
Q3 = np.full(4, 0.25)
RNG = np.random.default_rng(0)

BAD_N = [0, -1, 1.5, "3", True, None, float("nan"), float("inf"), [3], np.bool_(True)]
BAD_ALPHA = [0, 1, -0.1, 1.5, float("nan"), float("inf"), "0.5", True, None, [0.5], 1j]
BAD_MATRICES = {
    "non-square": (np.ones((2, 3)) / 2, "square"),
    "empty": (np.zeros((0, 0)), "square"),
    "empty-list": ([], "square"),
    "1x1": (np.ones((1, 1)), "square"),
    "vector": (np.ones(4) / 4, "square"),
    "3-d": (np.ones((2, 2, 2)), "square"),
    "nan": (np.array([[0.5, np.nan], [0.5, 0.5]]), "finite"),
    "inf": (np.array([[np.inf, 0.5], [0.5, 0.5]]), "finite"),
    "none": (None, "square"),
}


def raises_value_error(func, *args, word: str, **kwargs) -> None:
    with pytest.raises(ValueError) as info:
        func(*args, **kwargs)
    assert word.lower() in str(info.value).lower(), str(info.value)


# --- n and alpha ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", BAD_N, ids=repr)
def test_bad_n(n):
    raises_value_error(check_n, n, word="n must be")
    for make in (uniform, lambda n: geometric(n, 0.5), lambda n: explicit_fair(n, 0.5)):
        raises_value_error(make, n, word="n must be")
    raises_value_error(design_named, "GM", n, 0.5, word="n must be")


@pytest.mark.parametrize("alpha", BAD_ALPHA, ids=repr)
def test_bad_alpha(alpha):
    raises_value_error(check_alpha, alpha, word="alpha")
    for func in (geometric, explicit_fair):
        raises_value_error(func, 3, alpha, word="alpha")
    raises_value_error(is_alpha_dp, P3, alpha, word="alpha")
    raises_value_error(check_dp, P3, alpha, word="alpha")
    raises_value_error(certify, P3, alpha, word="alpha")
    if alpha != "0.5":  # designs take exact alphas, and "0.5" is exactly 1/2
        raises_value_error(design_named, "EM", 3, alpha, word="alpha")


@pytest.mark.parametrize("alpha", ["3/2", "1/0", "abc", "0/1", "-1/2", "1", "1.0", "nan"], ids=repr)
def test_bad_exact_alpha_strings(alpha):
    raises_value_error(design_named, "EM", 3, alpha, word="alpha")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(max_value=0), st.floats().filter(lambda x: not float(x).is_integer()),
                 st.text(), st.booleans(), st.none()))
def test_check_n_rejects_everything_but_positive_integers(n):
    raises_value_error(check_n, n, word="n must be")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats().filter(lambda x: not (0 < x < 1)), st.integers(), st.text(), st.booleans()))
def test_check_alpha_rejects_outside_open_unit_interval(alpha):
    raises_value_error(check_alpha, alpha, word="alpha")


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=10**6), st.floats(min_value=1e-9, max_value=1 - 1e-9))
def test_good_values_pass_through(n, alpha):
    assert check_n(n) == n and isinstance(check_n(n), int)
    assert check_alpha(alpha) == alpha and isinstance(check_alpha(alpha), float)


# --- matrices ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BAD_MATRICES))
def test_bad_matrices(name):
    M, word = BAD_MATRICES[name]
    raises_value_error(check_matrix, M, word=word)
    raises_value_error(check_property, M, "RH", word=word)
    raises_value_error(check_all, M, word=word)
    raises_value_error(check_dp, M, 0.5, word=word)
    raises_value_error(is_alpha_dp, M, 0.5, word=word)
    raises_value_error(certify, M, 0.5, word=word)
    raises_value_error(objective_value, M, "L0", word=word)
    raises_value_error(expected_error, M, Q3, word=word)
    raises_value_error(release, M, np.array([0]), RNG, word="certified mechanism")


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=6), st.integers(min_value=0, max_value=6),
       st.sampled_from([np.nan, np.inf, -np.inf]), st.data())
def test_any_non_finite_entry_is_rejected(rows, extra, bad, data):
    cols = rows + extra + 1 if extra else rows
    M = np.full((rows, cols), 0.5)
    M[data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, cols - 1))] = bad
    word = "finite" if rows == cols and rows >= 2 else "square"
    raises_value_error(check_matrix, M, word=word)


def test_ragged_and_text_matrices_raise_value_error():
    with pytest.raises(ValueError):
        check_matrix([[1.0, 0.0], [1.0]])
    with pytest.raises(ValueError):
        check_matrix([["a", "b"], ["c", "d"]])


def test_cannot_certify_zero_column():
    raises_value_error(certify, np.array([[0.0, 0.5], [0.0, 0.5]]), 0.5, word="column")


def test_complex_matrix_rejected():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raises_value_error(check_matrix, np.eye(2) * (1 + 1j), word="real")


@pytest.mark.parametrize("obj", [{"P": 1}, {1, 2}, object(), "abc"], ids=["dict", "set", "object", "str"])
def test_object_matrix_raises_value_error(obj):
    raises_value_error(check_matrix, obj, word="matrix")


# --- property, objective and measure names -----------------------------------------------------


@pytest.mark.parametrize("name", ["XX", "", "rh,ch", None, 3, "R H", "monotone"], ids=repr)
def test_unknown_property(name):
    raises_value_error(check_property, P3, name, word="propert")


@pytest.mark.parametrize("props", ["WH,XX", ["RM", "bogus"], ("Q",)], ids=repr)
def test_unknown_properties_in_lists(props):
    raises_value_error(parse_properties, props, word="unknown propert")
    raises_value_error(design_named, "LP", 3, 0.5, properties=props, word="unknown propert")


@pytest.mark.parametrize("objective", ["L3", "", None, "L0d", "L0d:-1", "L0d:1.5", "L0dx", 0, "linf"], ids=repr)
def test_unknown_objective(objective):
    raises_value_error(parse_objective, objective, word="objective")
    raises_value_error(objective_value, P3, objective, word="objective")
    raises_value_error(design_named, "GM", 3, 0.5, objective=objective, word="objective")


@pytest.mark.parametrize("measure", ["L3", "", "mse", "L0d:x"], ids=repr)
def test_unknown_measure(measure):
    with pytest.raises(ValueError):
        expected_error(P3, Q3, measure)
    with pytest.raises(ValueError):
        empirical_error([1], [2], measure)


def test_measure_none():
    raises_value_error(expected_error, P3, Q3, None, word="measure")


def test_measure_negative_threshold():
    raises_value_error(expected_error, P3, Q3, "L0d:-1", word="L0d")


def test_measure_missing_threshold_message():
    raises_value_error(expected_error, P3, Q3, "L0d", word="measure")


def test_unknown_mechanism_and_aggregate():
    raises_value_error(design_named, "XM", 3, 0.5, word="mechanism")
    raises_value_error(objective_value, P3, "L0", aggregate="mean", word="aggregate")
    raises_value_error(objective_value, P3, "L0", aggregate=None, word="aggregate")


# --- weights and input distributions -----------------------------------------------------------

BAD_WEIGHTS = {
    "short": ([0.5, 0.5], "entries"),
    "long": ([0.2] * 5, "entries"),
    "scalar": (1.0, "entries"),
    "none": (None, "entries"),
    "matrix": (np.full((2, 2), 0.25), "entries"),
    "negative": ([0.5, 0.5, 0.5, -0.5], "non-negative"),
    "nan": ([0.25, 0.25, 0.25, np.nan], "finite"),
    "inf": ([np.inf, 0.25, 0.25, 0.25], "finite"),
    "sum<1": ([0.2, 0.2, 0.2, 0.2], "sum to 1"),
    "sum>1": ([0.3, 0.3, 0.3, 0.3], "sum to 1"),
    "zeros": ([0.0, 0.0, 0.0, 0.0], "sum to 1"),
}


@pytest.mark.parametrize("name", sorted(BAD_WEIGHTS))
def test_bad_weights(name):
    w, word = BAD_WEIGHTS[name]
    raises_value_error(check_distribution, w, 3, word=word)
    raises_value_error(expected_error, P3, w, word=word)
    if w is not None:  # objective_value reads weights=None as the uniform prior
        raises_value_error(objective_value, P3, "L0", weights=w, word=word)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1), min_size=4, max_size=4))
def test_weights_not_summing_to_one(w):
    total = math.fsum(w)
    if abs(total - 1) > 1e-6:
        raises_value_error(check_distribution, w, 3, word="sum to 1")
    elif abs(total - 1) < 1e-12:
        assert check_distribution(w, 3).sum() == pytest.approx(1)


def test_max_aggregate_validates_weights():
    raises_value_error(objective_value, P3, "L0", weights=[1, 2], aggregate="max", word="entries")


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan")], ids=repr)
def test_binomial_bad_p(p):
    raises_value_error(binomial_distribution, 3, p, word="p must")


def test_binomial_text_p():
    raises_value_error(binomial_distribution, 3, "0.5", word="p must")


@pytest.mark.parametrize("n", [-1, 1.5])
def test_binomial_bad_n(n):
    raises_value_error(binomial_distribution, n, 0.5, word="n must")


# --- tolerances, releases and empirical errors --------------------------------------------------


@pytest.mark.parametrize("tol", [float("nan"), -1.0, "1e-9"], ids=repr)
def test_bad_tolerance(tol):
    raises_value_error(check_property, P3, "RH", tol=tol, word="tol")


@pytest.mark.parametrize("counts", [np.array([0.5]), np.array([4]), np.array([-1]), np.array([True])], ids=repr)
def test_release_bad_counts(counts):
    raises_value_error(release, GM3, counts, RNG, word="integers in 0..3")


@pytest.mark.parametrize("rng", [0, "seed", np.random.RandomState(0)], ids=["int", "str", "RandomState"])
def test_release_needs_a_generator_or_the_os_source(rng):
    raises_value_error(release, GM3, np.array([0]), rng, word="rng")


def test_release_refuses_bare_matrices():
    """A float matrix, even a certified one, carries no exact certificate: release refuses it."""
    raises_value_error(release, P3, np.array([0]), RNG, word="certified mechanism")
    raises_value_error(release, 2 * P3, np.array([0]), RNG, word="certified mechanism")


def test_empirical_error_shape_checks():
    raises_value_error(empirical_error, [1, 2], [1], word="same shape")
    raises_value_error(empirical_error, [], [], word="non-empty")


def test_empirical_error_rejects_fractional_counts():
    raises_value_error(empirical_error, [0.5], [1.7], word="integer")
