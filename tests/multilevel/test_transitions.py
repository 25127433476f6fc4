"""The exact GM transition T (GM_beta = T GM_alpha): solved form, closed form, and the facts they must obey."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.multilevel.exact_forms import em_exact, gm_exact, gm_inverse, gm_table
from countdp.multilevel.transitions import (
    gm_transition,
    gm_transition_closed_form,
    gm_transition_table,
    stay_weights,
)

PAIRS = [(Fraction(1, 2), Fraction(2, 3)), (Fraction(1, 3), Fraction(1, 2)), (Fraction(2, 3), Fraction(9, 10)),
         (Fraction(1, 10), Fraction(1, 2)), (Fraction(3, 7), Fraction(5, 6))]


def exact_matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Plain row-by-column products in Fractions (no structure used)."""
    return np.array([[sum(A[i, k] * B[k, j] for k in range(A.shape[1])) for j in range(B.shape[1])]
                     for i in range(A.shape[0])], dtype=object)


@pytest.mark.parametrize("n", [1, 2, 5, 12])
@pytest.mark.parametrize("alpha", [Fraction(1, 3), Fraction(9, 10)])
def test_gm_exact_is_the_float_closed_form_and_a_tight_distribution(n, alpha):
    G = gm_exact(n, alpha)
    assert all(s == 1 for s in G.sum(axis=0))
    assert np.max(np.abs(G.astype(float) - geometric(n, float(alpha)))) < 1e-15
    assert all(G[0, j + 1] == alpha * G[0, j] for j in range(n))  # DP ratio exactly alpha on the clamped row
    assert (gm_table(n, alpha).floats() == G.astype(float)).all()


@pytest.mark.parametrize("n", [1, 3, 8])
def test_em_exact_is_the_float_closed_form_with_columns_summing_to_one(n):
    E = em_exact(n, "2/3")
    assert all(s == 1 for s in E.sum(axis=0))
    assert np.max(np.abs(E.astype(float) - explicit_fair(n, 2 / 3))) < 1e-15


@pytest.mark.parametrize("n", [1, 2, 6, 20])
def test_gm_inverse_is_the_inverse(n):
    a = Fraction(2, 5)
    assert (exact_matmul(gm_inverse(n, a), gm_exact(n, a)) == np.eye(n + 1, dtype=int)).all()


@pytest.mark.parametrize("alpha,beta", PAIRS)
def test_solved_transition_maps_gm_alpha_to_gm_beta_and_is_stochastic(alpha, beta):
    for n in (1, 2, 3, 4, 7, 12, 20):
        T = gm_transition(n, alpha, beta)
        assert (exact_matmul(T, gm_exact(n, alpha)) == gm_exact(n, beta)).all()
        assert (T >= 0).all() and (T > 0).all()
        assert all(s == 1 for s in T.sum(axis=0))


@pytest.mark.parametrize("alpha,beta", PAIRS)
def test_closed_form_equals_the_solved_transition(alpha, beta):
    for n in range(1, 21):
        assert (gm_transition_closed_form(n, alpha, beta) == gm_transition(n, alpha, beta)).all()


def test_closed_form_structure_point_mass_plus_gm_beta():
    """Column j is w_j e_j + (1 - w_j) GM_beta[:, j], with the stated interior and boundary weights."""
    a, b, n = Fraction(1, 2), Fraction(4, 5), 6
    T, G = gm_transition(n, a, b), gm_exact(n, b)
    w_in, w_edge = stay_weights(a, b)
    assert w_in == Fraction(1, 2) / Fraction(4, 5) * (Fraction(1, 5) / Fraction(1, 2)) ** 2
    assert w_edge == Fraction(1, 2) / Fraction(4, 5) * Fraction(1, 5) / Fraction(1, 2)
    for j in range(n + 1):
        w = w_edge if j in (0, n) else w_in
        expected = (1 - w) * G[:, j]
        expected[j] += w
        assert (T[:, j] == expected).all()
    interior = T[1:-1, 2]  # a point mass plus a two-sided geometric of ratio beta around it
    ratios = [interior[i + 1] / interior[i] for i in range(2, len(interior) - 1)]
    assert ratios == [b] * len(ratios)
    assert len(set(gm_transition_table(n, a, b).values)) <= 4 * (n + 1) + 2


def test_transitions_compose_exactly():
    """Uniqueness (GM is invertible): T_{b,c} T_{a,b} = T_{a,c}."""
    a, b, c, n = Fraction(1, 3), Fraction(1, 2), Fraction(7, 8), 5
    assert (exact_matmul(gm_transition(n, b, c), gm_transition(n, a, b)) == gm_transition(n, a, c)).all()


def test_the_reverse_map_is_not_a_stochastic_matrix():
    """GM_alpha = X GM_beta forces X = GM_alpha GM_beta^-1, which has negative entries (post-processing)."""
    a, b, n = Fraction(1, 2), Fraction(2, 3), 4
    X = exact_matmul(gm_exact(n, a), gm_inverse(n, b))
    assert (exact_matmul(X, gm_exact(n, b)) == gm_exact(n, a)).all()
    assert (X < 0).any()


@pytest.mark.parametrize("alpha,beta", [("1/2", "1/2"), ("2/3", "1/2"), ("1/2", "1"), ("0", "1/2")])
def test_transition_refuses_unordered_or_invalid_levels(alpha, beta):
    with pytest.raises(ValueError):
        gm_transition(3, alpha, beta)
    with pytest.raises(ValueError):
        gm_transition_table(3, alpha, beta)
