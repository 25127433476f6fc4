"""Figure 9 and the extension studies against n under L1 and L2, and the paper's panel labels.

The values are compared with independent facts: UM's loss worked by hand, closed forms evaluated
by a loop written here, and the nesting of the LPs' feasible sets; every check is also shown to
fail on a table broken on purpose.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from countdp import design_named
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.plots.intrinsic import named_objective_vs_n
from countdp.plots.style import panel_label
from countdp.studies.baselines import baseline_objective_checks, baseline_objective_table
from countdp.studies.fig09 import fig09_objective_checks, fig09_table
from countdp.studies.minimax import minimax_checks, minimax_study


def _loss(P: np.ndarray, p: int) -> float:
    """Uniform-prior ``sum_j sum_i |i - j|^p P[i, j] / (n+1)``, one entry at a time."""
    N = P.shape[0]
    return sum(abs(i - j) ** p * P[i, j] for i in range(N) for j in range(N)) / N


def _records(objective: str, alpha: float, ns_by: dict[str, list[int]]) -> list[dict]:
    """Records as the artifacts give them (mechanism, n, alpha, objective, objective_value, l0)."""
    out = []
    for m, ns in ns_by.items():
        for n in ns:
            d = design_named(m, n, alpha, objective=objective)
            out.append({"mechanism": m, "n": n, "alpha": alpha, "objective": objective,
                        "objective_value": d.objective_value, "l0": float("nan")})
    return out


@pytest.fixture(scope="module")
def l1_table() -> pd.DataFrame:
    ns = {"GM": [2, 4, 6], "EM": [2, 4, 6], "UM": [2, 4, 6], "WM": [2, 3, 4, 5, 6], "WH": [2, 4, 6]}
    records = _records("L1", 2 / 3, ns) + _records("L0", 2 / 3, {"GM": [2]})  # another objective's record
    return fig09_table(records, list(ns), [2 / 3], ns, "L1")


def test_l1_table_holds_each_mechanisms_own_sizes_and_its_l1(l1_table):
    assert list(l1_table.columns[:4]) == ["mechanism", "alpha", "n", "l1"]
    assert sorted(l1_table[l1_table.mechanism == "WM"].n) == [2, 3, 4, 5, 6]
    assert sorted(l1_table[l1_table.mechanism == "GM"].n) == [2, 4, 6]  # the L0 record is not taken
    by = l1_table.set_index(["mechanism", "n"])["l1"]
    for n in (2, 4, 6):
        assert by[("UM", n)] == pytest.approx(n * (n + 2) / (3 * (n + 1)), abs=1e-12)
        assert by[("GM", n)] == pytest.approx(_loss(geometric(n, 2 / 3), 1), abs=1e-12)
        assert by[("EM", n)] == pytest.approx(_loss(explicit_fair(n, 2 / 3), 1), abs=1e-12)


def test_l1_checks_hold_on_the_designs_and_fail_on_a_broken_table(l1_table):
    checks = fig09_objective_checks(l1_table, "L1", 1e-6)
    assert len(checks) == 2 and checks.holds.all(), checks
    broken = l1_table.copy()
    broken.loc[(broken.mechanism == "WM") & (broken.n == 4), "l1"] += 0.5  # WM no longer optimal: above EM
    assert not fig09_objective_checks(broken, "L1", 1e-6).holds.iloc[0]
    worse = l1_table.copy()
    worse.loc[(worse.mechanism == "WH") & (worse.n == 6), "l1"] += 0.5  # LP(WH) above GM, weakly honest at 6
    assert not fig09_objective_checks(worse, "L1", 1e-6).holds.all()


def test_figure_9_labels_its_panels_as_the_paper_does():
    """(a), (b), (c) as the paper's Figure 9, and on from there: a fourth alpha is (d), not (3)."""
    assert [panel_label(k) for k in (0, 1, 2, 3, 25, 26, 27)] == ["(a)", "(b)", "(c)", "(d)", "(z)", "(aa)", "(ab)"]
    alphas = [0.5, 2 / 3, 10 / 11, 0.99]
    rows = [{"mechanism": m, "alpha": a, "n": n, "l2": 1.0 + n, "gm_threshold": 2 * a / (1 - a)}
            for m in ("GM", "UM") for a in alphas for n in (2, 5)]
    fig = named_objective_vs_n.__wrapped__(pd.DataFrame(rows), "")
    titles = [ax.get_title() for ax in fig.axes]
    assert [t.split(" ")[0] for t in titles] == ["(a)", "(b)", "(c)", "(d)"]
    assert fig.axes[0].get_ylabel() == "L2 (uniform prior)"


def test_minimax_under_l1_names_its_columns_and_its_checks_fail_when_broken():
    table = minimax_study([2, 3], [0.76], objective="L1")
    assert {"worst_L1", "avg_L1"} <= set(table.columns) and "worst_L0" not in table.columns
    all_seven = table[(table.properties == "ALL") & (table.design == "minimax")]
    em = table[table.properties == "EM"].set_index("n")["worst_L1"]
    assert (all_seven.set_index("n")["worst_L1"] <= em + 1e-9).all()  # EM is feasible for ALL
    checks = minimax_checks(table, objective="L1")
    assert checks.holds.all() and "average L1" in checks.claim.iloc[1]
    broken = table.copy()
    broken.loc[(broken.design == "minimax") & (broken.properties == "BasicDP"), "worst_L1"] += 1.0
    assert not minimax_checks(broken, objective="L1").holds.all()


def test_baselines_under_l2_against_hand_worked_values():
    table = baseline_objective_table([1, 4], [0.62], "L2")
    by = table.set_index(["mechanism", "n"])["L2"]
    assert by[("UM", 4)] == pytest.approx(4, abs=1e-12)  # n(n+2)/6 at n = 4
    assert by[("GM", 4)] == pytest.approx(_loss(geometric(4, 0.62), 2), abs=1e-12)
    checks = baseline_objective_checks(table, "L2")
    assert checks.holds.all()
    broken = table.copy()
    broken.loc[broken.mechanism == "UM", "L2"] *= 1.01
    assert not baseline_objective_checks(broken, "L2").holds.any()
