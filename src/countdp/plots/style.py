"""One colour and marker per mechanism, shared by every figure of the project."""

from __future__ import annotations

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
