"""Checkers for the seven structural properties and for alpha-DP.

Every checker takes a mechanism ``P`` (``P[i, j] = Pr[output i | input j]``) and an explicit
tolerance, and returns a :class:`Check`: whether the property holds within the tolerance
and the worst violation (0.0 when every defining inequality holds exactly).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from countdp.mechanisms.property_scan import worst_violations
from countdp.privacy.certify import COLUMN_SUM_TOL, dp_slack
from countdp.validation import check_alpha, check_matrix, check_tol
from countdp.values.properties import PROPERTIES, parse_properties

DEFAULT_TOL = 1e-9
"""Default tolerance for *structural* properties of solver output.  DP uses tolerance 0."""


@dataclass(frozen=True)
class Check:
    """Outcome of a property check: ``holds`` iff ``worst_violation <= tol``."""

    name: str
    holds: bool
    worst_violation: float
    tol: float

    def __bool__(self) -> bool:
        return self.holds


def check_property(P: np.ndarray, name: str, tol: float = DEFAULT_TOL) -> Check:
    """Check one of RH, RM, CH, CM, F, WH, S on ``P``.

        >>> countdp.check_property(countdp.explicit_fair(4, 0.5), "F").holds  # EM is fair
        True
        >>> countdp.check_property(countdp.geometric(4, 0.5), "F").holds  # GM is not
        False
    """
    found = parse_properties([name])
    if len(found) != 1:
        raise ValueError(f"unknown property {name!r}; allowed: {', '.join(PROPERTIES)}")
    return check_all(P, tol)[found[0]]


def check_all(P: np.ndarray, tol: float = DEFAULT_TOL) -> dict[str, Check]:
    """Check all seven properties; keys in the paper's order.

    The worst violations come from :func:`~countdp.mechanisms.property_scan.worst_violations`
    (whole-row slices), which equal, bit for bit, the defining rows of
    :func:`countdp.design.constraints.property_rows` evaluated one by one (tested).

        >>> checks = countdp.check_all(countdp.geometric(4, 0.8))
        >>> list(checks) == list(countdp.PROPERTIES)
        True
        >>> # GM: S and RM always; WH iff n >= 2a/(1-a) = 8 (Lemma 2); CM iff a <= 1/2 (Lemma 3)
        >>> checks["S"].holds, checks["RM"].holds, checks["WH"].holds, checks["CM"].holds
        (True, True, False, False)
    """
    tol = check_tol(tol)
    return {name: Check(name, worst <= tol, worst, tol) for name, worst in worst_violations(P).items()}


def check_dp(P: np.ndarray, alpha: float, tol: float = 0.0) -> Check:
    """Check that ``P`` is a column-stochastic alpha-DP mechanism within ``tol``.

    The violation is the largest of: ``alpha*P[i, j+/-1] - P[i, j]``, ``-P[i, j]``, and the
    amount by which any ``|column sum - 1|`` exceeds ``COLUMN_SUM_TOL`` (1e-12).  With the
    default ``tol = 0`` this is the exact floating-point test of :func:`is_alpha_dp`.

        >>> P = countdp.geometric(4, 0.5)
        >>> countdp.check_dp(P, 0.5).holds, countdp.check_dp(P, 0.6).holds  # GM's inequalities are tight
        (True, False)
    """
    M = check_matrix(P)
    a = check_alpha(alpha)
    tol = check_tol(tol)
    dp_breach = max(0.0, -dp_slack(M, a))
    column_breach = max(0.0, float(np.max(np.abs(M.sum(axis=0) - 1.0))) - COLUMN_SUM_TOL)
    worst = max(dp_breach, column_breach, float(np.max(M)) - 1.0)
    return Check("DP", worst <= tol, worst, tol)


def gupte_sundararajan_violation(P: np.ndarray, alpha: float) -> float:
    """Worst violation of the Gupte-Sundararajan derivability condition (0.0 if derivable).

    ``P`` is derivable from GM by post-processing iff for every row ``i`` and interior
    column ``j``: ``P[i, j] - a P[i, j-1] >= a (P[i, j+1] - a P[i, j])``.
    """
    M = check_matrix(P)
    a = check_alpha(alpha)
    left, mid, right = M[:, :-2], M[:, 1:-1], M[:, 2:]
    slack = (mid - a * left) - a * (right - a * mid)
    return float(max(0.0, -slack.min())) if slack.size else 0.0


def is_gm_derivable(P: np.ndarray, alpha: float, tol: float = DEFAULT_TOL) -> bool:
    """Whether ``P`` passes the Gupte-Sundararajan test within ``tol``."""
    return gupte_sundararajan_violation(P, alpha) <= tol


__all__ = ["DEFAULT_TOL", "PROPERTIES", "Check", "check_all", "check_dp", "check_property",
           "gupte_sundararajan_violation", "is_gm_derivable"]
