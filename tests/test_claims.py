"""The claims table: verdicts follow the checks, misprints are flagged with evidence."""

from __future__ import annotations

import pandas as pd
import pytest

from countdp.claims.table import CLAIM_COLUMNS, Claim, claims_from_checks, claims_markdown, claims_table, theory_claims


@pytest.fixture(scope="module")
def theory():
    return theory_claims()


def test_theory_rows_cover_the_paper(theory):
    ids = {c.id for c in theory}
    assert {"ex1-a", "thm1", "thm3", "thm4", "lemma2", "lemma3", "lemma4-even", "gm-l0", "gs-em"} <= ids
    assert len(theory) >= 20


def test_known_misprints_are_reported_as_differs(theory):
    verdicts = {c.id: c.row()["verdict"] for c in theory}
    for misprint in ("def4-noise", "def-l0d", "em-odd-y", "lemma4-odd"):
        assert verdicts[misprint] == "differs"
        assert next(c for c in theory if c.id == misprint).row()["explanation"]
    for theorem in ("thm1", "thm3", "thm4", "thm4-props", "gm-l0", "certified"):
        assert verdicts[theorem] == "reproduced"


def test_verdict_is_computed_from_holds():
    assert Claim("x", "s", "t", "p", "o", "test", True).row()["verdict"] == "reproduced"
    assert Claim("x", "s", "t", "p", "o", "test", False, "why").row()["verdict"] == "differs"
    assert Claim("x", "s", "t", "p", "o", "test", None, "why").row()["verdict"] == "not checkable"


def test_check_tables_merge(tmp_path, theory):
    checks = pd.DataFrame({"figure": ["7", "10"], "claim": ["a", "b"], "paper_value": [0.224, "worse"],
                           "our_value": [0.2234, "better"], "holds": [True, False], "note": ["", "GM beats UM"]})
    path = tmp_path / "intrinsic_checks.csv"
    checks.to_csv(path, index=False)
    table = claims_table([path], theory=theory[:2])
    assert list(table.columns) == list(CLAIM_COLUMNS) and table["id"].iloc[-1] == "fig-02"
    assert list(table["verdict"].iloc[-2:]) == ["reproduced", "differs"]
    assert table["explanation"].iloc[-1] == "GM beats UM"
    text = claims_markdown(table)
    assert text.count("\n| ") == len(table) + 1 and "1 differs" in text


def test_check_table_needs_its_columns():
    with pytest.raises(ValueError, match="lacks columns"):
        claims_from_checks(pd.DataFrame({"claim": ["x"]}), "t")
