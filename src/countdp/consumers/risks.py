"""Every answer's weighted loss at once, for the named losses, without their ``(n+1) x (n+1)`` matrix.

A named loss (:mod:`countdp.consumers.losses`) depends only on the distance ``|i - a|`` between the
true count ``i`` and the answer ``a``.  For non-negative weights ``w[i]`` (a release's likelihoods
times a prior), the weighted loss of *every* answer,

    ``risks(w)[a] = sum_i w[i] loss(i, a)``,

takes O(n) instead of O(n^2), by running sums:

* ``L1``: ``left[a] = sum_{i<a} w[i] (a - i)`` grows by ``P[a] = sum_{i<=a} w[i]`` from ``a`` to
  ``a + 1``, so ``left`` is a running sum of running sums (and ``right`` the same from the other end);
* ``L2``: ``sum_{i<a} w[i] (a - i)^2`` grows by ``2 left[a] + P[a]``: a third running sum;
* ``L0d:D`` (``L0`` is ``L0d:0``): the weight below ``a - D`` plus the weight above ``a + D``.

Every term added is non-negative (nothing is subtracted), so the floating-point result of each
entry is within a relative ``gamma_k = k u / (1 - k u)`` of the exact sum of the same floats
(``u = 2^-53``, ``k`` the longest chain of additions: :func:`chain_length`), which is what lets the
certificate of :mod:`countdp.consumers.structured_certificate` bound its rounding.  Rows of ``w``
are independent (one row per release), so a block of releases is one call.
"""

from __future__ import annotations

import numpy as np

from countdp.consumers.losses import LossSpec, parse_loss

UNIT_ROUNDOFF = 2.0**-53
"""``u``: the relative rounding of one float64 operation (round to nearest)."""


def loss_values(spec: object, i: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``loss(i, a)`` as floats for broadcastable arrays of true counts ``i`` and answers ``a`` (exact:
    integers below 2^53)."""
    loss = parse_loss(spec)
    distance = np.abs(np.asarray(i, dtype=np.int64) - np.asarray(a, dtype=np.int64))
    if loss.name == "L1":
        return distance.astype(float)
    if loss.name == "L2":
        return (distance * distance).astype(float)
    return (distance > loss.d).astype(float)


def _running(x: np.ndarray) -> np.ndarray:
    """``out[:, a] = sum_{t < a} x[:, t]`` (a zero first column): a running sum of what comes before."""
    out = np.empty_like(x)
    out[:, 0] = 0.0
    np.cumsum(x[:, :-1], axis=1, out=out[:, 1:])
    return out


def _one_side(w: np.ndarray, squared: bool) -> np.ndarray:
    """``sum_{i<a} w[:, i] (a - i)`` (or its square) for every ``a``: the loss of the weight below each answer."""
    P = np.cumsum(w, axis=1)
    left = _running(P)
    if not squared:
        return left
    return _running(2.0 * left + P)


def answer_risks(spec: object, w: np.ndarray) -> np.ndarray:
    """``B[r, a] = sum_i w[r, i] loss(i, a)`` for a block of non-negative weight rows ``w`` (module docstring)."""
    loss: LossSpec = parse_loss(spec)
    w = np.atleast_2d(np.asarray(w, dtype=float))
    if loss.name in ("L1", "L2"):
        squared = loss.name == "L2"
        return _one_side(w, squared) + _one_side(w[:, ::-1], squared)[:, ::-1]
    N, d = w.shape[1], loss.d
    below = np.zeros((w.shape[0], N + 1))
    np.cumsum(w, axis=1, out=below[:, 1:])  # below[:, t] = sum_{i<t} w
    above = np.zeros((w.shape[0], N + 1))
    np.cumsum(w[:, ::-1], axis=1, out=above[:, 1:])  # above[:, t] = the weight of the last t inputs
    a = np.arange(N)
    return below[:, np.clip(a - d, 0, N)] + above[:, np.clip(N - 1 - a - d, 0, N)]


def best_answers(spec: object, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per weight row: the smallest weighted loss over all answers and the first answer attaining it
    (the Bayes response to the weights)."""
    B = answer_risks(spec, w)
    best = np.argmin(B, axis=1)
    return B[np.arange(B.shape[0]), best], best


def chain_length(spec: object, N: int) -> int:
    """The longest chain of roundings behind one entry of :func:`answer_risks` over ``N`` inputs: three
    running sums of ``N`` terms for L2 (two for L1, one for L0d), and the additions joining the sides."""
    name = parse_loss(spec).name
    return {"L2": 3, "L1": 2}.get(name, 1) * N + 4


def gamma(k: int) -> float:
    """``gamma_k = k u / (1 - k u)``: the relative error bound of ``k`` chained roundings of non-negative terms."""
    ku = k * UNIT_ROUNDOFF
    if ku >= 0.5:
        raise ValueError(f"{k} chained roundings are too many for a float64 error bound")
    return ku / (1.0 - ku)


__all__ = ["UNIT_ROUNDOFF", "answer_risks", "best_answers", "chain_length", "gamma", "loss_values"]
