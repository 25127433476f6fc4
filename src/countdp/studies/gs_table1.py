"""G-S's Table 1, every printed number recomputed from its definition.

Table 1 of Gupte and Sundararajan shows, for ``n = 3``, ``alpha = 1/4``, the loss
``l(i, r) = |i - r|`` and side information ``S = {0, 1, 2, 3}``: (a) the consumer's optimal
alpha-DP mechanism (the LP of their Section 2.5), (b) the geometric mechanism ``G_{3,1/4}``
(Definition 4) and (c) the consumer's optimal interaction with it (Section 2.4.3), so that
(a) = (b) (c).  The paper's matrices are indexed ``[input i][output r]`` (and (c) ``[released
r][answer r']``); countdp's are ``[output, input]``, so the comparison transposes.

Every value here is exact: both LPs are solved by :mod:`countdp.consumers.remap`, their answers
turned into small-denominator rationals and certified optimal in exact arithmetic (primal value
equals dual bound, both Fractions; :mod:`countdp.consumers.certificates`); GM is Definition 4
evaluated in Fractions and cross-checked against :func:`countdp.mechanisms.closed_forms.geometric`.
Whether a printed number is *right* is decided exactly; a printed number that is not is
classified: ``convention`` (equal after a stated rescaling), ``rounded`` (a continued-fraction
convergent of the right value, i.e. a low-denominator approximation of it) or ``misprint``.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import numpy as np
import pandas as pd

from countdp.consumers.certificates import exact_private_certificate, exact_remap_certificate, integer_matrix
from countdp.consumers.losses import loss_matrix
from countdp.consumers.remap import optimal_face_ranges, optimal_private_mechanism, optimal_remap
from countdp.mechanisms.closed_forms import geometric
from countdp.multilevel.exact_forms import gm_exact
from countdp.studies.checks import CHECK_COLUMNS, check_row

N_PAPER, ALPHA_PAPER, LOSS_PAPER = 3, Fraction(1, 4), "L1"
"""Table 1's consumer: n = 3, alpha = 1/4, l(i, r) = |i - r|, S = {0, 1, 2, 3}."""
MAX_DENOMINATOR = 10_000
"""Solver floats are rationalised with denominators up to this before the exact certificates."""
UNIQUE_TOL = 1e-6
"""The optimum counts as unique when every entry's range over the optimal face is below this."""


def _fractions(rows: list[list[str]]) -> np.ndarray:
    return np.array([[Fraction(v) for v in row] for row in rows], dtype=object)


PRINTED = {
    "(a)": _fractions([["2/3", "5/17", "1/25", "1/98"], ["1/6", "7/11", "7/44", "2/49"],
                       ["2/49", "7/44", "7/11", "1/6"], ["1/98", "1/25", "5/17", "2/3"]]),
    "(b)": _fractions([["4/3", "1/4", "1/16", "1/48"], ["1/3", "1", "1/4", "1/12"],
                       ["1/12", "1/4", "1", "1/3"], ["1/48", "1/16", "1/4", "4/3"]]),
    "(c)": _fractions([["9/11", "2/11", "0", "0"], ["0", "1", "0", "0"],
                       ["0", "0", "1", "0"], ["0", "0", "2/11", "9/11"]]),
}
"""Table 1 as printed, in the paper's orientation: (a), (b) ``[i][r]``; (c) ``[r][r']``."""
TITLES = {"(a)": "optimal mechanism", "(b)": "G_{3,1/4}", "(c)": "consumer interaction"}
TABLE_COLUMNS = ("matrix", "row", "column", "paper_value", "our_value", "match", "kind", "evidence")


def convergents(x: Fraction) -> list[Fraction]:
    """The continued-fraction convergents of ``x`` (the best rational approximations of each size)."""
    out, (h0, h1, k0, k1) = [], (0, 1, 1, 0)
    p, q = x.numerator, x.denominator
    while q:
        a = p // q
        p, q = q, p - a * q
        h0, h1, k0, k1 = h1, a * h1 + h0, k1, a * k1 + k0
        out.append(Fraction(h1, k1))
    return out


def table1_values() -> dict:
    """The exact objects behind Table 1: GM, the optimal mechanism and remap, their certificates."""
    n, alpha = N_PAPER, ALPHA_PAPER
    L = loss_matrix(LOSS_PAPER, n)
    G = gm_exact(n, alpha)  # G-S Definition 4, in Fractions
    float_error = float(np.max(np.abs(G.astype(float) - geometric(n, float(alpha)))))
    own = optimal_private_mechanism(n, alpha, L)
    own_exact, X = exact_private_certificate(alpha, L, np.arange(n + 1), own.matrix, own.prior, own.up, own.down,
                                             0.0, MAX_DENOMINATOR)
    remap = optimal_remap(G.astype(float), L)
    G_int, G_den = integer_matrix(G)
    remap_exact, _, R = exact_remap_certificate(G_int, G_den, L, remap.side, remap.remap, remap.prior, 0.0,
                                                MAX_DENOMINATOR)
    low, high = optimal_face_ranges(n, alpha, L)
    return {"G": G, "X": X, "R": R, "own": own_exact, "remap": remap_exact, "float_error": float_error,
            "face_width": float(np.max(high - low)), "loss": L}


def _worst(M: np.ndarray, L: np.ndarray) -> Fraction:
    """Exact worst-case L1 loss of ``M[output, input]`` over every input."""
    N = M.shape[0]
    return max(sum(int(L[i, r]) * M[r, i] for r in range(N)) for i in range(N))


def _classify(printed: Fraction, right: Fraction, scale: Fraction, name: str) -> tuple[bool, str, str]:
    """``(match, kind, evidence)`` for one printed number against its right value."""
    if printed == right:
        return True, "equal", ""
    if name == "(b)" and printed == right * scale:
        return False, "convention", (f"printed {printed} = (1+alpha)/(1-alpha) x {right} = {scale} x G: the "
                                     "bracketed matrix of Table 2 without its prefactor (1-alpha)/(1+alpha)")
    if printed in convergents(right):
        return False, "rounded", (f"should be {right} = {float(right):.6f}; printed {printed} = {float(printed):.6f} "
                                  "is a continued-fraction convergent of it (a low-denominator approximation)")
    return False, "misprint", f"should be {right} = {float(right):.6f}; printed {printed} = {float(printed):.6f}"


def table1_table(values: dict | None = None) -> pd.DataFrame:
    """One row per printed number: its right value (exact) and the verdict (:data:`TABLE_COLUMNS`)."""
    v = table1_values() if values is None else values
    right = {"(a)": v["X"].T, "(b)": v["G"].T, "(c)": v["R"].T}  # to the paper's orientation
    scale = (1 + ALPHA_PAPER) / (1 - ALPHA_PAPER)
    rows = []
    for name, printed in PRINTED.items():
        for i, j in product(range(printed.shape[0]), range(printed.shape[1])):
            match, kind, evidence = _classify(printed[i, j], right[name][i, j], scale, name)
            rows.append({"matrix": f"{name} {TITLES[name]}", "row": i, "column": j, "paper_value": str(printed[i, j]),
                         "our_value": str(right[name][i, j]), "match": match, "kind": kind, "evidence": evidence})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def mismatches(table: pd.DataFrame) -> pd.DataFrame:
    """Every printed number that is not literally its right value, with the evidence."""
    return table[~table["match"]].reset_index(drop=True)


def _row_text(values) -> str:
    return ", ".join(str(v) for v in values)


def _row_checks(values: dict) -> list[dict]:
    """One check per printed matrix row: (b) against 5/3 G (its convention), (a) and (c) exactly."""
    right = {"(a)": values["X"].T, "(b)": values["G"].T * (1 + ALPHA_PAPER) / (1 - ALPHA_PAPER), "(c)": values["R"].T}
    notes = {"(a)": "printed entries are continued-fraction convergents of the exact optimum (see mismatches)",
             "(b)": "(b) prints (1+alpha)/(1-alpha) G = 5/3 G, whose rows sum to 5/3",
             "(c)": "printed entries are continued-fraction convergents of the exact optimal remap"}
    checks = []
    for name, printed in PRINTED.items():
        what = "5/3 x G_{3,1/4}" if name == "(b)" else f"the exact {TITLES[name]}"
        for i in range(printed.shape[0]):
            holds = all(printed[i, j] == right[name][i, j] for j in range(printed.shape[1]))
            checks.append(check_row("G-S Table 1", f"{name} row {i} = row {i} of {what}", _row_text(printed[i]),
                                    _row_text(right[name][i]), holds, "" if holds else notes[name]))
    return checks


def _deterministic_best(values: dict) -> Fraction:
    """The best worst-case loss over all ``4**4`` deterministic remaps of GM (exact integers)."""
    G_int, den = integer_matrix(values["G"])
    L = values["loss"].astype(np.int64)
    N = L.shape[0]
    maps = np.array(list(product(range(N), repeat=N)))  # [m, r] = answer given release r
    per_input = (L[:, maps] * G_int.T.astype(np.int64)[:, None, :]).sum(axis=2)  # [i, m]
    return Fraction(int(per_input.max(axis=0).min()), den)


def table1_checks(values: dict | None = None) -> pd.DataFrame:
    """The printed claims about Table 1, and one check per printed row."""
    v = table1_values() if values is None else values
    own, remap, X, R, G = v["own"], v["remap"], v["X"], v["R"], v["G"]
    printed_c = PRINTED["(c)"].T  # countdp orientation R[r', r]
    printed_value = _worst(printed_c.dot(G), v["loss"])
    deterministic = _deterministic_best(v)
    row_sums = [sum(row) for row in PRINTED["(a)"]]
    checks = [
        check_row("G-S Table 1", "the optimal value (not printed), certified exactly", "-",
                  f"{own.primal} = {float(own.primal):.6f} (exact dual bound {own.dual})",
                  own.primal == own.dual, "exact primal and dual of the rationalised LP answer"),
        check_row("G-S Table 1", "Theorem 1: GM + optimal interaction attains the optimum", str(own.primal),
                  f"{remap.primal} (exact dual bound {remap.dual})", remap.primal == remap.dual == own.primal),
        check_row("G-S Table 1", "(a) = (b) (c): the optimum factors through GM", "(a) = (b) (c)",
                  "exact optimum = G_{3,1/4} x exact remap" if np.all(R.dot(G) == X) else "differs",
                  bool(np.all(R.dot(G) == X)), "on the exact values; the printed ones do not factor exactly"),
        check_row("G-S Table 1", "the optimum is unique, so every printed entry has one right value", "-",
                  f"largest entry range over the optimal face {v['face_width']:.1e}", v["face_width"] <= UNIQUE_TOL,
                  "G is invertible, so the optimal remap is unique too"),
        check_row("G-S Table 1", "(a) is a mechanism: each input's row sums to 1", "1",
                  _row_text(f"{float(s):.4f}" for s in row_sums), all(s == 1 for s in row_sums),
                  "the printed rounding breaks the sums"),
        check_row("G-S Table 1", "(c) as printed is an optimal interaction with (b)", str(own.primal),
                  f"{printed_value} = {float(printed_value):.6f}", printed_value == own.primal,
                  f"the printed remap loses {float(printed_value - own.primal):.2e} more than the optimum"),
        check_row("G-S Sec 2.7", "minimax consumers need randomized post-processing ('see Table 1')",
                  "randomized", f"best of {4**4} deterministic remaps: {deterministic} = {float(deterministic):.6f}",
                  deterministic > own.primal, f"optimum {own.primal} needs the randomized remap"),
        check_row("G-S Table 1", "Definition 4 in Fractions = closed_forms.geometric", "-",
                  f"max |difference| {v['float_error']:.1e}", v["float_error"] <= 1e-15),
    ]
    return pd.DataFrame(checks + _row_checks(v), columns=CHECK_COLUMNS)


def gs_table1_study() -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(table, checks)``: every printed number with its verdict, and the check rows."""
    values = table1_values()
    return table1_table(values), table1_checks(values)


__all__ = ["ALPHA_PAPER", "LOSS_PAPER", "N_PAPER", "PRINTED", "TABLE_COLUMNS", "convergents",
           "gs_table1_study", "mismatches", "table1_checks", "table1_table", "table1_values"]
