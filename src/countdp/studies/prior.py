"""Prior-aware designs (weights = a known input distribution) vs the uniform-prior GM/WH/WM/EM.

Designs are solved lexicographically (expected loss under the prior, then the worst input
among those optima: the fairest prior-optimal design).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from countdp.design.designer import design_named
from countdp.design.highs_model import lexicographic_design
from countdp.evaluate.metrics import binomial_distribution, expected_error
from countdp.mechanisms.closed_forms import CLOSED_FORMS
from countdp.privacy.certify import certify
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.checks import check_row as check
from countdp.validation import check_alpha, check_distribution, check_n
from countdp.values.catalogue import NAMED_DESIGNS
from countdp.values.objectives import parse_objective

PRIOR_SETS: dict[str, tuple[str, ...]] = {
    "none": (),
    "WH": tuple(p for p in NAMED_DESIGNS["WH"] if p != "S"),
    "WM": tuple(p for p in NAMED_DESIGNS["WM"] if p != "S"),
    "F": ("RH", "RM", "CH", "CM", "F", "WH"),
}
"""Property sets of prior-aware designs (S dropped: it is not free under a skewed prior)."""

PRIOR_COUNTERPART = {"none": "GM", "WH": "WH", "WM": "WM", "F": "EM"}
"""The uniform-prior named mechanism each prior-aware property set is compared with."""

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
    n, a = check_n(n), check_alpha(alpha)
    sets = dict(PRIOR_SETS if property_sets is None else property_sets)
    named = {}
    for m in sorted(set(PRIOR_COUNTERPART[k] for k in sets)):
        named[m] = design_named(m, n, a, solver=solver).matrix if m in ("WH", "WM") else \
            certify(CLOSED_FORMS[m](n, a), a)[0]
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
    return {f"Binomial(p={p:g})": binomial_distribution(n, p) for p in ps}
