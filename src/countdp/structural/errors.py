"""The exact expected errors of releasing with a structural mechanism, without its matrix.

:func:`structural_errors` gives the numbers :func:`countdp.privacy.expected_error.release_errors`
gives for a dense released mechanism (``L0 = Pr[out != in]``, ``L0,1 = Pr[|out - in| > 1]``,
``MSE = E[(out - in)**2]``, under a uniform prior on the input and for the worst input, the
smallest one attaining it), for the distribution the structural sampler draws from:
``W[i, j] = s(i, j) + f + [i < r]`` over ``D = 2**K`` (:mod:`countdp.structural.form`).

Small sizes build the weights and sum them as a matrix.  Beyond, nothing of size ``n**2`` is
built, no per-input Python integer is formed (over ``2**124`` every weight is one), and every
returned value is still exact.  Both parts rest on one observation: what input ``j`` reads of
the structure is an int64 *index* into a short exact table (a distance or an exponent, clipped
at the table's end), and these indices are constant over long *runs* of consecutive inputs.
So the per-input numerators are computed once per run, in Python integers.  The runs are found by
comparing int64 index arrays read only at the inputs where an index can change (:func:`_inputs`):
the first and last inputs as far as the tables reach, and those near the floor's extra rows.
Nothing of size ``n`` is built either, so a group of ``10^9`` costs what one of ``10^4`` does:

* **L0, L0,1.**  The entries ``W[j-1, j], W[j, j], W[j+1, j]`` are ``table[index] + f + [i < r]``
  (:func:`_entry_index`); the runs are where no index and no ``[i < r]`` changes, a handful
  (the clamped corners of GM, the missing row above input 0 and below input n, the floor's
  extra rows).  The uniform total is each run's numerator times its length; the worst input is
  the first run's start among those attaining the largest numerator.
* **MSE.**  Input ``j``'s numerator ``S(j) = sum_i (i - j)**2 W[i, j]`` splits into the floor's
  part ``A(j) = f Q(j) + sum_{i<r} (i - j)**2`` with ``Q(j) = T(j) + T(n - j)``,
  ``T(x) = x(x+1)(2x+1)/6`` (closed forms, :mod:`countdp.structural.power_sums`), and the
  structured part ``B(j)``, which is a short exact table read at one or two clipped indices per input:

  - GM releases ``clamp(j + Z, 0, n)``, so its part is ``F(min(j, L)) + F(min(n - j, L))`` with
    ``F(x) = sum_{z>=1} g(z) min(z, x)**2 = sum_{z<=x} z**2 g(z) + x**2 T_tail(x + 1)``
    (prefix sums over the tail table, ``L`` its length);
  - EM's part depends on ``m = min(j, n - j)`` only: exponent ``k <= m`` sits at distance ``k``
    on both sides, ``k > m`` at far-side distances ``2k - m - 1`` and ``2k - m`` (an odd n's last
    exponent ``(n+1)/2`` only at the first), so ``h(m) = 2 sum_{k<=m} k**2 g(k) +
    sum_{k>m} g(k) (8k**2 - (8m + 4) k + 2m**2 + 2m + 1)``, from prefix sums of ``g, k g, k**2 g``;
  - UM has none.

  The uniform total is exact: closed forms for the floor, and each run's table entries times the
  run's length.  For the worst input, ``B`` is constant on each run
  of its indices, and ``A`` is convex in ``j`` on ``[0, n]`` (``T'' = 2x + 1 > 0``, and a sum of
  squares), strictly unless ``f = r = 0`` (then ``A = 0``).  So within a run ``S`` is largest at
  the run's first or last input, and strictly below that anywhere inside (or, with ``A = 0``,
  equal throughout, where the first input is the smallest): the worst input, the smallest one
  attaining the maximum, is among the runs' ends, and only those are evaluated exactly.

So everything is O(table) vectorised int64 work plus O(table + runs) Python-integer work, and the
runs are O(table) for GM and EM (a few for the near-diagonal entries).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.privacy.expected_error import ReleaseErrors, squared_error_sums
from countdp.structural.corner_errors import corner_errors
from countdp.structural.corners import StructuralCorners
from countdp.structural.fair import StructuralEM, exponents
from countdp.structural.form import COARSE_BITS, StructuralMechanism
from countdp.structural.geometric import StructuralGM
from countdp.structural.power_sums import floor_squares, floor_squares_total
from countdp.structural.spread import StructuralSpread
from countdp.structural.spread_errors import spread_errors
from countdp.structural.uniform import StructuralUM

DENSE_MAX_N = 4096
"""Default largest group size whose errors are computed from the dense weight matrix (int64 weights)."""
WIDE_DENSE_MAX_N = 256
"""The same for a wide form, whose ``(n+1)**2`` dense weights are Python integers (slow to build)."""


def structural_errors(form: StructuralMechanism, n: int | None = None, *,
                      dense_max_n: int | None = None) -> ReleaseErrors:
    """The exact L0, L0,1 and MSE (uniform and worst input) of releasing with ``form`` for groups of size ``n``.

    ``n`` (default ``form.n``) must lie in ``form.sizes``.  Sizes up to ``dense_max_n`` (default
    :data:`DENSE_MAX_N`, or :data:`WIDE_DENSE_MAX_N` for a wide form) build the dense weights;
    larger ones use the structure (module docstring), in time and memory that grow with the
    structure's tables, not with ``n``.  Raises
    ``ValueError`` for a size outside the form's range and ``TypeError`` for a structure with no
    rule here (GM, EM, UM, the template spreads and the square corners have one).
    """
    sized = form if n is None or int(n) == form.n else form.for_size(int(n))
    if dense_max_n is None:
        dense_max_n = WIDE_DENSE_MAX_N if sized.wide else DENSE_MAX_N
    if sized.n <= dense_max_n:
        return _dense_errors(sized)
    if isinstance(sized, StructuralSpread):
        return spread_errors(sized)
    if isinstance(sized, StructuralCorners):
        return corner_errors(sized)
    return ReleaseErrors(sized.n, *_near_errors(sized), *_structural_mse(sized))


# -- small n: the dense weights -----------------------------------------------------------------
def _dense_errors(form: StructuralMechanism) -> ReleaseErrors:
    """The errors from the ``(n+1) x (n+1)`` weights (small n), as ``release_errors`` computes them.

    The weights are int64, or Python integers (object) for a wide form; both are exact here.
    """
    W, D = _dense_weights(form), form.denominator
    diag = W.diagonal().copy()
    below = np.append(W.diagonal(-1), 0)  # W[j + 1, j]; none below the last row
    above = np.insert(W.diagonal(1), 0, 0)  # W[j - 1, j]; none above the first row
    return ReleaseErrors(form.n, *_summary(D - diag, D), *_summary(D - diag - below - above, D),
                         *_summary(_squared_sums(W), D))


def _dense_weights(form: StructuralMechanism) -> np.ndarray:
    """The ``(n+1) x (n+1)`` weights: the form's own matrix (int64), or for a wide form Python integers.

    The forms' dense constructions add the floor in int64, which a wide form's floor can pass
    (EM's own table at small n, UM), so a wide form's matrix is assembled here from the entry
    rule :func:`_entry_index` and the floor, in Python integers.
    """
    if not form.wide:
        return form.dense_weights()
    N = form.n + 1
    i, j = np.divmod(np.arange(N * N, dtype=np.int64), N)
    table, index = _entry_index(form, i, j)
    floor = np.array([form.floor, form.floor + 1], dtype=object)[(np.arange(N) < form.extra_rows).astype(np.int64)]
    return table.astype(object)[index].reshape(N, N) + floor[:, None]


def _squared_sums(W: np.ndarray) -> np.ndarray:
    """``sum_i (i - j)**2 W[i, j]`` per input ``j`` as Python integers, for int64 or Python-integer weights.

    ``squared_error_sums`` takes int64 weights below ``2**63``; wider ones are split into 62-bit
    words, each summed exactly there, and recombined (the sum is linear in the weights).
    """
    if W.dtype != object:
        return squared_error_sums(W)
    mask = (1 << COARSE_BITS) - 1
    words = -(-max(int(W.max()).bit_length(), 1) // COARSE_BITS)
    total = np.zeros(W.shape[1], dtype=object)
    for k in range(words):
        word = ((W >> (k * COARSE_BITS)) & mask).astype(np.int64)
        total = total + squared_error_sums(word) * (1 << (k * COARSE_BITS))
    return total


def _summary(numerators: np.ndarray, D: int) -> tuple[Fraction, Fraction, int]:
    """``(mean_j numerators[j] / D, max_j numerators[j] / D, smallest argmax)``, exactly (int64 or Python ints)."""
    values = numerators.astype(object)
    worst = int(np.argmax(values))
    return Fraction(int(values.sum()), len(values) * D), Fraction(int(values[worst]), D), worst


# -- runs of inputs that read the same entries --------------------------------------------------
def _inputs(form: StructuralMechanism) -> np.ndarray:
    """The inputs, sorted, at which the errors' keys are read: the first and last ``reach + 1``
    inputs, and those within 3 of ``r``.  Every key is constant outside them, except from one
    input to the next inside them: what an input reads of the structure is clipped at the table's
    length (GM's tail, EM's exponents) within ``reach`` of input 0 or n, and the floor's extra rows
    change only near ``r``.  Between two of these inputs with a gap, no key changes, so the runs
    found on them are the runs of ``0..n`` (:func:`_runs`)."""
    n, r = form.n, form.extra_rows
    reach = 2 + (int(form.tail.size) if isinstance(form, StructuralGM) else
                 int(form.powers.size) if isinstance(form, StructuralEM) else 0)
    pieces = [np.arange(min(reach, n) + 1), np.arange(max(n - reach, 0), n + 1)]
    if r:
        pieces.append(np.arange(max(r - 3, 0), min(r + 3, n) + 1))
    return np.unique(np.concatenate(pieces)).astype(np.int64)


def _runs(keys: list[np.ndarray]) -> np.ndarray:
    """Where the maximal runs start, as positions in the inputs the keys were read at
    (:func:`_inputs`): 0, and every position whose keys differ from the previous one's."""
    size = keys[0].size if keys else 1
    change = np.zeros(max(size - 1, 0), dtype=bool)
    for key in keys:
        change |= key[1:] != key[:-1]
    return np.concatenate([[0], np.flatnonzero(change) + 1]).astype(np.int64)


def _run_summary(values: list[int], starts: np.ndarray, N: int, D: int) -> tuple[Fraction, Fraction, int]:
    """:func:`_summary` of numerators constant on runs: ``values[k]`` on inputs ``starts[k] ..`` to the next start."""
    lengths = np.diff(np.append(starts, N)).tolist()
    worst = max(values)
    first = values.index(worst)  # runs are in input order, so this run's start is the smallest argmax
    return (Fraction(sum(v * length for v, length in zip(values, lengths, strict=True)), N * D),
            Fraction(worst, D), int(starts[first]))


# -- the three entries near the diagonal --------------------------------------------------------
def _entry_index(form: StructuralMechanism, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(table, index)`` with ``s(i, j) = table[index]`` elementwise, for int64 arrays of one shape of
    outputs ``i`` and inputs ``j`` (all within ``0..n``): ``index`` is int64, ``table`` short (its
    length is the structure's table's, plus a few entries; int64 or Python ints)."""
    n = form.n
    if isinstance(form, StructuralGM):
        L = int(form.tail.size)
        # g(0..L), 0 (every distance past the table); then the corners: g0 + T(1), T(1..L), 0
        table = np.concatenate([form.mass(np.arange(L + 2)), np.array([form.centre + form.first], dtype=object),
                                form.tail_at(np.arange(1, L + 2))])
        index = np.minimum(np.abs(i - j), L + 1)
        for row in (n, 0):  # the clamped rows: Pr[Z >= n - j], Pr[Z <= -j]
            at = np.flatnonzero(i == row)
            index[at] = L + 2 + np.minimum(n - j[at] if row else j[at], L + 1)
        return table, index
    if isinstance(form, StructuralEM):
        top = int(form.powers.size)  # g(0..top-1), then 0 past the table
        return form.power_at(np.arange(top + 1)), np.minimum(exponents(n, i, j), top)
    if isinstance(form, StructuralUM):
        return np.zeros(1, dtype=np.int64), np.zeros(np.shape(i), dtype=np.int64)
    raise TypeError(f"no structural error rule for {type(form).__name__}")


def _near_errors(form: StructuralMechanism) -> tuple[Fraction, Fraction, int, Fraction, Fraction, int]:
    """L0's and L0,1's ``(uniform, worst, worst input)`` from ``W[j-1, j], W[j, j], W[j+1, j]``, run by run.

    Each row's weight is ``table[index] + f + [i < r]`` (0 where the row does not exist, index -1);
    the numerators ``D - W[j, j]`` and ``D - (the three)`` are formed once per run, in Python integers.
    """
    n, f, r, D = form.n, form.floor, form.extra_rows, form.denominator
    j = _inputs(form)
    rows = []
    for i in (j, j + 1, j - 1):  # W[j, j], W[j + 1, j], W[j - 1, j]
        table, index = _entry_index(form, np.clip(i, 0, n), j)
        rows.append((table, np.where((i >= 0) & (i <= n), index, -1), i < r))
    at = _runs([key for _, index, extra in rows for key in (index, extra)])
    weights = [[int(table[k]) + f + e if k >= 0 else 0 for k, e in zip(index[at].tolist(),
                                                                      extra[at].tolist(), strict=True)]
               for table, index, extra in rows]
    starts = j[at]
    l0 = [D - w for w in weights[0]]
    l01 = [D - a - b - c for a, b, c in zip(*weights, strict=True)]
    return (*_run_summary(l0, starts, n + 1, D), *_run_summary(l01, starts, n + 1, D))


# -- the squared error --------------------------------------------------------------------------
def _geometric_profile(form: StructuralGM, j: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """GM's structured squared error: the table ``F(x)``, ``x = 0..min(L, n)``, and its two indices
    at each input of ``j``."""
    n, top = form.n, min(int(form.tail.size), form.n)
    x = np.arange(top + 1, dtype=np.int64)
    xo = x.astype(object)
    F = np.cumsum(xo * xo * form.mass(x).astype(object)) + xo * xo * form.tail_at(x + 1).astype(object)
    return F, [np.minimum(j, top), np.minimum(n - j, top)]


def _fair_profile(form: StructuralEM, j: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """EM's structured squared error: the table ``h(m)``, ``m = 0..M``, and the index
    ``min(j, n - j, M)`` at each input of ``j``."""
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
    return h, [np.minimum(np.minimum(j, n - j), M)]


def _structured_profile(form: StructuralMechanism, j: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """An exact table (Python integers) and index arrays, one entry per input of ``j``, such that
    input ``j[k]``'s structured ``sum_i (i-j)**2 s(i, j)`` is ``sum(table[index[k]] for index in indices)``."""
    if isinstance(form, StructuralGM):
        return _geometric_profile(form, j)
    if isinstance(form, StructuralEM):
        return _fair_profile(form, j)
    if isinstance(form, StructuralUM):
        return np.zeros(1, dtype=object), []
    raise TypeError(f"no structural error rule for {type(form).__name__}")


def _structural_mse(form: StructuralMechanism) -> tuple[Fraction, Fraction, int]:
    """Uniform and worst MSE, exactly, in O(table + runs) (module docstring: closed forms, runs, runs' ends)."""
    n, f, r, D = form.n, form.floor, form.extra_rows, form.denominator
    N = n + 1
    j = _inputs(form)
    table, indices = _structured_profile(form, j)
    at = _runs(indices)
    starts = j[at]
    lengths = np.diff(np.append(starts, N)).astype(object)
    total = floor_squares_total(0, n, n, f, r)
    for index in indices:
        total += int((table[index[at]] * lengths).sum())
    candidates = np.union1d(starts, np.append(starts[1:] - 1, n))  # every run's first and last input, in order
    run = np.searchsorted(starts, candidates, side="right") - 1  # the run of each: its indices are its start's
    exact = floor_squares(candidates.astype(object), n, f, r)
    for index in indices:
        exact = exact + table[index[at][run]]
    best = int(np.argmax(exact))  # the first maximum: candidates are increasing
    return Fraction(total, N * D), Fraction(int(exact[best]), D), int(candidates[best])


__all__ = ["DENSE_MAX_N", "WIDE_DENSE_MAX_N", "structural_errors"]
