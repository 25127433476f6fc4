"""The reduced design LP: smaller, the same optimum, rows traced to their origins, duplicates found
by exact comparison and by hashing."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design.designer import design_lp
from countdp.design.lp_solve import solve_proven
from countdp.design.reduce import build_reduced_lp, dedup_rows, dp_rows_kept, implied_drops, row_hashes
from countdp.design.settings import DEFAULT_SETTINGS


def test_reduction_shrinks_wm():
    lp = build_reduced_lp(32, 0.91, ("RM", "CM", "WH", "S"))
    assert lp.shape[1] == (33 * 33 + 1) // 2
    assert lp.shape[0] < lp.full_rows / 3
    assert {"implied:WH", "dp-halved-by-RM", "symmetry-folded"} <= set(lp.reductions)
    assert implied_drops(("RH", "RM", "CH", "CM", "WH")) == ("RH", "CH", "WH")
    assert implied_drops(("RH", "CH", "WH")) == ("WH",) and implied_drops(("RH", "F", "WH")) == ()


@pytest.mark.parametrize("props, objective", [(("RH", "RM", "CM", "WH", "S"), "L1"), (("F", "CH"), "L2")])
def test_reduced_and_unreduced_models_have_the_plain_optimum(props, objective):
    n, alpha = 9, 0.7
    plain = design_lp(n, alpha, props, objective, backend="cvxpy").solver_objective
    for fold, drop in ((True, True), (False, False)):
        lp = build_reduced_lp(n, alpha, props, objective, fold_symmetry=fold, drop_implied=drop)
        assert solve_proven(lp, "simplex", settings=DEFAULT_SETTINGS)[2].objective == pytest.approx(plain, abs=1e-7)
    assert "symmetry-folded" not in build_reduced_lp(n, alpha, props, objective, fold_symmetry=False).reductions


def test_dp_rows_kept_by_rm_bound_the_entry_farther_from_the_diagonal():
    """With RM, the forward row P[i,j] >= a P[i,j+1] is kept left of the diagonal (j < i) only, the
    backward one right of it (j >= i) only: exactly one of each pair, N * n rows in all."""
    n = 5
    N = n + 1
    kept = dp_rows_kept(n, True)
    assert kept.size == N * n and np.array_equal(dp_rows_kept(n, False), np.arange(2 * N * n))
    i, j = np.divmod(np.arange(N * n), n)
    forward, backward = kept[kept < N * n], kept[kept >= N * n] - N * n
    assert np.all(j[forward] < i[forward]) and np.all(j[backward] >= i[backward])


def test_duplicate_rows_found_exactly_and_hashed_alike():
    """Rows 0 and 2 are equal (entries in another stored order), row 3 differs from row 0 only in
    its bound and row 1 only in a value: the first occurrences are 0, 1, 3, 4; equal rows hash
    equal, different ones differently."""
    A = sp.csr_matrix((np.array([1.0, 2.0, 1.0, 2.5, 2.0, 1.0, 1.0, 2.0, 3.0]),
                       np.array([0, 1, 0, 1, 1, 0, 0, 1, 2]), np.array([0, 2, 4, 6, 8, 9])), shape=(5, 3))
    lo = np.array([0.0, 0.0, 0.0, 1.0, 0.0])
    hi = np.full(5, np.inf)
    h = row_hashes(A, lo, hi)
    assert h[0] == h[2] and len({h[0], h[1], h[3], h[4]}) == 4
    assert dedup_rows(A.copy(), lo, hi).tolist() == [0, 1, 3, 4]


def test_the_reduction_step_inverts_a_solved_reduced_model_to_a_proof_on_the_full_model():
    """WM under L1 at n = 12: solved on the reduced model, its point and dual mapped back prove the
    full model's optimum (weak duality on the LP as defined); the dual of another LP does not."""
    from countdp.design.lp_solve import solve_proven
    from countdp.design.model import DesignProblem
    from countdp.design.optimality import check_optimality, lower_column_multipliers
    from countdp.design.reduce import ReduceModel
    from countdp.privacy.certify import certify

    problem = DesignProblem(12, 0.8, ("RM", "CM", "WH", "S"), "L1")
    lp, inverse = ReduceModel().apply(problem)
    _, _, run, _ = solve_proven(lp, "simplex", settings=DEFAULT_SETTINGS)
    P = certify(inverse.invert_primal(run.y), 0.8)[0]
    u, v = inverse.invert_dual(run.row_dual, run.col_dual)
    full = problem.lp()
    assert check_optimality(full, P.ravel(), u, lower_column_multipliers(full, u, v))["certified"]
    other, other_inverse = ReduceModel().apply(DesignProblem(12, 0.8, ("WH", "S"), "L1"))
    _, _, other_run, _ = solve_proven(other, "simplex", settings=DEFAULT_SETTINGS)
    u2, v2 = other_inverse.invert_dual(other_run.row_dual, other_run.col_dual)
    u2, v2 = problem.dual_from(other.problem, u2, v2)
    assert not check_optimality(full, P.ravel(), u2, lower_column_multipliers(full, u2, v2))["certified"]
