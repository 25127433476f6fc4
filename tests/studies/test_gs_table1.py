"""G-S Table 1 recomputed: values checked against hand-derived facts, cvxpy, and the verdicts shown
to change when the values they judge are broken."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from countdp.consumers.losses import loss_matrix
from countdp.multilevel.exact_forms import gm_exact
from countdp.studies.gs_table1 import (
    PRINTED,
    TABLE_COLUMNS,
    convergents,
    mismatches,
    table1_checks,
    table1_table,
    table1_values,
)


@pytest.fixture(scope="module")
def values():
    return table1_values()


def test_exact_geometric_is_definition_4():
    G = gm_exact(3, Fraction(1, 4))
    # input 0: 1/(1+a) at 0, (1-a)/(1+a) a^z inside, a^3/(1+a) at 3; input 1: a/(1+a), (1-a)/(1+a), ...
    assert G[:, 0].tolist() == [Fraction(4, 5), Fraction(3, 20), Fraction(3, 80), Fraction(1, 80)]
    assert G[:, 1].tolist() == [Fraction(1, 5), Fraction(3, 5), Fraction(3, 20), Fraction(1, 20)]
    assert all(sum(G[:, i]) == 1 for i in range(4))


def test_convergents_of_known_fractions():
    assert convergents(Fraction(68, 83)) == [0, 1, Fraction(4, 5), Fraction(5, 6), Fraction(9, 11), Fraction(68, 83)]
    assert convergents(Fraction(355, 113))[-1] == Fraction(355, 113)
    assert Fraction(22, 7) in convergents(Fraction(355, 113))


def test_the_optimum_agrees_with_an_independent_cvxpy_solve(values):
    import cvxpy as cp  # heavy: only this test needs it

    L, alpha = loss_matrix("L1", 3), 0.25
    x = cp.Variable((4, 4), nonneg=True)
    constraints = [cp.sum(x, axis=0) == 1, alpha * x[:, 1:] <= x[:, :-1], alpha * x[:, :-1] <= x[:, 1:]]
    problem = cp.Problem(cp.Minimize(cp.max(cp.hstack([L[i, :] @ x[:, i] for i in range(4)]))), constraints)
    problem.solve(solver="CLARABEL")
    assert values["own"].primal == Fraction(168, 415)
    assert problem.value == pytest.approx(168 / 415, abs=1e-7)
    assert np.allclose(values["X"].astype(float), x.value, atol=1e-5)  # the optimum is unique


def test_the_printed_interaction_loses_357_880(values):
    """(c) as printed, worked by hand: input 0 loses 2/11 * 4/5 + 3/20 + 2 * (3/80 + 2/11 * 1/80) +
    3 * 9/11 * 1/80 = 357/880; input 1 loses 89/220; both exceed 168/415."""
    G, T = values["G"], PRINTED["(c)"]
    loss = [sum(abs(i - a) * G[r, i] * T[r, a] for r in range(4) for a in range(4)) for i in range(4)]
    assert loss == [Fraction(357, 880), Fraction(89, 220), Fraction(89, 220), Fraction(357, 880)]
    checks = table1_checks(values).set_index("claim")
    row = checks.loc["(c) as printed is an optimal interaction with (b)"]
    assert "357/880" in row.our_value and not row.holds


def test_identity_is_the_best_deterministic_remap_and_randomization_beats_it(values):
    G = values["G"]
    identity = max(sum(abs(i - r) * G[r, i] for r in range(4)) for i in range(4))
    assert identity == Fraction(9, 20) > Fraction(168, 415)
    row = table1_checks(values).set_index("claim").loc[
        "minimax consumers need randomized post-processing ('see Table 1')"]
    assert "9/20" in row.our_value and row.holds


def test_table_verdicts(values):
    table = table1_table(values)
    assert tuple(table.columns) == TABLE_COLUMNS and len(table) == 48
    kinds = table.groupby(["matrix", "kind"]).size().to_dict()
    assert kinds == {("(a) optimal mechanism", "rounded"): 16, ("(b) G_{3,1/4}", "convention"): 16,
                     ("(c) consumer interaction", "equal"): 12, ("(c) consumer interaction", "rounded"): 4}
    wrong = mismatches(table)
    assert len(wrong) == 36 and (wrong.evidence != "").all()
    first = wrong.iloc[0]
    assert (first.paper_value, first.our_value) == ("2/3", "272/415")


def test_checks(values):
    checks = table1_checks(values)
    by_claim = checks.set_index("claim").holds
    assert by_claim["the optimum is unique, so every printed entry has one right value"]
    assert by_claim["(a) = (b) (c): the optimum factors through GM"]
    assert by_claim["Theorem 1: GM + optimal interaction attains the optimum"]
    assert not by_claim["(a) is a mechanism: each input's row sums to 1"]
    rows = checks[checks.claim.str.match(r"\(.\) row ")]
    assert len(rows) == 12
    verdicts = {claim[:10]: holds for claim, holds in zip(rows.claim, rows.holds, strict=True)}
    assert verdicts == {"(a) row 0 ": False, "(a) row 1 ": False, "(a) row 2 ": False, "(a) row 3 ": False,
                        "(b) row 0 ": True, "(b) row 1 ": True, "(b) row 2 ": True, "(b) row 3 ": True,
                        "(c) row 0 ": False, "(c) row 1 ": True, "(c) row 2 ": True, "(c) row 3 ": False}


def test_verdicts_follow_the_values(values):
    """Broken values give other verdicts: the checks are computed, not written down."""
    broken = dict(values)
    X = values["X"].copy()
    X[1, 1] = Fraction(7, 11)  # the printed (a)[1][1] becomes right, and the factorisation breaks
    broken["X"] = X
    table = table1_table(broken)
    cell = table[(table.matrix == "(a) optimal mechanism") & (table.row == 1) & (table.column == 1)].iloc[0]
    assert cell.match and cell.kind == "equal"
    R = values["R"].copy()
    R[0, 0] = Fraction(1, 2)  # not a convergent of the printed 9/11's right value any more
    broken["R"] = R
    cell = table1_table(broken).query("matrix == '(c) consumer interaction' and row == 0 and column == 0").iloc[0]
    assert cell.kind == "misprint"
    by_claim = table1_checks(broken).set_index("claim").holds
    assert not by_claim["(a) = (b) (c): the optimum factors through GM"]
    broken["face_width"] = 1e-3
    assert not table1_checks(broken).set_index("claim").holds[
        "the optimum is unique, so every printed entry has one right value"]
