"""Studies beyond the paper: each returns tidy pandas frames (and matrices to draw).

1. :func:`baseline_table`: the exponential mechanism, the conditioned geometric mechanism
   and randomized response (:mod:`countdp.studies.baselines`) next to GM/EM/UM: the alpha each
   really achieves, its certificate and its errors.
2. :func:`subset_map`: Figure 5 verified: the L0 LP (uniform prior) solved for all 128
   subsets of the seven properties over a grid of ``(n, alpha)``, grouped by optimal value
   and by canonical optimal matrix, each group labelled by the reference (GM, EM, LP(WH),
   LP(WH+CM)) it equals in value, and compared with the flowchart's prediction.
3. :func:`minimax_study`: minimax (worst input) vs Bayesian (uniform prior) designs.
4. :func:`prior_study`: designs for a known input distribution (Binomial or a histogram)
   against the uniform-prior GM/WH/WM/EM, with the "fairness price" (spread of diag(P)).
5. :func:`objective_study`: L0, L1 and L2 designs under the Figure 8 property sets and
   their expected errors under Binomial(n, p); :func:`objective_matrices` for heatmaps.
6. :func:`derivability_table`: the Gupte-Sundararajan test for every named mechanism.

Degenerate optima.  Several studies compare LP optima, which are often not unique.  Where a
study depends on *which* optimum is used, it says so and picks a canonical one:

* ``subset_map`` takes the **minimum-Frobenius-norm** optimum (a QP over the optimal face;
  strictly convex, so unique; the face is invariant under the mirror map, so this optimum is
  centrosymmetric: it is what "adding S" gives, made unique), and also records how far the
  simplex vertex is from it (a non-zero distance proves the optimum is degenerate).
* ``minimax_study`` and ``prior_study`` solve lexicographically: the primary objective, then
  among its optima the secondary one (average <-> worst input), so reported secondary numbers
  are the best achievable, not a solver's accident.
* ``objective_study`` uses :func:`countdp.design.designer.design_lp` (HiGHS simplex vertex, recorded)
  like the project's Figures 1 and 2.

Every matrix that is evaluated is certified alpha-DP with :func:`countdp.privacy.certify.certify`.
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from countdp.design.constraints import PROPERTIES, parse_properties
from countdp.design.highs_model import DesignModel, lexicographic_design
from countdp.evaluate.metrics import expected_error, objective_value, parse_objective
from countdp.mechanisms.artifact import atomic_path, write_csv_atomic, write_text_atomic
from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.mechanisms.properties import check_all, gupte_sundararajan_violation
from countdp.privacy.certify import certify
from countdp.studies.baselines import (
    achieved_alpha,
    baseline_matrix,
    calibrate_conditioned,
    certified_baseline,
    rr_keep_probability,
)
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.checks import check_row as check
from countdp.validation import check_alpha, check_distribution, check_n

VALUE_TOL = 1e-7
"""Two LP optimal values are 'the same' within this (solver accuracy is ~1e-9)."""

MATRIX_TOL = 1e-6
"""Two canonical optimal matrices are 'the same' within this max-abs difference."""

FIG5_REFERENCES = ("GM", "WH", "WH+CM", "EM")
"""The four behaviours of the paper's Figure 5 (alpha > 1/2)."""

FIG8_COMBINATIONS = ((), ("RH",), ("RM",), ("CH",), ("CM",), ("RH", "CH"), ("RH", "CM"), ("RM", "CH"),
                     ("RM", "CM"))

MINIMAX_SETS: dict[str, tuple[str, ...]] = {
    "BasicDP": (),
    "WH": ("WH", "S"),
    "WM": ("RM", "CM", "WH", "S"),
    "ALL": PROPERTIES,
}
"""Property sets of the minimax study: GM-style, LP(WH), WM, and EM-style (all seven)."""

PRIOR_SETS: dict[str, tuple[str, ...]] = {
    "none": (),
    "WH": ("WH",),
    "WM": ("RM", "CM", "WH"),
    "F": ("RH", "RM", "CH", "CM", "F", "WH"),
}
"""Property sets of prior-aware designs (S dropped: it is not free under a skewed prior)."""

PRIOR_COUNTERPART = {"none": "GM", "WH": "WH", "WM": "WM", "F": "EM"}
"""The uniform-prior named mechanism each prior-aware property set is compared with."""



def subset_name(properties: Sequence[str]) -> str:
    """Canonical '+'-joined spelling of a property subset ('none' for the empty set)."""
    return "+".join(parse_properties(list(properties))) or "none"


def all_subsets() -> list[tuple[str, ...]]:
    """The 128 subsets of the seven properties, by size then in the paper's order."""
    return [s for k in range(len(PROPERTIES) + 1) for s in itertools.combinations(PROPERTIES, k)]


# ------------------------------------------------------------------------ 1. baselines
def _errors(P: np.ndarray, n: int) -> dict:
    q = np.full(n + 1, 1.0 / (n + 1))
    return {"L0": objective_value(P, "L0"), "L0d1": objective_value(P, "L0d:1"),
            "worst_L0": objective_value(P, "L0", aggregate="max"), "RMSE_uniform": expected_error(P, q, "RMSE")}


def baseline_table(ns: Sequence[int], alphas: Sequence[float]) -> pd.DataFrame:
    """Baselines and closed forms over ``(n, alpha)``: achieved alpha, certificate, errors.

    ``achieved_alpha`` is measured on the raw matrix; errors on the certified one (for
    ``CGM-naive``, which is not alpha-DP, the certified matrix is a UM mixture: see
    ``repair_lambda``).  ``parameter`` is the per-step weight ``b`` of ``P ∝ b^|i-j|`` for
    EXP/CGM (EXP: ``sqrt(alpha)``) and the keep probability for RR.
    """
    rows = []
    for n in ns:
        for a in alphas:
            n, a = check_n(n), check_alpha(a)
            cal = calibrate_conditioned(n, a)
            params = {"EXP": np.sqrt(a), "EXP-cal": cal, "CGM": cal, "CGM-naive": a,
                      "RR": rr_keep_probability(n, a)}
            for name in ("GM", "EM", "UM", "EXP", "EXP-cal", "CGM", "CGM-naive", "RR"):
                if name in params:
                    raw = baseline_matrix(name, n, a)
                    P, cert = certified_baseline(name, n, a)
                else:
                    raw = {"GM": geometric, "EM": explicit_fair, "UM": lambda n, a: uniform(n)}[name](n, a)
                    P, cert = certify(raw, a)
                rows.append({"mechanism": name, "n": n, "alpha": a, "parameter": params.get(name, np.nan),
                             "achieved_alpha": achieved_alpha(raw), "alpha_dp_raw": achieved_alpha(raw) >= a,
                             "certified": cert.certified, "repair_lambda": cert.repair_lambda,
                             "min_diag": float(np.diag(P).min()), "max_diag": float(np.diag(P).max()),
                             **_errors(P, n)})
    return pd.DataFrame(rows)


def baseline_checks(table: pd.DataFrame) -> pd.DataFrame:
    """Statements about the baselines, checked on :func:`baseline_table`."""
    out = []
    by = table.set_index(["mechanism", "n", "alpha"])
    exp = table[table.mechanism == "EXP"]
    out.append(check("baselines", "EXP is alpha-DP with room to spare (achieved alpha > alpha)", "> alpha",
                     f"min achieved/alpha = {float((exp.achieved_alpha / exp.alpha).min()):.4f}",
                     bool((exp.achieved_alpha > exp.alpha).all())))
    naive = table[(table.mechanism == "CGM-naive") & (table.n > 1)]  # n = 1: equal normalisers, = GM
    out.append(check("baselines", "geometric conditioned with base alpha is not alpha-DP (n > 1)", "< alpha",
                     f"max achieved/alpha = {float((naive.achieved_alpha / naive.alpha).max()):.4f}",
                     bool((naive.achieved_alpha < naive.alpha).all())))
    cal = table[table.mechanism.isin(["CGM", "EXP-cal"])]
    out.append(check("baselines", "calibrated CGM (= calibrated EXP) achieves exactly alpha", "alpha",
                     f"max |achieved - alpha| = {float((cal.achieved_alpha - cal.alpha).abs().max()):.2e}",
                     bool(((cal.achieved_alpha - cal.alpha).abs() < 1e-10).all())))
    rr = table[table.mechanism == "RR"]
    truthful = 1.0 / (1.0 + rr.alpha * rr.n)
    out.append(check("baselines", "RR keep p* = (1-a)/(1+a n); truthful prob 1/(1+a n)", "1/(1+a n)",
                     f"max |diag - 1/(1+a n)| = {float((rr.min_diag - truthful).abs().max()):.2e}",
                     bool(((rr.min_diag - truthful).abs() < 1e-12).all() and rr.certified.all())))
    margins = [by.loc[(m, n, a), "L0"] - by.loc[("GM", n, a), "L0"]
               for m in ("EXP", "CGM", "RR") for n, a in zip(rr.n, rr.alpha, strict=True)]
    out.append(check("baselines", "no baseline beats GM on uniform-prior L0 (Theorem 3)", "GM <= all",
                     f"min L0(baseline) - L0(GM) = {min(margins):.2e}", min(margins) >= -1e-12))
    return pd.DataFrame(out, columns=CHECK_COLUMNS)


# -------------------------------------------------------------------- 2. Figure 5 (128 subsets)
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
            block = []
            for subset in all_subsets():
                model = DesignModel(n, a, subset, "L0")
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


def subset_checks(detail: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Theorems 3 and 4 and the 'at most four behaviours' claim, checked on the subset map."""
    gm_subsets = detail[detail.subset.isin(["none", "RH+RM+S", "RH", "RM", "S"])]
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


# ------------------------------------------------------------------------ 3. minimax
def minimax_study(ns: Sequence[int], alphas: Sequence[float],
                  property_sets: Mapping[str, Sequence[str]] | None = None,
                  timings: list[dict] | None = None) -> pd.DataFrame:
    """Bayesian (uniform prior) vs minimax L0 designs, each solved lexicographically.

    ``design="bayes"``: minimise the average L0, then the worst column among those optima;
    ``design="minimax"``: the reverse.  Closed-form GM and EM are added as references (with
    ``properties`` = the set they are optimal for).  ``worst_L0`` is the largest column L0
    (with the ``(n+1)/n`` scaling), ``avg_L0`` the uniform-prior L0.  Solver times are not in
    the table: pass a list as ``timings`` to receive one ``{"n", "alpha", "properties",
    "design", "solve_time"}`` per designed mechanism.
    """
    sets = dict(MINIMAX_SETS if property_sets is None else property_sets)
    rows = []
    for a in alphas:
        for n in ns:
            n, a = check_n(n), check_alpha(a)
            for name, props in sets.items():
                for design, first in (("bayes", "sum"), ("minimax", "max")):
                    P, rec = lexicographic_design(n, a, props, "L0", first)
                    rows.append({"properties": name, "design": design, "n": n, "alpha": a,
                                 "worst_L0": objective_value(P, "L0", aggregate="max"),
                                 "avg_L0": objective_value(P, "L0"),
                                 "min_diag": float(np.diag(P).min()), "max_diag": float(np.diag(P).max()),
                                 "certified": rec["certified"]})
                    if timings is not None:
                        timings.append({"n": n, "alpha": a, "properties": name, "design": design,
                                        "solve_time": rec["solve_time"]})
            for name, P in (("GM", geometric(n, a)), ("EM", explicit_fair(n, a))):
                rows.append({"properties": name, "design": "closed-form", "n": n, "alpha": a,
                             "worst_L0": objective_value(P, "L0", aggregate="max"),
                             "avg_L0": objective_value(P, "L0"), "min_diag": float(np.diag(P).min()),
                             "max_diag": float(np.diag(P).max()), "certified": True})
    return pd.DataFrame(rows)


def minimax_checks(table: pd.DataFrame, tol: float = VALUE_TOL) -> pd.DataFrame:
    """Minimax worst column <= every design with its properties; Bayes average <= minimax average."""
    designed = table[table.design.isin(["bayes", "minimax"])]
    wide = designed.pivot_table(index=["properties", "n", "alpha"], columns="design",
                                values=["worst_L0", "avg_L0"])
    gm = table[table.design == "closed-form"].set_index(["properties", "n", "alpha"])
    worst_ok = bool((wide["worst_L0"]["minimax"] <= wide["worst_L0"]["bayes"] + tol).all())
    avg_ok = bool((wide["avg_L0"]["bayes"] <= wide["avg_L0"]["minimax"] + tol).all())
    basic = wide.xs("BasicDP", level="properties") if "BasicDP" in wide.index.get_level_values(0) else None
    gm_ok = True
    if basic is not None:
        ref = gm.xs("GM", level="properties")["worst_L0"].reindex(basic.index)
        gm_ok = bool((basic["worst_L0"]["minimax"] <= ref + tol).all())
    gain = (wide["worst_L0"]["bayes"] - wide["worst_L0"]["minimax"])
    price = wide["avg_L0"]["minimax"] - wide["avg_L0"]["bayes"]
    em = gm.xs("EM", level="properties")["worst_L0"]
    minimax = wide["worst_L0"]["minimax"]
    em_gap = (minimax - em.reindex(minimax.index.droplevel(0)).to_numpy()).abs()
    return pd.DataFrame([
        check("minimax", "minimax worst column <= Bayesian design's worst column", "<=",
              f"largest gain {float(gain.max()):.4f}", worst_ok),
        check("minimax", "Bayesian average L0 <= minimax design's average L0", "<=",
              f"largest average-L0 price of minimax {float(price.max()):.4f}", avg_ok),
        check("minimax", "minimax (BasicDP) worst column <= GM's", "<=",
              "checked on every (n, alpha)" if basic is not None else "no BasicDP design in the config", gm_ok),
        check("minimax", "observation: the minimax L0 value equals L0(EM) for every property set", "L0(EM)",
              f"max |minimax worst - L0(EM)| = {float(em_gap.max()):.2e}", bool((em_gap <= tol).all()),
              "beyond the paper; EM is feasible for every set, so minimax <= L0(EM) always"),
    ], columns=CHECK_COLUMNS)


# ------------------------------------------------------------------------ 4. prior-aware
def _fairness(P: np.ndarray, q: np.ndarray) -> dict:
    d = np.diag(P)
    far = np.abs(np.arange(P.shape[0])[:, None] - np.arange(P.shape[0])[None, :]) > 1
    return {"min_diag": float(d.min()), "max_diag": float(d.max()), "diag_spread": float(d.max() - d.min()),
            "worst_input_L0": float((1 - d).max()), "worst_input_L0d1": float((P * far).sum(axis=0).max()),
            "expected_L0": expected_error(P, q, "L0"), "expected_L0d1": expected_error(P, q, "L0d:1"),
            "expected_RMSE": expected_error(P, q, "RMSE")}


def prior_study(n: int, alpha: float, distributions: Mapping[str, Sequence[float]],
                objectives: Sequence[str] = ("L0", "L0d:1"),
                property_sets: Mapping[str, Sequence[str]] | None = None,
                solver: str = "HIGHS") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Prior-aware designs (weights = the input distribution) vs uniform-prior GM/WH/WM/EM.

    For every distribution ``q`` and objective, each property set of :data:`PRIOR_SETS` is
    designed lexicographically (expected loss under ``q``, then the worst input among those
    optima: the fairest prior-optimal design).  All mechanisms are evaluated under ``q``
    (release errors, no (n+1)/n scaling) with their fairness figures: ``diag_spread`` =
    max - min of the truthful probabilities and the worst input's error.

    Returns ``(table, gains)``: ``gains`` pairs each prior-aware design with its uniform
    counterpart (:data:`PRIOR_COUNTERPART`) on the objective it was designed for.
    """
    from countdp.design.designer import design_named

    n, a = check_n(n), check_alpha(alpha)
    sets = dict(PRIOR_SETS if property_sets is None else property_sets)
    named = {}
    for m in sorted(set(PRIOR_COUNTERPART[k] for k in sets)):
        named[m] = design_named(m, n, a, solver=solver).matrix if m in ("WH", "WM") else \
            certify({"GM": geometric, "EM": explicit_fair}[m](n, a), a)[0]
    rows = []
    for dist, q in distributions.items():
        q = check_distribution(q, n, "distribution")
        for m, P in named.items():
            rows.append({"distribution": dist, "n": n, "alpha": a, "family": m, "design": "uniform",
                         "objective": "L0", "mechanism": m, **_fairness(P, q)})
        for obj in objectives:
            for name, props in sets.items():
                P, rec = lexicographic_design(n, a, props, obj, "sum", weights=q)
                rows.append({"distribution": dist, "n": n, "alpha": a, "family": name, "design": "prior",
                             "objective": str(parse_objective(obj)), "mechanism": f"prior[{name}]/{obj}",
                             **_fairness(P, q), "certified": rec["certified"]})
    table = pd.DataFrame(rows)
    gains = []
    for r in table[table.design == "prior"].itertuples():
        base = table[(table.distribution == r.distribution) & (table.design == "uniform")
                     & (table.mechanism == PRIOR_COUNTERPART[r.family])].iloc[0]
        col = "expected_L0" if r.objective == "L0" else "expected_L0d1"
        gains.append({"distribution": r.distribution, "n": n, "alpha": a, "family": r.family,
                      "objective": r.objective, "counterpart": base.mechanism,
                      "uniform_error": base[col], "prior_error": getattr(r, col),
                      "gain": base[col] - getattr(r, col),
                      "relative_gain": (base[col] - getattr(r, col)) / base[col] if base[col] > 0 else np.nan,
                      "uniform_diag_spread": base.diag_spread, "prior_diag_spread": r.diag_spread,
                      "uniform_worst_input_L0": base.worst_input_L0, "prior_worst_input_L0": r.worst_input_L0})
    return table, pd.DataFrame(gains)


def prior_checks(gains: pd.DataFrame, tol: float = 1e-9) -> pd.DataFrame:
    """Prior-aware designs are never worse than their counterpart, under the same constraints.

    (Holds when the counterpart satisfies the prior-aware set's properties: GM for 'none',
    WH/WM for theirs, EM for 'F'; S is not required of the prior-aware designs.)
    """
    return pd.DataFrame([
        check("prior", "prior-aware design <= uniform-prior counterpart on its objective", ">= 0 gain",
              f"min gain {float(gains.gain.min()):.2e}; max relative gain {float(gains.relative_gain.max()):.3f}",
              bool((gains.gain >= -tol).all())),
    ], columns=CHECK_COLUMNS)


def binomial_distributions(n: int, ps: Sequence[float]) -> dict[str, np.ndarray]:
    """``{"Binomial(p=...)": pmf}`` for each ``p``."""
    from countdp.evaluate.metrics import binomial_distribution

    return {f"Binomial(p={p:g})": binomial_distribution(n, p) for p in ps}


# ------------------------------------------------------------------- 5. other objectives
def fig8_property_sets(include_extremes: bool = True) -> dict[str, tuple[str, ...]]:
    """The Figure 8 sets ``WH + S + {none, RH, ..., RM+CM}``, plus BasicDP and all seven."""
    sets = {}
    if include_extremes:
        sets["none"] = ()
    for combo in FIG8_COMBINATIONS:
        props = parse_properties(("WH", "S", *combo))
        sets[subset_name(props)] = props
    if include_extremes:
        sets["all"] = PROPERTIES
    return sets


def objective_study(n: int, alpha: float, ps: Sequence[float],
                    property_sets: Mapping[str, Sequence[str]] | None = None,
                    objectives: Sequence[str] = ("L0", "L1", "L2"),
                    solver: str = "HIGHS", method: str | None = None) -> tuple[pd.DataFrame, dict]:
    """Uniform-prior designs for each objective and property set, evaluated under Binomial(n, p).

    Returns ``(table, matrices)``: one row per (property set, objective, p) with the design's
    own objective value, its uniform-prior L0/L1/L2 and its expected L0, L1 and RMSE under
    Binomial(n, p); ``matrices[(set, objective)]`` is the certified matrix (for heatmaps).
    """
    from countdp.design.designer import design_lp
    from countdp.evaluate.metrics import binomial_distribution

    n, a = check_n(n), check_alpha(alpha)
    sets = dict(fig8_property_sets() if property_sets is None else property_sets)
    rows, matrices = [], {}
    for name, props in sets.items():
        for obj in objectives:
            d = design_lp(n, a, props, obj, solver=solver, method=method)
            matrices[(name, str(parse_objective(obj)))] = d.matrix
            base = {"properties": name, "objective": str(parse_objective(obj)), "n": n, "alpha": a,
                    "design_value": d.objective_value, "uniform_L0": objective_value(d.matrix, "L0"),
                    "uniform_L1": objective_value(d.matrix, "L1"), "uniform_L2": objective_value(d.matrix, "L2"),
                    "certified": d.certificate.certified, "solver": f"{d.solver}/{d.method}"}
            for p in ps:
                q = binomial_distribution(n, p)
                rows.append({**base, "p": p, "expected_L0": expected_error(d.matrix, q, "L0"),
                             "expected_L1": expected_error(d.matrix, q, "L1"),
                             "expected_RMSE": expected_error(d.matrix, q, "RMSE")})
    return pd.DataFrame(rows), matrices


def matrices_frame(matrices: Mapping[tuple[str, str], np.ndarray], n: int, alpha: float) -> pd.DataFrame:
    """Tidy long form of :func:`objective_study`'s matrices: one row per entry."""
    i, j = np.indices((n + 1, n + 1))
    frames = [pd.DataFrame({"properties": props, "objective": obj, "n": n, "alpha": alpha,
                            "output": i.ravel(), "input": j.ravel(), "probability": P.ravel()})
              for (props, obj), P in matrices.items()]
    return pd.concat(frames, ignore_index=True)


def objective_checks(table: pd.DataFrame, tol: float = 1e-7) -> pd.DataFrame:
    """Each objective's design is best on its own uniform-prior objective within a property set."""
    worst = 0.0  # largest amount by which another design beats a design on its own objective
    for _, g in table.groupby("properties"):
        for obj in ("L0", "L1", "L2"):
            if obj in set(g.objective):
                own = g[g.objective == obj][f"uniform_{obj}"].iloc[0]
                worst = max(worst, float((own - g[f"uniform_{obj}"]).max()))
    return pd.DataFrame([check("objectives", "each design is optimal for its own objective", "own <= others",
                               f"largest shortfall {worst:.1e}", worst <= tol)], columns=CHECK_COLUMNS)


# --------------------------------------------------------------------- 6. derivability
DERIVABILITY_MECHANISMS = ("GM", "EM", "WM", "WH", "UM", "EXP", "CGM", "RR")


def named_matrix(name: str, n: int, alpha: float, solver: str = "HIGHS") -> np.ndarray:
    """Certified matrix of a named mechanism or baseline (WM/WH are LP designs)."""
    from countdp.design.designer import design_named

    if name in ("WM", "WH"):
        return design_named(name, n, alpha, solver=solver).matrix
    if name in ("GM", "EM", "UM"):
        return certify({"GM": geometric, "EM": explicit_fair, "UM": lambda n, a: uniform(n)}[name](n, alpha),
                       alpha)[0]
    return certified_baseline(name, n, alpha)[0]


def derivability_table(ns: Sequence[int], alphas: Sequence[float],
                       mechanisms: Sequence[str] = DERIVABILITY_MECHANISMS, tol: float = 1e-9) -> pd.DataFrame:
    """Gupte-Sundararajan test (derivable from GM by post-processing) for every mechanism.

    Also records each mechanism's seven properties (tolerance 1e-7) for context.
    """
    rows = []
    for a in alphas:
        for n in ns:
            n, a = check_n(n), check_alpha(a)
            for m in mechanisms:
                P = named_matrix(m, n, a)
                v = gupte_sundararajan_violation(P, a)
                props = check_all(P, 1e-7)
                rows.append({"mechanism": m, "n": n, "alpha": a, "gs_violation": v, "derivable": v <= tol,
                             **{f"has_{k}": c.holds for k, c in props.items()}})
    return pd.DataFrame(rows)


def derivability_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per mechanism: derivable on all / some / none of the grid (n = 1 is trivially derivable)."""
    out = []
    for m, g in table.groupby("mechanism", sort=False):
        big = g[g.n > 1]
        frac = float(big.derivable.mean()) if len(big) else float("nan")
        verdict = "always" if frac == 1 else "never" if frac == 0 else "sometimes"
        out.append({"mechanism": m, "grid_points": len(big), "derivable_fraction": frac, "verdict": verdict,
                    "max_violation": float(big.gs_violation.max()) if len(big) else 0.0,
                    "derivable_at": ";".join(f"n={r.n},a={r.alpha:g}" for r in big[big.derivable].itertuples())
                    if verdict == "sometimes" else ""})
    return pd.DataFrame(out)


def derivability_checks(summary: pd.DataFrame) -> pd.DataFrame:
    """GM and UM are derivable (Gupte-Sundararajan); the paper says WM and EM are not for n > 1."""
    v = summary.set_index("mechanism").verdict
    rows = [check("derivability", f"{m} is derivable from GM", "always", v.get(m), v.get(m) == "always")
            for m in ("GM", "UM") if m in v]
    rows += [check("derivability", f"{m} is not derivable from GM for n > 1 (paper)", "never", v.get(m),
                   v.get(m) == "never") for m in ("WM", "EM") if m in v]
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


# --------------------------------------------------------------------------- 7. figures
BEHAVIOUR_COLOURS = {"GM": "GM", "WH": "WH", "WH+CM": "WM", "EM": "EM"}
"""Figure 5 behaviours drawn in the colour of the mechanism they equal (LP(WH+CM) as WM)."""

SET_COLOURS = {"BasicDP": "GM", "none": "GM", "WH": "WH", "WM": "WM", "ALL": "EM", "F": "EM"}


def _colour(key: str) -> str:
    from countdp.plots.style import MECHANISM_COLORS

    return MECHANISM_COLORS.get(SET_COLOURS.get(key, BEHAVIOUR_COLOURS.get(key, key)), "#000000")


PLOT_LOCK = threading.Lock()
"""Serialises the drawing of the figures below.

The extension rules run as threads of the Snakemake process (the profile's
``force-use-threads``).  The figures never touch pyplot (no global figure manager, no backend
switch): each is a :class:`matplotlib.figure.Figure` of its own, saved through its own
canvas.  Matplotlib still keeps some module-level caches, so drawing is also done under
this lock (figures are cheap; the LPs before them run in parallel)."""


def _subplots(*args, figsize: tuple[float, float], **kwargs):
    """``plt.subplots`` without pyplot: a new ``matplotlib.figure.Figure`` (registered nowhere) and its axes."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*args, **kwargs)


def _serialised(plot):
    """Run ``plot`` holding :data:`PLOT_LOCK`."""

    @functools.wraps(plot)
    def locked(*args, **kwargs):
        with PLOT_LOCK:
            return plot(*args, **kwargs)

    return locked


def _save(fig, paths: Sequence[str]) -> None:
    """Save ``fig`` to every path (format from the suffix), each written atomically."""
    from pathlib import Path

    for path in paths:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix.lstrip("."), dpi=150, bbox_inches="tight")


@_serialised
def plot_baselines(table: pd.DataFrame, paths: Sequence[str]) -> None:
    """Top: uniform-prior L0 vs n per alpha; bottom: achieved alpha / alpha of EXP and naive CGM."""
    from countdp.plots.style import MECHANISM_COLORS, MECHANISM_LABELS, MECHANISM_MARKERS

    alphas = sorted(table.alpha.unique())
    fig, axes = _subplots(2, len(alphas), figsize=(3.6 * len(alphas), 6.2), squeeze=False,
                             sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    labels = {**MECHANISM_LABELS, "CGM": "Cond. GM = calibrated EXP", "EXP": "Exponential mech. (eps/2)"}
    for k, a in enumerate(alphas):
        ax, bx = axes[0, k], axes[1, k]
        sub = table[table.alpha == a]
        for m in ("GM", "EM", "UM", "EXP", "CGM", "RR"):
            g = sub[sub.mechanism == m].sort_values("n")
            ax.plot(g.n, g.L0, marker=MECHANISM_MARKERS[m], color=MECHANISM_COLORS[m], label=labels[m], ms=4)
        ax.set_title(f"alpha = {a:g}")
        for m, ls in (("EXP", "-"), ("CGM-naive", "--")):
            g = sub[sub.mechanism == m].sort_values("n")
            colour = MECHANISM_COLORS["EXP" if m == "EXP" else "CGM"]
            bx.plot(g.n, g.achieved_alpha / a, ls=ls, marker="o", ms=3, color=colour,
                    label="EXP (nominal alpha)" if m == "EXP" else "Cond. GM with base alpha")
        bx.axhline(1.0, color="k", lw=0.8)
        bx.set_xlabel("n (group size)")
        if k == 0:
            ax.set_ylabel("L0 (uniform prior)")
            bx.set_ylabel("achieved alpha / alpha")
    from matplotlib.ticker import MaxNLocator

    for ax in axes.ravel():
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    axes[1, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle("Baselines: error at equal privacy, and the privacy they really achieve (>1: more private)",
                 fontsize=10)
    fig.tight_layout()
    _save(fig, paths)


@_serialised
def plot_subsets(detail: pd.DataFrame, summary: pd.DataFrame, paths: Sequence[str]) -> None:
    """Stacked bars: how many of the 128 subsets show each behaviour, per (n, alpha)."""
    keys = list(summary.sort_values(["alpha", "n"])[["n", "alpha"]].itertuples(index=False, name=None))
    behaviours = [b for b in (*FIG5_REFERENCES, "other") if b in set(detail.behaviour)]
    fig, ax = _subplots(figsize=(max(6.0, 0.45 * len(keys) + 2), 4.2))
    x = np.arange(len(keys))
    bottom = np.zeros(len(keys))
    for b in behaviours:
        counts = np.array([((detail.n == n) & (detail.alpha == a) & (detail.behaviour == b)).sum() for n, a in keys])
        label = {"WH": "LP(WH)", "WH+CM": "LP(WH+CM)"}.get(b, b)
        ax.bar(x, counts, bottom=bottom, color=_colour(b) if b != "other" else "k", label=label, width=0.8)
        bottom += counts
    s = summary.set_index(["n", "alpha"])
    for k, key in enumerate(keys):
        ax.text(k, 130, f"{s.loc[key, 'distinct_values']}/{s.loc[key, 'distinct_matrices']}", ha="center",
                va="bottom", fontsize=7)
    ax.set_xticks(x, [f"n={n}\na={a:g}" for n, a in keys], fontsize=7)
    ax.set_ylim(0, 145)
    ax.set_ylabel("property subsets (of 128)")
    ax.set_title("L0 optimum of all 128 property subsets (labels: distinct values / distinct min-norm optima)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    _save(fig, paths)


@_serialised
def plot_minimax(table: pd.DataFrame, paths: Sequence[str]) -> None:
    """Worst-column and average L0 of minimax (solid) and Bayesian (dashed) designs vs n."""
    alphas = sorted(table.alpha.unique())
    fig, axes = _subplots(2, len(alphas), figsize=(3.6 * len(alphas), 6.0), squeeze=False, sharex=True)
    sets = [s for s in table.properties.unique() if s not in ("GM", "EM")]
    for k, a in enumerate(alphas):
        sub = table[table.alpha == a]
        for r, col in enumerate(("worst_L0", "avg_L0")):
            ax = axes[r, k]
            for s in sets:
                for design, ls in (("minimax", "-"), ("bayes", "--")):
                    g = sub[(sub.properties == s) & (sub.design == design)].sort_values("n")
                    ax.plot(g.n, g[col], ls=ls, color=_colour(s), marker="o", ms=3, label=f"{s} {design}")
            g = sub[sub.properties == "GM"].sort_values("n")
            ax.plot(g.n, g[col], ls=":", color="k", lw=1, label="GM (closed form)")
            if r == 0:
                ax.set_title(f"alpha = {a:g}")
            else:
                ax.set_xlabel("n (group size)")
            if k == 0:
                ax.set_ylabel("worst-input L0" if col == "worst_L0" else "average L0 (uniform prior)")
    axes[0, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    mm = table[table.design == "minimax"].merge(table[table.properties == "EM"][["n", "alpha", "worst_L0"]],
                                                on=["n", "alpha"], suffixes=("", "_em"))
    note = ("\nevery minimax design has EM's L0 (solid lines coincide)"
            if bool(((mm.worst_L0 - mm.worst_L0_em).abs() <= 1e-7).all()) else "")
    fig.suptitle("Minimax (solid) vs Bayesian (dashed) L0 designs; ALL = all seven properties" + note,
                 fontsize=10)
    fig.tight_layout()
    _save(fig, paths)


@_serialised
def plot_prior(table: pd.DataFrame, paths: Sequence[str], objective: str = "L0") -> None:
    """Per distribution: expected error of uniform-prior vs prior-aware designs, and diag spread."""
    dists = list(dict.fromkeys(table.distribution))
    col = "expected_L0" if objective == "L0" else "expected_L0d1"
    fig, axes = _subplots(2, len(dists), figsize=(3.0 * len(dists) + 1, 5.6), squeeze=False, sharey="row")
    fams = list(PRIOR_COUNTERPART)
    x = np.arange(len(fams))
    for k, dist in enumerate(dists):
        sub = table[table.distribution == dist]
        uni = [sub[(sub.design == "uniform") & (sub.mechanism == PRIOR_COUNTERPART[f])] for f in fams]
        pri = [sub[(sub.design == "prior") & (sub.family == f) & (sub.objective == objective)] for f in fams]
        colours = [_colour(f) for f in fams]
        for r, measure in enumerate((col, "diag_spread")):
            ax = axes[r, k]
            ax.bar(x - 0.2, [u[measure].iloc[0] for u in uni], 0.38, color=colours, alpha=0.45, edgecolor="k",
                   label="uniform prior")
            ax.bar(x + 0.2, [p[measure].iloc[0] for p in pri], 0.38, color=colours, edgecolor="k", hatch="//",
                   label="prior-aware")
            ax.set_xticks(x, [f"{f}\n({PRIOR_COUNTERPART[f]})" for f in fams], fontsize=7)
            if r == 0:
                ax.set_title(dist, fontsize=9)
            if k == 0:
                ax.set_ylabel(f"expected {objective} under the prior" if r == 0
                              else "fairness price: max - min diag(P)")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.suptitle(f"Prior-aware {objective} designs vs uniform-prior GM/WH/WM/EM (same input distribution)",
                 fontsize=10)
    fig.tight_layout()
    _save(fig, paths)


OBJECTIVE_MARKERS = {"L0": ("o", "#444444"), "L1": ("s", "#e377c2"), "L2": ("^", "#bcbd22")}


@_serialised
def plot_objectives(table: pd.DataFrame, paths: Sequence[str]) -> None:
    """Expected RMSE under Binomial(n, p) of L0/L1/L2 designs across property sets."""
    ps = sorted(table.p.unique())
    sets = list(dict.fromkeys(table.properties))
    fig, axes = _subplots(1, len(ps), figsize=(4.2 * len(ps), 4.2), squeeze=False, sharey=True)
    x = np.arange(len(sets))
    for k, p in enumerate(ps):
        ax = axes[0, k]
        sub = table[table.p == p]
        for j, (obj, (marker, colour)) in enumerate(OBJECTIVE_MARKERS.items()):
            g = sub[sub.objective == obj].set_index("properties").reindex(sets)
            ax.plot(x + (j - 1) * 0.15, g.expected_RMSE, marker, color=colour, label=f"{obj} design", ms=6)
        ax.set_xticks(x, sets, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"Binomial(n={int(table.n.iloc[0])}, p={p:g}), alpha={table.alpha.iloc[0]:g}", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        if k == 0:
            ax.set_ylabel("expected RMSE of the released count")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    _save(fig, paths)


@_serialised
def plot_objective_heatmaps(frame: pd.DataFrame, paths: Sequence[str], sets: Sequence[str] | None = None) -> None:
    """Heatmaps of the designed matrices: rows = property sets, columns = objectives."""
    sets = list(dict.fromkeys(frame.properties)) if sets is None else list(sets)
    objs = list(dict.fromkeys(frame.objective))
    fig, axes = _subplots(len(sets), len(objs), figsize=(3.1 * len(objs) + 0.8, 3.0 * len(sets)),
                             squeeze=False)
    image = None
    vmax = float(frame[frame.properties.isin(sets)].probability.max())
    for r, s in enumerate(sets):
        for c, o in enumerate(objs):
            g = frame[(frame.properties == s) & (frame.objective == o)]
            N = int(g.output.max()) + 1
            M = np.zeros((N, N))
            M[g.output.to_numpy(), g.input.to_numpy()] = g.probability.to_numpy()
            ax = axes[r, c]
            image = ax.imshow(M, origin="lower", cmap="viridis", vmin=0, vmax=vmax)
            if N <= 9:
                for i, j in np.ndindex(M.shape):
                    ax.text(j, i, f"{M[i, j]:.2f}", ha="center", va="center", fontsize=5.5,
                            color="w" if M[i, j] < 0.6 * vmax else "k")
            ax.set_title(f"{o} design, {s}", fontsize=8)
            ax.set_xlabel("input j", fontsize=7)
            ax.set_ylabel("output i", fontsize=7)
            ax.tick_params(labelsize=6)
    fig.colorbar(image, ax=axes, shrink=0.6, label="Pr[output i | input j]")
    _save(fig, paths)


@_serialised
def plot_derivability(table: pd.DataFrame, paths: Sequence[str]) -> None:
    """Gupte-Sundararajan violation per mechanism and (n, alpha); derivable cells marked."""
    mechs = list(dict.fromkeys(table.mechanism))
    keys = list(table.sort_values(["alpha", "n"])[["n", "alpha"]].drop_duplicates().itertuples(index=False,
                                                                                                 name=None))
    V = np.full((len(mechs), len(keys)), np.nan)
    D = np.zeros_like(V, dtype=bool)
    idx = table.set_index(["mechanism", "n", "alpha"])
    for r, m in enumerate(mechs):
        for c, key in enumerate(keys):
            V[r, c] = idx.loc[(m, *key), "gs_violation"]
            D[r, c] = idx.loc[(m, *key), "derivable"]
    from matplotlib.colors import ListedColormap

    fig, ax = _subplots(figsize=(max(6.0, 0.55 * len(keys) + 2.0), 0.42 * len(mechs) + 1.6))
    ax.imshow(D.astype(float), cmap=ListedColormap(["#f4cccc", "#d9ead3"]), vmin=0, vmax=1, aspect="auto")
    for r, c in np.ndindex(V.shape):
        ax.text(c, r, "yes" if D[r, c] else f"{V[r, c]:.1e}", ha="center", va="center", fontsize=6)
    ax.set_yticks(range(len(mechs)), mechs, fontsize=8)
    ax.set_xticks(range(len(keys)), [f"n={n}\na={a:g}" for n, a in keys], fontsize=6)
    ax.set_title("Derivable from GM by post-processing? (Gupte-Sundararajan test)\n"
                 "green: yes; red: no, with the worst violation", fontsize=9)
    fig.tight_layout()
    _save(fig, paths)


# ---------------------------------------------------------------------- 8. rule entry points
# One function per rule of workflow/rules/extensions.smk, called from its `run:` block (a thread
# of the Snakemake process): compute the tables, write them, draw the figures.  Every file is
# renamed into place atomically.  Wall-clock timings go to the job's log, never into a table,
# so the tables are byte-identical from run to run.
def _timing_lines(timings: Sequence[dict]) -> list[str]:
    """One line per timed solve (``key=value ... solve_time=...s``), then totals per (n, alpha)."""
    lines = [" ".join(f"{k}={v}" for k, v in t.items() if k != "solve_time") + f" solve_time={t['solve_time']:.4f}s"
             for t in timings]
    totals: dict[tuple, list[float]] = {}
    for t in timings:
        totals.setdefault((t["n"], t["alpha"]), []).append(t["solve_time"])
    lines += [f"total n={n} alpha={a}: {len(v)} solves, solve_time={sum(v):.3f}s" for (n, a), v in totals.items()]
    return lines


def _baselines(inp, out, par, timings):
    table = baseline_table(par.ns, par.alphas)
    return ([(table, out.table), (baseline_checks(table), out.checks)],
            lambda: plot_baselines(table, out.figure))


def _subsets(inp, out, par, timings):
    detail = subset_map(par.ns, par.alphas, timings=timings)
    summary = subset_summary(detail)
    return ([(detail, out.table), (summary, out.summary), (subset_checks(detail, summary), out.checks)],
            lambda: plot_subsets(detail, summary, out.figure))


def _minimax(inp, out, par, timings):
    table = minimax_study(par.ns, par.alphas, timings=timings)
    return ([(table, out.table), (minimax_checks(table), out.checks)], lambda: plot_minimax(table, out.figure))


def _prior(inp, out, par, timings):
    from countdp.studies.intrinsic import parse_alpha

    cfg = par.cfg
    n, alpha = int(cfg["n"]), parse_alpha(cfg["alpha"])
    dists = binomial_distributions(n, cfg.get("binomial_p", []))
    targets = cfg.get("adult_targets") or []
    if targets:
        from countdp.evaluate.data import empirical_distribution, group_counts, read_adult_table

        adult = read_adult_table(inp.adult[0], inp.adult[1])
        rng = np.random.default_rng([int(par.seed), n])
        for target in targets:
            bits = adult[target].to_numpy()
            counts = np.concatenate(
                [group_counts(bits, n, rng) for _ in range(int(cfg.get("adult_permutations", 20)))])
            dists[f"Adult {target}"] = empirical_distribution(counts, n)
    table, gains = prior_study(n, alpha, dists, cfg.get("objectives", ["L0", "L0d:1"]), solver=par.solver)
    return ([(table, out.table), (gains, out.gains), (prior_checks(gains), out.checks)],
            lambda: plot_prior(table, out.figure))


def _objectives(inp, out, par, timings):
    from countdp.studies.intrinsic import parse_alpha

    cfg = par.cfg
    n, alpha = int(cfg["n"]), parse_alpha(cfg["alpha"])
    table, mats = objective_study(n, alpha, cfg["p"], solver=par.solver.get("name", "HIGHS"),
                                  method=par.solver.get("method"))
    frame = matrices_frame(mats, n, alpha)

    def plot():
        plot_objectives(table, out.rmse)
        plot_objective_heatmaps(frame, out.heatmaps, sets=cfg.get("heatmap_sets"))

    return [(table, out.table), (frame, out.matrices), (objective_checks(table), out.checks)], plot


def _derivability(inp, out, par, timings):
    table = derivability_table(par.ns, par.alphas)
    summary = derivability_summary(table)
    return ([(table, out.table), (summary, out.summary), (derivability_checks(summary), out.checks)],
            lambda: plot_derivability(table, out.figure))


def _checks(inp, out, par, timings):
    return [(pd.concat([pd.read_csv(path) for path in inp], ignore_index=True), out[0])], None


STUDY_BUILDERS = {"baselines": _baselines, "subsets": _subsets, "minimax": _minimax, "prior": _prior,
                  "objectives": _objectives, "derivability": _derivability, "checks": _checks}


def build_study(study: str, inputs, outputs, params, log: str | None = None) -> None:
    """Entry point of the extension rules: ``study``'s tables and figures from Snakemake's input/output/params.

    The log gets the row count of every table, the wall-clock time of the study (computation,
    then tables + figures) and, for the LP studies that record them, every solver time.
    """
    start = time.perf_counter()
    timings: list[dict] = []
    tables, plot = STUDY_BUILDERS[study](inputs, outputs, params, timings)
    steps = [f"computed in {time.perf_counter() - start:.3f}s"]
    for frame, path in tables:
        write_csv_atomic(frame, path)
    if plot is not None:
        plot()
        steps.append(f"figures drawn at {time.perf_counter() - start:.3f}s")
    steps.append(f"done in {time.perf_counter() - start:.3f}s")
    lines = [f"{path}: {len(frame)} rows" for frame, path in tables]
    lines.append(f"ext_{study}: " + ", ".join(steps))
    if timings:
        lines += ["solver times (wall clock):", *_timing_lines(timings)]
    if log:
        write_text_atomic(log, "\n".join(lines) + "\n")
