"""The exact expected errors of a spread (template) structure, without its matrix.

Input ``j`` of size ``n`` reads canonical column ``k`` at a row shift, with column ``k``'s floor
``f_k + [i < r_k]`` (:mod:`countdp.structural.spread`).  Its numerators (over ``D``) are:

* L0: ``D - W[j, j]``; L0,1: ``D - W[j-1, j] - W[j, j] - W[j+1, j]``;
* MSE: ``B(k) + A_k(j)``, with ``B(k) = sum_t (t - k)^2 S[t, k]`` (the shift cancels: every input
  reads its own column's diagonal at its own row) and the floor's
  ``A_k(j) = f_k (T(j) + T(n - j)) + sum_{i < r_k} (i - j)^2``, ``T(x) = x(x+1)(2x+1)/6``.

The corner inputs (``j <= c`` and ``j >= n - c``, at most ``m + 1`` of them) are computed one by
one.  The middle inputs all read column ``c``: their L0 and L0,1 numerators change only where
``[i < r_c]`` does (at most four runs), and their MSE is ``B(c)`` plus ``A_c``, which is convex in
``j``: its sum over the middle is a sum of powers (closed forms) and its largest value is at one of
the middle's two ends.  Everything is exact (Python integers), in O(m^2 + runs) work whatever ``n``.
The floor's closed forms come from :mod:`countdp.structural.power_sums`.

:func:`spread_losses` gives what the evaluation of Figures 9-13 needs instead: every input's own
expected loss (L0, L0,d or the squared error), a vector of ``n + 1``.  Its exact numerators
(:func:`spread_loss_numerators`) are formed for all inputs at once: the structured weight within
``d`` of the diagonal is a difference of two prefix sums of the input's canonical column (read at
indices clipped to ``0..m + 1``), the squared error is ``B(k)`` indexed by column, and the floor's
parts are closed forms, so the work is O(m^2 + n) whatever the column's shift.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.privacy.expected_error import ReleaseErrors, squared_error_sums
from countdp.structural.power_sums import floor_band, floor_squares, floor_squares_total
from countdp.structural.spread import StructuralSpread

LOSS_KINDS = ("L0", "L0d", "L2")
"""The per-input losses :func:`spread_losses` gives: ``[out != j]``, ``[|out - j| > d]``, ``(out - j)**2``."""


def spread_errors(form: StructuralSpread) -> ReleaseErrors:
    """L0, L0,1 and MSE (uniform prior and the worst input, its smallest) of ``form`` at its size."""
    n, c, D = form.n, form.c, form.denominator
    N = n + 1
    B = [int(x) for x in squared_error_sums(form.S)]
    corners = [j for j in range(0, c + 1)] + [j for j in range(n - c, n + 1)]
    middle = (c + 1, n - c - 1)  # may be empty (a > b) at n = m
    parts = []
    for measure in ("L0", "L01", "MSE"):
        values = [(j, _numerator(form, measure, j, B)) for j in corners]
        total = sum(v for _, v in values)
        candidates = list(values)
        if middle[0] <= middle[1]:
            m_total, m_candidates = _middle(form, measure, middle, B)
            total += m_total
            candidates += m_candidates
        worst = max(v for _, v in candidates)
        first = min(j for j, v in candidates if v == worst)
        parts += [Fraction(total, N * D), Fraction(worst, D), first]
    return ReleaseErrors(n, *parts)


def _floor(form: StructuralSpread, k: int) -> tuple[int, int]:
    return divmod(int(form.reserve) + int(form.delta[k]), form.n + 1)


def _weight(form: StructuralSpread, i: int, j: int) -> int:
    """``W[i, j]`` of the size-``n`` mechanism (0 for a row outside ``0..n``)."""
    if not 0 <= i <= form.n:
        return 0
    k, shift = (int(x) for x in form.placement(np.array(j), form.n))
    f, r = _floor(form, k)
    t = i - shift
    return (int(form.S[t, k]) if 0 <= t <= form.m else 0) + f + (i < r)


def _numerator(form: StructuralSpread, measure: str, j: int, B: list[int]) -> int:
    D = form.denominator
    if measure == "L0":
        return D - _weight(form, j, j)
    if measure == "L01":
        return D - _weight(form, j - 1, j) - _weight(form, j, j) - _weight(form, j + 1, j)
    k, _ = (int(x) for x in form.placement(np.array(j), form.n))
    f, r = _floor(form, k)
    return B[k] + floor_squares(j, form.n, f, r)


def _middle(form: StructuralSpread, measure: str, span: tuple[int, int], B: list[int]) -> tuple[int, list]:
    """The middle inputs' total numerator and their candidates for the worst (input, value)."""
    a, b = span
    n, c = form.n, form.c
    f, r = _floor(form, c)
    if measure != "MSE":  # constant between the points where [j - 1 < r], [j < r] or [j + 1 < r] change
        cuts = sorted({a, b + 1} | {x for x in (r - 1, r, r + 1) if a < x <= b})
        total, candidates = 0, []
        for start, stop in zip(cuts[:-1], cuts[1:], strict=True):
            value = _numerator(form, measure, start, B)
            total += value * (stop - start)
            candidates.append((start, value))
        return total, candidates
    total = (b - a + 1) * B[c] + floor_squares_total(a, b, n, f, r)
    return total, [(a, _numerator(form, "MSE", a, B)), (b, _numerator(form, "MSE", b, B))]


def checked_kind(kind: str, d: int) -> int:
    """The band's half-width for a loss ``kind`` of :data:`LOSS_KINDS` (0 for L0), after checking both."""
    if kind not in LOSS_KINDS:
        raise ValueError(f"loss kind must be one of {LOSS_KINDS}, got {kind!r}")
    d = 0 if kind == "L0" else int(d)
    if d < 0:
        raise ValueError(f"the band's half-width d must be >= 0, got {d}")
    return d


def spread_loss_numerators(form: StructuralSpread, kind: str, d: int = 0) -> np.ndarray:
    """Every input's exact expected loss times ``D`` (an object array of Python integers, ``j = 0..n``).

    ``kind`` is one of :data:`LOSS_KINDS`: ``D - sum_{|i-j|<=d} W[i, j]`` (L0: ``d = 0``) or
    ``sum_i (i - j)**2 W[i, j]`` (L2), with ``W`` the size-``n`` weights (module docstring).
    Python integers because the squared error passes ``2**63`` (``D`` times ``n**2``).
    """
    d = checked_kind(kind, d)
    n, m = form.n, form.m
    j = np.arange(n + 1, dtype=np.int64)
    k, shift = form.placement(j, n)
    floors = np.array([_floor(form, col) for col in range(m + 1)], dtype=object)  # (f, r) per canonical column
    f, r = floors[k, 0], floors[k, 1]
    if kind == "L2":  # the shift cancels: every input reads its own column's diagonal at its own row
        B = squared_error_sums(form.S)
        return B[k] + floor_squares(j.astype(object), n, f, r)
    prefix = np.zeros((m + 2, m + 1), dtype=object)  # prefix[t, col] = sum of S[:t, col], exactly
    prefix[1:] = np.cumsum(form.S.astype(object), axis=0)
    low = np.clip(np.maximum(j - d, 0) - shift, 0, m + 1)  # the band's rows, in the column's own rows
    high = np.clip(np.minimum(j + d, n) - shift + 1, 0, m + 1)
    return form.denominator - (prefix[high, k] - prefix[low, k]) - floor_band(j, d, n, f, r)


def spread_losses(form: StructuralSpread, kind: str, d: int = 0) -> np.ndarray:
    """Every input's expected loss ``E[loss(out - j) | j]``, ``j = 0..n``, in float: the exact numerators of
    :func:`spread_loss_numerators` over ``D``, each rounded once (Python's int / int is correctly rounded)."""
    return (spread_loss_numerators(form, kind, d) / form.denominator).astype(float)


__all__ = ["LOSS_KINDS", "checked_kind", "spread_errors", "spread_loss_numerators", "spread_losses"]
