"""Figure 5 verified: the uniform-prior L0 LP solved for all 128 subsets of the seven properties.

Optima are often not unique, so each subset's optimum is made canonical: the
**minimum-Frobenius-norm** optimum (a QP over the optimal face; strictly convex, so unique; the
face is invariant under the mirror map, so this optimum is centrosymmetric).  How far the
simplex vertex is from it is recorded too (a non-zero distance proves the optimum degenerate).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from countdp.design.constraints import LinearSystem, basic_dp, property_system
from countdp.design.highs_model import DesignModel
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.checks import check_row as check
from countdp.studies.naming import PROPERTIES
from countdp.validation import check_alpha, check_n
from countdp.values.objectives import objective_value
from countdp.values.properties import parse_properties

VALUE_TOL = 1e-7
"""Two LP optimal values are 'the same' within this (solver accuracy is ~1e-9)."""

MATRIX_TOL = 1e-6
"""Two canonical optimal matrices are 'the same' within this max-abs difference."""

FIG5_REFERENCES = ("GM", "WH", "WH+CM", "EM")
"""The four behaviours of the paper's Figure 5 (alpha > 1/2)."""

def subset_name(properties: Sequence[str]) -> str:
    """Canonical '+'-joined spelling of a property subset ('none' for the empty set)."""
    return "+".join(parse_properties(list(properties))) or "none"


def all_subsets() -> list[tuple[str, ...]]:
    """The 128 subsets of the seven properties, by size then in the paper's order."""
    return [s for k in range(len(PROPERTIES) + 1) for s in itertools.combinations(PROPERTIES, k)]

class _SubsetSystems:
    """``constraint_system(n, alpha, subset)`` for every subset at one (n, alpha), each built from its
    prefix: ``system(s) = system(s[:-1]) + property_system(s[-1], n)``.  That is the same sum, in the
    same order, as constraint_system, so the models (and the table) are unchanged; BasicDP and each
    property are built once instead of once per subset (they dominated the study's time)."""

    def __init__(self, n: int, alpha: float):
        self.n = n
        self._systems: dict[tuple[str, ...], LinearSystem] = {(): basic_dp(n, alpha)}
        self._properties: dict[str, LinearSystem] = {}

    def __call__(self, subset: tuple[str, ...]) -> LinearSystem:
        if subset not in self._systems:
            last = subset[-1]
            if last not in self._properties:
                self._properties[last] = property_system(last, self.n)
            self._systems[subset] = self(subset[:-1]) + self._properties[last]
        return self._systems[subset]


def _cluster(items: Sequence, same) -> list[int]:
    """Group ids (0, 1, ...) in order of first appearance, by the relation ``same(a, b)``."""
    reps: list = []
    ids = []
    for item in items:
        for k, rep in enumerate(reps):
            if same(item, rep):
                ids.append(k)
                break
        else:
            reps.append(item)
            ids.append(len(reps) - 1)
    return ids


def flowchart_prediction(properties: Sequence[str], n: int, alpha: float) -> str:
    """The paper's Figure 5 (alpha > 1/2) and its alpha <= 1/2 summary, as a reference name.

    Fairness -> EM; else alpha <= 1/2 -> GM; else a column property (CH/CM) -> WH+CM;
    else n >= 2a/(1-a) -> GM; else WH requested -> WH; else GM.
    """
    props = set(properties)
    if "F" in props:
        return "EM"
    if alpha <= 0.5:
        return "GM"
    if props & {"CH", "CM"}:
        return "WH+CM"
    if n >= 2 * alpha / (1 - alpha) or "WH" not in props:
        return "GM"
    return "WH"


def subset_map(ns: Sequence[int], alphas: Sequence[float], value_tol: float = VALUE_TOL,
               matrix_tol: float = MATRIX_TOL, timings: list[dict] | None = None) -> pd.DataFrame:
    """Solve the uniform-prior L0 LP for all 128 property subsets at every ``(n, alpha)``.

    One row per (n, alpha, subset): ``value`` (optimal L0), ``value_group`` and
    ``matrix_group`` (ids within the grid point; matrices are the min-norm optima),
    ``matches`` (the references of :data:`FIG5_REFERENCES` with the same value, '='-joined),
    ``predicted`` (:func:`flowchart_prediction`), ``behaviour`` (the prediction if it
    matches, else the first match, else ``"other"``), ``vertex_gap`` (max |simplex vertex -
    min-norm optimum|: > 0 means a degenerate optimum), distances of the min-norm optimum to
    GM's and EM's matrices, and whether it is centrosymmetric.

    Wall-clock solver times are not part of the table (tables are byte-identical across runs):
    pass a list as ``timings`` to receive one ``{"n", "alpha", "subset", "solve_time"}`` per LP.
    """
    rows = []
    for n in ns:
        for a in alphas:
            n, a = check_n(n), check_alpha(a)
            gm, em = geometric(n, a), explicit_fair(n, a)
            block, systems = [], _SubsetSystems(n, a)
            for subset in all_subsets():
                model = DesignModel(n, a, subset, "L0", system=systems(subset))
                c = model.cost("sum")
                z, value = model.minimise(c)
                vertex = model.matrix(z).copy()
                model.bound(c, value)
                canon = model.matrix(model.min_norm())
                block.append({"n": n, "alpha": a, "subset": subset_name(subset), "size": len(subset),
                              "value": value, "vertex_gap": float(np.abs(vertex - canon).max()),
                              "gm_distance": float(np.abs(canon - gm).max()),
                              "em_distance": float(np.abs(canon - em).max()),
                              "symmetric": bool(np.abs(canon - canon[::-1, ::-1]).max() <= matrix_tol),
                              "qp_solver": model.qp_solver, "_matrix": canon, "_props": subset})
                if timings is not None:
                    timings.append({"n": n, "alpha": a, "subset": subset_name(subset),
                                    "solve_time": model.solve_time})
            refs = {"GM": objective_value(gm, "L0"), "EM": objective_value(em, "L0"),
                    "WH": next(r["value"] for r in block if r["_props"] == ("WH",)),
                    "WH+CM": next(r["value"] for r in block if r["_props"] == ("CM", "WH"))}
            vgroup = _cluster([r["value"] for r in block], lambda x, y: abs(x - y) <= value_tol)
            mgroup = _cluster([r["_matrix"] for r in block],
                              lambda x, y: float(np.abs(x - y).max()) <= matrix_tol)
            for r, vg, mg in zip(block, vgroup, mgroup, strict=True):
                matches = [k for k in FIG5_REFERENCES if abs(r["value"] - refs[k]) <= value_tol]
                predicted = flowchart_prediction(r["_props"], n, a)
                behaviour = predicted if predicted in matches else (matches[0] if matches else "other")
                r.update(value_group=vg, matrix_group=mg, matches="=".join(matches) or "none",
                         predicted=predicted, behaviour=behaviour, agrees=predicted in matches,
                         **{f"ref_{k}": v for k, v in refs.items()})
                del r["_matrix"], r["_props"]
                rows.append(r)
    return pd.DataFrame(rows)


def subset_summary(detail: pd.DataFrame) -> pd.DataFrame:
    """Per ``(n, alpha)``: distinct optimal values and matrices, behaviours, exceptions, verdict.

    ``bound`` is the paper's count (4 behaviours for alpha > 1/2, 2 for alpha <= 1/2);
    ``holds`` is True when the distinct values are within the bound and every subset's value
    equals one of the allowed references (GM/EM for alpha <= 1/2).
    """
    out = []
    for (n, a), g in detail.groupby(["n", "alpha"], sort=True):
        allowed = set(FIG5_REFERENCES) if a > 0.5 else {"GM", "EM"}
        ok = g.matches.str.split("=").apply(allowed.intersection).astype(bool)
        counts = g.behaviour.value_counts()
        out.append({"n": n, "alpha": a, "subsets": len(g), "distinct_values": g.value_group.nunique(),
                    "distinct_matrices": g.matrix_group.nunique(),
                    "degenerate_subsets": int((g.vertex_gap > MATRIX_TOL).sum()),
                    "behaviours": ";".join(f"{k}:{v}" for k, v in counts.items()),
                    "bound": 4 if a > 0.5 else 2, "exceptions": int((~ok).sum()),
                    "exception_subsets": ",".join(g.subset[~ok]),
                    "flowchart_disagreements": int((~g.agrees).sum()),
                    "disagreeing_subsets": ",".join(g.subset[~g.agrees]),
                    "holds": bool(g.value_group.nunique() <= (4 if a > 0.5 else 2) and ok.all()),
                    "qp_fallbacks": int((g.qp_solver != "HiGHS-QP").sum())})
    return pd.DataFrame(out)


GM_SUBSETS = tuple(subset_name(s) for k in range(4) for s in itertools.combinations(("RH", "RM", "S"), k))
"""Theorem 3's subsets: every subset of {RH, RM, S}, the empty one included (8 of them)."""


def subset_checks(detail: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Theorems 3 and 4 and the 'at most four behaviours' claim, checked on the subset map."""
    gm_subsets = detail[detail.subset.isin(GM_SUBSETS)]
    f = detail[detail.subset.str.split("+").apply(lambda s: "F" in s)]
    gm_gap = (gm_subsets.value - 2 * gm_subsets.alpha / (1 + gm_subsets.alpha)).abs()
    return pd.DataFrame([
        check("fig05", "Theorem 3: {} and subsets of {RH,RM,S} give GM's 2a/(1+a)", "2a/(1+a)",
              f"max |value - 2a/(1+a)| = {float(gm_gap.max()):.2e}", bool((gm_gap <= VALUE_TOL).all())),
        check("fig05", "Theorem 4: every subset with F gives EM's L0", "L0(EM)",
              f"max |value - L0(EM)| = {float((f.value - f.ref_EM).abs().max()):.2e}",
              bool(((f.value - f.ref_EM).abs() <= VALUE_TOL).all())),
        check("fig05", "at most four behaviours (alpha > 1/2), two (alpha <= 1/2)", "<= 4 / <= 2",
              f"max distinct values {int(summary.distinct_values.max())}, exceptions "
              f"{int(summary.exceptions.sum())}", bool(summary.holds.all()),
              "distinct matrices (min-norm optima): " + ", ".join(
                  f"n={r.n},a={r.alpha}:{r.distinct_matrices}" for r in summary.itertuples())),
        check("fig05", "every subset follows the Figure 5 flowchart", "0 disagreements",
              int(summary.flowchart_disagreements.sum()), bool((summary.flowchart_disagreements == 0).all()),
              "; ".join(f"n={r.n},a={r.alpha}: {r.disagreeing_subsets}" for r in summary.itertuples()
                        if r.flowchart_disagreements)),
    ], columns=CHECK_COLUMNS)
