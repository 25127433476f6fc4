"""Figure 9 beyond the matrix path: records from structural forms against closed forms and the matrix path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.plots.intrinsic import named_objective_vs_n
from countdp.plots.style import MECHANISM_LABELS, evaluated_label
from countdp.studies.fig09 import fig09_checks, fig09_convergence, fig09_table, structural_records
from countdp.values.objectives import objective_value

CLOSED = {"GM": geometric, "EM": explicit_fair, "UM": lambda n, a: uniform(n)}


@pytest.mark.parametrize("name", ["GM", "EM", "UM"])
@pytest.mark.parametrize("n", [3, 8, 40])
def test_structural_l0_equals_the_closed_form_objective_at_small_n(name, n):
    """The matrix path's l0 is the design objective of the closed-form matrix; the structural one is exact
    on the rounded weights: equal to within the floor's share."""
    (record,) = structural_records([[name, "10/11", n]])
    assert record["l0"] == pytest.approx(objective_value(CLOSED[name](n, 10 / 11), "L0"), abs=1e-12)


def test_large_n_gm_costs_2a_over_1_plus_a_and_wh_is_gm():
    """CKS: GM's rescaled L0 is 2a/(1+a) at every n; WH (weakly honest GM) costs the same; UM costs 1."""
    rows = structural_records([[m, a, n] for m in ("GM", "WH", "UM") for a in ("2/3", "99/100") for n in (300, 10_000)])
    for r in rows:
        expected = 1.0 if r["mechanism"] == "UM" else 2 * r["alpha"] / (1 + r["alpha"])
        assert r["l0"] == pytest.approx(expected, abs=1e-13), r
        assert r["provenance"].evaluated_as == ("UM" if r["mechanism"] == "UM" else "GM")


def test_table_with_structural_rows():
    ns = [2, 10, 20, 3000]
    records = structural_records([[m, "10/11", n] for m in ("GM", "EM", "UM") for n in ns] + [["WH", "10/11", 3000]])
    table = fig09_table(records, ["GM", "EM", "UM", "WH"], [10 / 11], ns)
    assert len(table) == 13 and table["n"].max() == 3000
    em = table[table["mechanism"] == "EM"].set_index("n")["l0"]
    gm = 2 * (10 / 11) / (1 + 10 / 11)
    assert 0 < em[3000] - gm < em[20] - gm  # EM approaches GM's cost from above as n grows


def test_structural_records_refuse_a_mechanism_without_a_form():
    with pytest.raises(ValueError, match="no structural form"):
        structural_records([["ZM", "10/11", 3000]])
    assert np.isfinite(structural_records([["EM", "10/11", 257]])[0]["l0"])


def test_wh_threshold_check_on_a_coarse_grid():
    """LP(WH) reaches GM from ceil(2a/(1-a)) = 20 at alpha = 10/11 (Lemma 2): on a grid without 20 the check
    asks for the grid's first n >= 20, and it fails when WH still differs there."""
    a, gm = 10 / 11, 2 * (10 / 11) / (1 + 10 / 11)

    def table(ns, wh):
        rows = [{"mechanism": "GM", "alpha": a, "n": n, "l0": gm} for n in ns]
        return pd.DataFrame(rows + [{"mechanism": "WH", "alpha": a, "n": n, "l0": wh(n)} for n in ns])

    empty = pd.DataFrame(columns=["mechanism", "n", "alpha", "l0", "gm_l0", "gap", "converged", "tolerance"])
    coarse = fig09_checks(table([16, 24, 32], lambda n: gm + (0.01 if n < 20 else 0.0)), empty, 1e-6)
    row = coarse[coarse["claim"].str.contains("LP\\(WH\\) equals GM")].iloc[0]
    assert bool(row["holds"]) and row["our_value"] == 24 and "first n >= 20 is 24" in row["note"]
    late = fig09_checks(table([16, 24, 32], lambda n: gm + (0.01 if n < 30 else 0.0)), empty, 1e-6)
    assert not bool(late[late["claim"].str.contains("LP\\(WH\\) equals GM")].iloc[0]["holds"])


def test_wh_rows_evaluated_as_gm_are_not_evidence_for_the_lp():
    """Beyond 256, WH is GM's own form: the check judges the LP on its LP rows alone, so an LP that has
    not reached GM by the threshold fails even though the GM-evaluated rows equal GM."""
    a, gm = 10 / 11, 2 * (10 / 11) / (1 + 10 / 11)
    rows = [{"mechanism": "GM", "alpha": a, "n": n, "l0": gm, "evaluated_as": "GM"} for n in (16, 24, 300, 400)]
    lp = [{"mechanism": "WH", "alpha": a, "n": n, "l0": gm + 0.01, "evaluated_as": "WH"} for n in (16, 24)]
    as_gm = [{"mechanism": "WH", "alpha": a, "n": n, "l0": gm, "evaluated_as": "GM"} for n in (300, 400)]
    empty = pd.DataFrame(columns=["mechanism", "n", "alpha", "l0", "gm_l0", "gap", "converged", "tolerance"])
    checks = fig09_checks(pd.DataFrame(rows + lp + as_gm), empty, 1e-6)
    row = checks[checks["claim"].str.contains("LP\\(WH\\) equals GM")].iloc[0]
    assert not bool(row["holds"]) and "where WH is solved as an LP" in row["note"]


def test_wh_label_says_where_it_is_gm():
    """The legend's label follows the table's evaluated_as values; without stand-ins it is the usual one."""
    lp = [(n, "WH") for n in (2, 16, 256)]
    assert evaluated_label("WH", lp) == MECHANISM_LABELS["WH"] == "LP(WH alone)"
    assert evaluated_label("WH", lp + [(384, "GM"), (10_000, "GM")]) == "LP(WH alone); GM beyond n = 256"
    assert evaluated_label("WH", [(384, "GM")]) == "LP(WH alone); GM"
    assert evaluated_label("WH", [(16, "WH"), (384, "GM"), (512, "WH")]) == "LP(WH alone); GM at n = 384"
    assert evaluated_label("GM", [(n, "GM") for n in (2, 10_000)]) == MECHANISM_LABELS["GM"]


def _legend(table: pd.DataFrame) -> list[str]:
    fig = named_objective_vs_n.__wrapped__(table, "")  # the drawing itself, before the decorator saves it
    return [text.get_text() for text in fig.legends[0].get_texts()]


def test_figure_9_legend_names_wh_beyond_256_as_gm_and_only_there():
    a, gm = 10 / 11, 2 * (10 / 11) / (1 + 10 / 11)
    rows = [{"mechanism": m, "alpha": a, "n": n, "l0": gm + (0.01 if m == "WH" and n < 20 else 0.0),
             "gm_threshold": 20.0} for m in ("GM", "WH") for n in (16, 24, 256, 384, 10_000)]
    default = pd.DataFrame([r for r in rows if r["n"] <= 256])
    assert _legend(default) == [MECHANISM_LABELS["WH"], MECHANISM_LABELS["GM"]]  # as it always was
    large = pd.DataFrame([{**r, "evaluated_as": "GM" if r["n"] > 256 else r["mechanism"]} for r in rows])
    assert _legend(large) == ["LP(WH alone); GM beyond n = 256", MECHANISM_LABELS["GM"]]


def test_convergence_check_names_a_wh_record_evaluated_as_gm():
    """At a matrix size the convergence table and its check read as before; from structural records
    (WH beyond 256 is GM) the table says what WH was evaluated as and the check's label does too."""
    records = structural_records([[m, "10/11", 300] for m in ("GM", "WH")])
    records.append({"mechanism": "WM", "n": 300, "alpha": records[0]["alpha"], "l0": 0.96, "objective": "L0"})
    convergence = fig09_convergence(records, 10 / 11, 300, 1e-6)
    assert convergence.set_index("mechanism")["evaluated_as"].fillna("").to_dict() == {"WM": "", "WH": "GM"}
    claims = fig09_checks(pd.DataFrame(columns=["mechanism", "alpha", "n", "l0"]), convergence, 1e-6)["claim"]
    assert claims.str.startswith("LP(WH alone), evaluated as GM").sum() == 1
    assert claims.str.startswith("WM (WH+RM+CM) converges").sum() == 1
    plain = [{"mechanism": m, "n": 20, "alpha": 10 / 11, "l0": 0.9, "objective": "L0"} for m in ("GM", "WM", "WH")]
    table = fig09_convergence(plain, 10 / 11, 20, 1e-6)
    assert "evaluated_as" not in table.columns
    assert fig09_checks(pd.DataFrame(columns=["mechanism", "alpha", "n", "l0"]), table, 1e-6)["claim"].str.startswith(
        "LP(WH alone) converges").sum() == 1
