"""The chain elimination of complementary slackness (countdp.design.template.chain_support, through
countdp.design.template.relaxed_proof.chain_dual): given the support of an optimal vertex's dual,
it recovers that dual and that vertex, as HiGHS's simplex found them independently."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.model import DesignProblem
from countdp.design.optimality import check_optimality
from countdp.design.planner import make_context
from countdp.design.polish import full_dual
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.template.relaxed_proof import chain_dual


def simplex_optimum(n: int, alpha: float, props: tuple[str, ...], objective: str):
    """``(problem, P, u, v)``: the optimal vertex of the general LP and its dual on the full model,
    by HiGHS's dual simplex (polished from its basis), proven optimal."""
    context = make_context(DEFAULT_SETTINGS)
    problem = DesignProblem(n, alpha, props, objective)
    lp = context.solves.reduced_lp(problem)
    P, _, run, optimality = context.solves.solve_proven(lp, "simplex", fallback=False)
    assert optimality["certified"] and run.basis is not None
    u, v = full_dual(lp, run.row_dual, run.col_dual)
    return problem, P, u, v


SPARSE = SolverSettings.of(chain_dense_max_bytes=0)
"""The chain's system factorised by SuperLU whatever its size (by default only wide corners' are)."""


@pytest.mark.parametrize("settings", [DEFAULT_SETTINGS, SPARSE], ids=["dense", "sparse"])
@pytest.mark.parametrize(("props", "objective", "alpha"), [
    (("CH",), "L1", 0.7),
    (("RM", "CH"), "L1", 0.7),  # RM's rows are chain edges too (coefficients 1 and -1)
    (("RH", "CH"), "L2", 0.6),  # RH's rows are not: they couple an entry with the diagonal
    (("CH",), "L0d:1", 0.6),
])
def test_the_support_gives_back_the_simplex_dual_and_vertex(props, objective, alpha, settings):
    n = 40
    problem, P, u, v = simplex_optimum(n, alpha, props, objective)
    N = n + 1
    support = np.flatnonzero(u > 1e-12 * u.max())
    y, x = chain_dual(problem.lp(), support, P.max(axis=1) > 0, settings=settings)
    assert np.abs(x.reshape(N, N) - P).max() <= 1e-12
    assert np.abs(y - np.concatenate([u, v[:N]])).max() <= 1e-10 * max(1.0, np.abs(u).max())


def test_a_support_with_a_row_too_many_is_refused_with_the_count():
    problem, P, u, _ = simplex_optimum(40, 0.7, ("CH",), "L1")
    ch_rows = problem.blocks["CH"][1]
    idle = np.flatnonzero(u[ch_rows] == 0)[0] + ch_rows.start  # a CH row with no multiplier
    support = np.union1d(np.flatnonzero(u > 1e-12 * u.max()), [idle])
    with pytest.raises(ValueError, match=r"\+1 coupling rows"):
        chain_dual(problem.lp(), support, P.max(axis=1) > 0, settings=DEFAULT_SETTINGS)


@pytest.mark.parametrize("settings", [DEFAULT_SETTINGS, SPARSE], ids=["dense", "sparse"])
def test_a_singular_system_is_refused_not_solved(settings):
    """A support with one CH row in place of another, taken twice, has as many path conditions as
    unknowns but two equal columns: either LU finds it exactly singular and the chain says so (a
    ``ValueError``, as for a support of the wrong size), not a dual of infinities."""
    problem, P, u, _ = simplex_optimum(40, 0.7, ("CH",), "L1")
    ch_rows = problem.blocks["CH"][1]
    used = np.flatnonzero(u > 1e-12 * u.max())
    on_ch = used[(used >= ch_rows.start) & (used < ch_rows.stop)]
    support = np.sort(np.r_[np.setdiff1d(used, on_ch[:1]), on_ch[1]])  # on_ch[0] out, on_ch[1] twice
    with pytest.raises(ValueError, match="singular"):
        chain_dual(problem.lp(), support, P.max(axis=1) > 0, settings=settings)


def test_a_support_missing_a_row_gives_no_vertex_and_a_dual_the_check_rejects():
    """One CH row short, the paths' conditions outnumber the coupling unknowns: the least-squares
    dual leaves reduced costs negative, and the independent check does not certify it."""
    problem, P, u, _ = simplex_optimum(40, 0.7, ("CH",), "L1")
    support = np.flatnonzero(u > 1e-12 * u.max())
    ch_rows = problem.blocks["CH"][1]
    dropped = support[(support >= ch_rows.start) & (support < ch_rows.stop)][0]
    full = problem.lp()
    y, x = chain_dual(full, support[support != dropped], P.max(axis=1) > 0, settings=DEFAULT_SETTINGS)
    assert x is None
    N = problem.N
    v = np.concatenate([y[full.b_ub.size:], np.zeros(full.b_eq.size - N)])
    assert not check_optimality(full, P.ravel(), y[: full.b_ub.size], v)["certified"]


def test_a_support_missing_a_row_is_completed_from_the_rows_tight_at_the_vertex():
    """The same support one CH row short, given the rows tight at the vertex as candidates, or every
    row: the completion LP adds rows until every path's condition is met, and the chain solve then
    gives back the simplex's vertex and a dual that the independent check certifies on it (with
    every row offered, the LP must still choose rows tight at the vertex, or the vertex is lost)."""
    problem, P, u, v = simplex_optimum(40, 0.7, ("CH",), "L1")
    full, N = problem.lp(), problem.N
    support = np.flatnonzero(u > 1e-12 * u.max())
    ch_rows = problem.blocks["CH"][1]
    dropped = support[(support >= ch_rows.start) & (support < ch_rows.stop)][0]
    slack = full.A_ub @ P.ravel() - full.b_ub
    tight = np.flatnonzero(slack <= 1e-9 * (abs(full.A_ub) @ P.ravel()))  # P is the rounded vertex
    assert dropped in tight
    for candidates in (tight, np.arange(full.b_ub.size)):  # the tight rows, then every row: the LP chooses
        y, x = chain_dual(full, support[support != dropped], P.max(axis=1) > 0, candidates=candidates,
                          settings=DEFAULT_SETTINGS)
        assert x is not None and np.abs(x.reshape(N, N) - P).max() <= 1e-12
        dual = np.concatenate([y[full.b_ub.size:], np.zeros(full.b_eq.size - N)])
        assert check_optimality(full, P.ravel(), y[: full.b_ub.size], dual)["certified"]
        assert np.all(y[np.setdiff1d(np.arange(full.b_ub.size), tight)] == 0)  # complementary slackness


def test_a_support_short_of_a_row_that_no_candidate_supplies_stays_short():
    """Candidates that do not touch the paths left short (here, only DP rows of the first output
    row) add nothing: no vertex, and the check still rejects the dual."""
    problem, P, u, _ = simplex_optimum(40, 0.7, ("CH",), "L1")
    full, N = problem.lp(), problem.N
    support = np.flatnonzero(u > 1e-12 * u.max())
    ch_rows = problem.blocks["CH"][1]
    dropped = support[(support >= ch_rows.start) & (support < ch_rows.stop)][0]
    y, x = chain_dual(full, support[support != dropped], P.max(axis=1) > 0, candidates=np.arange(N - 1),
                      settings=DEFAULT_SETTINGS)
    assert x is None
    v = np.concatenate([y[full.b_ub.size:], np.zeros(full.b_eq.size - N)])
    assert not check_optimality(full, P.ravel(), y[: full.b_ub.size], v)["certified"]


def test_the_completion_lp_stops_at_its_iteration_count():
    """The completion LP's limit is a count of simplex iterations (``completion_iterations``), not
    seconds: with every row offered it needs some tens of pivots, so one iteration leaves the
    support short (no vertex, the check rejects the dual) on any machine under any load, and the
    default completes it."""
    problem, P, u, _ = simplex_optimum(40, 0.7, ("CH",), "L1")
    full, N = problem.lp(), problem.N
    support = np.flatnonzero(u > 1e-12 * u.max())
    ch_rows = problem.blocks["CH"][1]
    short = support[support != support[(support >= ch_rows.start) & (support < ch_rows.stop)][0]]
    every = np.arange(full.b_ub.size)
    y, x = chain_dual(full, short, P.max(axis=1) > 0, candidates=every,
                      settings=SolverSettings.of(completion_iterations=1))
    assert x is None
    v = np.concatenate([y[full.b_ub.size:], np.zeros(full.b_eq.size - N)])
    assert not check_optimality(full, P.ravel(), y[: full.b_ub.size], v)["certified"]
    _, x = chain_dual(full, short, P.max(axis=1) > 0, candidates=every, settings=DEFAULT_SETTINGS)
    assert x is not None and np.abs(x.reshape(N, N) - P).max() <= 1e-12
