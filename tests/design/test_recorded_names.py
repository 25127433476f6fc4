"""The names old artifacts record (``method``, ``extra["reductions"]``, the guide) are still the
engine's, so an artifact made before the engine became a chain of strategies reads the same.

The expected strings are copied from artifacts written by the engine before that change (they are
what ``results/mechanisms/**.json`` hold), not from the code under test."""

from __future__ import annotations

import pytest

from countdp.design.lp_solve import CLARABEL_GUIDED, SOLVER_LABELS
from countdp.design.reductions.fold_symmetry import FOLDED, SYMMETRIZED
from countdp.design.reductions.relax_cm import FACE, RELAXATION
from countdp.design.solvers.solved import INTERIOR_GUIDE
from countdp.design.strategies.closed_form import REMAPPED_GM
from countdp.design.strategies.large_n_template import LABEL
from tests.helpers.design import reduced_design

OLD_NAMES = {
    "S folded without S requested (Theorem 1)": FOLDED,
    "solved without S, averaged with its mirror image": SYMMETRIZED,
    "CM relaxed to CH, proven with CM": RELAXATION,
    "CM restored on the relaxation's optimal face": FACE,
    "GM remapped": REMAPPED_GM,
    "large-n template": LABEL,
    "guided by clarabel": CLARABEL_GUIDED,
    "no vertex: clarabel's interior point, proven as it is": INTERIOR_GUIDE,
}


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_every_old_strategy_name_is_kept(old):
    assert OLD_NAMES[old] == old


def test_method_labels_are_kept():
    assert SOLVER_LABELS == {"simplex": ("HIGHS", "simplex"), "ipm": ("HIGHS", "ipm+crossover"),
                             "clarabel": ("CLARABEL", "ipm")}


@pytest.mark.parametrize("props, objective, method, reductions", [
    (("WH", "S"), "L0", "GM", ["closed-form:GM (Theorem 3)"]),
    (("F",), "L0", "EM", ["closed-form:EM (Theorem 4)"]),
    ((), "L1", "GM remapped", ["closed-form:GM remapped"]),
    (("RM", "CM", "WH", "S"), "L0", "simplex", ["implied:WH", "dp-halved-by-RM", "symmetry-folded",
                                                "duplicate-rows"]),  # results/mechanisms/WM/L0/n=20/alpha=0.91.json
])
def test_designs_record_what_old_artifacts_recorded(props, objective, method, reductions):
    answer = reduced_design(20, 0.91 if method == "simplex" else 0.8, props, objective)
    assert answer.method == method and answer.extra["reductions"] == reductions
