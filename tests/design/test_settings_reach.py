"""A caller's settings reach every sub-solve of its request, the WM spread path included.

Every solver run and proof of the engine says on :data:`countdp.design.settings.SUB_SOLVES` which
settings it runs under.  Each path here is designed under settings that carry a sentinel value (an
iteration bound no solve comes near, so no design changes); every sub-solve must report it.  The
last test breaks one path on purpose (the spread's canonical design solved under the engine's
defaults) and checks that the same check then fails; the last, that every setting keeps its name
in its group.
"""

from __future__ import annotations

import logging
from fractions import Fraction

import pytest

from countdp.design import forms, spread_proof
from countdp.design.designer import design_lp, design_named
from countdp.design.settings import DEFAULT_SETTINGS, FIELD_GROUPS, SUB_SOLVES, SolverSettings

SENTINEL = 20_017
"""``completion_iterations`` of the caller's settings: a bound no solve here reaches."""

PATHS = {
    "reduced LP": lambda s: design_lp(24, 0.62, ("WH",), "L1", settings=s),
    "reduced LP, guided with S": lambda s: design_lp(24, 0.9, ("RM", "CM", "WH", "S"), "L1", settings=s),
    "S folded": lambda s: design_lp(20, 0.62, ("F",), "L1", settings=s.with_values(ipm_min_nnz=0)),
    "S symmetrized": lambda s: design_lp(20, 0.9, ("RM", "S"), "L1", settings=s.with_values(ipm_min_nnz=0)),
    "closed form, checked by an LP dual": lambda s: design_lp(10, 0.76, ("WH", "S"), settings=s),
    "plain cvxpy model": lambda s: design_lp(8, 0.62, ("WH",), "L1", backend="cvxpy", settings=s),
    "large-n template": lambda s: design_lp(160, 0.91, ("RM", "CM", "WH", "S"), settings=s),
    "support dual": lambda s: design_lp(104, 0.62, ("CH", "RM"), "L1", settings=s.with_values(template_min_n=104)),
    "WM spread": lambda s: design_named("WM", 320, Fraction(1, 2), settings=s),
}
"""Paths through the engine, each designed under the settings given."""


def sub_solves(caplog, design) -> list[tuple[str, SolverSettings]]:
    """``(sub_solve, settings)`` of every sub-solve run by ``design()``."""
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger=SUB_SOLVES.name):
        design()
    return [(r.sub_solve, r.settings) for r in caplog.records if r.name == SUB_SOLVES.name]


def foreign(seen: list[tuple[str, SolverSettings]]) -> list[str]:
    """The sub-solves that ran under settings other than the caller's (no sentinel)."""
    return [what for what, settings in seen if settings.chains.completion_iterations != SENTINEL]


@pytest.mark.parametrize("path", PATHS)
def test_every_sub_solve_runs_under_the_callers_settings(caplog, path):
    caller = SolverSettings.of(completion_iterations=SENTINEL)
    seen = sub_solves(caplog, lambda: PATHS[path](caller))
    assert seen, f"{path}: no sub-solve seen"
    assert foreign(seen) == []


def test_the_wm_spread_path_solves_its_canonical_design_under_the_callers_settings(caplog):
    """The spread answers (not the LP at ``n``), and its canonical design's template solves (solved
    afresh: the cache holds designs by their settings) run under the caller's settings."""
    caller = SolverSettings.of(completion_iterations=SENTINEL)
    designs = []
    forms.canonical_design.cache_clear()
    seen = sub_solves(caplog, lambda: designs.append(PATHS["WM spread"](caller)))
    assert designs[0].method == spread_proof.METHOD
    assert any("template" in what for what, _ in seen)
    assert foreign(seen) == []


def test_a_path_that_drops_the_settings_is_caught(caplog, monkeypatch):
    """The spread's canonical design solved under the engine's defaults, as if the caller's were
    dropped on the way: the check above then fails."""
    real = spread_proof.canonical_design

    def dropping(mechanism, alpha, K, settings):
        return real.__wrapped__(mechanism, alpha, K, DEFAULT_SETTINGS)  # uncached: its solves run here

    monkeypatch.setattr(spread_proof, "canonical_design", dropping)
    caller = SolverSettings.of(completion_iterations=SENTINEL)
    seen = sub_solves(caplog, lambda: PATHS["WM spread"](caller))
    assert foreign(seen), "a dropped settings object went unseen"


def test_every_field_keeps_its_name_in_one_group():
    """The flat names (as configs, benchmarks and docs give them) reach their group's field."""
    groups = {"solver": 19, "template": 21, "chains": 26, "proof": 5}
    assert {g: sum(1 for v in FIELD_GROUPS.values() if v == g) for g in groups} == groups
    changed = SolverSettings.of(template_min_n=60, ipm_min_nnz=0, face_tol=1e-7, chain_refinements=3)
    assert (changed.template.template_min_n, changed.solver.ipm_min_nnz) == (60, 0)
    assert (changed.proof.face_tol, changed.chains.chain_refinements) == (1e-7, 3)
    assert changed.with_values(template_min_n=160).template == DEFAULT_SETTINGS.template
    for name, group in FIELD_GROUPS.items():
        assert getattr(getattr(DEFAULT_SETTINGS, group), name) is not None
    with pytest.raises(TypeError, match="no setting named nope"):
        SolverSettings.of(nope=1)
