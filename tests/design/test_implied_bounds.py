"""Lower bounds implied by two-variable rows: checked against the LP itself (same optimum with
and without them, by HiGHS) and against hand-made rows whose implications are known."""

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design.implied_bounds import implied_nonnegative
from countdp.design.reduce import build_reduced_lp
from countdp.design.solvers.highs import highs_lp
from tests.helpers.design import reduced_design


def _solve(model):
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model)
    h.run()
    return np.array(h.getSolution().col_value), h.getInfo().objective_function_value


def _mask(rows, lo, hi, k, col_lower=None):
    A = sp.csr_matrix(np.array(rows, float))
    col_lower = np.zeros(k) if col_lower is None else np.asarray(col_lower, float)
    return implied_nonnegative(A, np.array(lo, float), np.array(hi, float), col_lower)


def test_a_chain_keeps_one_bound_and_a_cycle_one():
    inf = np.inf
    # y1 >= 0.5 y0, y2 >= 2 y1: a chain from y0
    assert _mask([[-0.5, 1, 0], [0, -2, 1]], [0, 0], [inf, inf], 3).tolist() == [False, True, True]
    # written as <= 0 rows: the same implications
    assert _mask([[0.5, -1, 0], [0, 2, -1]], [-inf, -inf], [0, 0], 3).tolist() == [False, True, True]
    # y0 and y1 bound each other both ways (a DP pair): one of the two is kept
    assert _mask([[-0.9, 1], [1, -0.9]], [0, 0], [inf, inf], 2).sum() == 1


def test_rows_that_imply_nothing():
    inf = np.inf
    assert not _mask([[1, 1]], [0], [inf], 2).any()  # y0 + y1 >= 0: same signs
    assert not _mask([[-1, 1]], [-1], [inf], 2).any()  # y1 >= y0 - 1: a negative lower side
    assert not _mask([[-1, 1, 1]], [0], [inf], 3).any()  # three variables
    assert not _mask([[-1, 1]], [0], [inf], 2, col_lower=[-inf, 0]).any()  # y0 free: y1's bound stays


@pytest.mark.parametrize("props,objective,alpha",
                         [((), "L1", 0.5), (("RM",), "L2", 0.9), (("RH", "CH"), "L0d:1", 0.62)])
def test_a_design_lp_keeps_one_bound_per_output_row_and_its_optimum(props, objective, alpha):
    """Plain DP rows link every output row's entries: at most one bound per output row remains,
    and HiGHS finds the same optimum without the implied bounds."""
    n = 12
    lp = build_reduced_lp(n, alpha, props, objective, None, "sum", False, True)
    implied = implied_nonnegative(lp.A, lp.row_lower, lp.row_upper, lp.col_lower)
    assert (lp.col_lower == 0).sum() - implied.sum() <= n + 1
    lower = np.where(implied, -np.inf, lp.col_lower)
    with_bounds = _solve(highs_lp(lp.A, lp.cost, lp.col_lower, lp.col_upper, lp.row_lower, lp.row_upper))
    without = _solve(highs_lp(lp.A, lp.cost, lower, lp.col_upper, lp.row_lower, lp.row_upper))
    assert without[1] == pytest.approx(with_bounds[1], rel=1e-9, abs=1e-12)
    assert without[0].min() >= -1e-9


def test_near_one_clarabel_leaves_the_implied_bounds_out_and_the_design_is_proven(monkeypatch):
    """LP with RM, L2, n = 160, alpha = 0.99 (too near 1 for a template): Clarabel sees one bound
    per output row at most, and the answer is still proven optimal."""
    from countdp.design.solvers import clarabel

    kept = []
    real = clarabel.implied_nonnegative

    def counting(A, lo, hi, col_lower):
        mask = real(A, lo, hi, col_lower)
        kept.append(int((col_lower == 0).sum() - mask.sum()))
        return mask

    monkeypatch.setattr(clarabel, "implied_nonnegative", counting)
    found = reduced_design(160, 0.99, ("RM",), "L2")
    assert found.status == "optimal" and found.extra["optimality"]["certified"]
    assert kept and max(kept) <= 161
