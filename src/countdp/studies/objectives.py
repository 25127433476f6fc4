"""L0, L1 and L2 designs under the Figure 8 property sets, evaluated under Binomial(n, p).

Designs come from :func:`countdp.design.designer.design_lp` (HiGHS simplex vertex by default,
recorded), like the project's Figures 1 and 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from countdp.design.designer import design_lp
from countdp.evaluate.metrics import binomial_distribution, expected_error
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.checks import check_row as check
from countdp.studies.naming import PROPERTIES
from countdp.studies.subsets import subset_name
from countdp.validation import check_alpha, check_n
from countdp.values.objectives import objective_value, parse_objective

FIG8_COMBINATIONS = ((), ("RH",), ("RM",), ("CH",), ("CM",), ("RH", "CH"), ("RH", "CM"), ("RM", "CH"),
                     ("RM", "CM"))

def fig8_property_sets(include_extremes: bool = True) -> dict[str, tuple[str, ...]]:
    """The Figure 8 sets ``WH + S + {none, RH, ..., RM+CM}``, plus BasicDP and all seven."""
    sets = {}
    if include_extremes:
        sets["none"] = ()
    for combo in FIG8_COMBINATIONS:
        props = tuple(p for p in PROPERTIES if p in {"WH", "S", *combo})
        sets[subset_name(props)] = props
    if include_extremes:
        sets["all"] = PROPERTIES
    return sets


def objective_study(n: int, alpha: float, ps: Sequence[float],
                    property_sets: Mapping[str, Sequence[str]] | None = None,
                    objectives: Sequence[str] = ("L0", "L1", "L2"),
                    solver: str = "HIGHS", method: str | None = None,
                    shortcuts: bool = False) -> tuple[pd.DataFrame, dict]:
    """Uniform-prior designs for each objective and property set, evaluated under Binomial(n, p).

    ``solver``, ``method`` and ``shortcuts`` go to :func:`~countdp.design.designer.design_lp`: with
    ``shortcuts`` the planner keeps its strategies and the two choose only the general LP's backend.

    Returns ``(table, matrices)``: one row per (property set, objective, p) with the design's
    own objective value, its uniform-prior L0/L1/L2 and its expected L0, L1 and RMSE under
    Binomial(n, p); ``matrices[(set, objective)]`` is the certified matrix (for heatmaps).
    """
    n, a = check_n(n), check_alpha(alpha)
    sets = dict(fig8_property_sets() if property_sets is None else property_sets)
    rows, matrices = [], {}
    for name, props in sets.items():
        for obj in objectives:
            d = design_lp(n, a, props, obj, solver=solver, method=method, shortcuts=shortcuts)
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
