"""The float DP certificate: a designed matrix is alpha-DP on its final floating-point values.

This certifies the *float* matrix that designs, tables and figures use.  What is released is
its integer form, certified again in exact arithmetic (:mod:`countdp.privacy.exact`,
:mod:`countdp.privacy.rounding`); the float certificate bounds how far a solver's answer had to be
repaired, and a design whose repair exceeds ``MAX_REPAIR_LAMBDA`` is an error, not a file.

:func:`is_alpha_dp` is the exact test, evaluated in IEEE double arithmetic with tolerance 0:
every entry in [0, 1], every column summing to 1 within ``COLUMN_SUM_TOL``, and
``alpha * P[i, j +/- 1] <= P[i, j]`` for every row ``i`` and neighbouring inputs.

:func:`certify` repairs a matrix that falls short (a solver's answer typically breaks the DP
inequalities by 1e-10 to 1e-7) by renormalising its columns and mixing it with the uniform
mechanism, ``(1 - lam) P + lam UM``, with the smallest ``lam`` that makes every inequality
hold (mixing only improves every DP ratio, and ``lam = 1`` gives UM, which is always DP).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from countdp.validation import check_alpha, check_matrix

COLUMN_SUM_TOL = 1e-12
"""Largest allowed |column sum - 1| of a certified mechanism."""
MAX_REPAIR_LAMBDA = 1e-7
"""Default bound on the UM weight a design's repair may mix in (beyond it the solver's answer is refused)."""


class CertificationError(ValueError):
    """A matrix needs a larger repair than allowed; the message names the violation."""


def dp_slack(P: np.ndarray, alpha: float) -> float:
    """Smallest of ``P[i, j] - alpha*P[i, j+/-1]`` and ``P[i, j]`` over the matrix (>= 0 iff DP)."""
    forward = P[:, :-1] - alpha * P[:, 1:]
    backward = P[:, 1:] - alpha * P[:, :-1]
    return float(min(forward.min(), backward.min(), P.min()))


def is_alpha_dp(P: np.ndarray, alpha: float) -> bool:
    """Exact floating-point test of alpha-DP and column-stochasticity (tolerance 0 on DP).

        >>> countdp.is_alpha_dp(countdp.uniform(4), 0.99), countdp.is_alpha_dp(np.eye(5), 0.5)
        (True, False)
    """
    M = check_matrix(P)
    a = check_alpha(alpha)
    return bool(
        np.all(a * M[:, 1:] <= M[:, :-1])
        and np.all(a * M[:, :-1] <= M[:, 1:])
        and np.all(M >= 0)
        and np.all(M <= 1)
        and np.all(np.abs(M.sum(axis=0) - 1.0) <= COLUMN_SUM_TOL)
    )


@dataclass(frozen=True)
class Certificate:
    """Evidence that a matrix is alpha-DP on its final floats.

    ``violation_before``/``violation_after``: the largest breach of any DP inequality or of
    non-negativity (``max(0, -dp_slack)``) and of the column sums, before and after repair.
    ``repair_lambda``: weight of UM mixed in (0.0 when no repair was needed).

        >>> _, certificate = countdp.certify(countdp.uniform(3), 0.5)  # UM is alpha-DP for every alpha
        >>> certificate.certified, certificate.repair_lambda
        (True, 0.0)
    """

    alpha: float
    certified: bool
    violation_before: float
    violation_after: float
    column_sum_error_before: float
    column_sum_error_after: float
    repair_lambda: float

    def to_dict(self) -> dict:
        return asdict(self)


def _violation(P: np.ndarray, alpha: float) -> tuple[float, float]:
    return max(0.0, -dp_slack(P, alpha)), float(np.max(np.abs(P.sum(axis=0) - 1.0)))


def _mix(P: np.ndarray, lam: float) -> np.ndarray:
    return (1.0 - lam) * P + lam / P.shape[0]


def _required_lambda(P: np.ndarray, alpha: float) -> float:
    """Smallest lam making every inequality hold in exact arithmetic (0 if none is broken).

    A constraint ``r = P[i, j] - a P[i, k] < 0`` becomes ``(1-lam) r + lam (1-a)/N``, which is
    >= 0 iff ``lam >= -r / ((1-a)/N - r)``; a negative entry ``e`` needs ``lam >= -e / (1/N - e)``.
    """
    N = P.shape[0]
    r = np.concatenate([(P[:, :-1] - alpha * P[:, 1:]).ravel(), (P[:, 1:] - alpha * P[:, :-1]).ravel()])
    lam = 0.0
    broken = r[r < 0]
    if broken.size:
        lam = max(lam, float(np.max(-broken / ((1 - alpha) / N - broken))))
    negative = P[P < 0]
    if negative.size:
        lam = max(lam, float(np.max(-negative / (1.0 / N - negative))))
    return lam


def certify(P: np.ndarray, alpha: float, max_lambda: float | None = None) -> tuple[np.ndarray, Certificate]:
    """Return a certified copy of ``P`` and its :class:`Certificate`.

    Columns are renormalised, then the smallest UM mixture that passes :func:`is_alpha_dp`
    in floating point is applied (the exact-arithmetic lambda, nudged up by tiny growing steps
    until the float test passes; ``lam = 1`` is UM itself).  Raises :class:`CertificationError`
    if the repair needs ``lam > max_lambda`` (``None``: no bound), and ``ValueError`` if ``P`` is
    not a finite square matrix.

        >>> P, certificate = countdp.certify(countdp.geometric(6, 0.9), 0.9)
        >>> certificate.certified, countdp.is_alpha_dp(P, 0.9)
        (True, True)
    """
    M = check_matrix(P)
    a = check_alpha(alpha)
    before, sum_before = _violation(M, a)
    if is_alpha_dp(M, a):
        return M.copy(), Certificate(a, True, before, before, sum_before, sum_before, 0.0)
    sums = M.sum(axis=0)
    if np.any(sums <= 0):
        raise ValueError("cannot certify a matrix with a column summing to <= 0")
    M = M / sums
    lam = _required_lambda(M, a)
    candidate = _mix(M, lam)
    step = 4 * np.finfo(float).eps
    while not is_alpha_dp(candidate, a):  # rounding: nudge lam up by a growing, tiny step
        lam = min(1.0, lam + max(step, lam * 1e-12))
        step *= 2
        candidate = _mix(M, lam)
        if lam == 1.0:
            candidate = np.full_like(M, 1.0 / M.shape[0])
            break
    if max_lambda is not None and lam > max_lambda:
        raise CertificationError(f"the matrix breaks alpha-DP by {before:.2e} (column sums off by {sum_before:.2e}); "
                                 f"repairing it needs lambda = {lam:.2e} > the bound {max_lambda:.0e}")
    after, sum_after = _violation(candidate, a)
    return candidate, Certificate(a, is_alpha_dp(candidate, a), before, after, sum_before, sum_after, lam)
