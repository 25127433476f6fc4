"""The trimmed square corners (countdp.design.template.square_trim): each tied cell copies the nearest
free cell of its row on the diagonal's side (against a brute-force search), the form is a
restriction of the full square (never a better optimum; the same one when nothing is trimmed),
and a trim that cuts off the optimum's free cells is caught by the certificate, not trusted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from countdp.design.model import DesignProblem
from countdp.design.policy import relaxed_width
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.design.template.relaxed_proof import relaxed_problem
from countdp.design.template.square_chain import prove_square_chain
from countdp.design.template.square_proof import square_primal
from countdp.design.template.square_trim import free_cells, ties, trim_sizes, trimmed_unknowns
from tests.helpers.design import general_optimum

WM = ("RM", "CM", "WH", "S")


def test_each_tied_cell_copies_the_nearest_free_cell_towards_the_diagonal():
    rng = np.random.default_rng(3)
    K = 23
    free = rng.random((K, K)) < 0.3
    np.fill_diagonal(free, True)
    cell, steps = ties(free)
    for i in range(K):
        for j in range(K):
            towards = range(j, i + 1) if j <= i else range(j, i - 1, -1)  # from (i, j) to the diagonal
            source = next(c for c in towards if free[i, c])
            assert cell[i * K + j] == i * K + source and steps[i * K + j] == abs(j - source)


def test_a_row_without_its_diagonal_free_is_refused():
    free = np.eye(5, dtype=bool)
    free[2, 2] = False
    with pytest.raises(ValueError, match="no free cell"):
        ties(free)


def test_the_sizes_scale_as_one_over_minus_log_alpha():
    assert trim_sizes(0.97, (2.0, 0.6, 0.4)) == (66, 20, 14)  # 1 / -ln 0.97 = 32.83
    for alpha in (0.8, 0.93, 0.99):
        s = 1.0 / -math.log(alpha)
        assert trim_sizes(alpha, (1.0, 0.5, 0.25)) == (math.ceil(s), math.ceil(s / 2), math.ceil(s / 4))


def test_the_free_cells_are_the_diagonal_the_first_rows_the_band_and_the_first_columns():
    W, alpha, trim = 40, 0.9, (1.0, 0.3, 0.2)
    T, B, C = trim_sizes(alpha, trim)  # 10, 3, 2
    free = free_cells(W, alpha, trim)
    assert free.diagonal().all() and trimmed_unknowns(W, alpha, trim) == free.sum() + 1
    row = W  # a row past T: the band left of the diagonal and the first C + 1 columns
    assert np.flatnonzero(free[row]).tolist() == list(range(C + 1)) + list(range(row - B, row + 1))
    assert np.flatnonzero(free[T]).tolist() == list(range(T + B + 1))


@pytest.mark.parametrize(("props", "objective", "alpha", "cut"), [(WM, "L2", 0.9, (1.0, 0.3, 0.1)),
                                                             (("CH", "WH", "S"), "L1", 0.85, (0.5, 0.2, 0.0))])
def test_the_trimmed_square_is_a_restriction_of_the_full_one(props, objective, alpha, cut):
    """Untrimmed (factors wide enough to free every cell) it is the full square, to the same optimum;
    trimmed too far (``cut``) it is never better, and here strictly worse."""
    n = 160
    problem = relaxed_problem(DesignProblem(n, alpha, props, objective))
    W = relaxed_width(alpha, problem.objective, DEFAULT_SETTINGS)
    full = problem.lp()
    x_full, info_full = square_primal(full, n, W, alpha, DEFAULT_SETTINGS, vertex=True)
    x_all, info_all = square_primal(full, n, W, alpha, DEFAULT_SETTINGS, vertex=True, trim=(100.0, 100.0, 100.0))
    assert info_all["primal_unknowns"] == info_full["primal_unknowns"] == (W + 1) ** 2 + 1
    assert abs(full.c @ x_all - full.c @ x_full) <= 1e-9 * full.c @ x_full
    x_cut, _ = square_primal(full, n, W, alpha, DEFAULT_SETTINGS, vertex=True, trim=cut)
    assert full.c @ x_cut > (1 + 1e-6) * (full.c @ x_full)


def test_the_trimmed_square_alone_proves_the_general_optimum_and_a_cut_one_is_not_trusted():
    """WM, L2, alpha 0.9, n = 160 (factors measured at 0.97 and n = 1024): the trimmed square, the full
    one excluded, is proven at the optimum of the general path; trimmed too far (10 rows, a band of 3,
    the first 2 columns: 0.7 % above the optimum), the certificate stays open."""
    n, alpha = 160, 0.9
    target = DesignProblem(n, alpha, WM, "L2")
    W = relaxed_width(alpha, target.objective, DEFAULT_SETTINGS)
    trimmed_only = DEFAULT_SETTINGS.with_values(square_chain_max_unknowns=(W + 1) ** 2)
    result = prove_square_chain(target, W, settings=trimmed_only)
    assert result["certified"] and "trim" in result, result.get("reason")
    expected = general_optimum(n, alpha, WM, "L2")
    assert abs(result["primal_objective"] - expected) <= 1e-8 * expected
    cut = prove_square_chain(target, W, settings=trimmed_only.with_values(square_chain_trim=(1.0, 0.3, 0.1)))
    assert not cut["certified"]
