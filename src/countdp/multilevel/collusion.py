"""What colluding consumers see: exact joint distributions of several levels, and their exact DP test.

A chain releases ``r_0 ~ W(. | x)`` and ``r_{k+1} ~ T_k(. | r_k)``, so the probability of a whole
path is ``W[r_0, x] T_0[r_1, r_0] ... T_{m-2}[r_{m-1}, r_{m-2}]``.  :func:`path_joint` enumerates
those products for every path and input, summing out the levels the colluders do not hold, as
an exact integer tensor.  :func:`joint_dp_check` decides, in exact arithmetic, whether a joint
distribution (of any released tuple, from any mechanism) is alpha-DP in the input.

These are brute force, ``O((n+1)^(levels + 2))``: the enumeration that the structural argument
of :mod:`countdp.multilevel.certificate` is checked against, for small n.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations

import numpy as np

from countdp.privacy.exact import ExactCheck
from countdp.values.alpha import alpha_text, exact_alpha


def path_joint(first: np.ndarray, transitions: Sequence[np.ndarray], levels: Sequence[int]) -> np.ndarray:
    """``J[y_1, ..., y_t, x]``: ``2**(K (max(levels)+1))`` times ``Pr[r_levels = y | x]``, exactly.

    ``levels`` are 0-based level numbers (any order; the axes follow increasing level).  Python
    integers throughout (object ndarrays), so nothing is rounded.
    """
    keep = sorted(set(int(k) for k in levels))
    if not keep or keep[0] < 0 or keep[-1] > len(transitions):
        raise ValueError(f"levels must lie in 0..{len(transitions)}, got {list(levels)}")
    J = np.asarray(first).astype(object)  # axes (r_0, x)
    for k in range(keep[-1]):
        step = np.asarray(transitions[k]).astype(object).T  # step[r_k, r_{k+1}]
        J = J[..., :, None, :] * step[:, :, None]  # axes (..., r_k, r_{k+1}, x)
        if k not in keep:
            J = J.sum(axis=-3)
    return J


def joint_dp_check(joint_fn: Callable[[int], np.ndarray], alpha: object, n: int) -> ExactCheck:
    """Whether ``x -> joint_fn(x)`` (exact weights of every released tuple) is alpha-DP, exactly.

    ``joint_fn(x)`` returns the (unnormalised) probabilities of all output tuples for input
    ``x``, as integers or Fractions of one common scale.  Holds iff every entry is non-negative,
    every ``joint_fn(x)`` has the same total, and ``p J(x') <= q J(x)`` entry by entry for every
    neighbouring pair, with ``alpha = p/q``.
    """
    a = exact_alpha(alpha)
    p, q = a.numerator, a.denominator
    previous = np.asarray(joint_fn(0), dtype=object)
    total = previous.sum()
    inequalities, broken, reason = 0, 0, ""
    for x in range(n + 1):
        current = previous if x == 0 else np.asarray(joint_fn(x), dtype=object)
        if current.shape != previous.shape or (current < 0).any() or current.sum() != total:
            return ExactCheck(False, inequalities, broken,
                              f"the joint for input {x} is not a distribution of the same total and shape")
        if x:
            bad = ~np.asarray(p * current <= q * previous, dtype=bool) | ~np.asarray(p * previous <= q * current,
                                                                                     dtype=bool)
            inequalities += 2 * current.size
            if bad.any() and not reason:
                reason = (f"the joint breaks alpha = {alpha_text(a)} between inputs {x - 1} and {x} at output "
                          f"{tuple(int(i) for i in np.argwhere(bad)[0])}")
            broken += int(bad.sum())
        previous = current
    return ExactCheck(broken == 0, inequalities, broken, reason)


def colluding_sets(levels: int) -> list[tuple[int, ...]]:
    """Every set of at least two of ``levels`` levels (0-based), smallest sets first."""
    return [c for size in range(2, levels + 1) for c in combinations(range(levels), size)]


__all__ = ["colluding_sets", "joint_dp_check", "path_joint"]
