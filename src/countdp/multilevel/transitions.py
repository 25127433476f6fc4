"""The post-processing ``T`` that turns ``GM(n, alpha)`` into ``GM(n, beta)``: solved exactly, and in closed form.

Matrices are rows = outputs, columns = inputs, entries :class:`~fractions.Fraction`.  For
``alpha < beta`` (beta more private), Gupte and Sundararajan's Lemma 3 says a column-stochastic
``T >= 0`` with ``GM_beta = T GM_alpha`` exists; since ``GM_alpha`` is invertible it is unique:
``T = GM_beta GM_alpha^-1``.

**Solving it.**  ``GM_alpha = D S`` with ``S[i, j] = alpha^|i-j|`` (the Kac-Murdock-Szego matrix)
and ``D = diag(1/(1+alpha), c, ..., c, 1/(1+alpha))``, ``c = (1-alpha)/(1+alpha)``.  ``S^-1`` is
tridiagonal: ``1/(1-alpha^2)`` times ``1`` (corners) or ``1+alpha^2`` on the diagonal and
``-alpha`` beside it.  So ``GM_alpha^-1 = S^-1 D^-1`` (:func:`gm_inverse`) and every column of
``T`` is a three-term combination of columns of ``GM_beta`` (:func:`gm_transition`): ``O(n^2)``
exact operations, no elimination.

**Its closed form.**  Carrying that combination through gives, for every column ``j``,

    T[:, j] = w_j e_j + (1 - w_j) GM_beta[:, j],

    w_j = (alpha/beta) ((1-beta)/(1-alpha))^2   for an interior column (0 < j < n),
    w_j = (alpha/beta) (1-beta)/(1-alpha)       for a boundary column (j = 0 or n).

That is: keep the less private release ``r`` with probability ``w_r``, otherwise re-noise it
with ``GM(n, beta)`` itself.  Entry by entry, with ``g = (1-beta)/(1+beta)``:
``T[j, j] = w_j + (1 - w_j) GM_beta[j, j]`` (``GM_beta[j, j]`` is ``g`` inside, ``1/(1+beta)`` at
the corners); off the diagonal ``T[i, j] = (1 - w_j) g beta^|i-j|`` for interior rows and
``(1 - w_j) beta^|i-j| / (1+beta)`` for rows 0 and n.  Interior columns are a point mass plus a
clamped two-sided geometric of ratio beta; boundary columns differ only in their stay weight.
Both weights lie in (0, 1) for ``alpha < beta``, so ``T >= 0`` with columns summing to 1,
which is Lemma 3 again.  (Derivation for an interior column: the three-term combination has
diagonal ``(1+alpha^2-2 alpha beta)/(1-alpha)^2`` and off-diagonal
``(beta-alpha)(1-alpha beta) beta^(d-1)/(1-alpha)^2`` before the row factor of ``GM_beta``; and
``(1+alpha^2-2 alpha beta) - (beta-alpha)(1-alpha beta)/beta = alpha (1-beta^2)/beta``.)
:func:`gm_transition_closed_form` builds ``T`` from this formula; the tests check it equals the
solved matrix exactly and that ``T GM_alpha = GM_beta`` in Fractions.

**Few distinct values.**  GM has ``2(n+1)`` distinct entries and ``T`` ``4(n+1)+2``; an
:class:`ExactTable` stores them once with an integer index matrix, so rounding to integer
weights costs ``O(n)`` Fraction operations and ``O(n^2)`` numpy ones.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.multilevel.exact_forms import ExactTable, boundary_mask, gm_exact, gm_inverse, gm_table
from countdp.validation import check_n
from countdp.values.alpha import exact_alpha


def _ordered(alpha: object, beta: object) -> tuple[Fraction, Fraction]:
    a, b = exact_alpha(alpha), exact_alpha(beta)
    if not a < b:
        raise ValueError(f"a transition needs alpha < beta (beta more private), got alpha = {a}, beta = {b}")
    return a, b


def _gm_integers(n: int, b: Fraction) -> tuple[np.ndarray, int]:
    """``GM(n, b) = G / den`` with ``G`` an object array of Python ints and ``den = (s+r) s^n`` (``b = r/s``)."""
    r, s = b.numerator, b.denominator
    interior = np.array([(s - r) * r**k * s ** (n - k) for k in range(n + 1)], dtype=object)
    edge = np.array([r**k * s ** (n - k + 1) for k in range(n + 1)], dtype=object)
    d = np.arange(n + 1)
    G = interior[np.abs(d[:, None] - d[None, :])]
    G[0, :], G[n, :] = edge[d], edge[n - d]
    return G, (s + r) * s**n


def gm_transition(n: int, alpha: object, beta: object) -> np.ndarray:
    """The exact ``T`` with ``GM(n, beta) = T GM(n, alpha)``, solved as ``GM_beta S_alpha^-1 D_alpha^-1``.

    Each column is the three-term combination of columns of ``GM_beta`` that the tridiagonal
    ``S_alpha^-1`` prescribes.  With ``alpha = p/q`` the combination is formed in Python
    integers over one common denominator (object arrays, vectorised over whole columns), and
    only the final entries become Fractions.
    """
    n = check_n(n)
    a, b = _ordered(alpha, beta)
    p, q = a.numerator, a.denominator
    edge = boundary_mask(n)
    G, den = _gm_integers(n, b)
    # S^-1 = tridiag(-pq, q^2 + p^2 (q^2 at the corners), -pq) / (q^2 - p^2)
    centre = np.array([q * q if e else q * q + p * p for e in edge], dtype=object)
    out = G * centre[None, :]
    out[:, 1:] = out[:, 1:] - (p * q) * G[:, :-1]
    out[:, :-1] = out[:, :-1] - (p * q) * G[:, 1:]
    # D^-1 = (1 + a) at the corners, (1 + a)/(1 - a) inside; over the common denominator q (q - p)
    column_factor = np.array([(q + p) * (q - p) if e else (q + p) * q for e in edge], dtype=object)
    out = out * column_factor[None, :]
    total = den * (q * q - p * p) * q * (q - p)
    return np.frompyfunc(lambda x: Fraction(x, total), 1, 1)(out)


def stay_weights(alpha: object, beta: object) -> tuple[Fraction, Fraction]:
    """``(w_interior, w_boundary)``: the probability that ``T`` keeps its input, by column type."""
    a, b = _ordered(alpha, beta)
    ratio = (1 - b) / (1 - a)
    return a / b * ratio * ratio, a / b * ratio


def gm_transition_table(n: int, alpha: object, beta: object) -> ExactTable:
    """``T = diag(w) + GM_beta diag(1 - w)`` (the closed form) as an :class:`ExactTable`.

    Off the diagonal ``T[i, j] = (1 - w_j) GM_beta[i, j]``: values ``(1 - w) * v`` for every
    distinct GM value ``v`` and each of the two column types; the diagonal adds ``w_j``.
    """
    n = check_n(n)
    w_in, w_edge = stay_weights(alpha, beta)
    G = gm_table(n, beta)
    N, size = n + 1, len(G.values)
    values = [(1 - w_in) * v for v in G.values] + [(1 - w_edge) * v for v in G.values]
    centre_in, centre_edge = G.values[0], G.values[N]  # GM_beta[j, j] inside and at the corners
    values += [w_in + (1 - w_in) * centre_in, w_edge + (1 - w_edge) * centre_edge]
    edge = boundary_mask(n)
    index = G.index + size * edge[None, :].astype(np.int64)
    k = np.arange(N)
    index[k, k] = 2 * size + edge.astype(np.int64)
    return ExactTable(tuple(values), index)


def gm_transition_closed_form(n: int, alpha: object, beta: object) -> np.ndarray:
    """``T`` from the closed form ``T[:, j] = w_j e_j + (1 - w_j) GM_beta[:, j]``, as Fractions."""
    return gm_transition_table(n, alpha, beta).dense()


__all__ = ["ExactTable", "gm_exact", "gm_inverse", "gm_table", "gm_transition", "gm_transition_closed_form",
           "gm_transition_table", "stay_weights"]
