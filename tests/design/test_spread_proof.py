"""WM's spread proven at the size it is designed at, with the canonical template's dual copied there.

The independent facts: the spread's L0 equals the optimum the LP path proves on its own at the
same size (``tests/structural/test_spread.py``), and here the weak-duality check refuses a
corrupted spread and a dual that belongs to another alpha (the proof can fail).
"""

from fractions import Fraction

import numpy as np
import pytest

from countdp.design.forms import canonical_design, structural_form
from countdp.design.model import DesignProblem
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.design.spread_proof import proven_spread, spread_serves
from countdp.design.template.proof import prove_copied_dual
from countdp.structural.template import TEMPLATE_MECHANISMS

HALF = Fraction(1, 2)


def _spread_matrix(n: int, alpha: Fraction) -> np.ndarray:
    form = structural_form("WM", n, alpha)
    return form.dense_weights() / float(form.denominator)


def _prove(raw: np.ndarray, n: int, alpha: Fraction, dual_alpha: Fraction) -> dict:
    design = canonical_design("WM", dual_alpha, 62, settings=DEFAULT_SETTINGS)
    problem = DesignProblem(n, float(alpha), TEMPLATE_MECHANISMS["WM"], "L0")
    return prove_copied_dual(problem, raw, design.dual, int(design.source["template_width"]), {})


def test_the_spread_is_proven_at_sizes_it_was_not_solved_at():
    for n in (319, 450):
        form, matrix, record = proven_spread("WM", n, HALF, settings=DEFAULT_SETTINGS)
        assert matrix is not None and record["optimality"]["certified"], record
        assert record["optimality"]["gap"] < 1e-9
    # the repeated middle columns tell the truth with GM's interior probability, (1 - alpha) / (1 + alpha)
    middle = np.diag(matrix)[form.c + 1: n - form.c]
    assert middle.size == n - 2 * form.c - 1 > 100
    assert middle == pytest.approx(1 / 3, abs=1e-9)  # the solver's accuracy


def test_mass_moved_off_the_diagonal_is_refused():
    n = 400
    raw = _spread_matrix(n, HALF)
    assert _prove(raw, n, HALF, HALF)["certified"]
    raw[200, 200] -= 1e-4  # one column's truthful output gives 1e-4 to its neighbour: still DP-repairable
    raw[201, 200] += 1e-4
    assert not _prove(raw, n, HALF, HALF)["certified"]


def test_a_dual_of_another_alpha_is_refused():
    n = 493
    raw = _spread_matrix(n, Fraction(3, 4))
    assert _prove(raw, n, Fraction(3, 4), Fraction(3, 4))["certified"]
    assert not _prove(raw, n, Fraction(3, 4), HALF)["certified"]


@pytest.mark.parametrize("n, objective, options, serves", [
    (400, "L0", {}, True), (318, "L0", {}, False), (2049, "L0", {}, False), (400, "L1", {}, False),
    (400, "L0", {"method": "simplex"}, False), (400, "L0", {"backend": "cvxpy"}, False),
    (400, "L0", {"max_repair_lambda": 1e-6}, True)])
def test_where_the_spread_serves(n, objective, options, serves):
    assert spread_serves("WM", n, HALF, objective, options, settings=DEFAULT_SETTINGS) is serves


def test_no_spread_where_alpha_has_no_structure():
    assert not spread_serves("WM", 2000, Fraction(99, 100), "L0", {}, settings=DEFAULT_SETTINGS)  # canonical size 9,241
    assert not spread_serves("WH", 2000, HALF, "L0", {}, settings=DEFAULT_SETTINGS)
