"""One colour, marker and legend label per mechanism, shared by every figure of the project."""

from __future__ import annotations

from collections.abc import Iterable

MECHANISM_ORDER = ("GM", "WM", "WH", "EM", "UM", "EXP", "CGM", "RR")

MECHANISM_COLORS = {
    "GM": "#d62728",  # red: the truncated geometric mechanism
    "WM": "#1f77b4",  # blue: LP with WH + RM + CM
    "WH": "#17becf",  # cyan: LP with weak honesty alone
    "EM": "#2ca02c",  # green: explicit fair mechanism
    "UM": "#7f7f7f",  # grey: uniform baseline
    "EXP": "#9467bd",  # purple: exponential mechanism, quality -|i-j|
    "CGM": "#ff7f0e",  # orange: geometric conditioned on [0, n]
    "RR": "#8c564b",  # brown: generalised randomized response
}

MECHANISM_MARKERS = {"GM": "o", "WM": "s", "WH": "D", "EM": "^", "UM": "x", "EXP": "v", "CGM": "P", "RR": "*"}

MECHANISM_LABELS = {
    "GM": "GM (geometric)",
    "WM": "WM (LP: WH+RM+CM)",
    "WH": "LP(WH alone)",
    "EM": "EM (explicit fair)",
    "UM": "UM (uniform)",
    "EXP": "Exponential mech.",
    "CGM": "Conditioned GM",
    "RR": "Randomized response",
}


def panel_label(k: int) -> str:
    """The label of a figure's ``k``-th panel (from 0), as the paper labels its sub-figures: ``(a)``,
    ``(b)``, ... ``(z)``, then ``(aa)``, ``(ab)``, ... (Figures 8, 9 and 10 have panels (a)-(c))."""
    letters = ""
    k = int(k) + 1
    while k > 0:
        k, r = divmod(k - 1, 26)
        letters = chr(ord("a") + r) + letters
    return f"({letters})"


def evaluated_label(mechanism: str, evaluated: Iterable[tuple[int, str]]) -> str:
    """``mechanism``'s legend label, saying where its points were evaluated as another mechanism.

    ``evaluated``: ``(n, evaluated_as)`` of the mechanism's plotted points (a large-n table's
    ``evaluated_as`` column: WH beyond the matrix path is GM, an optimal WH design where GM is weakly
    honest).  Points evaluated as the mechanism itself leave its label as :data:`MECHANISM_LABELS`
    has it; a stand-in whose sizes all lie above the mechanism's own adds ``"; GM beyond n = 256"``
    (the largest of its own sizes), or ``"; GM"`` when no point is its own, and otherwise lists the sizes.
    """
    label = MECHANISM_LABELS.get(mechanism, mechanism)
    points = sorted({(int(n), str(name)) for n, name in evaluated})
    own = [n for n, name in points if name == mechanism]
    for stand_in in sorted({name for _, name in points} - {mechanism}):
        sizes = [n for n, name in points if name == stand_in]
        if not own:
            label += f"; {stand_in}"
        elif min(sizes) > max(own):
            label += f"; {stand_in} beyond n = {max(own)}"
        else:
            label += f"; {stand_in} at n = {', '.join(str(n) for n in sizes)}"
    return label
