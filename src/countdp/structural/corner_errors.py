"""The exact expected errors of a square-corner structure, without its matrix.

Input ``j`` of size ``n`` (:mod:`countdp.structural.corners`) reads, with ``jj = min(j, n - j)`` (a
column past the middle is the mirror image of column ``n - j``, and a loss of ``|out - j|`` does not
see the mirror), a structured part made of short integer tables, plus its own floor
``f_j + [i < r_j]`` on rows ``0..n`` (not mirrored: it is the rows' floor), where
``(f_j, r_j) = divmod(D - total(jj), n + 1)``.  Its loss numerators (over ``D``) are the structured
part's plus the floor's, each exact:

* **The strips.**  The top strip's column ``jj`` sits on rows ``0..W`` with its diagonal at row
  ``jj``; the bottom strip's column ``c = n - jj`` sits on rows ``n - s`` (``s = 0..W``), at distance
  ``|c - s|`` from ``jj``: the same reading of strip column ``c``.  So one table over the strip's
  ``width`` columns (the weight within ``d`` of the diagonal, from the strip's cumulative columns,
  or ``sum_s (s - c)^2 strip[s, c]``), read at ``jj`` and at ``n - jj`` (zero past the strip).
* **Below a square** (``jj <= W``): the column's tail on rows ``W + 1 .. W + t``,
  ``t = min(L, n - 2W - 1)``, at distances ``W - jj + u``: a table over the ``W + 1`` columns.
* **The band** (``jj > W``): ``g[0]`` on the diagonal, ``g[1..]`` up to row ``W + 1`` and down to row
  ``n - W - 1``: prefix sums of ``g`` (or of ``e^2 g[e]``) read at the two clipped distances.
* **The floor**: the closed forms of :mod:`countdp.structural.power_sums`.

Every input's structured part and total therefore depend on ``jj`` only through ``min(jj, width)``
(past ``width = W + 1 + L`` from both corners nothing changes: no strip, both band sides whole),
so the tables are built for ``jj = 0..min(n // 2, width)``, in O(W (width + L)) exact work.

:func:`corner_loss_numerators` reads them for all ``n + 1`` inputs in one vectorised pass: the
weight within ``d`` of the diagonal is exact int64 (every column total is at most ``D = 2^K`` with
``K <= 62``, the tables being int64); the squared error passes ``2^63`` and is formed in Python
integers, the deep middle (one floor) as one quadratic in ``j`` by Horner's rule.

:func:`corner_errors` needs no per-input pass at all: inputs within ``width`` of an end are
evaluated one vector at a time, and the middle inputs ``width .. n - width`` share one structured
value and one floor, so their L0 and L0,1 numerators are constant between the points where the
floor's extra rows ``[i < r]`` stop reaching the diagonal (a few runs), and their squared error is
the constant plus the floor's, which is convex in ``j``: its sum is a closed form and its largest
value is at one of the middle's two ends (:mod:`countdp.structural.spread_errors` argues the same).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.privacy.expected_error import ReleaseErrors
from countdp.structural.corners import StructuralCorners
from countdp.structural.power_sums import floor_band, floor_squares, floor_squares_total
from countdp.structural.spread_errors import checked_kind

MEASURES = (("L0", 0), ("L0d", 1), ("L2", 0))
"""The losses of :class:`~countdp.privacy.expected_error.ReleaseErrors`, in its order: L0, L0,1, MSE."""


# -- the structured part, per distance jj = min(j, n - j) from the nearer end ------------------------
def _near_table(form: StructuralCorners, d: int, jj: np.ndarray) -> np.ndarray:
    """The structured weight within ``d`` of the diagonal for each ``jj`` (int64, exact: at most ``D``)."""
    n, W, L, width = form.n, form.W, form.L, form.width
    c = np.arange(width, dtype=np.int64)
    lo, hi = np.maximum(c - d, 0), np.minimum(c + d, W)  # strip rows within d of row c
    upto = form.stripcum[c, np.clip(hi, 0, W)]
    before = np.where(lo > 0, form.stripcum[c, np.clip(lo - 1, 0, W)], 0)
    strip = np.append(np.where(lo <= hi, upto - before, 0), 0)  # entry `width`: past the strip
    value = strip[np.minimum(jj, width)] + strip[np.minimum(n - jj, width)]
    t = min(L, n - 2 * W - 1)
    k = np.arange(W + 1, dtype=np.int64)
    rows = np.clip(np.minimum(t, d + k - W), 0, t)  # tail rows W + u with W + u - k <= d
    corner = np.where(rows > 0, form.lowercum[k, np.maximum(rows - 1, 0)], 0)
    band = (form.band[0] + form.gup[np.clip(np.minimum(d, jj - W - 1), 0, L)]
            + form.gup[np.clip(np.minimum(d, n - W - 1 - jj), 0, L)])
    return value + np.where(jj <= W, corner[np.minimum(jj, W)], band)


def _squares_table(form: StructuralCorners, jj: np.ndarray) -> np.ndarray:
    """The structured ``sum_i (i - jj)^2 s(i, jj)`` for each ``jj`` (Python integers: it passes ``2^63``).

    Each table's weighted sums ``sum x^p w[x]`` (``p = 0, 1, 2``) are exact object products, and the
    squared distance ``(x - c)^2`` is expanded over them."""
    n, W, L, width = form.n, form.W, form.L, form.width
    strip = form.strip.astype(object)
    s = np.arange(W + 1, dtype=np.int64).astype(object)
    c = np.arange(width, dtype=np.int64).astype(object)
    rows = (strip.sum(axis=0), s @ strip, (s * s) @ strip)
    table = np.append(rows[2] - 2 * c * rows[1] + c * c * rows[0], 0)  # entry `width`: past the strip
    value = table[np.minimum(jj, width)] + table[np.minimum(n - jj, width)]
    t = min(L, n - 2 * W - 1)
    tail = form.lower[:max(t, 0)].astype(object)
    u = np.arange(1, max(t, 0) + 1, dtype=np.int64).astype(object)
    h = W - np.arange(W + 1, dtype=np.int64).astype(object)  # the tail's first row's distance, less one
    corner = h * h * tail.sum(axis=0) + 2 * h * (u @ tail) + (u * u) @ tail
    e = np.arange(L + 1, dtype=np.int64).astype(object)
    moments = np.cumsum(e * e * form.band.astype(object))  # sum_{e' <= e} e'^2 g[e']
    band = moments[np.clip(jj - W - 1, 0, L)] + moments[np.clip(n - W - 1 - jj, 0, L)]
    return value + np.where(jj <= W, corner[np.minimum(jj, W)], band)


def _profile(form: StructuralCorners, kind: str, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(structured, f, r, top)``: the structured numerator part and the floor of every ``jj = 0..top``,
    ``top = min(n // 2, width)``; input ``j`` reads entry ``min(min(j, n - j), top)``."""
    n = form.n
    top = min(n // 2, form.width)
    jj = np.arange(top + 1, dtype=np.int64)
    structured = _squares_table(form, jj) if kind == "L2" else _near_table(form, d, jj)
    f, r = np.divmod(form.denominator - form.totals(jj, n), n + 1)
    return structured, f, r, top


def _at(form: StructuralCorners, profile: tuple, kind: str, d: int, j: np.ndarray) -> np.ndarray:
    """The numerators of inputs ``j`` (int64 array): int64 for L0 and L0d, Python integers for L2."""
    structured, f, r, top = profile
    n = form.n
    index = np.minimum(np.minimum(j, n - j), top)
    if kind == "L2":
        return structured[index] + floor_squares(j.astype(object), n, f[index].astype(object),
                                                 r[index].astype(object))
    return form.denominator - structured[index] - floor_band(j, d, n, f[index], r[index])


def _middle(form: StructuralCorners) -> tuple[int, int]:
    """The inputs ``width .. n - width``: one structured value and one floor (empty when ``a > b``)."""
    return form.width, form.n - form.width


def _ends(form: StructuralCorners) -> np.ndarray:
    """The inputs outside the middle (all of them when the middle is empty), in order."""
    a, b = _middle(form)
    N = form.n + 1
    return np.concatenate([np.arange(0, min(a, N)), np.arange(max(b + 1, a), N)]).astype(np.int64)


def _numerators(form: StructuralCorners, kind: str, d: int) -> np.ndarray:
    """Every input's numerator: int64 for L0 and L0d (one vectorised pass), Python integers for L2."""
    profile = _profile(form, kind, d)
    if kind != "L2":
        return _at(form, profile, kind, d, np.arange(form.n + 1, dtype=np.int64))
    out = np.empty(form.n + 1, dtype=object)
    ends = _ends(form)
    out[ends] = _at(form, profile, kind, d, ends)
    a, b = _middle(form)
    if a <= b:
        structured, f, r, top = profile
        middle = np.arange(a, b + 1, dtype=np.int64).astype(object)
        out[a:b + 1] = floor_squares(middle, form.n, int(f[top]), int(r[top])) + structured[top]
    return out


def corner_loss_numerators(form: StructuralCorners, kind: str, d: int = 0) -> np.ndarray:
    """Every input's exact expected loss times ``D`` (an object array of Python integers, ``j = 0..n``).

    ``kind`` is one of :data:`~countdp.structural.spread_errors.LOSS_KINDS`: ``D - sum_{|i-j|<=d} W[i, j]``
    (L0: ``d = 0``) or ``sum_i (i - j)**2 W[i, j]`` (L2), ``W`` the size-``n`` weights (module docstring).
    O(n) vectorised work plus O(W (width + L)) for the tables.
    """
    d = checked_kind(kind, d)  # unused by L2
    return _numerators(form, kind, d).astype(object)


def corner_losses(form: StructuralCorners, kind: str, d: int = 0) -> np.ndarray:
    """Every input's expected loss ``E[loss(out - j) | j]``, ``j = 0..n``, in float: the exact numerators of
    :func:`corner_loss_numerators` over ``D``, each rounded once.  Below ``2^63`` (L0, L0d) the int64
    numerator's conversion to float is that rounding (``D`` is a power of two); the squared error's Python
    integers are divided as Python's ``int / int``, which is correctly rounded."""
    d = checked_kind(kind, d)  # unused by L2
    numerators = _numerators(form, kind, d)
    if kind == "L2":
        return (numerators / form.denominator).astype(float)
    return numerators.astype(float) / float(form.denominator)


def _middle_runs(form: StructuralCorners, profile: tuple, kind: str, d: int) -> tuple[int, list[tuple[int, int]]]:
    """The middle inputs' total numerator and their candidates ``(input, value)`` for the worst.

    L0, L0d: the numerator is ``D - structured - f (2d + 1) - (rows of 0..r-1 within d)``, constant but
    where ``j`` passes ``r - d .. r + d`` (a run starts at each); its first input is the run's smallest.
    L2: the constant plus the floor's convex squared error, largest at an end (module docstring)."""
    a, b = _middle(form)
    structured, f, r, top = profile
    if kind == "L2":
        total = (b - a + 1) * int(structured[top]) + floor_squares_total(a, b, form.n, int(f[top]), int(r[top]))
        ends = np.array([a, b], dtype=np.int64)
        return total, list(zip(ends.tolist(), _at(form, profile, kind, d, ends).tolist(), strict=True))
    cuts = sorted({a, b + 1} | {x for x in range(int(r[top]) - d, int(r[top]) + d + 1) if a < x <= b})
    starts = np.array(cuts[:-1], dtype=np.int64)
    values = [int(v) for v in _at(form, profile, kind, d, starts)]
    total = sum(v * (stop - start) for v, start, stop in zip(values, cuts[:-1], cuts[1:], strict=True))
    return total, list(zip(cuts[:-1], values, strict=True))


def corner_errors(form: StructuralCorners) -> ReleaseErrors:
    """L0, L0,1 and MSE (uniform prior and the worst input, its smallest) of ``form`` at its size, exactly.

    The ends' inputs one vector at a time, the middle by runs and closed forms (module docstring):
    O(W (width + L)) exact work whatever ``n``."""
    n, D = form.n, form.denominator
    a, b = _middle(form)
    ends = _ends(form)
    parts = []
    for kind, d in MEASURES:
        profile = _profile(form, kind, d)
        values = [int(v) for v in _at(form, profile, kind, d, ends)]
        candidates = list(zip(ends.tolist(), values, strict=True))
        total = sum(values)
        if a <= b:
            middle_total, middle_candidates = _middle_runs(form, profile, kind, d)
            total += middle_total
            candidates += middle_candidates
        worst = max(v for _, v in candidates)
        first = min(j for j, v in candidates if v == worst)
        parts += [Fraction(total, (n + 1) * D), Fraction(worst, D), first]
    return ReleaseErrors(n, *parts)


__all__ = ["MEASURES", "corner_errors", "corner_loss_numerators", "corner_losses"]
