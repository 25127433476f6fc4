"""The claims table: verdicts follow the checks, misprints are flagged with evidence."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest

from countdp.claims.designs import theory_designs
from countdp.claims.render import claims_markdown
from countdp.claims.table import CLAIM_COLUMNS, Claim, TheorySettings, claims_from_checks, claims_table, theory_claims
from countdp.design.designer import design_named
from countdp.services.artifact import save_design
from countdp.studies.naming import lp_name, objective_slug
from tests.helpers.artifact_files import read_file, write_file


@dataclass(frozen=True)
class RecordingSettings(TheorySettings):
    """Theory settings that note every design the rows ask for, by artifact key, then design it as usual."""

    requested: set = field(default_factory=set, compare=False)

    def lp(self, n: int, alpha: float, properties=(), objective: str = "L0"):
        self.requested.add((lp_name(properties), objective_slug(objective), n, float(alpha)))
        return super().lp(n, alpha, properties, objective)

    def named(self, name: str, n: int, alpha: float):
        self.requested.add((name, "L0", n, float(alpha)))
        return super().named(name, n, alpha)


@pytest.fixture(scope="module")
def theory_run():
    """The theory rows, and every design they asked for (by artifact key), none of them saved."""
    alphas = (0.1, 0.3, 0.5, 0.62, 2 / 3, 0.76, 0.9, 0.91, 10 / 11, 0.99)
    settings = RecordingSettings(alphas, tuple(range(1, 41)))
    return theory_claims(settings), settings.requested


@pytest.fixture(scope="module")
def theory(theory_run):
    return theory_run[0]


def test_the_workflow_designs_exactly_what_the_theory_rows_read(theory_run):
    """countdp.claims.designs lists the designs the workflow makes for the claims job: all of them
    are used, and nothing else is designed (so the claims job solves no LP)."""
    listed = {(m, objective_slug(obj), n, a) for m, obj, n, a in theory_designs()}
    assert theory_run[1] == listed and len(listed) == len(theory_designs())


def test_saved_designs_are_loaded_and_re_certified(tmp_path, monkeypatch):
    path = tmp_path / "wm.json"
    save_design(design_named("WM", 4, 0.91), path)
    settings = TheorySettings((0.5,), (1, 2), artifacts={("WM", "L0", 4, 0.91): str(path)})
    monkeypatch.setattr("countdp.claims.table.design_named", lambda *a, **k: pytest.fail("designed again"))
    loaded = settings.named("WM", 4, 0.91)
    assert loaded.mechanism == "WM" and loaded.certificate.certified
    np.testing.assert_array_equal(loaded.matrix, design_named("WM", 4, 0.91).matrix)
    record, matrix, _ = read_file(path)
    matrix[0, 0] *= 1.5  # breaks alpha-DP on the stored floats (the file's digests re-recorded)
    write_file(path, record, matrix=matrix)
    with pytest.raises(ValueError, match="not certified"):
        settings.named("WM", 4, 0.91)


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
    table = claims_table({"intrinsic_checks": checks}, theory[:2])
    assert list(table.columns) == list(CLAIM_COLUMNS) and table["id"].iloc[-1] == "fig-02"
    assert list(table["verdict"].iloc[-2:]) == ["reproduced", "differs"]
    assert table["explanation"].iloc[-1] == "GM beats UM"
    text = claims_markdown(table)
    assert text.count("\n| ") == len(table) + 1 and "1 differs" in text


def test_check_table_needs_its_columns():
    with pytest.raises(ValueError, match="lacks columns"):
        claims_from_checks(pd.DataFrame({"claim": ["x"]}), "t")


def test_an_uncheckable_finding_is_not_checkable():
    """A finding the tables cannot decide (holds empty, as the findings CSV writes None) is not a difference."""
    from countdp.studies.fig10_13 import FINDING_COLUMNS

    findings = pd.DataFrame([["fig11", "lower alpha: WM and GM converge", "one alpha", "needs two alphas", "", None],
                             ["fig11", "GM good", "n=4", "c", "v", False]], columns=list(FINDING_COLUMNS))
    path_free = pd.read_csv(io.StringIO(findings.to_csv(index=False)))  # as the claims job reads it
    table = claims_table({"extrinsic_findings": path_free}, [])
    assert list(table["verdict"]) == ["not checkable", "differs"]
