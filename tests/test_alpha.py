"""Exact alpha: parsing, epsilon conversion (never weaker than asked), config spellings."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdp.privacy.alpha import alpha_from_epsilon, alpha_text, config_alpha, exact_alpha, exact_alphas_in


@pytest.mark.parametrize("value,expected", [
    ("2/3", Fraction(2, 3)), ("10/11", Fraction(10, 11)), (" 10 / 11 ", Fraction(10, 11)),
    ("0.91", Fraction(91, 100)), ("1e-3", Fraction(1, 1000)), (Fraction(1, 7), Fraction(1, 7)),
    (0.5, Fraction(1, 2)), (Decimal("0.25"), Fraction(1, 4)),
])
def test_exact_alpha(value, expected):
    assert exact_alpha(value) == expected


def test_a_float_is_taken_at_its_binary_value():
    alpha = exact_alpha(0.91)
    assert alpha != Fraction(91, 100) and alpha.denominator == 2**53  # 0.91 lies in [0.5, 1): 53 bits
    assert abs(alpha - Fraction(91, 100)) < Fraction(1, 2**54)  # the nearest double
    assert float(alpha) == 0.91


@pytest.mark.parametrize("bad", ["1", "3/2", "0", "-1/2", "abc", "1/0", "", None, True, [0.5], float("nan"), 1])
def test_bad_alpha_is_one_line_error(bad):
    with pytest.raises(ValueError, match="alpha"):
        exact_alpha(bad)


def test_alpha_text_is_p_over_q():
    assert alpha_text(Fraction(10, 11)) == "10/11" and alpha_text(Fraction(1, 2)) == "1/2"


def _e_to_minus(epsilon: Fraction) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 120
        return (-(Decimal(epsilon.numerator) / Decimal(epsilon.denominator))).exp()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.fractions(min_value=Fraction(1, 10**6), max_value=40),
                 st.decimals(min_value=Decimal("0.000001"), max_value=Decimal("40"), places=6)))
def test_epsilon_gives_the_nearest_grid_alpha_at_or_above_e_to_the_minus_epsilon(epsilon):
    alpha = alpha_from_epsilon(str(epsilon))
    exact = Fraction(_e_to_minus(Fraction(epsilon)))  # 120 digits, an independent computation
    assert exact <= alpha < 1
    assert alpha - exact <= Fraction(1, 2**63) + Fraction(1, 10**100)
    assert alpha.denominator <= 2**63


def test_epsilon_examples_and_errors():
    assert float(alpha_from_epsilon("1")) == pytest.approx(0.36787944117144233, rel=1e-15)
    assert alpha_from_epsilon("0.6931471805599453") >= Fraction(1, 2)  # just below ln 2
    for bad in ("0", "-1", "x", "1e-30"):
        with pytest.raises(ValueError, match="epsilon"):
            alpha_from_epsilon(bad)


def test_config_alphas_are_read_as_written():
    assert config_alpha(0.91) == Fraction(91, 100)  # YAML's float for "0.91" is the decimal typed
    assert config_alpha("10/11") == Fraction(10, 11)
    config = {"fig09": {"alpha": ["2/3", "10/11", 0.99]}, "fig10": {"alpha": 0.9, "n": [2, 3]},
              "other": [{"alpha": 0.5}]}
    found = exact_alphas_in(config)
    assert found == {"0.6666666666666666": Fraction(2, 3), "0.9090909090909091": Fraction(10, 11),
                     "0.99": Fraction(99, 100), "0.9": Fraction(9, 10), "0.5": Fraction(1, 2)}
    with pytest.raises(ValueError, match="share the spelling"):
        exact_alphas_in({"a": {"alpha": ["2/3", 0.6666666666666666]}})
