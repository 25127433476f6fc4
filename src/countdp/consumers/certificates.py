"""Weak-duality certificates for a consumer's two LPs, computed here and not taken from the solver.

Both LPs minimise a worst case over the side information ``S``.  Their Lagrangian duals have a
plain meaning, and any dual point (not just an optimal one) gives a lower bound:

* **Remap** (``min_R max_{i in S} sum_{r, r'} loss[i, r'] R[r', r] M[r, i]``, ``R``
  column-stochastic): for a prior ``y`` on ``S``, every remap costs at least the Bayes risk
  ``sum_r min_{r'} sum_i y_i loss[i, r'] M[r, i]`` (answer each released ``r`` with its best
  ``r'``).  So ``dual(y)`` <= optimum <= ``primal(R)`` for every prior ``y`` and every remap ``R``.
* **Own mechanism** (``min_x max_{i in S} sum_r loss[i, r] x[r, i]``, ``x`` column-stochastic
  and alpha-DP on all of ``0..n``): with multipliers ``up[r, i] >= 0`` of
  ``alpha x[r, i] - x[r, i+1] <= 0`` and ``down[r, i] >= 0`` of ``alpha x[r, i+1] - x[r, i] <= 0``,
  ``coef[r, i] = y_i loss[i, r] + (DP terms)`` and every feasible ``x`` costs at least
  ``sum_i min_r coef[r, i]`` (each column of ``x`` sums to one).

The primal point is repaired to feasibility first (a remap: negatives clipped and columns
renormalised; a private mechanism: :func:`dp_closure` and :func:`countdp.privacy.certify.certify`),
so ``primal`` is the cost of a feasible point and the gap
``primal - dual`` bounds how far it is from optimal.  A certificate *holds* when the gap is at
most ``tol`` (relative to the value once it exceeds one).

The ``exact_*`` variants do the same in exact rational arithmetic (Python ints and
``fractions.Fraction``, which exactness needs): solver floats are turned into rationals (exactly,
or with ``max_denominator`` to recover a small-denominator optimum), repaired exactly, and both
bounds are exact; they need an integer-valued loss (L0, L0d, L1 and L2 are).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from countdp.privacy.certify import certify
from countdp.values.alpha import exact_alpha

DYADIC_BITS = 60
"""Exact certificates of a float remap/prior without ``max_denominator`` round it to multiples of 2**-60."""


@dataclass(frozen=True)
class DualityCertificate:
    """``dual <= optimum <= primal``, both computed here; ``holds`` iff ``primal - dual <= tol``.

    ``primal``: the worst-case loss of the repaired primal point (an upper bound on the optimum);
    ``dual``: the lower bound of the repaired dual point; floats, or Fractions when ``exact``.
    ``repair``: the largest change to an entry of the primal point that made it feasible.
    """

    primal: float | Fraction
    dual: float | Fraction
    tol: float
    exact: bool
    repair: float = 0.0

    @property
    def gap(self) -> float | Fraction:
        return self.primal - self.dual

    @property
    def holds(self) -> bool:
        """``gap <= tol * max(1, |primal|)`` (a relative tolerance once the value exceeds one), and a
        finite primal bound (an infeasible primal point has ``primal = inf``)."""
        primal = float(self.primal)
        return bool(math.isfinite(primal) and self.gap <= self.tol * max(1.0, abs(primal)))


def _prior(prior: np.ndarray, side: np.ndarray, N: int) -> np.ndarray:
    """The prior restricted to ``side``, clipped at 0 and normalised; uniform on ``side`` if nothing
    is left (any prior is a dual point; a zero one is what a solver returns when the optimum is 0)."""
    y = np.zeros(N)
    y[side] = np.clip(np.asarray(prior, dtype=float)[side], 0.0, None)
    total = y.sum()
    if total <= 0:
        y[side] = 1.0
        total = float(len(side))
    return y / total


def per_input_losses(M: np.ndarray, loss: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Expected loss of every input ``i`` under ``R @ M``: ``sum_{r'} loss[i, r'] (R M)[r', i]``."""
    return np.einsum("ia,ai->i", loss, R @ M)


def remap_certificate(M: np.ndarray, loss: np.ndarray, side: np.ndarray, R: np.ndarray, prior: np.ndarray,
                      tol: float) -> tuple[DualityCertificate, np.ndarray, np.ndarray]:
    """Certificate of remap ``R`` (float), with the repaired ``R`` and every input's loss under it."""
    N = M.shape[0]
    clipped = np.clip(R, 0.0, None)
    repaired = clipped / clipped.sum(axis=0)
    per_input = per_input_losses(M, loss, repaired)
    y = _prior(prior, side, N)
    dual = float(((M * y[None, :]) @ loss).min(axis=1).sum())
    repair = float(np.max(np.abs(repaired - R)))
    return DualityCertificate(float(per_input[side].max()), dual, tol, False, repair), repaired, per_input


def _dp_coefficients(alpha, up, down, coef):
    """Add the DP multipliers' terms to ``coef[r, i]`` (floats or Fractions alike)."""
    coef = coef.copy()
    coef[:, :-1] += alpha * up - down
    coef[:, 1:] += alpha * down - up
    return coef


def _neighbours(X: np.ndarray, i: int, pick) -> np.ndarray:
    """Per row, ``pick`` (np.maximum or np.minimum) of the entries beside column ``i``."""
    sides = [X[:, j] for j in (i - 1, i + 1) if 0 <= j < X.shape[1]]
    return sides[0] if len(sides) == 1 else pick(*sides)


def dp_closure(X: np.ndarray, alpha: float) -> np.ndarray:
    """``X`` with tiny DP violations removed by moving entries, not by mixing in the uniform mechanism.

    An LP vertex can hold a zero beside ``7e-10`` (HiGHS's feasibility tolerance is absolute; at
    ``alpha = 0.1`` entries span many orders of magnitude).  Mixing UM to repair that costs its
    weight ``~ N * 7e-11 / (1 - alpha)`` times UM's loss: ``4e-9`` of the value.  Instead each row
    is raised to its smallest alpha-DP majorant (``max_j alpha^|i-j| X[r, j]``, two sweeps; each
    entry moves by at most its violation) and each column's surplus is taken off (or its deficit
    put on) the entry of that column with the most room to move without breaking its own DP rows.
    Rounding is left to :func:`countdp.privacy.certify.certify`, which follows.
    """
    out = np.clip(np.array(X, dtype=float), 0.0, None)
    N = out.shape[1]
    for i in range(1, N):  # sweeps over columns, each vectorised over rows
        out[:, i] = np.maximum(out[:, i], alpha * out[:, i - 1])
    for i in range(N - 2, -1, -1):
        out[:, i] = np.maximum(out[:, i], alpha * out[:, i + 1])
    for i in range(N):
        excess = out[:, i].sum() - 1.0
        if excess > 0:
            room = out[:, i] - alpha * _neighbours(out, i, np.maximum)
        else:
            room = _neighbours(out, i, np.minimum) / alpha - out[:, i]
        r = int(np.argmax(room))
        if room[r] >= abs(excess):
            out[r, i] -= excess
    return out


def private_certificate(alpha: float, loss: np.ndarray, side: np.ndarray, X: np.ndarray, prior: np.ndarray,
                        up: np.ndarray, down: np.ndarray, tol: float) -> tuple[DualityCertificate, np.ndarray]:
    """Certificate of the alpha-DP mechanism ``X`` (float), with ``X`` repaired to be alpha-DP.

    Two repairs are certified by :func:`countdp.privacy.certify.certify` (``X`` itself, and its
    :func:`dp_closure`); both are alpha-DP, and the one with the smaller worst case is kept.
    """
    N = X.shape[0]
    candidates = [certify(X, alpha)[0], certify(dp_closure(X, alpha), alpha)[0]]
    worst = [float(np.einsum("ir,ri->i", loss, P)[side].max()) for P in candidates]
    best = int(np.argmin(worst))
    repaired = candidates[best]
    y = _prior(prior, side, N)
    coef = _dp_coefficients(alpha, np.clip(up, 0.0, None), np.clip(down, 0.0, None), y[None, :] * loss.T)
    repair = float(np.max(np.abs(repaired - X)))
    return DualityCertificate(worst[best], float(coef.min(axis=0).sum()), tol, False, repair), repaired


def _rationals(values: np.ndarray, max_denominator: int | None) -> np.ndarray:
    """Floats as Fractions: exactly, or the nearest with denominator <= ``max_denominator``."""
    flat = [Fraction(float(v)) for v in np.asarray(values, dtype=float).ravel()]
    if max_denominator is not None:
        flat = [f.limit_denominator(max_denominator) for f in flat]
    return np.array(flat, dtype=object).reshape(np.shape(values))


def integer_matrix(values: np.ndarray) -> tuple[np.ndarray, int]:
    """A matrix of Fractions as ``(integers, common denominator)`` (Python ints, object dtype)."""
    den = math.lcm(*(Fraction(v).denominator for v in values.ravel()))
    ints = [Fraction(v).numerator * (den // Fraction(v).denominator) for v in values.ravel()]
    return np.array(ints, dtype=object).reshape(values.shape), den


def _stochastic_integers(R: np.ndarray, max_denominator: int | None) -> tuple[np.ndarray, int]:
    """``R`` (float, columns ~ distributions) as integers over one denominator ``den``, each column
    summing exactly to ``den``: negatives clipped, each column's shortfall added to its largest entry."""
    if max_denominator is None:
        den = 1 << DYADIC_BITS
        ints = np.array([int(v) for v in np.rint(np.clip(R, 0.0, None) * den).ravel()], dtype=object)
        ints = ints.reshape(R.shape)
    else:
        ints, den = integer_matrix(np.maximum(_rationals(R, max_denominator), 0))
    ints = ints.reshape(len(R), -1)
    top = np.argmax(ints.astype(float), axis=0)
    columns = np.arange(ints.shape[1])
    ints[top, columns] = ints[top, columns] + (den - ints.sum(axis=0))
    if any(v < 0 for v in ints[top, columns]):
        raise ValueError("the solver's answer is too far from column-stochastic to repair")
    return ints, den


def _integer_loss(loss: np.ndarray) -> np.ndarray:
    if not np.array_equal(loss, np.rint(loss)):
        raise ValueError("an exact certificate needs an integer-valued loss (L0, L0d, L1, L2 are)")
    return np.array([int(v) for v in np.rint(loss).ravel()], dtype=object).reshape(loss.shape)


def exact_remap_certificate(weights: np.ndarray, denominator: int, loss: np.ndarray, side: np.ndarray,
                            R: np.ndarray, prior: np.ndarray, tol: float,
                            max_denominator: int | None = None
                            ) -> tuple[DualityCertificate, list[Fraction], np.ndarray]:
    """The remap certificate in exact arithmetic for the mechanism ``weights / denominator`` (integers).

    ``R`` and ``prior`` (floats from the solver) become rationals (:func:`_stochastic_integers`);
    returns the certificate (Fractions), every input's exact loss under the rational remap, and
    that remap (Fractions, columns summing exactly to one).
    """
    W = np.array([int(v) for v in np.asarray(weights).ravel()], dtype=object).reshape(np.shape(weights))
    L = _integer_loss(np.asarray(loss, dtype=float))
    Rint, dR = _stochastic_integers(np.asarray(R, dtype=float), max_denominator)
    numerators = (L.dot(Rint) * W.T).sum(axis=1)  # [i]: sum_{r, r'} loss[i, r'] R[r', r] W[r, i]
    per_input = [Fraction(int(v), dR * denominator) for v in numerators]
    yint, dy = _stochastic_integers(_prior(prior, side, W.shape[0])[:, None], max_denominator)
    bayes = (W * yint[:, 0][None, :]).dot(L)  # [r, r']: sum_i y_i W[r, i] loss[i, r']
    dual = Fraction(int(sum(min(row) for row in bayes)), dy * denominator)
    primal = max(per_input[i] for i in side)
    remap = np.array([Fraction(int(v), dR) for v in Rint.ravel()], dtype=object).reshape(Rint.shape)
    return DualityCertificate(primal, dual, tol, True), per_input, remap


def _exact_dp(X: np.ndarray, alpha: Fraction) -> bool:
    """Every ``alpha X[r, i +/- 1] <= X[r, i]`` holds exactly (Fractions)."""
    return bool(np.all(alpha * X[:, 1:] <= X[:, :-1]) and np.all(alpha * X[:, :-1] <= X[:, 1:]))


def exact_private_certificate(alpha: object, loss: np.ndarray, side: np.ndarray, X: np.ndarray, prior: np.ndarray,
                              up: np.ndarray, down: np.ndarray, tol: float,
                              max_denominator: int | None = None) -> tuple[DualityCertificate, np.ndarray]:
    """The private-mechanism certificate in exact arithmetic (Fractions; meant for small ``n``).

    ``X`` is rationalised and its columns normalised exactly; if it is then not exactly alpha-DP
    the primal bound is ``+inf`` (the certificate fails).  Returns the certificate and the rational
    mechanism.
    """
    a = exact_alpha(alpha)
    L = _integer_loss(np.asarray(loss, dtype=float))
    Xq = np.maximum(_rationals(X, max_denominator), 0)
    Xq = Xq / Xq.sum(axis=0)
    feasible = _exact_dp(Xq, a)
    primal = max((L[i] * Xq[:, i]).sum() for i in side) if feasible else math.inf
    yq = _rationals(_prior(prior, side, X.shape[0]), max_denominator)
    yq = yq / yq.sum()
    upq, downq = (np.maximum(_rationals(m, max_denominator), 0) for m in (up, down))
    coef = _dp_coefficients(a, upq, downq, yq[None, :] * L.T)
    dual = sum(min(coef[:, i]) for i in range(coef.shape[1]))
    return DualityCertificate(primal, Fraction(dual), tol, True), Xq


__all__ = ["DYADIC_BITS", "DualityCertificate", "dp_closure", "exact_private_certificate", "exact_remap_certificate",
           "integer_matrix", "per_input_losses", "private_certificate", "remap_certificate"]
