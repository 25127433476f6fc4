"""The mirror symmetry of the design LP (countdp.design.reductions.fold_symmetry, Theorem 1):
S folded in and the dual unfolded, or S dropped and the point symmetrized."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design import lp_solve
from countdp.design.constraints import property_rows
from countdp.design.designer import design_lp
from countdp.design.dual_repair import prove_dual
from countdp.design.model import DesignProblem
from countdp.design.optimality import check_optimality, lower_column_multipliers
from countdp.design.polish import full_dual
from countdp.design.reductions.fold_symmetry import (
    DropS,
    FoldS,
    least_squares_mirrored,
    mirror_columns,
    mirror_rows,
    mirror_symmetric,
    mirrored_multipliers,
    prove_unfolded,
    symmetrize,
    unfolded_dual,
)
from countdp.design.settings import DEFAULT_SETTINGS


@pytest.mark.parametrize("props", [(), ("F",), ("CH", "RM"), ("RH", "RM", "CH", "CM", "F", "WH")])
def test_mirror_rows_pair_every_row_with_its_mirror_image(props):
    """Checked densely: row ``s[r]`` times ``sign[r]`` is row ``r`` with its columns reversed."""
    problem = DesignProblem(5, 0.62, props, "L1")
    lp = problem.lp()
    for A, b, eq in ((lp.A_ub, lp.b_ub, False), (lp.A_eq, lp.b_eq, True)):
        found = mirror_rows(A, b, problem.size, eq)
        if found is None:  # F's rows P[i, i] = P[0, 0] are not closed under the mirror, only their span
            assert eq and "F" in props
            continue
        s, sign = found
        dense = A.toarray()
        assert sorted(s) == list(range(A.shape[0]))
        assert np.array_equal(dense[:, ::-1], sign[:, None] * dense[s])
        assert np.array_equal(b, sign * b[s])
        assert eq or np.all(sign == 1)


def test_rows_not_closed_under_the_mirror_are_refused():
    """One DP row dropped (its mirror image has no partner), or an empty row: no permutation."""
    problem = DesignProblem(4, 0.62, ("WH",), "L1")
    lp = problem.lp()
    assert mirror_rows(lp.A_ub[:-1], lp.b_ub[:-1], problem.size, False) is None
    empty = sp.vstack([lp.A_ub, sp.csr_matrix((1, lp.A_ub.shape[1]))], format="csr")
    assert mirror_rows(empty, np.append(lp.b_ub, 0.0), problem.size, False) is None
    changed = lp.b_ub.copy()
    changed[0] += 1.0  # the same rows, one right-hand side no longer its mirror image's
    assert mirror_rows(lp.A_ub, changed, problem.size, False) is None


def test_mirror_columns_reverse_only_the_matrix_entries():
    flip = mirror_columns(7, 4)
    assert flip.tolist() == [3, 2, 1, 0, 4, 5, 6]


def test_mirrored_multipliers_follow_the_rows():
    """The multiplier of each row moves to its mirror image's row: applied twice it is the identity,
    and the combination of rows is mirrored column for column."""
    problem = DesignProblem(5, 0.7, ("RH", "CH"), "L1")
    full = problem.lp()
    u = np.random.default_rng(3).random(full.b_ub.size)
    moved = mirrored_multipliers(problem, u)
    assert np.array_equal(mirrored_multipliers(problem, moved), u)
    np.testing.assert_allclose(full.A_ub.T @ moved, (full.A_ub.T @ u)[::-1], rtol=0, atol=1e-12)


def test_skewed_weights_are_not_mirror_symmetric():
    weights = np.linspace(1, 2, 65)
    weights /= weights.sum()
    assert not mirror_symmetric(DesignProblem(64, 0.62, ("F",), "L1", weights))
    assert mirror_symmetric(DesignProblem(64, 0.62, ("F",), "L1"))
    assert mirror_symmetric(DesignProblem(64, 0.62, ("F",), "L1", weights + weights[::-1]))


def test_the_least_squares_mirror_of_f_rows_is_exact_and_refuses_a_non_invariant_span():
    """F's equality rows are not closed under the mirror, their span is: the least-squares solve
    mirrors their combination exactly.  Without the last F row the span is not invariant: refused."""
    problem = DesignProblem(6, 0.62, ("F",), "L1")
    full = problem.lp()
    A, b = full.A_eq, full.b_eq
    v = np.random.default_rng(5).random(b.size)
    y = least_squares_mirrored(A, b, v, problem.size)
    assert y is not None
    np.testing.assert_allclose(A.T @ y, (A.T @ v)[::-1], rtol=0, atol=1e-12)
    assert least_squares_mirrored(A[:-1], b[:-1], v[:-1], problem.size) is None
    doubled = sp.vstack([A, A[-1:]], format="csr")  # a dependent row: A A^T is singular
    assert least_squares_mirrored(doubled, np.append(b, b[-1]), np.append(v, 0.0), problem.size) is None


@pytest.mark.parametrize("props, objective, alpha", [(("F",), "L1", 0.62), (("CH", "RM"), "L2", 0.5),
                                                     (("WH",), "L0d:1", 0.91)])
def test_folded_dual_proves_the_lp_without_s(props, objective, alpha):
    """The S-folded model's dual, unfolded, certifies its answer for the LP without S, whose value
    the plain cvxpy model gives independently; the raw dual (S multipliers dropped, no
    averaging) does not."""
    n = 9
    plain = DesignProblem(n, alpha, props, objective)
    folded_problem, inverse = FoldS().apply(plain)
    assert "S" in folded_problem.properties
    folded = lp_solve.reduced_lp(folded_problem)
    P, _, run, _ = lp_solve.solve_proven(folded, "simplex", settings=DEFAULT_SETTINGS)
    proof = prove_unfolded(folded, run, P, plain, settings=DEFAULT_SETTINGS)
    assert proof["certified"]
    reference = design_lp(n, alpha, props, objective, backend="cvxpy")
    assert proof["primal_objective"] == pytest.approx(reference.solver_objective, abs=1e-8)
    u, v = full_dual(folded, run.row_dual, run.col_dual)
    dual = inverse.invert_dual(u, v)
    assert all(np.array_equal(a, b) for a, b in zip(dual, unfolded_dual(folded.problem, plain.lp(), u, v), strict=True))
    assert np.array_equal(inverse.invert_primal(P), P)
    keep = np.ones(v.size, bool)
    keep[folded.problem.blocks["S"][1]] = False
    full = plain.lp()
    raw = check_optimality(full, plain.point(P), u, lower_column_multipliers(full, u, v[keep]))
    assert not raw["certified"] and raw["gap"] > 0.1  # the averaging is what proves


def test_a_dual_for_another_lp_is_not_unfolded():
    """The dual of the LP with RM and S cannot be one of the LP with RH (other rows): refused, and
    :func:`prove_unfolded` says why."""
    n, alpha = 7, 0.8
    folded = lp_solve.reduced_lp(DesignProblem(n, alpha, ("RM", "S"), "L1"))
    P, _, run, _ = lp_solve.solve_proven(folded, "simplex", settings=DEFAULT_SETTINGS)
    other = DesignProblem(n, alpha, ("RH", "CH"), "L1")
    u, v = full_dual(folded, run.row_dual, run.col_dual)
    assert unfolded_dual(folded.problem, other.lp(), u, v) is None
    found = prove_unfolded(folded, run, P, other, settings=DEFAULT_SETTINGS)
    assert not found["certified"] and "mirror" in found["reason"]


def test_a_point_without_s_symmetrized_is_proven_with_s():
    """LP with RH and S, L0,1, n = 9: the LP without S solved by simplex, its vertex averaged with
    its mirror image and its dual padded with 0 for S: proven on the LP with S, at the optimum of
    the LP with S solved on its own (cvxpy).  The vertex itself breaks S and is not proven there."""
    n, alpha = 9, 0.8
    target = DesignProblem(n, alpha, ("RH", "S"), "L0d:1")
    plain, inverse = DropS().apply(target)
    assert plain.properties == ("RH",)
    lp = lp_solve.reduced_lp(plain)
    P, _, run, _ = lp_solve.solve_proven(lp, "simplex", settings=DEFAULT_SETTINGS)
    u, v = inverse.invert_dual(*full_dual(lp, run.row_dual, run.col_dual))
    kind, rows = target.blocks["S"]
    assert kind == "eq" and not v[rows].any() and v.size == target.lp().b_eq.size
    Q = inverse.invert_primal(P)
    assert np.array_equal(Q, symmetrize(P)) and np.array_equal(Q, Q[::-1, ::-1])
    proof = prove_dual(target.lp(), target.point(Q), u, v, settings=DEFAULT_SETTINGS)
    assert proof["certified"]
    reference = design_lp(n, alpha, ("RH", "S"), "L0d:1", backend="cvxpy")
    assert proof["primal_objective"] == pytest.approx(reference.solver_objective, abs=1e-8)
    assert property_rows("S", n).violation(P.ravel()) > 1e-6  # this vertex is not symmetric
    assert not prove_dual(target.lp(), target.point(P), u, v, settings=DEFAULT_SETTINGS)["certified"]
