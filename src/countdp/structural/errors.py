"""The exact expected errors of releasing with a structural mechanism, without its matrix.

:func:`structural_errors` gives the numbers :func:`countdp.privacy.expected_error.release_errors`
gives for a dense released mechanism (``L0 = Pr[out != in]``, ``L0,1 = Pr[|out - in| > 1]``,
``MSE = E[(out - in)**2]``, under a uniform prior on the input and for the worst input, the
smallest one attaining it), for the distribution the structural sampler draws from:
``W[i, j] = s(i, j) + f + [i < r]`` over ``D = 2**K`` (:mod:`countdp.structural.form`).

Up to ``dense_max_n`` the weights are built and summed as a matrix (``squared_error_sums``).
Beyond, nothing of size ``n**2`` is built, and every returned value is still exact:

* **L0, L0,1.**  The entries ``W[j-1, j], W[j, j], W[j+1, j]`` are evaluated for all ``j`` at
  once from each structure's rule; each is at most ``D <= 2**62``, so the numerators
  ``D - W[j, j]`` and ``D - (three entries)`` are exact int64 vectors.
* **MSE.**  Input ``j``'s numerator ``S(j) = sum_i (i - j)**2 W[i, j]`` splits into the floor's
  part ``f Q(j) + sum_{i<r} (i - j)**2`` with ``Q(j) = T(j) + T(n - j)``, ``T(x) = x(x+1)(2x+1)/6``
  (closed forms), and the structured part, which is a short exact table read at one or two
  clipped indices per input:

  - GM releases ``clamp(j + Z, 0, n)``, so its part is ``F(min(j, L)) + F(min(n - j, L))`` with
    ``F(x) = sum_{z>=1} g(z) min(z, x)**2 = sum_{z<=x} z**2 g(z) + x**2 T_tail(x + 1)``
    (prefix sums over the tail table, ``L`` its length);
  - EM's part depends on ``m = min(j, n - j)`` only: exponent ``k <= m`` sits at distance ``k``
    on both sides, ``k > m`` at far-side distances ``2k - m - 1`` and ``2k - m`` (an odd n's last
    exponent ``(n+1)/2`` only at the first), so ``h(m) = 2 sum_{k<=m} k**2 g(k) +
    sum_{k>m} g(k) (8k**2 - (8m + 4) k + 2m**2 + 2m + 1)``, from prefix sums of ``g, k g, k**2 g``;
  - UM has none.

  The tables are Python integers (their entries pass ``2**63``).  The uniform total is exact:
  closed forms for the floor, and each table entry times the number of inputs that read it
  (``np.bincount``).  The worst input is found exactly by *screening*: ``S(j)`` is evaluated for
  all ``j`` in float64, whose error is below ``1e-14 (S(j) + 3 (n+1)**3)`` (sums of non-negative
  terms, plus one cancelling cubic of size ``<= 3 (n+1)**3``); every input within a margin
  ``1e-9 (max + 3 (n+1)**3)`` of the float maximum (a set that must contain the true maximum) is
  then evaluated in Python integers and the exact maximum taken.  So everything is O(n)
  vectorised int64/float64 work plus O(table + candidates) Python-integer work.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.privacy.expected_error import ReleaseErrors, squared_error_sums
from countdp.structural.chain import exact_sum
from countdp.structural.fair import StructuralEM, exponents
from countdp.structural.form import StructuralMechanism
from countdp.structural.geometric import StructuralGM
from countdp.structural.uniform import StructuralUM

DENSE_MAX_N = 4096
"""Default largest group size whose errors are computed from the dense weight matrix."""
_SCREEN = 1e-9
"""Relative margin of the float screen for the worst MSE input (orders of magnitude above float64's error)."""


def structural_errors(form: StructuralMechanism, n: int | None = None, *,
                      dense_max_n: int = DENSE_MAX_N) -> ReleaseErrors:
    """The exact L0, L0,1 and MSE (uniform and worst input) of releasing with ``form`` for groups of size ``n``.

    ``n`` (default ``form.n``) must lie in ``form.sizes``.  Sizes up to ``dense_max_n`` build the
    dense weights; larger ones use the structure (module docstring), in O(n) time and memory.
    Raises ``ValueError`` for a size outside the form's range and ``TypeError`` for a structure
    with no rule here (GM, EM and UM have one).
    """
    sized = form if n is None or int(n) == form.n else form.for_size(int(n))
    if sized.n <= dense_max_n:
        return _dense_errors(sized)
    D = sized.denominator
    diag, below, above = _near_weights(sized)
    l0 = _summary(D - diag, D)
    l01 = _summary(D - diag - below - above, D)
    return ReleaseErrors(sized.n, *l0, *l01, *_structural_mse(sized))


def _dense_errors(form: StructuralMechanism) -> ReleaseErrors:
    """The errors from the ``(n+1) x (n+1)`` weights (small n), as ``release_errors`` computes them."""
    W, D = form.dense_weights(), form.denominator
    diag = W.diagonal().copy()
    below = np.append(W.diagonal(-1), 0)  # W[j + 1, j]; none below the last row
    above = np.insert(W.diagonal(1), 0, 0)  # W[j - 1, j]; none above the first row
    return ReleaseErrors(form.n, *_summary(D - diag, D), *_summary(D - diag - below - above, D),
                         *_summary(squared_error_sums(W), D))


def _summary(numerators: np.ndarray, D: int) -> tuple[Fraction, Fraction, int]:
    """``(mean_j numerators[j] / D, max_j numerators[j] / D, smallest argmax)``, exactly.

    ``numerators``: non-negative int64 (summed without wrap-around) or Python integers (object).
    """
    total = int(numerators.sum()) if numerators.dtype == object else exact_sum(numerators)
    worst = int(np.argmax(numerators))
    return Fraction(total, len(numerators) * D), Fraction(int(numerators[worst]), D), worst


# -- the three entries near the diagonal --------------------------------------------------------
def _structured_entries(form: StructuralMechanism, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``s(i, j)`` elementwise for int64 arrays of outputs ``i`` and inputs ``j`` (all within ``0..n``)."""
    n = form.n
    if isinstance(form, StructuralGM):
        masses = form.mass(np.arange(form.tail.size + 2))  # g(0..L), then 0: every distance past the table
        s = masses[np.minimum(np.abs(i - j), form.tail.size + 1)]
        for row, reach in ((0, j), (n, n - j)):  # the clamped rows: Pr[Z <= -j], Pr[Z >= n - j]
            at = np.flatnonzero(i == row)
            s[at] = np.where(reach[at] == 0, form.centre + form.first, form.tail_at(np.maximum(reach[at], 1)))
        return s
    if isinstance(form, StructuralEM):
        return form.power_at(exponents(n, i, j))
    if isinstance(form, StructuralUM):
        return np.zeros(np.shape(i), dtype=np.int64)
    raise TypeError(f"no structural error rule for {type(form).__name__}")


def _near_weights(form: StructuralMechanism) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(W[j, j], W[j + 1, j], W[j - 1, j])`` for every input ``j`` (0 where the row does not exist), int64."""
    n = form.n
    j = np.arange(n + 1, dtype=np.int64)

    def weights(i: np.ndarray) -> np.ndarray:
        return _structured_entries(form, i, j) + form.floor + (i < form.extra_rows)

    below = np.where(j < n, weights(np.minimum(j + 1, n)), 0)
    above = np.where(j > 0, weights(np.maximum(j - 1, 0)), 0)
    return weights(j), below, above


# -- the squared error --------------------------------------------------------------------------
def _square_sum(x, exact: bool):
    """``T(x) = 0**2 + 1**2 + ... + x**2`` elementwise (Python integers if ``exact``, else float64)."""
    return x * (x + 1) * (2 * x + 1) // 6 if exact else x * (x + 1) * (2 * x + 1) / 6


def _floor_squares(j, n: int, f: int, r: int, exact: bool):
    """The floor's part of ``S(j)``: ``f (T(j) + T(n - j)) + sum_{i<r} (i - j)**2``, elementwise."""
    extra = r * j * j - j * (r * (r - 1)) + (r - 1) * r * (2 * r - 1) // 6
    return f * (_square_sum(j, exact) + _square_sum(n - j, exact)) + extra


def _pyramid(m: int) -> int:
    """``T(0) + T(1) + ... + T(m)`` = ``m (m+1)**2 (m+2) / 12`` (0 for ``m = -1``)."""
    return m * (m + 1) ** 2 * (m + 2) // 12


def _geometric_profile(form: StructuralGM) -> tuple[np.ndarray, list[np.ndarray]]:
    """GM's structured squared error: the table ``F(x)``, ``x = 0..min(L, n)``, and its two indices per input."""
    n, top = form.n, min(int(form.tail.size), form.n)
    x = np.arange(top + 1, dtype=np.int64)
    xo = x.astype(object)
    F = np.cumsum(xo * xo * form.mass(x).astype(object)) + xo * xo * form.tail_at(x + 1).astype(object)
    j = np.arange(n + 1, dtype=np.int64)
    return F, [np.minimum(j, top), np.minimum(n - j, top)]


def _fair_profile(form: StructuralEM) -> tuple[np.ndarray, list[np.ndarray]]:
    """EM's structured squared error: the table ``h(m)``, ``m = 0..M``, and the index ``min(j, n - j, M)``."""
    n = form.n
    top = n // 2 + n % 2
    kmax = max(min(int(form.powers.size) - 1, top), 0)
    k = np.arange(kmax + 1, dtype=np.int64).astype(object)
    g = form.power_at(np.arange(kmax + 1)).astype(object)
    g[0] = 0  # exponent 0 sits on the diagonal: no error
    pre0, pre1, pre2 = np.cumsum(g), np.cumsum(k * g), np.cumsum(k * k * g)
    M = min(n // 2, kmax)
    m, a0, a1, a2 = k[:M + 1], pre0[:M + 1], pre1[:M + 1], pre2[:M + 1]
    h = (2 * a2 + 8 * (pre2[-1] - a2) - (8 * m + 4) * (pre1[-1] - a1)
         + (2 * m * m + 2 * m + 1) * (pre0[-1] - a0))
    if n % 2 and kmax == top:  # the last exponent's second row (distance n + 1 - m) does not exist
        h = h - g[top] * (2 * top - m) ** 2
    j = np.arange(n + 1, dtype=np.int64)
    return h, [np.minimum(np.minimum(j, n - j), M)]


def _structured_profile(form: StructuralMechanism) -> tuple[np.ndarray, list[np.ndarray]]:
    """An exact table and index arrays such that input ``j``'s structured ``sum_i (i-j)**2 s(i, j)``
    is ``sum(table[index[j]] for index in indices)``."""
    if isinstance(form, StructuralGM):
        return _geometric_profile(form)
    if isinstance(form, StructuralEM):
        return _fair_profile(form)
    if isinstance(form, StructuralUM):
        return np.zeros(1, dtype=object), []
    raise TypeError(f"no structural error rule for {type(form).__name__}")


def _structural_mse(form: StructuralMechanism) -> tuple[Fraction, Fraction, int]:
    """Uniform and worst MSE, exactly, in O(n + table) (module docstring: closed forms, counts, a float screen)."""
    n, f, r, D = form.n, form.floor, form.extra_rows, form.denominator
    N = n + 1
    table, indices = _structured_profile(form)
    total = f * (N * N * (N * N - 1) // 6) + _pyramid(r - 1) + _pyramid(n) - _pyramid(n - r)
    for index in indices:
        total += int((np.bincount(index, minlength=table.size).astype(object) * table).sum())
    jf = np.arange(N, dtype=np.float64)
    approx = _floor_squares(jf, n, f, r, exact=False)
    table_f = table.astype(np.float64)
    for index in indices:
        approx += table_f[index]
    peak = float(approx.max())
    candidates = np.flatnonzero(approx >= peak - _SCREEN * (peak + 3.0 * float(N) ** 3))
    exact = _floor_squares(candidates.astype(object), n, f, r, exact=True)
    for index in indices:
        exact = exact + table[index[candidates]]
    best = int(np.argmax(exact))
    return Fraction(total, N * D), Fraction(int(exact[best]), D), int(candidates[best])


__all__ = ["DENSE_MAX_N", "structural_errors"]
