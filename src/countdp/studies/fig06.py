"""Figure 6: which named mechanism has which property, and the conditions found on a grid."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from countdp.mechanisms.properties import check_property
from countdp.studies.checks import CHECK_COLUMNS, check_row
from countdp.studies.records import wh_threshold


def fig06_grid(records: Sequence[dict], properties: Sequence[str], tol: float) -> pd.DataFrame:
    """One row per (mechanism, n, alpha, property): does it hold (within ``tol``)?"""
    rows = []
    for r in records:
        P = np.asarray(r["matrix"])
        for prop in properties:
            c = check_property(P, prop, tol)
            rows.append({"mechanism": r["mechanism"], "n": r["n"], "alpha": r["alpha"], "property": prop,
                         "holds": c.holds, "worst_violation": c.worst_violation, "l0": r["l0"]})
    return pd.DataFrame(rows)


_BASE_CONDITIONS = (
    ("n >= 2α/(1-α)", lambda n, a: n >= wh_threshold(a) - 1e-9),
    ("n < 2α/(1-α)", lambda n, a: n < wh_threshold(a) - 1e-9),
    ("α <= 1/2", lambda n, a: a <= 0.5 + 1e-12),
    ("α > 1/2", lambda n, a: a > 0.5 + 1e-12),
    ("n even", lambda n, a: n % 2 == 0),
    ("n odd", lambda n, a: n % 2 == 1),
    ("n <= 2", lambda n, a: n <= 2),
)
CONDITIONS = _BASE_CONDITIONS + tuple(
    (f"{text} or n = 1", lambda n, a, fn=fn: n == 1 or fn(n, a)) for text, fn in _BASE_CONDITIONS
)
"""Candidate conditions for a parameter-dependent property (every one matching is reported)."""


def describe_condition(group: pd.DataFrame) -> str:
    """Conditions matching exactly where a property holds on the grid, or a description."""
    points = list(zip(group["n"], group["alpha"], group["holds"], strict=True))
    candidates = CONDITIONS if min(group["n"]) <= 1 else _BASE_CONDITIONS
    matches = [text for text, fn in candidates if all(bool(fn(n, a)) == bool(h) for n, a, h in points)]
    if matches:
        return " | ".join(f"iff {text}" for text in matches)
    parts = []
    for a, sub in group.groupby("alpha"):
        held = sorted(sub.loc[sub["holds"], "n"])
        failed = sorted(sub.loc[~sub["holds"], "n"])
        if not failed:
            continue
        if held and min(held) > max(failed):
            parts.append(f"α={a:.4g}: n >= {min(held)}")
        elif held and max(held) < min(failed):
            parts.append(f"α={a:.4g}: n <= {max(held)}")
        elif not held:
            parts.append(f"α={a:.4g}: never")
        else:
            parts.append(f"α={a:.4g}: fails n={','.join(map(str, failed))}")
    return "holds only at " + "; ".join(parts)


def fig06_summary(grid: pd.DataFrame, mechanisms: Sequence[str], properties: Sequence[str]) -> pd.DataFrame:
    """Mechanism x property: ``yes``, ``no`` or ``depends`` with the condition found on the grid."""
    rows = []
    for mech in mechanisms:
        sub = grid[grid["mechanism"] == mech]
        for prop in properties:
            g = sub[sub["property"] == prop]
            if g["holds"].all():
                verdict, condition = "yes", ""
            elif not g["holds"].any():
                verdict, condition = "no", ""
            else:
                verdict, condition = "depends", describe_condition(g)
            rows.append({"mechanism": mech, "property": prop, "verdict": verdict, "condition": condition,
                         "grid_points": len(g), "holds_at": int(g["holds"].sum()),
                         "n_range": f"{g['n'].min()}..{g['n'].max()}",
                         "alphas": " ".join(f"{a:.4g}" for a in sorted(g["alpha"].unique()))})
    return pd.DataFrame(rows)


PAPER_FIG6 = {  # the paper's Figure 6 ("—" = depends on the parameters)
    ("GM", "S"): "yes", ("GM", "RM"): "yes", ("GM", "CM"): "depends", ("GM", "F"): "no", ("GM", "WH"): "depends",
    ("WM", "S"): "yes", ("WM", "RM"): "yes", ("WM", "CM"): "depends", ("WM", "F"): "depends", ("WM", "WH"): "yes",
    ("EM", "S"): "yes", ("EM", "RM"): "yes", ("EM", "CM"): "yes", ("EM", "F"): "yes", ("EM", "WH"): "yes",
    ("UM", "S"): "yes", ("UM", "RM"): "yes", ("UM", "CM"): "yes", ("UM", "F"): "yes", ("UM", "WH"): "yes",
}


def fig06_checks(summary: pd.DataFrame) -> pd.DataFrame:
    checks = []
    for (mech, prop), paper in PAPER_FIG6.items():
        row = summary[(summary["mechanism"] == mech) & (summary["property"] == prop)]
        if row.empty:
            continue
        ours = row["verdict"].iloc[0]
        cond = row["condition"].iloc[0]
        checks.append(check_row("6", f"{mech} has {prop}", "—" if paper == "depends" else paper,
                                ours + (f" ({cond})" if cond else ""), ours == paper,
                                "WM = LP(WH+RM+CM+S)" if mech == "WM" else ""))
    lemma = {("GM", "WH"): "iff n >= 2α/(1-α)", ("GM", "CM"): "iff α <= 1/2"}
    for (mech, prop), cond in lemma.items():
        row = summary[(summary["mechanism"] == mech) & (summary["property"] == prop)]
        if row.empty:
            continue
        found = row["condition"].iloc[0] or row["verdict"].iloc[0]
        name = "Lemma 2" if prop == "WH" else "Lemma 3"
        holds = cond in found.split(" | ") or f"{cond} or n = 1" in found.split(" | ")
        note = "the grid cannot tell the candidates apart" if holds and " | " in found else ""
        if "or n = 1" in found and holds:
            note = "n = 1 is an exception (no interior row)"
        checks.append(check_row("6", f"{name}: {mech} has {prop} {cond} (detected on the grid)", cond, found,
                                holds, note))
    return pd.DataFrame(checks, columns=CHECK_COLUMNS)
