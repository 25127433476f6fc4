"""The exact certificate of GM's structural level chain: every level and every colluding set, without a matrix.

Notation: ``G_k = GM(n, alpha_k)`` exact; ``A_k`` the marginal of level ``k`` that is *sampled*
(level 0: the structural GM's weights over ``D = 2**K``; level ``k+1``: ``T'_k A_k``, ``T'_k`` the
structural kernel, :mod:`countdp.multilevel.structural_kernel`).  The certificate proves, for every
level, the decomposition

    A_k = (1 - theta_k) G_k + E_k + C_k,   |E_k[i, x]| <= eps_k,   C_k[i, x] = C_k[i] >= c_k,

with ``C_k`` independent of the input ``x``.  Then ``alpha_k A_k[i, x'] <= A_k[i, x]`` for all
neighbours whenever ``(1 + alpha_k) eps_k <= (1 - alpha_k) c_k``, because
``alpha_k G_k[i, x'] <= G_k[i, x]`` (GM is exactly alpha_k-DP) and ``C_k`` adds ``c_k (1 - alpha_k)``
of slack to each side's difference.  That inequality, in Fractions, is the level's verdict.

**Level 0.**  Certified by the structural GM's own exact certificate
(:class:`~countdp.structural.geometric.StructuralGM`); for the recursion, ``theta_0 = R_0 / D``,
``C_0`` its floor (``c_0 = floor / D``), and ``eps_0`` the largest gap between its masses, tails
and corner and ``(D - R_0)`` times GM's (:func:`first_deviation`, exact, ``O(L)``).

**Level k+1.**  Write ``T'_k = N + phi 1^T``: ``phi`` is the kernel's floor, the same for both column
types (their reserves are checked equal), and ``N >= 0`` the rest, ``N = (1 - s) T + F`` with ``T`` the
exact transition (``T G_k = G_{k+1}``, proven in :mod:`countdp.multilevel.transitions`), ``s = R / D``
and ``|F| <= eta / D`` entrywise (:func:`~countdp.multilevel.structural_kernel.kernel_deviation`).
With ``M_k = A_k - C_k = (1 - theta_k) G_k + E_k >= 0`` (columns summing to ``1 - theta_k``):

    A_{k+1} = (1 - s)(1 - theta_k) G_{k+1} + [(1 - s) T E_k + F M_k] + [N C_k + phi 1^T],

the last bracket independent of ``x``.  So ``theta_{k+1} = 1 - (1 - s)(1 - theta_k)``,
``eps_{k+1} = (1 - s) rho eps_k + (1 - theta_k) eta / D`` (``rho`` bounds ``T``'s row sums,
:func:`~countdp.multilevel.structural_kernel.transition_bound`; ``F M_k`` is bounded through
``M_k``'s column sums), and ``c_{k+1} = (keep_min / D) c_k + f / D`` (``N``'s diagonal holds the stay
mass; ``f`` the kernel's smallest floor).  Every quantity is computed from the tables the sampler
reads; nothing of size ``n`` is built.

**Colluding sets.**  As for the matrix chain (:mod:`countdp.multilevel.certificate`): the levels
are a Markov chain whose kernels do not see ``x``, so a set led by level ``c`` is as private as
level ``c`` once every kernel up to its last level is a valid sampling table.  For small ``n`` and
``K <= 62`` the joint is also enumerated from the dense weights and tested directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from countdp.multilevel.certificate import CollusionVerdict, LevelsCertificate, LevelVerdict
from countdp.multilevel.collusion import colluding_sets, joint_dp_check, path_joint
from countdp.multilevel.structural_kernel import StructuralKernel, kernel_deviation, transition_bound
from countdp.structural.geometric import StructuralGM
from countdp.values.alpha import alpha_text

ARGUMENT = ("level 0: the structural GM certificate; level k+1 = T'_k A_k with A_k = (1-theta) GM(n, alpha_k) + E + C, "
            "|E| <= eps, C independent of the input and >= c: alpha_k-DP when (1+alpha_k) eps <= (1-alpha_k) c, "
            "eps and c carried through each kernel's exact deviation from the exact transition (T GM_alpha = "
            "GM_beta); any set of levels is a post-processing of its least private level (a Markov chain)")


@dataclass(frozen=True)
class StructuralLevelsCertificate(LevelsCertificate):
    """:class:`~countdp.multilevel.certificate.LevelsCertificate` of a structural chain, with the argument it checks.

    Per level, ``max_abs_deviation`` is the proven bound ``eps_k + theta_k`` on ``|A_k - GM(n, alpha_k)|``
    and ``mixing_lambda`` is ``theta_k`` (the uniform-like share); ``inequalities`` counts exact comparisons.
    """

    argument: str = ARGUMENT
    representation: str = "structural chain"


@dataclass(frozen=True)
class Recursion:
    """``(theta_k, eps_k, c_k)`` of one level (module docstring), exact."""

    theta: Fraction
    eps: Fraction
    c: Fraction


def first_deviation(first: StructuralGM) -> Fraction:
    """``eps_0``: the largest ``|s[i, x] - (D - R) GM[i, x]|`` of the structural GM's structured part, over ``D``."""
    a, D = first.alpha, first.denominator
    S = D - first.reserve
    c = (1 - a) / (1 + a)
    tails = [*first.tail.tolist(), 0]
    masses = [first.centre, *(tails[m] - tails[m + 1] for m in range(len(tails) - 1)), 0]
    worst, power = abs(masses[0] - S * c), a
    for m in range(1, len(tails) + 1):
        worst = max(worst, abs(masses[m] - S * c * power), abs(tails[m - 1] - S * power / (1 + a)))
        power *= a
    worst = max(worst, abs(first.centre + first.first - S / (1 + a)))
    return worst / D


def kernel_reason(pair: Sequence[StructuralKernel], n: int, K: int, beta: Fraction) -> str:
    """Why a level's two column types are not a valid transition for this chain ('' if they are)."""
    inner, edge = pair
    if (inner.edge, edge.edge) != (False, True) or inner.n != n or edge.n != n:
        return "a transition needs an interior and an edge column type for this n"
    if inner.K != K or edge.K != K or inner.alpha != beta or edge.alpha != beta:
        return "a transition's K or alpha differs from its level's"
    if inner.reserve != edge.reserve:
        return "the two column types of a transition must share their floor (the same reserve)"
    for k in pair:
        check = k.certify()
        if not check.holds:
            return f"not a valid sampling table: {check.reason}"
    return ""


def level_step(state: Recursion, pair: Sequence[StructuralKernel], alpha: Fraction, beta: Fraction) -> Recursion:
    """The next level's ``(theta, eps, c)`` through a valid transition (module docstring)."""
    inner, edge = pair
    D = inner.denominator
    s = Fraction(inner.reserve, D)
    eta = max(kernel_deviation(inner, alpha, beta), kernel_deviation(edge, alpha, beta)) / D
    eps = (1 - s) * transition_bound(alpha, beta) * state.eps + (1 - state.theta) * eta
    keep = min(inner.keep + inner.centre, edge.keep + edge.centre)
    c = Fraction(keep, D) * state.c + Fraction(inner.min_floor, D)
    return Recursion(1 - (1 - s) * (1 - state.theta), eps, c)


def _verdict(k: int, alpha: Fraction, state: Recursion | None, reason: str, checks: int) -> LevelVerdict:
    if state is None:
        return LevelVerdict(k, alpha_text(alpha), False, 0, 1, reason, float("nan"), float("nan"))
    holds = not reason and (1 + alpha) * state.eps <= (1 - alpha) * state.c
    if not reason and not holds:
        reason = (f"the proven deviation {float(state.eps):.3g} is not covered by the input-free part "
                  f"{float(state.c):.3g} at alpha = {alpha_text(alpha)}")
    return LevelVerdict(k, alpha_text(alpha), bool(holds), checks, 0 if holds else 1, reason,
                        float(state.theta), float(state.eps + state.theta))


def level_verdicts(n: int, alphas: Sequence[Fraction], K: int, first: StructuralGM,
                   kernels: Sequence[Sequence[StructuralKernel]]) -> tuple[list[LevelVerdict], int]:
    """Every level's verdict, and the last level up to which every transition is valid."""
    check = first.certify()
    ok = check.holds and first.n == n and first.K == K and first.alpha == alphas[0]
    reason = "" if ok else check.reason or "the first level must be GM at the first alpha, this n and K"
    theta = Fraction(first.reserve, first.denominator)
    state = Recursion(theta, first_deviation(first), Fraction(first.floor, first.denominator))
    out = [LevelVerdict(0, alpha_text(alphas[0]), ok, check.checks, 0 if ok else 1, reason, float(theta),
                        float(state.eps + theta))]
    valid_upto = len(alphas) - 1
    for k, pair in enumerate(kernels, start=1):
        why = kernel_reason(pair, n, K, alphas[k]) if state is not None else "an earlier transition is invalid"
        if why:
            valid_upto = min(valid_upto, k - 1)
            state = None
        else:
            state = level_step(state, pair, alphas[k - 1], alphas[k])
        checks = sum(len(p.tail) for p in pair) * 3 + 8
        out.append(_verdict(k, alphas[k], state, why, checks))
    return out, valid_upto


def collusion_verdicts(n: int, alphas: Sequence[Fraction], levels: Sequence[LevelVerdict], valid_upto: int,
                       dense: Callable[[], tuple[np.ndarray, list[np.ndarray]]] | None,
                       max_cells: int) -> list[CollusionVerdict]:
    """Every colluding set's verdict: structural (led by a certified level, valid kernels), and enumerated
    from ``dense()`` (level 0's weights and each transition's, int64) where that is small enough."""
    out, matrices = [], None
    for group in colluding_sets(len(alphas)):
        low, top = group[0], group[-1]
        structural = levels[low].holds and top <= valid_upto
        enumerated, reason = None, "" if structural else f"level {low} fails or a transition up to {top} is invalid"
        if dense is not None and top <= valid_upto and (n + 1) ** (len(group) + 2) <= max_cells:
            matrices = matrices or dense()
            J = path_joint(matrices[0], matrices[1], group)
            check = joint_dp_check(lambda x, J=J: J[..., x], alphas[low], n)
            enumerated, reason = check.holds, reason or check.reason
        out.append(CollusionVerdict(group, alpha_text(alphas[low]), structural and enumerated is not False,
                                    structural, enumerated, reason))
    return out


def certify_structural_levels(n: int, alphas: Sequence[Fraction], K: int, first: StructuralGM,
                              kernels: Sequence[Sequence[StructuralKernel]], max_cells: int,
                              dense: Callable[[], tuple[np.ndarray, list[np.ndarray]]] | None = None
                              ) -> StructuralLevelsCertificate:
    """The certificate of a structural GM chain (module docstring), from the tables that are sampled."""
    levels, valid_upto = level_verdicts(n, alphas, K, first, kernels)
    collusion = collusion_verdicts(n, alphas, levels, valid_upto, dense, max_cells)
    holds = all(v.holds for v in levels) and all(c.holds for c in collusion)
    return StructuralLevelsCertificate(n, K, tuple(alpha_text(a) for a in alphas), holds, tuple(levels),
                                       tuple(collusion), "GM")


__all__ = ["ARGUMENT", "Recursion", "StructuralLevelsCertificate", "certify_structural_levels", "first_deviation",
           "level_step", "level_verdicts"]
