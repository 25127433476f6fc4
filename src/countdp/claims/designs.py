"""The designed mechanisms the theory claims read, as artifact keys (standard library only).

:mod:`countdp.claims.table` checks Theorems 1, 3 and 4, the Gupte–Sundararajan derivability,
L0(GM) ≤ L0(WM) ≤ L0(EM), the DP certificates and the α of Figure 1 on LP optima and named
mechanisms at the fixed (n, α) below.  The workflow designs each of them once, in the design
sweeps, as ``results/mechanisms/{mechanism}/{objective}/n={n}/alpha={alpha}.json``, and the
claims job reads those artifacts instead of solving the LPs again.  The workflow imports this
module while it parses the Snakefile, so it stays free of numpy.
"""

from __future__ import annotations

THEOREM_3 = ((1, 2, 3, 5, 8, 12), (0.3, 0.62, 0.91))
"""(n values, α values): the BasicDP L0 optimum is GM."""
THEOREM_4 = ((1, 2, 3, 4, 7, 10), (0.4, 0.76, 0.91))
"""(n values, α values): the fair L0 optimum has EM's value."""
THEOREM_1_CASES = ((5, 0.62, "L1"), (7, 0.62, "L1"), (5, 0.62, "L0d:1"), (6, 0.8, "L2"), (4, 0.91, "L0"))
"""(n, α, objective) of the LP optima symmetrised for Theorem 1 ..."""
THEOREM_1_PROPERTIES = ((), ("RH",), ("RM", "CH"))
"""... each designed with these property sets."""
GS_NS, GS_ALPHAS = tuple(range(2, 13)), (0.3, 0.5, 0.62, 0.76, 0.91, 0.99)
"""WM (and EM, GM) tested for derivability from GM."""
WM_BETWEEN = ((2, 0.91), (4, 0.91), (8, 0.67), (12, 0.9), (20, 10 / 11), (30, 0.99))
"""(n, α) where L0(GM) ≤ L0(WM) ≤ L0(EM) is checked."""
CERTIFIED_MECHANISMS = ("GM", "EM", "UM", "WM", "WH")
"""Named mechanisms whose DP certificate is re-checked, at every n and α below."""
CERTIFIED_NS, CERTIFIED_ALPHAS = (1, 2, 7, 8, 20), (0.5, 0.91, 0.99)
FIGURE_1_ALPHAS = (0.6, 0.62, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.91, 0.95)
"""α scanned for Figure 1's quoted numbers (unconstrained L1 optimum at n = 7, L0,1 optimum at n = 5)."""
FIGURE_1_CASES = ((7, "L1", (2, 5)), (5, "L0d:1", (1, 4)))
"""(n, objective, outputs whose mass the text quotes)."""


def _lp(properties: tuple[str, ...]) -> str:
    return "LP-" + ("+".join(properties) or "none")  # THEOREM_1_PROPERTIES are in canonical order


def theory_designs() -> list[tuple[str, str, int, float]]:
    """Every (mechanism, objective, n, α) the theory claims design, sorted, without repeats.

    ``mechanism`` is the artifact name (GM, EM, UM, WM, WH, ``LP-{props}``) and ``objective``
    the config spelling (``"L0d:1"``).
    """
    keys = {("LP-none", "L0", n, a) for n in THEOREM_3[0] for a in THEOREM_3[1]}
    keys |= {("LP-F", "L0", n, a) for n in THEOREM_4[0] for a in THEOREM_4[1]}
    keys |= {(_lp(props), obj, n, a) for n, a, obj in THEOREM_1_CASES for props in THEOREM_1_PROPERTIES}
    keys |= {("WM", "L0", n, a) for n in GS_NS for a in GS_ALPHAS}
    keys |= {("WM", "L0", n, a) for n, a in WM_BETWEEN}
    keys |= {(m, "L0", n, a) for m in CERTIFIED_MECHANISMS for n in CERTIFIED_NS for a in CERTIFIED_ALPHAS}
    keys |= {("LP-none", obj, n, a) for n, obj, _ in FIGURE_1_CASES for a in FIGURE_1_ALPHAS}
    return sorted(keys)
