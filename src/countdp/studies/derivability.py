"""The Gupte-Sundararajan test: which mechanisms can be derived from GM by post-processing."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from countdp.design.designer import design_named
from countdp.mechanisms.closed_forms import CLOSED_FORMS
from countdp.mechanisms.properties import check_all, gupte_sundararajan_violation
from countdp.privacy.certify import certify
from countdp.studies.baselines import certified_baseline
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.checks import check_row as check
from countdp.validation import check_alpha, check_n

DERIVABILITY_MECHANISMS = ("GM", "EM", "WM", "WH", "UM", "EXP", "CGM", "RR")


def named_matrix(name: str, n: int, alpha: float, solver: str = "HIGHS") -> np.ndarray:
    """Certified matrix of a named mechanism or baseline (WM/WH are LP designs)."""
    if name in ("WM", "WH"):
        return design_named(name, n, alpha, solver=solver).matrix
    if name in ("GM", "EM", "UM"):
        return certify(CLOSED_FORMS[name](n, alpha),
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
