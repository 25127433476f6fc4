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
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.privacy.expected_error import ReleaseErrors, squared_error_sums
from countdp.structural.spread import StructuralSpread


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


def _floor_squares(j: int, n: int, f: int, r: int) -> int:
    """``A(j) = f (T(j) + T(n - j)) + sum_{i<r} (i - j)^2``."""
    return f * (_T(j) + _T(n - j)) + r * j * j - j * r * (r - 1) + (r - 1) * r * (2 * r - 1) // 6


def _T(x: int) -> int:
    return x * (x + 1) * (2 * x + 1) // 6


def _numerator(form: StructuralSpread, measure: str, j: int, B: list[int]) -> int:
    D = form.denominator
    if measure == "L0":
        return D - _weight(form, j, j)
    if measure == "L01":
        return D - _weight(form, j - 1, j) - _weight(form, j, j) - _weight(form, j + 1, j)
    k, _ = (int(x) for x in form.placement(np.array(j), form.n))
    f, r = _floor(form, k)
    return B[k] + _floor_squares(j, form.n, f, r)


def _power_sum(p: int, a: int, b: int) -> int:
    """``sum_{j=a}^{b} j^p`` for ``p`` in 0..3 (0 when ``a > b``)."""
    def upto(x: int) -> int:
        if x < 0:
            return 0
        return [x + 1, x * (x + 1) // 2, x * (x + 1) * (2 * x + 1) // 6, (x * (x + 1) // 2) ** 2][p]
    return upto(b) - upto(a - 1) if a <= b else 0


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
    count = b - a + 1
    floor_sum = f * (_sum_T(a, b) + _sum_T(n - b, n - a))
    extra = r * _power_sum(2, a, b) - r * (r - 1) * _power_sum(1, a, b) + count * ((r - 1) * r * (2 * r - 1) // 6)
    total = count * B[c] + floor_sum + extra
    return total, [(a, _numerator(form, "MSE", a, B)), (b, _numerator(form, "MSE", b, B))]


def _sum_T(a: int, b: int) -> int:
    """``sum_{x=a}^{b} T(x)`` with ``T(x) = (2x^3 + 3x^2 + x) / 6``."""
    return (2 * _power_sum(3, a, b) + 3 * _power_sum(2, a, b) + _power_sum(1, a, b)) // 6


__all__ = ["spread_errors"]
