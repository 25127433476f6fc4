"""Closed-form mechanisms against the paper's formulas and an independent construction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from countdp.mechanisms.closed_forms import explicit_fair, explicit_fair_diagonal, geometric, uniform
from countdp.mechanisms.properties import PROPERTIES, check_all, check_property
from countdp.privacy.certify import certify, is_alpha_dp
from countdp.values.objectives import objective_value

ALPHAS = [0.1, 0.5, 0.62, 2 / 3, 0.9, 0.91, 10 / 11, 0.99]


def geometric_by_clamping(n: int, alpha: float, tail: int = 4000) -> np.ndarray:
    """GM built from its definition: add two-sided geometric noise, clamp into [0, n]."""
    ks = np.arange(-tail, tail + 1)
    pk = (1 - alpha) / (1 + alpha) * alpha ** np.abs(ks)
    P = np.zeros((n + 1, n + 1))
    for j in range(n + 1):
        np.add.at(P[:, j], np.clip(j + ks, 0, n), pk)
    return P


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("alpha", [0.3, 0.62, 0.9])
def test_geometric_matches_clamped_noise(n, alpha):
    np.testing.assert_allclose(geometric(n, alpha), geometric_by_clamping(n, alpha), atol=1e-12)


def test_example_1_numbers():
    # Example 1: n = 2, alpha = 0.9: Pr[0|1] ~ 0.47, Pr[1|1] ~ 0.05, Pr[0|0] ~ 0.53.
    P = geometric(2, 0.9)
    assert round(P[0, 1], 2) == 0.47 and round(P[2, 1], 2) == 0.47
    assert round(P[1, 1], 2) == 0.05
    assert round(P[0, 0], 2) == 0.53
    assert 17 < (P[0, 1] + P[2, 1]) / P[1, 1] < 19  # "eighteen times lower"


@pytest.mark.parametrize("n", [1, 2, 3, 10, 40])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_geometric_l0_closed_form(n, alpha):
    assert objective_value(geometric(n, alpha), "L0") == pytest.approx(2 * alpha / (1 + alpha), abs=1e-12)


def test_uniform_scores_one():
    for n in (1, 4, 9):
        assert objective_value(uniform(n), "L0") == pytest.approx(1.0)
        assert all(check.holds for check in check_all(uniform(n)).values())


@pytest.mark.parametrize("n", range(1, 41))
def test_explicit_fair_has_all_properties_and_is_dp(n):
    for alpha in (0.2, 0.5, 0.62, 0.91, 0.99):
        P = explicit_fair(n, alpha)
        np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
        checks = check_all(P, tol=1e-12)
        assert [name for name in PROPERTIES if not checks[name].holds] == []
        fixed, cert = certify(P, alpha)
        assert cert.certified and is_alpha_dp(fixed, alpha) and cert.repair_lambda < 1e-12


@pytest.mark.parametrize("n", [2, 4, 6, 10, 20])
def test_explicit_fair_even_n_uses_paper_normaliser(n):
    for a in ALPHAS:
        assert explicit_fair_diagonal(n, a) == pytest.approx((1 - a) / (1 + a - 2 * a ** (n / 2 + 1)))


@pytest.mark.parametrize("n", [1, 3, 5, 7, 21])
def test_explicit_fair_odd_n_paper_normaliser_is_wrong(n):
    # The paper's y does not normalise odd-n columns; ours does, and equals 1/(column sum of powers).
    a = 0.9
    paper_y = (1 - a) / (1 + a - 2 * a ** (n / 2 + 1))
    exponents = np.round(np.log(explicit_fair(n, a) / explicit_fair_diagonal(n, a)) / np.log(a))
    column_power_sum = (a**exponents).sum(axis=0)
    np.testing.assert_allclose(column_power_sum, column_power_sum[0])  # same multiset in every column
    assert explicit_fair_diagonal(n, a) == pytest.approx(1 / column_power_sum[0])
    assert abs(paper_y * column_power_sum[0] - 1) > 1e-6


def test_explicit_fair_l0_and_lemma_4_bound_for_even_n():
    for n in (2, 4, 8, 14):
        for a in (0.5, 0.91):
            y = explicit_fair_diagonal(n, a)
            assert objective_value(explicit_fair(n, a), "L0") == pytest.approx((n + 1) / n * (1 - y))
            assert y == pytest.approx((1 - a) / (1 + a - 2 * a ** (n / 2 + 1)))  # Lemma 4 bound is attained


def test_lemma_4_as_printed_is_false_for_odd_n():
    # For odd n the printed bound (1-a)/(1+a-2a^(n/2+1)) is *below* the diagonal of EM, a fair
    # DP mechanism, so it cannot be an upper bound; the tight bound comes from column (n-1)/2.
    for n in (1, 3, 5, 9):
        for a in (0.5, 0.91):
            P = explicit_fair(n, a)
            assert check_property(P, "F", tol=1e-12).holds and is_alpha_dp(certify(P, a)[0], a)
            assert P[0, 0] > (1 - a) / (1 + a - 2 * a ** (n / 2 + 1))
            column = n // 2  # sum of y*a^|i-column| with the tail folded: y(1 + 2 sum a^k + a^((n+1)/2))
            tight = 1 / (1 + 2 * sum(a**k for k in range(1, column + 1)) + a ** ((n + 1) / 2))
            assert P[0, 0] == pytest.approx(tight)


def test_figure_7_truthful_probabilities():
    # Figure 7 text: EM reports the truth w.p. 0.224, GM 0.238 (uniform prior); these match alpha = 0.91
    # (at the stated alpha = 0.9 they would be 0.226 and 0.242).  EM's is 0.2234, so within 1e-3.
    assert np.trace(explicit_fair(4, 0.91)) / 5 == pytest.approx(0.224, abs=1e-3)
    assert np.trace(geometric(4, 0.9)) / 5 == pytest.approx(0.242, abs=5e-4)
    assert np.trace(geometric(4, 0.91)) / 5 == pytest.approx(0.238, abs=5e-4)


def test_lemma_2_weak_honesty_boundary():
    # GM has WH iff n >= 2a/(1-a). alpha = 2/3 puts the threshold exactly at n = 4.
    a = 2 / 3
    assert check_property(geometric(4, a), "WH", tol=1e-12).holds
    assert not check_property(geometric(3, a), "WH", tol=1e-12).holds
    for a in (0.76, 10 / 11):
        threshold = 2 * a / (1 - a)
        for n in range(2, 40):
            assert check_property(geometric(n, a), "WH", tol=1e-12).holds == (n >= threshold - 1e-9)


def test_lemma_2_fails_at_n_1():
    # The proof uses an interior diagonal entry, which n = 1 lacks: GM(1) is always weakly honest.
    for a in (0.5, 0.9, 0.99):
        assert 1 < 2 * a / (1 - a) and check_property(geometric(1, a), "WH", tol=1e-12).holds


def test_lemma_3_column_monotone_boundary():
    for n in (2, 5, 9):
        assert check_property(geometric(n, 0.5), "CM", tol=1e-12).holds
        assert not check_property(geometric(n, 0.5 + 1e-6), "CM", tol=1e-12).holds
        assert check_property(geometric(n, 0.3), "CH").holds


def test_gm_always_symmetric_and_row_monotone():
    for n in (1, 3, 12):
        for a in ALPHAS:
            checks = check_all(geometric(n, a), tol=1e-12)
            assert checks["S"].holds and checks["RM"].holds and checks["RH"].holds


@pytest.mark.parametrize("bad", [0, -1, 1.5, "3", None, True])
def test_bad_n_raises(bad):
    with pytest.raises(ValueError, match="n must be"):
        geometric(bad, 0.5)


@pytest.mark.parametrize("bad", [0, 1, -0.2, 1.5, math.nan, "0.5", None])
def test_bad_alpha_raises(bad):
    with pytest.raises(ValueError, match="alpha"):
        explicit_fair(3, bad)


def test_a_property_that_holds_exactly_reports_positive_zero():
    """Tables print the violation: -0.0 would be written "-0" (GM at alpha = 1/2 meets CM and CH with equality)."""
    import math

    from countdp.mechanisms.properties import check_property

    for name in ("CM", "CH", "WH"):
        worst = check_property(geometric(2, 0.5), name).worst_violation
        assert worst == 0.0 and math.copysign(1.0, worst) == 1.0, name
