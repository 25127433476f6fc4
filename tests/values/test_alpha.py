"""Exact alpha: parsing, epsilon conversion (never weaker than asked), the epsilon an alpha costs, config spellings."""

from __future__ import annotations

import math
import sys
from decimal import ROUND_FLOOR, Context, Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdp import design_named
from countdp.values.alpha import (
    Alpha,
    alpha_from_epsilon,
    alpha_text,
    config_alpha,
    epsilon_upper_bound,
    exact_alpha,
    exact_alphas_in,
)


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
    # e^-epsilon > 0 however large epsilon is: one grid step, where Decimal's bound underflows to 0
    for huge in ("50", "1e6", "1e7", "1e30", "1e1000"):
        assert alpha_from_epsilon(huge) == Fraction(1, 2**63)


GRID = 2**63


def _e_to_minus_150(epsilon: Fraction) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 150
        return (-(Decimal(epsilon.numerator) / Decimal(epsilon.denominator))).exp()


def _epsilons_just_above_a_hard_grid_point(count: int) -> list[Fraction]:
    """Epsilons with e^-epsilon 10^-45 above a multiple k/2^63 whose 28-digit rounding lies below it.

    Rounding such an upper bound of e^-epsilon to the default 28 digits lands below k/2^63, and
    alpha = k/2^63 would be below e^-epsilon: the hard case for directed rounding.
    """
    found = []
    for k in range(GRID // 3, GRID // 3 + 10 * count):
        with localcontext() as ctx:
            ctx.prec = 28
            if Fraction(Decimal(k) / Decimal(GRID)) >= Fraction(k, GRID):
                continue
            ctx.prec = 150
            target = Decimal(k) / Decimal(GRID) + Decimal("1e-45")
            found.append(Fraction(-target.ln()).limit_denominator(10**100))
        if len(found) == count:
            return found
    raise AssertionError("too few hard grid points")


def _undershoots(alpha_function, epsilons: list[Fraction]) -> list[Fraction]:
    """The epsilons for which ``alpha_function(epsilon)`` is below e^-epsilon (150 digits, independent)."""
    return [eps for eps in epsilons if alpha_function(str(eps)) < Fraction(_e_to_minus_150(eps)) + Fraction(1, 10**140)]


def test_epsilon_just_above_a_grid_point_still_gives_alpha_at_or_above_e_to_the_minus_epsilon():
    epsilons = _epsilons_just_above_a_hard_grid_point(20)
    assert _undershoots(alpha_from_epsilon, epsilons) == []
    assert len(_undershoots(_bound_rounded_in_the_default_context, epsilons)) >= 10  # the check can fail


def _bound_rounded_in_the_default_context(epsilon: str) -> Fraction:
    """alpha_from_epsilon's arithmetic with the negation and the added unit in the default 28-digit context."""
    eps = Fraction(epsilon)
    eps_low = Context(prec=60, rounding=ROUND_FLOOR).divide(Decimal(eps.numerator), Decimal(eps.denominator))
    upper = Context(prec=60).exp(-eps_low)
    upper += Decimal(1).scaleb(upper.adjusted() - 59)
    return Fraction(math.ceil(Fraction(upper) * GRID), GRID)


def _ln_150(alpha: Fraction) -> Fraction:
    """ln(1/alpha) to 150 digits (absolute error far below 10^-140 for the alphas tested)."""
    with localcontext() as ctx:
        ctx.prec = 150
        return Fraction(Decimal(alpha.denominator).ln() - Decimal(alpha.numerator).ln())


SCALE = 10**30


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.fractions(min_value=Fraction(1, 10**12), max_value=1 - Fraction(1, 10**12), max_denominator=10**20),
                 st.integers(1, 2**63 - 1).map(lambda k: Fraction(k, 2**63)),
                 st.integers(1, 10**6).map(lambda k: 1 - Fraction(k, 10**40)),
                 st.integers(1, 2000).map(lambda k: Fraction(1, 10**k))))
def test_epsilon_upper_bound_is_the_next_multiple_of_10_to_the_minus_30_at_or_above_ln_1_over_alpha(alpha):
    bound = epsilon_upper_bound(alpha)
    truth = _ln_150(alpha)
    assert (bound * SCALE).denominator == 1
    assert bound >= truth + Fraction(1, 10**140)  # above the truth even allowing for the reference's error
    assert bound - Fraction(1, SCALE) < truth  # and the next grid point down is below it


def _grid_violations(bound_function, xs: list[Fraction]) -> list[str]:
    """For alpha just above and just below e^-x (x on the 10^-30 grid), the bound must be x and x + 10^-30."""
    problems = []
    for x in xs:
        e = Fraction(_e_to_minus_150(x))  # within 10^-150 relative of e^-x
        above, below = e + Fraction(1, 10**145), e - Fraction(1, 10**145)
        if bound_function(above) != x:
            problems.append(f"alpha just above e^-{x}: {bound_function(above)} != {x}")
        if bound_function(below) != x + Fraction(1, SCALE):
            problems.append(f"alpha just below e^-{x}: {bound_function(below)} is not the next grid point")
    return problems


def test_epsilon_upper_bound_is_never_below_on_the_grid_of_e_to_the_minus_x():
    xs = [Fraction(k, 10) for k in range(1, 401)] + [Fraction(k, SCALE) for k in (1, 7, 10**29 + 3, 123456789 * 10**22)]
    assert _grid_violations(epsilon_upper_bound, xs) == []
    # the check can fail: ln in the default 28-digit context, rounded to the grid, gets these wrong
    def naive(alpha: Fraction) -> Fraction:
        return Fraction(round(Fraction(Decimal(alpha.denominator).ln() - Decimal(alpha.numerator).ln()) * SCALE), SCALE)
    assert len(_grid_violations(naive, xs)) > len(xs) // 2


@settings(max_examples=100, deadline=None)
@given(st.integers(10**13, 40 * SCALE).map(lambda k: Fraction(k, SCALE)))
def test_an_alpha_from_epsilon_costs_at_most_that_epsilon(epsilon):
    # alpha >= e^-epsilon, so ln(1/alpha) <= epsilon, and epsilon is itself a multiple of 10^-30
    alpha = alpha_from_epsilon(epsilon)
    assert epsilon - Fraction(2 * math.ceil(math.exp(float(epsilon))), GRID) <= epsilon_upper_bound(alpha) <= epsilon


def test_epsilon_upper_bound_examples():
    # ln 2 = 0.693147180559945309417232121458176568..., ln 10 = 2.302585092994045684017991454684364207601...
    assert epsilon_upper_bound("1/2") == Fraction("0.693147180559945309417232121459")
    assert epsilon_upper_bound(Fraction(1, 10**400)) == Fraction("921.034037197618273607196581873746")  # 400 ln 10
    assert epsilon_upper_bound(1 - Fraction(1, 10**40)) == Fraction(1, SCALE)  # ln(1/alpha) is about 10^-40
    for bad in ("1", "0", "3/2"):
        with pytest.raises(ValueError, match="alpha"):
            epsilon_upper_bound(bad)


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


def _parses_during(call) -> list[str]:
    """The callers of each parse of an alpha (each call of the parser behind ``exact_alpha``) during ``call()``."""
    parses = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "_as_fraction" and frame.f_code.co_filename.endswith("alpha.py"):
            parses.append(frame.f_back.f_back.f_code.co_name)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return parses


def test_an_alpha_is_parsed_once_and_then_passed_as_it_is():
    a = exact_alpha("9/10")
    assert isinstance(a, Alpha) and exact_alpha(a) is a
    assert a == Fraction(9, 10) and hash(a) == hash(Fraction(9, 10)) and str(a) == "9/10"
    assert isinstance(alpha_from_epsilon(1), Alpha)
    assert len(_parses_during(lambda: design_named("WM", 64, "9/10"))) == 1
    assert len(_parses_during(lambda: design_named("GM", 40, "9/10"))) == 1
    assert _parses_during(lambda: design_named("EM", 40, a)) == []


def test_the_parse_counter_sees_a_parse():
    """The counter above is not blind: parsing a string is counted, an Alpha is not."""
    assert len(_parses_during(lambda: exact_alpha("0.91"))) == 1
    assert len(_parses_during(lambda: exact_alpha(exact_alpha("0.91")))) == 1
    assert len(_parses_during(lambda: [exact_alpha("0.91"), exact_alpha(0.5)])) == 2


@pytest.mark.parametrize("value", [(3, 2), (0, 1), (1, 1), (-1, 2), ("5/4",)])
def test_an_alpha_cannot_be_built_outside_zero_one(value):
    """exact_alpha trusts an Alpha as it is, so building one checks the range itself."""
    with pytest.raises(ValueError, match="0 < alpha < 1"):
        Alpha(*value)
