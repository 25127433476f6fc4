"""The exact certificate of a multi-level release: every level, and every colluding set of levels.

**Per level.**  Level ``k`` (0-based) is released with the distribution
``A_k / 2**(K (k+1))``, ``A_k = T_{k-1} ... T_0 W`` computed exactly from the very weights that
are sampled.  It holds at ``alpha_k`` iff every transition up to it is a valid sampling table
(non-negative int64, every column summing exactly to ``2**K``: the inverse-CDF sampler needs
that for its draws to mean these probabilities), ``A_k``'s columns sum exactly to the
denominator, and ``p A_k[i, j'] <= q A_k[i, j]`` for all neighbours with ``alpha_k = p/q``
(Python-int comparisons).

**Colluding sets.**  For levels ``c_1 < ... < c_t`` the sampler makes a Markov chain given ``x``,
so ``Pr[r_c1 = y_1, ..., r_ct = y_t | x] = A_c1[y_1, x] / 2**(K (c_1+1)) * prod_s P_s[y_(s+1), y_s]``
where each ``P_s`` (a product of transitions, divided by its denominator) does not depend on
``x``.  Every neighbouring ratio of the joint is therefore a ratio of ``A_c1`` (or 0/0), and
the set is ``alpha_c1``-DP exactly when level ``c_1`` is (given valid transitions up to
``c_t``): the *structural* verdict.  When the joint is small enough (``(n+1)^(t+2)`` cells at
most ``joint_max_cells``) it is also enumerated path by path and tested directly
(:func:`~countdp.multilevel.collusion.joint_dp_check`), and the verdict needs both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from countdp.multilevel.collusion import colluding_sets, joint_dp_check, path_joint
from countdp.privacy.exact import ExactCheck, column_totals_equal
from countdp.values.alpha import alpha_text, exact_alpha


@dataclass(frozen=True)
class LevelVerdict:
    """One level's exact verdict; ``max_abs_deviation`` is ``max |A_k / den - M(n, alpha_k)|`` (floats).

    ``M`` is the chain's mechanism: GM or EM (exact forms), or the WM/WH LP design at ``alpha_k``.
    """

    level: int
    alpha: str
    holds: bool
    inequalities: int
    broken: int
    reason: str
    mixing_lambda: float
    max_abs_deviation: float


@dataclass(frozen=True)
class CollusionVerdict:
    """A colluding set's verdict at ``alpha_min`` (its least private level); ``enumerated`` is None if not run."""

    levels: tuple[int, ...]
    alpha_min: str
    holds: bool
    structural: bool
    enumerated: bool | None
    reason: str


@dataclass(frozen=True)
class LevelsCertificate:
    """Everything the release of a :class:`~countdp.multilevel.chain.LevelChain` is certified by."""

    n: int
    K: int
    alphas: tuple[str, ...]
    holds: bool
    levels: tuple[LevelVerdict, ...]
    collusion: tuple[CollusionVerdict, ...]
    mechanism: str = "GM"

    def to_dict(self) -> dict:
        return asdict(self)


def transition_check(T: np.ndarray, K: int) -> ExactCheck:
    """Whether ``T`` is a valid sampling table: square int64, entries in ``[0, 2**K]``, columns summing to ``2**K``."""
    W = np.asarray(T)
    if W.dtype != np.int64 or W.ndim != 2 or W.shape[0] != W.shape[1]:
        return ExactCheck(False, 0, 0, "a transition must be a square int64 matrix")
    if W.min() < 0 or W.max() > 1 << K:
        return ExactCheck(False, 0, 0, f"a transition's weights must lie in [0, 2^{K}]")
    sums = column_totals_equal(W, 1 << K)
    if not sums.all():
        return ExactCheck(False, 0, 0, f"column {int(np.argmin(sums))} does not sum to 2^{K}")
    return ExactCheck(True, 0, 0)


def object_dp_check(A: np.ndarray, total: int, alpha: object) -> ExactCheck:
    """Exact alpha-DP test of ``A / total`` for an object ndarray of Python ints (columns must sum to ``total``)."""
    a = exact_alpha(alpha)
    p, q = a.numerator, a.denominator
    inequalities = 2 * A.shape[0] * (A.shape[1] - 1)
    if (A < 0).any():
        return ExactCheck(False, inequalities, 0, "negative weight")
    sums = A.sum(axis=0)
    if any(s != total for s in sums):
        return ExactCheck(False, inequalities, 0, "a column does not sum to the denominator")
    pA, qA = p * A, q * A
    forward = np.asarray(pA[:, 1:] <= qA[:, :-1], dtype=bool)
    backward = np.asarray(pA[:, :-1] <= qA[:, 1:], dtype=bool)
    broken = int((~forward).sum() + (~backward).sum())
    if broken:
        i, j = np.argwhere(~forward)[0] if (~forward).any() else np.argwhere(~backward)[0]
        return ExactCheck(False, inequalities, broken, f"{broken} DP inequalities fail at alpha = {alpha_text(a)}, "
                                                       f"first at row {i}, columns {j}/{j + 1}")
    return ExactCheck(True, inequalities, 0)


def _level_verdicts(alphas: Sequence[Fraction], K: int, marginals: Sequence[np.ndarray | None],
                    valid_upto: int, mixing: Sequence[Fraction], reference: Sequence[np.ndarray]) -> list[LevelVerdict]:
    out = []
    for k, a in enumerate(alphas):
        lam = float(mixing[k]) if k < len(mixing) else float("nan")
        if k > valid_upto or marginals[k] is None:
            out.append(LevelVerdict(k, alpha_text(a), False, 0, 0, f"transition {valid_upto} is not a valid sampling "
                                                                      "table", lam, float("nan")))
            continue
        den = 1 << (K * (k + 1))
        check = object_dp_check(marginals[k], den, a)
        deviation = float(np.max(np.abs(marginals[k] / den - reference[k])))
        out.append(LevelVerdict(k, alpha_text(a), check.holds, check.inequalities, check.broken, check.reason, lam,
                                deviation))
    return out


def _collusion_verdicts(n: int, alphas: Sequence[Fraction], first: np.ndarray, transitions: Sequence[np.ndarray],
                        levels: Sequence[LevelVerdict], valid_upto: int, max_cells: int) -> list[CollusionVerdict]:
    out = []
    for group in colluding_sets(len(alphas)):
        low, top = group[0], group[-1]
        structural = levels[low].holds and top <= valid_upto
        enumerated, reason = None, "" if structural else f"level {low} fails or a transition up to {top} is invalid"
        if top <= valid_upto and (n + 1) ** (len(group) + 2) <= max_cells:
            J = path_joint(first, transitions, group)
            check = joint_dp_check(lambda x, J=J: J[..., x], alphas[low], n)
            enumerated, reason = check.holds, reason or check.reason
        holds = structural and enumerated is not False
        out.append(CollusionVerdict(group, alpha_text(alphas[low]), holds, structural, enumerated, reason))
    return out


def certify_levels(n: int, alphas: Sequence[Fraction], K: int, first: np.ndarray, transitions: Sequence[np.ndarray],
                   marginals: Sequence[np.ndarray | None], mixing: Sequence[Fraction], reference: Sequence[np.ndarray],
                   max_cells: int, mechanism: str = "GM") -> LevelsCertificate:
    """The certificate from the sampled weights and their exact marginals (None past an invalid transition).

    ``reference[k]`` is ``M(n, alpha_k)`` as floats, ``M`` the chain's ``mechanism`` (for the
    deviation only); ``mixing[k]`` the UM weight mixed in at level ``k``; ``max_cells`` bounds the
    enumerated joints.
    """
    valid_upto = len(alphas) - 1
    for k, T in enumerate(transitions):
        if not transition_check(T, K).holds:
            valid_upto = k
            break
    levels = _level_verdicts(alphas, K, marginals, valid_upto, mixing, reference)
    collusion = _collusion_verdicts(n, alphas, first, transitions, levels, valid_upto, max_cells)
    holds = all(v.holds for v in levels) and all(c.holds for c in collusion)
    return LevelsCertificate(n, K, tuple(alpha_text(a) for a in alphas), holds, tuple(levels), tuple(collusion),
                             mechanism)


__all__ = ["CollusionVerdict", "LevelVerdict", "LevelsCertificate", "certify_levels", "object_dp_check",
           "transition_check"]
