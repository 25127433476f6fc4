"""HiGHS on the reduced model: a vertex with its basis in the model's units, iteration limits that
stop it, failures that raise; its thread pool left alone and its banner silent unless verbose."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design.highspy_loader import load_highspy
from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.design.solvers.clarabel import run_clarabel
from countdp.design.solvers.highs import basis_statuses, highs_lp, run_highs, work_limits
from countdp.mechanisms.closed_forms import geometric
from countdp.values.objectives import objective_value


def test_highs_lp_solves_a_hand_made_lp_with_infinite_bounds():
    """min -x0 - x1 s.t. x0 + 2 x1 <= 4, 3 x0 + x1 <= 6, x >= 0 (x1 unbounded above): optimum at
    (8/5, 6/5), value -14/5, worked by hand; the basis reads both rows active."""
    highspy = load_highspy()
    A = sp.csr_matrix(np.array([[1.0, 2.0], [3.0, 1.0]]))
    model = highs_lp(A, np.array([-1.0, -1.0]), np.zeros(2), np.array([10.0, np.inf]),
                     np.full(2, -np.inf), np.array([4.0, 6.0]))
    assert model.col_upper_[1] == highspy.kHighsInf and model.row_lower_[0] == -highspy.kHighsInf
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model)
    h.run()
    np.testing.assert_allclose(h.getSolution().col_value, [1.6, 1.2], atol=1e-12)
    assert h.getInfo().objective_function_value == pytest.approx(-2.8, abs=1e-12)
    col_basic, _, row_active, row_upper = basis_statuses(highspy, h.getBasis())
    assert col_basic.all() and row_active.all() and row_upper.all()


@pytest.mark.parametrize("chosen", ["simplex", "ipm"])
def test_vertex_has_the_theorem_3_optimum_and_clarabel_agrees(chosen):
    """WH with S, L0, n = 16, alpha = 0.62 (n >= 2a/(1-a)): GM's value is the optimum (Theorem 3);
    HiGHS's vertex and Clarabel's point both have it."""
    n, alpha = 16, 0.62
    lp = build_reduced_lp(n, alpha, ("WH", "S"), "L0")
    run = run_highs(lp, chosen, settings=DEFAULT_SETTINGS)
    gm = objective_value(geometric(n, alpha), "L0")
    assert run.status == "Optimal" and run.basis is not None and run.highs_basis is not None
    assert lp.cost @ run.y == pytest.approx(gm, abs=1e-9)
    assert run_clarabel(lp, settings=DEFAULT_SETTINGS).objective == pytest.approx(gm, abs=1e-9)


def test_simplex_limits_count_iterations():
    """One iteration is not enough (raises); a generous limit is; the work limit is iterations times rows."""
    lp = build_reduced_lp(40, 0.8, ("WH", "S"), "L1")
    with pytest.raises(RuntimeError, match="Iteration limit reached"):
        run_highs(lp, "simplex", iterations=1, settings=DEFAULT_SETTINGS)
    run = run_highs(lp, "simplex", iterations=10**6, settings=DEFAULT_SETTINGS)
    assert run.status == "Optimal" and run.pivots > 1
    assert work_limits((1e6, 3e6), lp) == (int(1e6 / lp.A.shape[0]), int(3e6 / lp.A.shape[0]))


def test_tightened_resolve_from_a_vertex_keeps_the_optimum():
    """Restarting from a vertex's basis with every row scaled up 1e3 (the tightened re-solve) needs
    few pivots and ends at the same optimal value."""
    lp = build_reduced_lp(24, 0.62, ("F",), "L2")
    first = run_highs(lp, "simplex", settings=DEFAULT_SETTINGS)
    again = run_highs(lp, "simplex", tight_from=first, row_boost=1e3, settings=DEFAULT_SETTINGS)
    assert again.objective == pytest.approx(first.objective, rel=1e-9) and again.pivots <= first.pivots


def test_an_infeasible_model_raises():
    """Entries bounded by 1e-3 cannot make columns of 11 entries sum to 1: HiGHS's status raises."""
    lp = build_reduced_lp(10, 0.7, ("WH",), "L1")
    with pytest.raises(RuntimeError, match="HiGHS simplex returned 'Infeasible'"):
        run_highs(replace(lp, col_upper=np.full(lp.A.shape[1], 1e-3)), "simplex", settings=DEFAULT_SETTINGS)


POOL_OF_THREE = """
import highspy
h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.setOptionValue("threads", 3)
h.addVar(0.0, 1.0)
h.changeColCost(0, 1.0)
h.run()
assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
"""

SOLVES = """
from countdp.design.lp_solve import solve_proven
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.design.reduce import build_reduced_lp
_, used, _, optimality = solve_proven(build_reduced_lp(12, 0.91, ("WH",), "L0"), "simplex", settings=DEFAULT_SETTINGS)
assert optimality["certified"], optimality
"""


def test_solves_after_another_solve_fixed_the_thread_pool():
    """HiGHS's thread pool is one per process: after an earlier solve fixed it at 3 threads (as
    another pipeline job in the same process may), the reduced model still solves, since no model
    here sets ``threads``.  The first script alone shows the pool taking the count it is given."""
    done = subprocess.run([sys.executable, "-c", POOL_OF_THREE + SOLVES], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    clash = POOL_OF_THREE + POOL_OF_THREE.replace('"threads", 3', '"threads", 2').replace("import highspy", "")
    failed = subprocess.run([sys.executable, "-c", clash], capture_output=True, text=True, timeout=300)
    assert failed.returncode != 0 and "AssertionError" in failed.stderr  # another count fails: why none may ask


def test_highs_banner_is_silent_unless_verbose():
    """highspy prints its banner on the C-level standard output when the first model is made;
    after :func:`load_highspy` neither standard output nor standard error holds it (only what was
    printed on purpose), after ``load_highspy(verbose=True)`` standard error does, and a plain first
    ``highspy.Highs()`` puts it on standard output."""
    loaded = "from countdp.design.highspy_loader import load_highspy\nload_highspy().Highs()\nprint('only this')"
    done = subprocess.run([sys.executable, "-c", loaded], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == "only this\n" and done.stderr == ""
    verbose = subprocess.run([sys.executable, "-c", loaded.replace("load_highspy()", "load_highspy(verbose=True)")],
                             capture_output=True, text=True, timeout=300)
    assert verbose.stdout == "only this\n" and "Running HiGHS" in verbose.stderr
    plain = subprocess.run([sys.executable, "-c", "import highspy\nhighspy.Highs()"], capture_output=True, text=True,
                           timeout=300)
    assert "HiGHS" in plain.stdout
