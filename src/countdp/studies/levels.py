"""Which mechanisms can be released at several privacy levels by post-processing (beyond Gupte-Sundararajan).

A collusion-resistant chain of releases (G-S Section 4.1) exists for a family ``M_alpha`` at
levels ``alpha < beta`` exactly when ``M_beta = T M_alpha`` for a column-stochastic ``T >= 0``.
G-S prove it for GM (Lemma 3).  This study asks it for GM, EM, WM, WH and UM over a grid of n
and pairs, in both directions:

* ``forward``: ``M_beta`` from ``M_alpha`` (more privacy from less; what a chain needs);
* ``reverse``: ``M_alpha`` from ``M_beta``, impossible for any mechanism whose DP ratio is
  exactly alpha somewhere (post-processing keeps ``M_beta``'s beta-DP), a sanity check.

Every pair is decided by the two-sided LP of :mod:`countdp.multilevel.derivable`; for GM and EM,
whose exact forms are invertible, also exactly (:func:`~countdp.multilevel.derivable.exact_transition`:
the unique ``T`` in Fractions, derivable iff it is ``>= 0``).  WM and WH are the project's LP
designs: a verdict is about the design the solver returns, not about every optimal design.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import pandas as pd

from countdp.multilevel.derivable import DerivabilitySettings, derive, exact_transition
from countdp.multilevel.exact_forms import em_exact, gm_exact
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.checks import check_row as check
from countdp.studies.derivability import named_matrix
from countdp.validation import check_n
from countdp.values.alpha import alpha_text, exact_alpha

LEVEL_MECHANISMS = ("GM", "EM", "WM", "WH", "UM")
DEFAULT_LEVEL_NS = (2, 3, 5, 8)
DEFAULT_LEVEL_ALPHAS = ("1/2", "51/100", "3/5", "7/10", "9/10")
"""The default grid: close pairs (1/2 -> 51/100) and n = 8, where EM stops being derivable, included."""
EM_CHAIN_MAX_N = 7
"""Largest n at which EM(n, beta) was found derivable from EM(n, alpha) for every pair tried (exactly,
over alpha = k/200 with gaps 1/1000 and 1e-6); at n = 8 close pairs fail."""
EXACT_FORMS = {"GM": gm_exact, "EM": em_exact}
"""Mechanisms with an exact rational form (both invertible), decided exactly as well."""


def _exact_verdict(mechanism: str, n: int, source: object, target: object) -> bool | None:
    if mechanism not in EXACT_FORMS:
        return None
    form = EXACT_FORMS[mechanism]
    T = exact_transition(form(n, source), form(n, target))
    return None if T is None else bool((T >= 0).all())


def levels_table(ns: Sequence[int] = DEFAULT_LEVEL_NS, alphas: Sequence[object] = DEFAULT_LEVEL_ALPHAS,
                 mechanisms: Sequence[str] = LEVEL_MECHANISMS,
                 settings: DerivabilitySettings | None = None) -> pd.DataFrame:
    """One row per (mechanism, n, alpha < beta, direction): LP verdict, bounds, and exact verdict if any.

    Columns: ``mechanism, n, alpha, beta, direction, derivable, residual`` (largest entry of
    ``|T A - B|`` for the stochastic ``T`` found), ``certain``, ``lower``/``upper`` (bounds on the
    best L1 residual), ``tolerance`` and ``exact`` (None without an exact form).
    """
    levels = sorted({exact_alpha(a) for a in alphas})
    rows = []
    for n in ns:
        n = check_n(n)
        for m in mechanisms:
            floats = {a: named_matrix(m, n, float(a)) for a in levels}
            for a, b in combinations(levels, 2):
                for direction, (src, dst) in (("forward", (a, b)), ("reverse", (b, a))):
                    d = derive(floats[src], floats[dst], settings)
                    rows.append({"mechanism": m, "n": n, "alpha": alpha_text(a), "beta": alpha_text(b),
                                 "direction": direction, "derivable": d.derivable, "residual": d.residual,
                                 "certain": d.certain, "lower": d.lower, "upper": d.upper, "tolerance": d.tolerance,
                                 "exact": _exact_verdict(m, n, src, dst)})
    return pd.DataFrame(rows)


def levels_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per mechanism and direction: how many grid points are derivable, and where they are not."""
    out = []
    for (m, direction), g in table.groupby(["mechanism", "direction"], sort=False):
        count = int(g.derivable.sum())
        verdict = "always" if count == len(g) else "never" if count == 0 else "sometimes"
        failing = g[~g.derivable]
        out.append({"mechanism": m, "direction": direction, "grid_points": len(g), "derivable": count,
                    "verdict": verdict, "all_certain": bool(g.certain.all()),
                    "largest_lower_bound": float(g.lower.max()),
                    "not_derivable_at": ";".join(f"n={r.n},{r.alpha}->{r.beta}" for r in failing.itertuples())
                    if verdict == "sometimes" else ""})
    return pd.DataFrame(out)


def _exactly_true(column: pd.Series) -> int:
    """How many entries are ``True`` itself (the exact column also holds None: no exact form)."""
    return sum(v is True for v in column)


def _rows(table: pd.DataFrame, mechanisms: Sequence[str], direction: str) -> pd.DataFrame:
    return table[table.mechanism.isin(list(mechanisms)) & (table.direction == direction)]


def _counts(g: pd.DataFrame) -> str:
    text = f"LP {int(g.derivable.sum())}/{len(g)} derivable"
    decided = int(g.exact.notna().sum())
    return text + (f", exact {_exactly_true(g.exact)}/{decided} derivable" if decided else "")


def levels_checks(table: pd.DataFrame) -> pd.DataFrame:
    """The statements this study tests (G-S Lemma 3, post-processing, LP vs exact, and what it found)."""
    rows = []
    gm = _rows(table, ["GM"], "forward")
    if len(gm):
        rows.append(check("G-S Sec 4.1", "GM(n,beta) derivable from GM(n,alpha) for every pair alpha < beta "
                          "(G-S Lemma 3)", "always", _counts(gm),
                          bool(gm.derivable.all()) and _exactly_true(gm.exact) == len(gm)))
    tight = _rows(table, ["GM", "EM", "WM", "WH"], "reverse")
    if len(tight):
        rows.append(check("G-S Sec 4.1", "M(n,alpha) never derivable from M(n,beta), beta > alpha, for GM, EM, WM, WH "
                          "(post-processing keeps beta-DP)", "never",
                          f"{_counts(tight)}, all certain: {bool(tight.certain.all())}",
                          bool((~tight.derivable).all() and tight.certain.all())))
    um = table[table.mechanism == "UM"]
    if len(um):
        rows.append(check("G-S Sec 4.1", "UM derivable from UM in both directions", "always", _counts(um),
                          bool(um.derivable.all())))
    exact = table[table.exact.notna()]
    if len(exact):
        agree = exact.derivable == exact.exact.astype(bool)
        rows.append(check("G-S Sec 4.1", "the LP verdict equals the exact verdict wherever one exists (GM, EM)",
                          "agree", f"{int(agree.sum())}/{len(exact)} agree", bool(agree.all())))
    em = _rows(table, ["EM"], "forward")
    small, large = em[em.n <= EM_CHAIN_MAX_N], em[em.n > EM_CHAIN_MAX_N]
    if len(small):
        rows.append(check("G-S Sec 4.1", f"EM(n,beta) derivable from EM(n,alpha) for every pair, n <= {EM_CHAIN_MAX_N}",
                          "not in G-S", _counts(small),
                          bool(small.derivable.all()) and _exactly_true(small.exact) == len(small),
                          "exact: the unique T = EM_beta EM_alpha^-1 is >= 0"))
    if len(large):
        refuted = large[~large.derivable & large.certain & large.exact.eq(False)]
        rows.append(check("G-S Sec 4.1", f"EM(n,beta) not always derivable from EM(n,alpha) for n > {EM_CHAIN_MAX_N}",
                          "not in G-S", _counts(large), len(refuted) > 0,
                          "exact: T = EM_beta EM_alpha^-1 has a negative entry (close pairs)"))
    for m in ("WM", "WH"):
        g = _rows(table, [m], "forward")
        if len(g):
            failing = g[~g.derivable]
            where = "; not at " + ", ".join(f"n={r.n} {r.alpha}->{r.beta}" for r in failing.itertuples()) \
                if len(failing) else ""
            rows.append(check("G-S Sec 4.1", f"{m}(n,beta) (our LP design) from {m}(n,alpha): every verdict "
                              "certain (the LP's bounds separate derivable from not)", "not in G-S", _counts(g) + where,
                              bool(g.certain.all()),
                              "about the design the solver returns; another optimal design might be derivable"))
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


__all__ = ["DEFAULT_LEVEL_ALPHAS", "DEFAULT_LEVEL_NS", "EM_CHAIN_MAX_N", "EXACT_FORMS", "LEVEL_MECHANISMS",
           "levels_checks", "levels_summary", "levels_table"]
