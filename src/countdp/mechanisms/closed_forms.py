"""Closed-form mechanisms: GM (truncated geometric), EM (explicit fair) and UM (uniform).

Each returns an ``(n+1) x (n+1)`` float array ``P[i, j] = Pr[output i | input j]``.
"""

from __future__ import annotations

import numpy as np

from countdp.validation import check_alpha, check_n


def uniform(n: int) -> np.ndarray:
    """UM: ignore the input and report a uniformly random count; L0 = 1.

        >>> countdp.uniform(3)[:, 0]
        array([0.25, 0.25, 0.25, 0.25])
        >>> round(countdp.objective_value(countdp.uniform(3), "L0"), 12)
        1.0
    """
    n = check_n(n)
    return np.full((n + 1, n + 1), 1.0 / (n + 1))


def geometric(n: int, alpha: float) -> np.ndarray:
    """GM: add two-sided geometric noise ``Pr[k] = (1-a)/(1+a) a^|k|`` and clamp to [0, n].

    Interior rows are ``(1-a)/(1+a) a^|i-j|``; the clamped rows are ``P[0, j] = a^j/(1+a)``
    and ``P[n, j] = a^(n-j)/(1+a)``.  (The paper prints the noise as ``(1-a)^|k|/(1+a)``,
    a misprint: that does not sum to one.)

        >>> P = countdp.geometric(4, 0.5)
        >>> bool(np.allclose(P.sum(axis=0), 1)), countdp.is_alpha_dp(P, 0.5)
        (True, True)
        >>> bool(np.isclose(P[2, 2], (1 - 0.5) / (1 + 0.5)))  # an interior row's diagonal: (1-a)/(1+a)
        True
    """
    n, a = check_n(n), check_alpha(alpha)
    i = np.arange(n + 1)
    P = (1 - a) / (1 + a) * a ** np.abs(i[:, None] - i[None, :])
    P[0, :] = a**i / (1 + a)
    P[n, :] = a ** (n - i) / (1 + a)
    return P


def explicit_fair_diagonal(n: int, alpha: float) -> float:
    """The diagonal value ``y`` of EM: one over the common column sum of its powers of alpha.

    Even n: ``(1-a)/(1+a-2a^(n/2+1))`` (the paper's formula).  Odd n: the paper's formula
    does not normalise the columns; the exact value is ``(1-a)/(1+a-a^((n+1)/2)-a^((n+3)/2))``.
    """
    n, a = check_n(n), check_alpha(alpha)
    if n % 2 == 0:
        return (1 - a) / (1 + a - 2 * a ** (n / 2 + 1))
    return (1 - a) / (1 + a - a ** ((n + 1) / 2) - a ** ((n + 3) / 2))


def explicit_fair_exponents(n: int) -> np.ndarray:
    """Integer exponents ``e[i, j]`` with ``EM[i, j] = y * alpha**e[i, j]`` (Figure 4).

    With ``d = |i-j|`` and ``m = min(j, n-j)``: ``e = d`` if ``d <= m``, else ``ceil((d+m)/2)``.
    """
    n = check_n(n)
    i = np.arange(n + 1)
    d = np.abs(i[:, None] - i[None, :])
    m = np.minimum(i, n - i)[None, :]
    return np.where(d <= m, d, -((-(d + m)) // 2))


def geometric_exponents(n: int) -> np.ndarray:
    """Exponents ``e[i, j] = |i - j|`` of alpha in GM (Figure 3; prefactors differ by row)."""
    n = check_n(n)
    i = np.arange(n + 1)
    return np.abs(i[:, None] - i[None, :])


def explicit_fair(n: int, alpha: float) -> np.ndarray:
    """EM (equation 16): the L0-optimal fair mechanism; it has all seven properties.

        >>> checks = countdp.check_all(countdp.explicit_fair(6, 0.8))
        >>> all(check.holds for check in checks.values())
        True
    """
    n, a = check_n(n), check_alpha(alpha)
    return explicit_fair_diagonal(n, a) * a ** explicit_fair_exponents(n).astype(float)


CLOSED_FORMS = {"GM": geometric, "EM": explicit_fair, "UM": lambda n, alpha: uniform(n)}
