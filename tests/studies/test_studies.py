"""Unit tests of the intrinsic study tables against independent facts (closed forms, lemmas)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from countdp.design.designer import design_named
from countdp.services.artifact import design_to_dict
from countdp.studies.fig03_04 import em_exponent_table, gm_exponent_table
from countdp.studies.fig06 import describe_condition, fig06_checks, fig06_grid, fig06_summary
from countdp.studies.fig07 import fig07_tables
from countdp.studies.fig09 import fig09_convergence
from countdp.studies.naming import alpha_spelling, lp_properties, parse_alpha
from countdp.studies.records import constant_output, mass_on, mass_within
from countdp.studies.sweeps import design_artifact


def record(mechanism, n, alpha, **kwargs):
    rec = design_to_dict(design_named(mechanism, n, alpha, **kwargs))
    rec["matrix"] = np.asarray(rec["matrix"])
    return rec


@pytest.mark.parametrize("spec, value", [("2/3", 2 / 3), ("10/11", 10 / 11), (0.91, 0.91), ("99/100", 0.99)])
def test_alpha_parsing_and_spelling(spec, value):
    assert parse_alpha(spec) == value
    assert float(alpha_spelling(spec)) == value
    assert alpha_spelling(alpha_spelling(spec)) == alpha_spelling(spec)


def test_lp_names_are_canonical():
    assert lp_properties("LP-none") == ()
    assert lp_properties("LP-RM+CM+WH+S") == ("RM", "CM", "WH", "S")
    assert lp_properties("GM") is None
    with pytest.raises(ValueError):
        lp_properties("LP-WH+RM")


def test_design_artifact_rejects_noncanonical_alpha(tmp_path):
    with pytest.raises(ValueError, match="canonical"):
        design_artifact("GM", "L0", 3, "0.910", "closed-form", tmp_path / "x.json")
    summary = design_artifact("LP-WH+S", "L0d1", 3, "0.5", "HIGHS/simplex", tmp_path / "x.json")
    assert "L0d:1" in summary and (tmp_path / "x.json").exists()


@pytest.mark.parametrize("n", [1, 4, 7])
def test_gm_exponent_table_matches_definition(n):
    alphas = [0.3, 0.62, 10 / 11]
    table = gm_exponent_table(n, alphas)
    assert table["check_passed"].all()
    # independent: GM as the clamped two-sided geometric noise, summed numerically
    for a in alphas:
        k = np.arange(-400, 401)
        noise = (1 - a) / (1 + a) * a ** np.abs(k)
        P = np.zeros((n + 1, n + 1))
        for j in range(n + 1):
            np.add.at(P[:, j], np.clip(j + k, 0, n), noise)
        c = np.where(table["coefficient"] == "x", 1 / (1 + a), (1 - a) / (1 + a))
        expected = c * a ** table["exponent"].to_numpy(float)
        assert np.allclose(P[table["output"], table["input"]], expected, rtol=1e-12)


def test_em_exponent_table_n7_matches_figure4():
    table = em_exponent_table(7, [0.5, 0.62, 0.9])
    assert table["check_passed"].all()
    E = table.pivot(index="output", columns="input", values="exponent").to_numpy()
    # Figure 4 (n = 7), worked by hand from equation (16): e = d if d <= m_j else ceil((d + m_j)/2)
    assert E[:, 0].tolist() == [0, 1, 1, 2, 2, 3, 3, 4]
    assert E[:, 3].tolist() == [3, 2, 1, 0, 1, 2, 3, 4]
    assert E[:, 1].tolist() == [1, 0, 1, 2, 2, 3, 3, 4]
    assert (np.diag(E) == 0).all()
    # every column is a permutation of the same multiset of exponents
    assert all(sorted(E[:, j]) == sorted(E[:, 0]) for j in range(8))


def test_fig06_grid_detects_lemmas_2_and_3():
    alphas = [0.3, 0.5, 0.6, 2 / 3, 0.76, 0.9]
    records = [record(m, n, a) for m in ("GM", "EM", "UM") for n in range(2, 12) for a in alphas]
    grid = fig06_grid(records, ["S", "RM", "CM", "F", "WH"], 1e-9)
    summary = fig06_summary(grid, ["GM", "EM", "UM"], ["S", "RM", "CM", "F", "WH"])
    verdict = summary.set_index(["mechanism", "property"])
    assert verdict.loc[("GM", "WH"), "condition"] == "iff n >= 2α/(1-α)"  # Lemma 2
    assert verdict.loc[("GM", "CM"), "condition"] == "iff α <= 1/2"  # Lemma 3
    assert verdict.loc[("GM", "F"), "verdict"] == "no"
    assert (verdict.loc["EM", "verdict"] == "yes").all()  # Theorem 4
    assert (verdict.loc["UM", "verdict"] == "yes").all()
    checks = fig06_checks(summary)
    lemmas = checks[checks["claim"].str.startswith("Lemma")]
    assert len(lemmas) == 2 and lemmas["holds"].all()


def test_fig06_threshold_matches_closed_form_boundary():
    a = 0.76  # 2a/(1-a) = 6.33: GM is weakly honest from n = 7 on
    records = [record("GM", n, a) for n in range(2, 12)]
    grid = fig06_grid(records, ["WH"], 1e-12)
    assert grid.loc[grid["holds"], "n"].min() == 7
    assert not grid.loc[grid["n"] == 6, "holds"].any()


def test_fig07_truthful_probabilities():
    records = [record(m, 4, 0.91) for m in ("GM", "EM")]
    table, checks = fig07_tables(records, {"GM": 0.238, "EM": 0.224}, text_alpha=0.9)
    art = table[table["source"] == "artifact"].set_index("mechanism")["truthful_probability"]
    y = (1 - 0.91) / (1 + 0.91 - 2 * 0.91**3)  # EM diagonal, even n
    assert art["EM"] == pytest.approx(y)
    assert art["GM"] == pytest.approx((2 / 1.91 + 3 * 0.09 / 1.91) / 5)
    assert checks.loc[checks["claim"].str.contains("alpha=0.91"), "holds"].all()
    assert not checks.loc[checks["claim"].str.contains("text's alpha"), "holds"].any()


def test_fig01_claim_helpers():
    P = np.zeros((4, 4))
    P[2] = 1.0
    assert constant_output(P) == 2
    assert np.allclose(mass_on(P, [2]), 1.0)
    assert np.allclose(mass_within(np.eye(4), 0), 1.0)
    assert constant_output(np.full((3, 3), 1 / 3)) is None


def test_fig09_convergence_only_wh_alone():
    a = 10 / 11
    records = [record(m, 20, a) for m in ("GM", "WM", "WH")]
    conv = fig09_convergence(records, a, 20, 1e-6).set_index("mechanism")
    assert conv.loc["WH", "converged"] and not conv.loc["WM", "converged"]
    assert conv.loc["WH", "gm_l0"] == pytest.approx(2 * a / (1 + a))


def test_describe_condition_fallback():
    group = pd.DataFrame({"n": [2, 3, 4, 2, 3, 4], "alpha": [0.5] * 3 + [0.9] * 3,
                          "holds": [True, False, True, False, False, False]})
    text = describe_condition(group)
    assert text.startswith("holds only at") and "α=0.9: never" in text


def test_light_naming_agrees_with_the_library():
    """countdp.studies.naming (imported while the Snakefile is parsed) spells names as the library does."""
    from countdp.studies import naming
    from countdp.values.objectives import parse_objective
    from countdp.values.properties import PROPERTIES, parse_properties

    assert naming.PROPERTIES == PROPERTIES
    for spec in ("L0", "l1", "L2", "L0d:1", "L0d3", "l0d:12", "L0,d:1"):
        assert naming.objective_slug(spec) == parse_objective(spec).slug
    for bad in ("L3", "L0d", "L0d:x", ""):
        with pytest.raises(ValueError):
            parse_objective(bad)
        with pytest.raises(ValueError):
            naming.objective_slug(bad)
    for props in ((), ["wh", "rm"], "CM,RH", ("S", "F", "CH", "WH", "RM", "RH", "CM")):
        assert naming.lp_name(props) == "LP-" + ("+".join(parse_properties(props)) or "none")
    with pytest.raises(ValueError):
        naming.lp_name(["WH", "XX"])
    assert naming.alpha_spelling("10/11") == repr(10 / 11) and naming.alpha_spelling(0.91) == "0.91"
