"""The square-corner template of mirror-symmetric L0: proven on the full model, equal to the general path's
optimum, and refused when its dual or its matrix is corrupted."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design.designer import design_lp
from countdp.design.model import DesignProblem
from countdp.design.optimality import check_optimality
from countdp.design.request import DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategies.square_template import LABEL, STRATEGY
from countdp.design.template.square_geometry import middle_rows, primal_map
from countdp.design.template.square_proof import essential_properties, prove_square, square_width, strongest_pairs
from countdp.design.template.square_trim import trimmed_map

WM = ("RM", "CM", "WH", "S")
N_SMALL, ALPHA = 160, 0.9
SMALL = SolverSettings.of(square_min_width=8)  # the template at alpha = 0.9 (W = 16), where the general LP is cheap
GENERAL = SolverSettings.of(template_min_n=10_000)  # no template: the general path


@pytest.fixture(scope="module")
def proven():
    """The square template's certificate for WM at n = 160, alpha = 0.9 (with the full multipliers)."""
    problem = DesignProblem(N_SMALL, ALPHA, WM, "L0")
    return problem, prove_square(problem, square_width(ALPHA, SMALL), settings=SMALL)


def test_certificate_closes_on_the_full_model(proven):
    problem, result = proven
    assert result["certified"]
    # the weak-duality check, run again here on the full LP (S, WH, CM rows included)
    again = check_optimality(problem.lp(), result["matrix"].ravel(), result["u"], result["v"])
    assert again["certified"]
    P = result["matrix"]
    assert np.allclose(P, P[::-1, ::-1], atol=1e-12)  # S holds by construction


@pytest.mark.parametrize("props", [WM, ("CH", "WH", "S"), ("CM",), ("RH", "RM", "CH", "CM", "WH", "S")])
def test_planner_answer_equals_the_general_paths_optimum(props):
    """Without S too (CM alone): the symmetric answer is proven on the LP as asked (Theorem 1: S is
    free); with CH beside CM and RH beside RM, the template drops the implied rows and the proof
    keeps them all."""
    square = design_lp(N_SMALL, ALPHA, props, "L0", settings=SMALL)
    general = design_lp(N_SMALL, ALPHA, props, "L0", settings=GENERAL)
    assert square.method == LABEL and square.status == "optimal"
    assert general.method != LABEL and general.extra["optimality"]["certified"]
    value = square.extra["optimality"]["primal_objective"]
    assert value == pytest.approx(general.extra["optimality"]["primal_objective"], rel=1e-8)


def test_a_corrupted_dual_or_matrix_is_refused(proven):
    problem, result = proven
    full, P, u, v = problem.lp(), result["matrix"], result["u"], result["v"]
    raised = v.copy()
    raised[N_SMALL // 2] += 1e-3  # one column-sum multiplier too large: dual infeasible in that column
    assert not check_optimality(full, P.ravel(), u, raised)["certified"]
    dropped = u.copy()
    dropped[np.argmax(u)] = 0.0  # the largest multiplier left out
    assert not check_optimality(full, P.ravel(), dropped, v)["certified"]
    moved = P.copy()
    moved[0, 0] -= 1e-3
    moved[1, 0] += 1e-3  # the same column sums, a worse L0
    assert not check_optimality(full, moved.ravel(), u, v)["certified"]


@pytest.mark.parametrize("trim", [None, (1.0, 0.5, 0.2)])
def test_primal_map_is_mirror_symmetric_and_spans_the_middle_column_sums(trim):
    n, W, alpha = 60, 12, 0.8
    col, weight, k = primal_map(n, W, alpha) if trim is None else trimmed_map(n, W, alpha, trim)
    z = np.random.default_rng(1).random(k)
    P = (weight * z[col]).reshape(n + 1, n + 1)
    assert np.allclose(P, P[::-1, ::-1])  # S: (i, j) and (n - i, n - j) copy one unknown alike
    rows, rhs = middle_rows(n, W, alpha)
    E = sp.csr_matrix((weight, (np.arange(col.size), col)), shape=(col.size, k))
    z[k - 1] = rhs[0]  # g
    spanned = np.flatnonzero((rows[1] @ E).toarray().ravel())
    z[spanned] *= rhs[1] / ((rows[1] @ E) @ z).item()
    P = (weight * z[col]).reshape(n + 1, n + 1)
    assert np.allclose(rows @ P.ravel(), rhs)
    middle = P[:, W + 1: n - W].sum(axis=0)
    assert np.allclose(middle, 1.0, atol=1e-12)  # the two rows imply every middle column sum


def test_the_implied_properties_hold_on_the_answer_without_their_rows():
    """CM implies CH and RM implies RH: a design solved without CH's and RH's rows satisfies them."""
    assert essential_properties(("RH", "RM", "CH", "CM", "WH", "S")) == ("RM", "CM", "WH", "S")
    assert essential_properties(("RH", "CM")) == ("RH", "CM")  # RH is not implied by CM
    P = design_lp(N_SMALL, ALPHA, ("RM", "CM", "WH", "S"), "L0", settings=SMALL).matrix
    diagonal = np.diag(P)
    assert np.all(P <= diagonal[None, :] + 1e-12)  # CH: each column's largest entry on the diagonal
    assert np.all(P <= diagonal[:, None] + 1e-12)  # RH: each row's largest entry on the diagonal


def test_strongest_pairs_keeps_a_row_implying_each_dropped_one():
    rng = np.random.default_rng(2)
    m, k = 400, 12
    a, b = rng.integers(0, k, m), rng.integers(0, k, m)
    b = np.where(a == b, (b + 1) % k, b)
    p, q = rng.uniform(0.5, 2.0, m), rng.uniform(0.1, 2.0, m)
    A = sp.csr_matrix((np.r_[p, -q], (np.r_[np.arange(m), np.arange(m)], np.r_[a, b])), shape=(m, k))
    lo, hi = np.zeros(m), np.full(m, np.inf)
    keep = strongest_pairs(A, lo, hi)
    kept = set(keep.tolist())
    for r in range(m):
        same = [s for s in kept if a[s] == a[r] and b[s] == b[r]]
        assert same and max(q[s] / p[s] for s in same) >= q[r] / p[r]  # z_a >= max ratio * z_b implies row r
    assert len(kept) == len({(x, y) for x, y in zip(a, b, strict=True)})


def test_accepts_only_mirror_symmetric_l0_and_wide_corners():
    settings = SolverSettings()
    wide = DesignRequest.of(1024, 0.99, WM, "L0")
    assert STRATEGY.accepts(wide, settings) is None
    assert STRATEGY.accepts(DesignRequest.of(1024, 0.99, WM, "L1"), settings) is not None
    assert STRATEGY.accepts(DesignRequest.of(1024, 0.99, ("RM", "CM", "WH"), "L0"), settings) is None  # S free
    assert "below" in STRATEGY.accepts(DesignRequest.of(1024, 0.9, WM, "L0"), settings)  # corners 16 wide
    assert "twice" in STRATEGY.accepts(DesignRequest.of(400, 0.99, WM, "L0"), settings)
