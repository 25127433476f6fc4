"""From a certified float matrix to integer release weights that stay exactly alpha-DP.

``P`` (rows outputs, columns inputs) is turned into weights ``W`` with columns summing to
``D = 2**K`` in three steps:

1. ``X = floor(P * D)`` (exact: scaling a float by a power of two and flooring lose nothing),
   and each column's shortfall ``e_j = D - sum_i X[i, j]`` is spread evenly over the column,
   giving a target ``Y = X + e_j / (n+1)`` whose columns sum to ``D`` exactly;
2. the target is mixed with the uniform mechanism, ``T = (1 - lam) Y + lam D / (n+1)``, with
   ``lam = a / 2**M`` just large enough that every DP inequality of ``T`` has a slack of at
   least ``1 + alpha`` units (the most that rounding every entry by less than one unit can
   take away); ``lam`` comes from the slack of ``Y``, formed with exact integer products;
3. every column of ``T`` is rounded by largest remainder, so that it sums to ``D`` exactly.

``T`` is computed with exact int64 arithmetic for its integer part (``lam * X`` is split
into 31-bit halves) and floats only for fractions below one unit.  The result is then
checked by the exact test (:func:`~countdp.privacy.exact.exact_dp_check`); if the check ever
failed, ``lam`` would be doubled and the rounding redone.  For the LP designs of this project
``lam`` is about 1e-13 to 1e-11, and the objective moves by less than that.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import TypeVar

import numpy as np

from countdp.privacy.exact import (
    MIN_RELEASE_K,
    RELEASE_K,
    IntegerMechanism,
    exact_dp_check,
    scaled_difference,
    scaled_products,
)
from countdp.validation import check_matrix
from countdp.values.alpha import alpha_text, exact_alpha

COLUMN_SUM_TOL = 1e-9
"""Largest |column sum - 1| accepted in a float matrix to be rounded."""
_SLACK_ERROR = 2.0**-50
"""Relative bound on the float error of a slack estimate (one conversion to float, a few additions)."""
_ROUNDING_MARGIN = 1.0 + 1e-6
"""Rounding moves an entry by less than one unit, plus float error far below 1e-6 units."""
T = TypeVar("T")


def check_release_alpha(alpha: object, K: int = RELEASE_K) -> Fraction:
    """``alpha`` as an exact Fraction, or ``ValueError`` (one line) if it is below ``2**-K``.

    Integer weights over ``D = 2**K`` cannot state a guarantee weaker than ``2**-K``: a weight
    is 0 or at least 1 and its neighbour at most ``D``, so for ``alpha <= 2**-K`` the exact test
    only asks that no zero stand next to a positive weight, and every set of weights that passes
    it is ``2**-K``-DP already.  An alpha below that (epsilon above ``K ln 2``, about 43) is a
    request the released form cannot express, and is refused before any design work.
    """
    a = exact_alpha(alpha)
    if a < Fraction(1, 1 << K):
        raise ValueError(f"alpha = {float(a):.3g} is below 2^-{K} (epsilon above {K * math.log(2):.2f}): integer "
                         f"release weights over 2^{K} cannot state a guarantee that weak (any that pass the exact "
                         f"test are 2^-{K}-DP already); ask for alpha >= 2^-{K}")
    return a


def _exact_slack(qX, pX, left: slice, right: slice, q: int) -> np.ndarray:
    """``(q X[:, left] - p X[:, right]) / q`` as floats, for results of :func:`scaled_products`.

    With ``q >= 2**64`` the products are Python integers and their difference can exceed the
    float range (``q`` has hundreds of digits for an alpha like ``1e-300``); it is divided by
    ``q`` as integers first (Python's ``int / int`` is correctly rounded), and the quotient,
    at most ``2**62`` in size, always fits.
    """
    if isinstance(qX, tuple):
        return scaled_difference(qX, pX, left, right) / q
    return ((qX[:, left] - pX[:, right]) / q).astype(float)


def _mixing_lambda(X: np.ndarray, shortfall: np.ndarray, alpha: Fraction, D: int) -> float:
    """The UM weight that leaves every DP inequality of ``T`` at least ``1 + alpha`` units of slack.

    The slack of ``Y = X + e/N`` is ``(q X[i, j] - p X[i, j']) / q + (e_j - alpha e_j') / N``; the
    integer part is formed exactly (:func:`~countdp.privacy.exact.scaled_products`) and only then
    converted to float, so the estimate is accurate to a relative 2**-50.
    """
    N = X.shape[0]
    p, q = alpha.numerator, alpha.denominator
    a = float(alpha)
    pX, qX = scaled_products(X, p, q)
    head, tail = slice(None, -1), slice(1, None)
    e = shortfall.astype(float) / N
    forward = _exact_slack(qX, pX, head, tail, q) + (e[:-1] - a * e[1:])
    backward = _exact_slack(qX, pX, tail, head, q) + (e[1:] - a * e[:-1])
    slack = min(float(forward.min()), float(backward.min()))
    slack -= _SLACK_ERROR * (abs(slack) + 4 * float(np.abs(e).max()))
    need = (1 + a) * _ROUNDING_MARGIN
    if slack >= need:
        return 0.0
    gain = (1 - a) * D / N  # slack that mixing with weight 1 adds to every inequality
    if gain <= need:
        raise ValueError(f"alpha = {alpha_text(alpha)} is too close to 1 for integer weights over "
                         f"2^{D.bit_length() - 1} at n = {N - 1}")
    lam = (need - slack) / (gain - slack)
    return min(1.0, lam * (1 + 1e-6) + 2.0**-62)


def _dyadic(lam: float) -> tuple[int, int]:
    """``(a, M)`` with ``a / 2**M >= lam``, ``a < 2**32`` and ``31 <= M <= 62`` (finest such grid)."""
    for M in range(62, 30, -1):
        a = math.ceil(Fraction(lam) * 2**M)
        if a < 2**32:
            return a, M
    raise AssertionError("unreachable: lam <= 1")


def _round_mixture(X: np.ndarray, shortfall: np.ndarray, lam: float, K: int) -> np.ndarray:
    """Largest-remainder rounding of ``T = (1 - lam)(X + e_j/N) + lam D/N``, column sums exactly ``D``."""
    N = X.shape[0]
    D = 1 << K
    a, M = _dyadic(lam) if lam > 0 else (0, 62)
    # lam * X = (u / 2**(M-31) + v / 2**M) with u = a * (X >> 31), v = a * (X & (2**31-1)), both < 2**63
    u, v = a * (X >> 31), a * (X & (2**31 - 1))
    u_int, u_frac = u >> (M - 31), u & ((1 << (M - 31)) - 1)
    v_int, v_frac = v >> M, v & ((1 << M) - 1)
    lam_x_frac = u_frac * 2.0 ** -(M - 31) + v_frac * 2.0**-M  # in [0, 2)
    # per column: (1 - lam) e_j / N + lam D / N = ((2**M - a) e_j + a D) / (2**M N), split into its
    # integer part and its fraction (Python's int / int is correctly rounded, as float(Fraction) is)
    scale = (1 << M) * N
    parts = [divmod(((1 << M) - a) * int(e) + a * D, scale) for e in shortfall]
    column_int = np.array([whole for whole, _ in parts], dtype=np.int64)
    column_frac = np.array([rest / scale for _, rest in parts])
    t = column_frac[None, :] - lam_x_frac
    whole = np.floor(t)
    W = X - u_int - v_int + column_int[None, :] + whole.astype(np.int64)
    remainder = t - whole
    deficit = D - W.sum(axis=0)  # = sum of the exact remainders, an integer in [0, N)
    if np.any(np.abs(deficit) >= N):
        raise AssertionError("rounding deficit out of range")
    order = np.argsort(-remainder, axis=0, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(N)[:, None], axis=0)
    return W + (rank < deficit[None, :]) - (rank >= N + deficit[None, :])


def _round_until(P: object, alpha: object, K: int, accept: Callable[[np.ndarray, Fraction, float], T]) -> T:
    """Round ``P`` with the mixing weight of :func:`_mixing_lambda`; double it until ``accept`` takes ``W``.

    ``accept(W, alpha, lam)`` returns its result or raises ``ValueError`` (the exact test failed).
    """
    M = check_matrix(P)
    a = exact_alpha(alpha)
    if not 1 <= K <= 62:
        raise ValueError(f"K must be in 1..62, got {K}")
    if M.min() < 0:
        raise ValueError("a mechanism to round must be non-negative")
    if np.max(np.abs(M.sum(axis=0) - 1.0)) > COLUMN_SUM_TOL:
        raise ValueError(f"a mechanism to round must have columns summing to 1 within {COLUMN_SUM_TOL}")
    D = 1 << K
    X = np.floor(M * float(D)).astype(np.int64)
    shortfall = D - X.sum(axis=0)
    lam = _mixing_lambda(X, shortfall, a, D)
    while True:
        try:
            return accept(_round_mixture(X, shortfall, lam, K), a, lam)
        except ValueError:
            if lam >= 1.0:
                raise
            lam = min(1.0, max(2 * lam, 2.0**-60))


def _checked(W: np.ndarray, alpha: Fraction, K: int, lam: float) -> tuple[np.ndarray, float]:
    check = exact_dp_check(W, alpha, K)
    if not check.holds:
        raise ValueError(f"no DP rounding found: {check.reason}")
    return W, lam


def dp_weights(P: object, alpha: object, K: int) -> tuple[np.ndarray, float]:
    """Integer weights ``W`` (columns summing to ``2**K``, any ``1 <= K <= 62``) for ``P`` that pass
    :func:`~countdp.privacy.exact.exact_dp_check`, and the mixing weight used: ``(W, lam)``.

    ``P`` must be non-negative with columns summing to 1 within 1e-9.  Raises ``ValueError``
    if alpha is too close to 1 for ``2**K``.
    """
    return _round_until(P, alpha, K, lambda W, a, lam: _checked(W, a, K, lam))


def round_to_release(P: object, alpha: object, K: int = RELEASE_K,
                     objective: Callable[[np.ndarray], float] | None = None) -> IntegerMechanism:
    """The released form of the float mechanism ``P``: exactly alpha-DP weights over ``2**K``.

    The certificate records ``rounding_lambda``, ``max_abs_error = max |W/D - P|`` and, given
    ``objective(matrix) -> float``, ``objective_change = objective(W/D) - objective(P)``.
    """
    if not MIN_RELEASE_K <= K <= 62:
        raise ValueError(f"a released mechanism needs {MIN_RELEASE_K} <= K <= 62, got K = {K}")
    check_release_alpha(alpha, K)
    M = check_matrix(P)

    def release_form(W: np.ndarray, a: Fraction, lam: float) -> IntegerMechanism:
        released = W / float(1 << K)
        costs = {"rounding_lambda": lam, "max_abs_error": float(np.max(np.abs(released - M)))}
        if objective is not None:
            costs["objective_change"] = float(objective(released) - objective(M))
        return IntegerMechanism(a, K, W, costs)

    return _round_until(M, alpha, K, release_form)


def largest_remainder_weights(P: object, K: int) -> np.ndarray:
    """Plain largest-remainder integer weights for any column-stochastic ``P`` (no DP guarantee).

    For sampling mechanisms that are *not* certified, such as the perturbed matrices the
    statistical audit must catch; a release never uses this.
    """
    M = check_matrix(P)
    if M.min() < 0 or np.max(np.abs(M.sum(axis=0) - 1.0)) > COLUMN_SUM_TOL:
        raise ValueError("a mechanism must be column-stochastic (non-negative columns summing to 1)")
    D = 1 << K
    X = np.floor(M * float(D)).astype(np.int64)
    return _round_mixture(X, D - X.sum(axis=0), 0.0, K)


__all__ = ["COLUMN_SUM_TOL", "check_release_alpha", "dp_weights", "largest_remainder_weights", "round_to_release"]
