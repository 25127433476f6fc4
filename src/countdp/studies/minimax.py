"""Minimax (worst input) vs Bayesian (uniform prior) designs, each solved lexicographically.

``design="bayes"`` minimises the average of the objective (L0 by default; L1 or L2), then the
worst column among those optima; ``design="minimax"`` the reverse, so reported secondary numbers
are the best achievable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from countdp.design.highs_model import lexicographic_design
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.checks import check_row as check
from countdp.studies.naming import PROPERTIES
from countdp.studies.subsets import VALUE_TOL
from countdp.validation import check_alpha, check_n
from countdp.values.catalogue import NAMED_DESIGNS
from countdp.values.objectives import objective_value

MINIMAX_SETS: dict[str, tuple[str, ...]] = {
    "BasicDP": (),
    "WH": NAMED_DESIGNS["WH"],
    "WM": NAMED_DESIGNS["WM"],
    "ALL": PROPERTIES,
}
"""Property sets of the minimax study: GM-style, LP(WH), WM, and EM-style (all seven)."""

def minimax_study(ns: Sequence[int], alphas: Sequence[float],
                  property_sets: Mapping[str, Sequence[str]] | None = None,
                  timings: list[dict] | None = None, objective: str = "L0") -> pd.DataFrame:
    """Bayesian (uniform prior) vs minimax designs of ``objective`` (L0, L1 or L2), each solved lexicographically.

    ``design="bayes"``: minimise the average objective, then the worst column among those optima;
    ``design="minimax"``: the reverse.  Closed-form GM and EM are added as references (with
    ``properties`` = the set they are optimal for under L0).  ``worst_{objective}`` is the largest
    column loss (L0 with the ``(n+1)/n`` scaling), ``avg_{objective}`` the uniform-prior one.  Solver
    times are not in the table: pass a list as ``timings`` to receive one ``{"n", "alpha",
    "properties", "design", "solve_time"}`` per designed mechanism.
    """
    sets = dict(MINIMAX_SETS if property_sets is None else property_sets)
    worst, avg = f"worst_{objective}", f"avg_{objective}"
    rows = []
    for a in alphas:
        for n in ns:
            n, a = check_n(n), check_alpha(a)
            for name, props in sets.items():
                for design, first in (("bayes", "sum"), ("minimax", "max")):
                    P, rec = lexicographic_design(n, a, props, objective, first)
                    rows.append({"properties": name, "design": design, "n": n, "alpha": a,
                                 worst: objective_value(P, objective, aggregate="max"),
                                 avg: objective_value(P, objective),
                                 "min_diag": float(np.diag(P).min()), "max_diag": float(np.diag(P).max()),
                                 "certified": rec["certified"]})
                    if timings is not None:
                        timings.append({"n": n, "alpha": a, "properties": name, "design": design,
                                        "solve_time": rec["solve_time"]})
            for name, P in (("GM", geometric(n, a)), ("EM", explicit_fair(n, a))):
                rows.append({"properties": name, "design": "closed-form", "n": n, "alpha": a,
                             worst: objective_value(P, objective, aggregate="max"),
                             avg: objective_value(P, objective), "min_diag": float(np.diag(P).min()),
                             "max_diag": float(np.diag(P).max()), "certified": True})
    return pd.DataFrame(rows)


def minimax_checks(table: pd.DataFrame, tol: float = VALUE_TOL, objective: str = "L0") -> pd.DataFrame:
    """Minimax worst column <= every design with its properties; Bayes average <= minimax average;
    minimax (BasicDP) worst column <= GM's; and EM, feasible for every set: under L0 the observation
    that the minimax value equals EM's, under the other objectives that it is at most EM's."""
    worst, avg = f"worst_{objective}", f"avg_{objective}"
    designed = table[table.design.isin(["bayes", "minimax"])]
    wide = designed.pivot_table(index=["properties", "n", "alpha"], columns="design", values=[worst, avg])
    gm = table[table.design == "closed-form"].set_index(["properties", "n", "alpha"])
    worst_ok = bool((wide[worst]["minimax"] <= wide[worst]["bayes"] + tol).all())
    avg_ok = bool((wide[avg]["bayes"] <= wide[avg]["minimax"] + tol).all())
    basic = wide.xs("BasicDP", level="properties") if "BasicDP" in wide.index.get_level_values(0) else None
    gm_ok = True
    if basic is not None:
        ref = gm.xs("GM", level="properties")[worst].reindex(basic.index)
        gm_ok = bool((basic[worst]["minimax"] <= ref + tol).all())
    gain = (wide[worst]["bayes"] - wide[worst]["minimax"])
    price = wide[avg]["minimax"] - wide[avg]["bayes"]
    em = gm.xs("EM", level="properties")[worst]
    minimax = wide[worst]["minimax"]
    em_gap = minimax - em.reindex(minimax.index.droplevel(0)).to_numpy()
    return pd.DataFrame([
        check("minimax", "minimax worst column <= Bayesian design's worst column", "<=",
              f"largest gain {float(gain.max()):.4f}", worst_ok),
        check("minimax", f"Bayesian average {objective} <= minimax design's average {objective}", "<=",
              f"largest average-{objective} price of minimax {float(price.max()):.4f}", avg_ok),
        check("minimax", "minimax (BasicDP) worst column <= GM's", "<=",
              "checked on every (n, alpha)" if basic is not None else "no BasicDP design in the config", gm_ok),
        _em_check(em_gap, objective, tol),
    ], columns=CHECK_COLUMNS)


def _em_check(em_gap: pd.Series, objective: str, tol: float) -> dict:
    """EM against the minimax designs (``em_gap``: minimax worst column minus EM's, per design)."""
    if objective == "L0":
        return check("minimax", "observation: the minimax L0 value equals L0(EM) for every property set", "L0(EM)",
                     f"max |minimax worst - L0(EM)| = {float(em_gap.abs().max()):.2e}",
                     bool((em_gap.abs() <= tol).all()),
                     "beyond the paper; EM is feasible for every set, so minimax <= L0(EM) always")
    return check("minimax", f"minimax worst-column {objective} <= EM's for every property set", "<=",
                 f"largest excess over EM {float(em_gap.max()):.2e}", bool((em_gap <= tol).all()),
                 "EM has all seven properties, so it is feasible for every set")
