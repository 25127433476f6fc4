"""EM, WM and WH chains at large n (EM at 1024, WM and WH at 300; the limits at 1024): solved
transitions, grid tables, and the exact certificate at that size.

Every check here is against a fact computed another way: the marginals against matrix-vector
products of the sampled weights in Python integers (a Freivalds test, not the multi-modular
products); each level's DP by a pure-Python comparison of neighbouring entries; each level's
distance from the mechanism built directly (exact EM in Fractions, the WM/WH designs' own
integer weights) in exact arithmetic; the solve against the LP and against EM's exact ``T``.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from countdp.design.designer import design_named
from countdp.mechanisms.closed_forms import explicit_fair
from countdp.multilevel.chain import ChainSettings, build_level_chain
from countdp.multilevel.derivable import DerivabilitySettings, derive, exact_transition
from countdp.multilevel.exact_forms import ExactTable, em_exact, em_table, grid_table
from countdp.multilevel.rounding import round_table
from countdp.multilevel.structural_chain import StructuralLevelChain
from tests.helpers.multilevel_checks import corrupted

N = 1024
LEVELS = ("1/2", "2/3", "9/10")
SOLVE = DerivabilitySettings(lp_max_n=0)


@pytest.fixture(scope="module", params=[("EM", N), ("WM", 300), ("WH", 300)], ids=["EM-1024", "WM-300", "WH-300"])
def large(request):
    """``(mechanism, chain)`` at the benchmark's levels (one family alive at a time): EM at n = 1024;
    WM and WH, whose levels are LP designs, at n = 300 in the suite (at n = 1024 in
    ``benchmarks/bench_levels.py``, about a minute each with their designs)."""
    mechanism, n = request.param
    return mechanism, build_level_chain(n, LEVELS, mechanism=mechanism)


def pure_python_dp(rows, alpha) -> bool:
    """``p A[i, j'] <= q A[i, j]`` for every row and neighbouring columns, in plain Python integers."""
    p, q = Fraction(alpha).numerator, Fraction(alpha).denominator
    for row in rows:
        r = [int(v) for v in row]
        if any(p * b > q * a or p * a > q * b for a, b in zip(r, r[1:], strict=False)):
            return False
    return True


def composed(chain, k: int, v: list[int]) -> np.ndarray:
    """``T_{k-1} ... T_0 W v`` by matrix-vector products of the sampled weights, in Python integers."""
    x = np.array(v, dtype=object)
    for M in (chain.first.weights, *chain.transitions[:k]):
        x = M.astype(object).dot(x)
    return x


def distance_from_em(A: np.ndarray, D: int, alpha) -> Fraction:
    """``max |A / D - EM(n, alpha)|`` in exact arithmetic, one distinct value ``y alpha^e`` of EM at a time."""
    table = em_table(A.shape[0] - 1, alpha)
    worst = Fraction(0)
    for t, v in enumerate(table.values):
        at = A[table.index == t]
        if at.size:
            gap = int(np.abs(at * v.denominator - v.numerator * D).max())
            worst = max(worst, Fraction(gap, D * v.denominator))
    return worst


def distance_from_weights(A: np.ndarray, D: int, W: np.ndarray, K: int = 62) -> Fraction:
    """``max |A / D - W / 2**K|`` in exact arithmetic (integer weights ``W`` over ``2**K``)."""
    return Fraction(int(np.abs(A * (1 << K) - W.astype(object) * D).max()), D << K)


def test_the_large_chain_is_certified_and_its_marginals_are_the_composed_weights(large):
    mechanism, chain = large
    cert = chain.certify()
    assert cert.holds and cert.n == chain.n and cert.mechanism == mechanism
    rng = np.random.default_rng(5)
    v = [int(x) for x in rng.integers(0, 2**40, chain.n + 1)]
    for k in range(chain.levels):
        A = chain.marginal(k)
        assert (A.dot(np.array(v, dtype=object)) == composed(chain, k, v)).all()  # Freivalds
        assert all(s == chain.level_denominator(k) for s in A.sum(axis=0))


def test_every_level_is_alpha_dp_by_plain_integer_comparisons(large):
    _, chain = large
    for k, a in enumerate(chain.alphas):
        assert pure_python_dp(chain.marginal(k), a), f"level {k}"
    assert not pure_python_dp(chain.marginal(0), chain.alphas[1])  # the test can fail: level 0 is not 2/3-DP


def test_every_level_is_close_to_the_mechanism_built_directly(large):
    """Level 0 is the family's own release weights; later levels within 1e-9 of ``M(n, alpha_k)``,
    exactly (exact EM in Fractions; the WM/WH designs' integer weights), far closer than to the
    level before, and the certificate's float deviation says the same."""
    mechanism, chain = large
    for k, a in enumerate(chain.alphas):
        A, D = chain.marginal(k), chain.level_denominator(k)
        if mechanism == "EM":
            gap, slack = distance_from_em(A, D, a), 0.0
        else:
            design = design_named(mechanism, chain.n, a)
            W = design.released.weights
            assert k or (A == W).all()
            gap, slack = distance_from_weights(A, D, W), float(np.max(np.abs(W / 2.0**62 - design.matrix)))
        assert gap < Fraction(1, 10**9), f"level {k}: {float(gap):.3g}"
        assert abs(float(gap) - chain.certify().levels[k].max_abs_deviation) <= slack + 1e-15
        if k:
            assert float(gap) < 1e-6 * np.max(np.abs(chain.reference[k] - chain.reference[k - 1]))


def test_a_broken_large_transition_is_refused_and_its_level_is_not_dp(large):
    _, chain = large
    broken = corrupted(chain, 1)
    cert = broken.certify()
    assert cert.levels[0].holds and not cert.levels[1].holds and not cert.holds
    row = broken.transitions[0][chain.n].astype(object).dot(chain.first.weights.astype(object))  # row n of level 1
    assert not pure_python_dp([row], chain.alphas[1])
    v = list(range(1, chain.n + 2))  # and the composition test tells the two chains apart
    assert (broken.marginal(1).dot(np.array(v, dtype=object)) == composed(broken, 1, v)).all()
    assert (broken.marginal(1).dot(np.array(v, dtype=object)) != composed(chain, 1, v)).any()


def test_the_size_limits_of_the_matrix_chains():
    for mechanism in ("EM", "WM", "WH"):
        with pytest.raises(ValueError, match=rf"^multi-level release of {mechanism} supports n <= 1024, got n = 1025$"):
            build_level_chain(N + 1, LEVELS, mechanism=mechanism)
    assert isinstance(build_level_chain(N, LEVELS), StructuralLevelChain)  # GM beyond 1000: no matrix
    assert ChainSettings().matrix_limit("GM") == 1000 and ChainSettings(max_n=50).matrix_limit("WM") == 50


def test_the_solve_agrees_with_the_lp_and_its_lower_bound_holds():
    """Small designs, both routes: the same verdicts; the solve's certified lower bound is below what
    the LP's stochastic T achieves (weak duality), and positive where the pair is not derivable."""
    cases = [("WM", 5, "1/2", "3/5"), ("WM", 5, "1/2", "7/10"), ("WH", 5, "7/10", "9/10"), ("WM", 8, "1/2", "9/10")]
    for mechanism, n, a, b in cases:
        A, B = design_named(mechanism, n, a).matrix, design_named(mechanism, n, b).matrix
        lp, solved = derive(A, B), derive(A, B, SOLVE)
        assert lp.method == "lp" and solved.method == "solve"
        assert lp.derivable == solved.derivable and solved.certain, (mechanism, n, a, b)
        assert solved.lower <= lp.upper + 1e-12
        assert (solved.lower > solved.tolerance) == (not solved.derivable)


def test_a_singular_source_is_not_derivable_by_the_solve():
    A = np.full((4, 4), 0.25)
    d = derive(A, explicit_fair(3, 0.5), SOLVE)
    assert not d.derivable and not d.certain and d.lower == 0


def test_em_by_the_solve_matches_its_exact_transition_and_refuses_what_the_exact_route_refuses():
    n = 20
    exact = exact_transition(em_exact(n, "1/2"), em_exact(n, "2/3")).astype(float)
    solved = derive(explicit_fair(n, 0.5), explicit_fair(n, 2 / 3), SOLVE)
    assert solved.derivable and np.max(np.abs(solved.T - exact)) < 1e-13
    by_solve = ChainSettings(exact_em_n=10, derivability=SOLVE)
    chain = build_level_chain(n, LEVELS, settings=by_solve, mechanism="EM")
    assert chain.certify().holds and max(v.max_abs_deviation for v in chain.certify().levels) < 1e-12
    with pytest.raises(ValueError, match=r"^EM at n = 8 cannot be released at levels 1/2 then 51/100: .*solved T"):
        build_level_chain(8, ["1/2", "51/100"], settings=dataclasses.replace(by_solve, exact_em_n=4), mechanism="EM")


def test_close_em_levels_at_n_1024_are_refused_with_a_certified_bound():
    """1/2 -> 51/100: refused in one line with a certified lower bound; independently, numpy's own
    solve of ``T EM_alpha = EM_beta`` (EM is well conditioned) has clearly negative entries."""
    with pytest.raises(ValueError) as info:
        build_level_chain(N, ["1/2", "51/100"], mechanism="EM")
    message = str(info.value)
    assert "\n" not in message and message.startswith("EM at n = 1024 cannot be released at levels 1/2 then 51/100")
    assert "every T leaves an L1 residual of at least" in message
    T = np.linalg.solve(explicit_fair(N, 0.5).T, explicit_fair(N, 0.51).T).T
    assert T.min() < -1e-5


def test_a_grid_table_is_exactly_stochastic_and_rounds_like_a_table_of_fractions():
    rng = np.random.default_rng(11)
    S = rng.random((9, 9)) ** 4
    S /= S.sum(axis=0)
    table = grid_table(S)
    exact = table.dense()
    assert all(s == 1 for s in exact.sum(axis=0)) and (table.weights >= 0).all()
    off = np.abs(exact.astype(float) - S) > 2.0**-62 + 2.0**-60
    assert off.sum(axis=0).max() <= 1  # only the entry that absorbs a column's shortfall moves further
    values = sorted(set(exact.ravel()))
    index = np.vectorize({v: i for i, v in enumerate(values)}.get)(exact).astype(np.int64)
    for lam in (Fraction(0), Fraction(3, 2**72), Fraction(1, 3), Fraction(1)):
        assert (round_table(table, lam, 62) == round_table(ExactTable(tuple(values), index), lam, 62)).all()
    for bad in (-S, S * 1.01, np.full((3, 3), np.nan)):
        with pytest.raises(ValueError):
            grid_table(bad)
