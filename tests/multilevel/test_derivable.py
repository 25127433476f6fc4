"""Derivability of one mechanism from another (LP with two-sided bounds, exact solver) and the levels study."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.mechanisms.properties import gupte_sundararajan_violation
from countdp.multilevel.derivable import derive, dual_lower_bound, exact_transition, verify_exact
from countdp.multilevel.exact_forms import em_exact, gm_exact
from countdp.multilevel.transitions import gm_transition
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.levels import levels_checks, levels_summary, levels_table


@pytest.mark.parametrize("n,alpha,beta", [(2, 0.5, 2 / 3), (5, 1 / 3, 0.5), (8, 2 / 3, 0.9), (6, 0.1, 0.5)])
def test_gm_beta_is_derivable_from_gm_alpha_and_the_lp_finds_the_unique_t(n, alpha, beta):
    d = derive(geometric(n, alpha), geometric(n, beta))
    assert d.derivable and d.certain and d.residual < 1e-12
    exact = gm_transition(n, Fraction(alpha), Fraction(beta)).astype(float)  # unique: GM is invertible
    assert np.max(np.abs(d.T - exact)) < 1e-6


@pytest.mark.parametrize("n,alpha,beta", [(2, 0.5, 2 / 3), (5, 1 / 3, 0.5), (8, 0.9, 0.95)])
def test_the_less_private_mechanism_is_not_derivable_from_the_more_private_one(n, alpha, beta):
    """Post-processing keeps beta-DP, and GM_alpha / EM_alpha are not beta-DP: infeasible, with a certified gap."""
    for form in (geometric, explicit_fair):
        d = derive(form(n, beta), form(n, alpha))
        assert not d.derivable and d.certain and d.lower > 10 * d.tolerance


def test_uniform_is_derivable_from_anything():
    assert derive(geometric(4, 0.3), uniform(4)).derivable
    assert derive(explicit_fair(4, 0.7), uniform(4)).derivable


@pytest.mark.parametrize("n,alpha,beta", [(2, 0.5, 0.5), (3, 0.5, 0.5), (5, 0.8, 0.8), (4, 0.5, 0.6), (6, 0.3, 0.9)])
def test_derivability_from_gm_agrees_with_the_gupte_sundararajan_condition(n, alpha, beta):
    """Theorem 2: M is derivable from GM_alpha iff its three-term condition at alpha holds."""
    target = explicit_fair(n, beta)
    d = derive(geometric(n, alpha), target)
    assert d.certain
    assert d.derivable == (gupte_sundararajan_violation(target, alpha) <= 1e-12)


def test_em_is_not_derivable_from_gm_at_the_same_alpha():
    """The paper's statement (n > 1), decided with a certified lower bound."""
    for n in (2, 4, 6):
        d = derive(geometric(n, 0.6), explicit_fair(n, 0.6))
        assert not d.derivable and d.certain


def test_the_dual_lower_bound_is_below_every_stochastic_candidate():
    """Weak duality: no column-stochastic T does better than the certified lower bound."""
    A, B = geometric(4, 0.7), geometric(4, 0.5)
    d = derive(A, B)
    assert d.lower > 0 and d.lower <= d.upper + 1e-12
    rng = np.random.default_rng(3)
    for _ in range(200):
        T = rng.dirichlet(np.full(5, 0.3), size=5).T
        assert np.abs(T @ A - B).sum() >= d.lower
    for _ in range(50):
        Y = rng.uniform(-1, 1, size=(5, 5))
        assert dual_lower_bound(A, B, Y) <= d.upper + 1e-12


def test_exact_transition_and_verify_exact():
    n, a, b = 4, Fraction(1, 2), Fraction(3, 5)
    T = exact_transition(gm_exact(n, a), gm_exact(n, b))
    assert (T == gm_transition(n, a, b)).all() and verify_exact(T, gm_exact(n, a), gm_exact(n, b))
    bad = T.copy()
    bad[0, 0] += Fraction(1, 10**9)
    bad[1, 0] -= Fraction(1, 10**9)
    assert not verify_exact(bad, gm_exact(n, a), gm_exact(n, b))
    ones = np.full((n + 1, n + 1), Fraction(1, n + 1), dtype=object)
    assert exact_transition(ones, gm_exact(n, b)) is None  # UM is singular
    E = exact_transition(em_exact(n, a), em_exact(n, b))
    assert (E >= 0).all() and verify_exact(E, em_exact(n, a), em_exact(n, b))


def test_levels_study_on_a_small_grid():
    table = levels_table(ns=(2, 4), alphas=("1/2", "3/5", "9/10"), mechanisms=("GM", "EM", "WM", "UM"))
    assert {"mechanism", "n", "alpha", "beta", "derivable", "residual"} <= set(table.columns)
    assert len(table) == 2 * 4 * 3 * 2
    checks = levels_checks(table)
    assert tuple(checks.columns) == CHECK_COLUMNS and checks.holds.all()
    summary = levels_summary(table).set_index(["mechanism", "direction"])
    assert summary.loc[("GM", "forward"), "verdict"] == "always"
    assert summary.loc[("WM", "forward"), "verdict"] == "sometimes"  # WM(4, 3/5) is not derived from WM(4, 1/2)


def test_levels_checks_fail_when_a_verdict_is_wrong():
    table = levels_table(ns=(2,), alphas=("1/2", "2/3"), mechanisms=("GM", "EM", "UM"))
    broken = table.copy()
    broken.loc[(broken.mechanism == "GM") & (broken.direction == "forward"), "derivable"] = False
    checks = levels_checks(broken).set_index("claim").holds
    assert not checks.filter(like="G-S Lemma 3").all()
    assert not checks.filter(like="LP verdict equals").all()


def test_em_stops_being_derivable_from_itself_at_n_8_exactly_and_by_lp():
    """n = 7: the unique T = EM_b EM_a^-1 is >= 0; n = 8: it has a negative entry, and the LP certifies a gap."""
    a, b = Fraction(1, 2), Fraction(51, 100)
    for n, derivable in ((7, True), (8, False)):
        A, B = em_exact(n, a), em_exact(n, b)
        T = exact_transition(A, B)
        assert (T.dot(A) == B).all() and all(s == 1 for s in T.sum(axis=0))
        assert bool((T >= 0).all()) == derivable
        d = derive(A.astype(float), B.astype(float))
        assert d.derivable == derivable and d.certain
