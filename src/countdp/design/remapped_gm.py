"""Bayes-optimal BasicDP designs in closed form: GM followed by its best remap, with a dual proof.

Conventions as everywhere: ``P[i, j] = Pr[output i | input j]``, ``alpha = e^-eps``, the loss
``C[i, j]`` of :func:`countdp.values.objectives.loss_matrix` and the prior ``w`` (the design LP's
weights); the LP is :meth:`countdp.design.model.DesignProblem.lp` with no property and
``aggregate="sum"``: ``min sum_ij w_j C[i, j] P[i, j]`` over alpha-DP column-stochastic ``P``.

**Theorem** (Ghosh, Roughgarden and Sundararajan, *Universally utility-maximizing privacy
mechanisms*, STOC 2009).  For every prior and every loss that is non-decreasing in ``|i - j|``
(L0, L0d, L1 and L2 are), an optimum of this LP is GM followed by the deterministic remap that
sends GM's output ``k`` to ``R(k) = argmin_i K[k, i]``, ``K[k, i] = sum_j GM[k, j] w_j C[i, j]``
(the expected cost of answering ``i`` when GM said ``k``).  Its value is ``sum_k min_i K[k, i]``.

**Certificate** (no LP is solved; :func:`remap_dual`).  With ``m_k = min_i K[k, i]``:

* the column-sum multipliers are ``v = GM^-1 m``.  GM's columns sum to one, hence so do those
  of ``GM^-1``, and ``sum_j v_j = sum_k m_k``: the dual objective equals the primal's.
  ``GM = D T`` with ``T[i, j] = alpha^|i-j|`` (whose inverse is tridiagonal) and ``D`` diagonal,
  so ``v`` costs ``O(n)``;
* each output row ``i`` then has costs ``q_j = w_j C[i, j] - v_j`` to be covered by its own DP
  rows, a chain ``P[i, j] >= alpha P[i, j+1]``, ``P[i, j+1] >= alpha P[i, j]``: a residual
  ``h >= 0`` at column ``j`` is moved to column ``j+1`` as ``alpha h`` by the first row of the
  pair (multiplier ``h``), a residual ``h < 0`` as ``h / alpha`` by the second (multiplier
  ``-h / alpha``).  Sweeping in from both ends, every column's reduced cost is zero except at
  the column where the two sweeps meet, chosen where the reduced cost is largest;
* rounding leaves reduced costs of about ``1e-16`` times the terms; each column-sum multiplier is
  lowered by its column's worst deficit (plus that rounding), which costs the dual objective the
  sum over columns, not over entries (as :func:`countdp.design.polish.full_dual` does).

The theorem is not trusted: :func:`remap_certificate` returns the certificate of the independent
weak-duality check :func:`countdp.design.optimality.check_optimality` on the full model, and
only a closed gap is an optimum.
"""

from __future__ import annotations

import numpy as np

from countdp.design.model import DesignProblem
from countdp.design.optimality import check_optimality, design_lp_model, lower_column_multipliers
from countdp.mechanisms.closed_forms import geometric
from countdp.privacy.certify import certify
from countdp.values.objectives import loss_matrix

THEOREM = "Ghosh, Roughgarden and Sundararajan (STOC 2009): GM followed by its best remap"
"""The theorem behind :func:`remapped_geometric`, as recorded in ``optimality["proof"]``."""


def _prior(n: int, weights: np.ndarray | None) -> np.ndarray:
    return np.full(n + 1, 1.0 / (n + 1)) if weights is None else np.asarray(weights, float)


def _remap(n: int, alpha: float, objective: object, weights: np.ndarray | None):
    """``(GM, R, m, cost)``: GM, the best remap ``R[k]``, its cost ``m[k]`` and ``cost[i, j] = w_j C[i, j]``."""
    G = geometric(n, alpha)
    cost = loss_matrix(n, objective) * _prior(n, weights)[None, :]
    K = G @ cost.T
    R = K.argmin(axis=1)
    return G, R, K[np.arange(n + 1), R], cost


def remapped_geometric(n: int, alpha: float, objective: object = "L1", weights: np.ndarray | None = None) -> np.ndarray:
    """GM followed by the best deterministic remap for ``objective`` under the prior ``weights``."""
    G, R, _, _ = _remap(n, alpha, objective, weights)
    P = np.zeros_like(G)
    np.add.at(P, R, G)
    return P


def _inverse_gm_times(m: np.ndarray, alpha: float) -> np.ndarray:
    """``GM^-1 m``: ``GM = D T``, ``T^-1 = tridiag(-a, (1, 1+a^2, ..., 1+a^2, 1), -a) / (1 - a^2)``."""
    a, N = alpha, m.size
    d = np.full(N, (1 - a) / (1 + a))
    d[0] = d[-1] = 1 / (1 + a)
    y = m / d
    diag = np.full(N, 1 + a * a)
    diag[0] = diag[-1] = 1.0
    v = diag * y
    v[1:] -= a * y[:-1]
    v[:-1] -= a * y[1:]
    return v / (1 - a * a)


def _sweep(q: np.ndarray, alpha: float) -> np.ndarray:
    """Residual at each column after moving every residual to its left along the chain."""
    h = np.empty_like(q)
    h[:, 0] = q[:, 0]
    for j in range(1, q.shape[1]):  # one vector step per column, over all rows at once
        p = h[:, j - 1]
        h[:, j] = q[:, j] + np.where(p >= 0, alpha * p, p / alpha)
    return h


def chain_multipliers(q: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``(fwd, bwd)``: multipliers ``>= 0`` of the DP rows ``P[i, j] >= alpha P[i, j+1]`` and
    ``P[i, j+1] >= alpha P[i, j]`` (``N x n`` each) that leave row ``i`` of ``q`` a non-negative
    residual at one column and zero elsewhere, when that is possible (module docstring)."""
    left = _sweep(q, alpha)  # residual arriving from the left, q included
    right = _sweep(q[:, ::-1], alpha)[:, ::-1]
    meet = (left + right - q).argmax(axis=1)
    pair = np.arange(q.shape[1] - 1)[None, :]
    from_left = pair < meet[:, None]  # pair (j, j+1) carries the left sweep's residual rightwards
    h, g = left[:, :-1], right[:, 1:]
    fwd = np.where(from_left, np.maximum(h, 0.0), np.maximum(-g, 0.0) / alpha)
    bwd = np.where(from_left, np.maximum(-h, 0.0) / alpha, np.maximum(g, 0.0))
    return fwd, bwd


def remap_dual(n: int, alpha: float, objective: object, weights: np.ndarray | None = None,
               lp=None) -> tuple[np.ndarray, np.ndarray]:
    """``(u, v)``: multipliers of ``lp``'s inequality rows (DP) and column sums (module docstring).

    ``lp`` is :func:`countdp.design.optimality.design_lp_model` ``(n, alpha, (), objective,
    weights)``, built here when not given."""
    lp = design_lp_model(n, alpha, (), objective, weights) if lp is None else lp
    _, _, m, cost = _remap(n, alpha, objective, weights)
    v = _inverse_gm_times(m, alpha)
    fwd, bwd = chain_multipliers(cost - v[None, :], alpha)
    u = np.concatenate([fwd.ravel(), bwd.ravel()])
    return u, lower_column_multipliers(lp, u, v)


def remap_certificate(n: int, alpha: float, objective: object, weights: np.ndarray | None,
                      P: np.ndarray, properties: tuple[str, ...] = ()) -> dict:
    """The certificate of :func:`countdp.design.optimality.check_optimality` for ``certify(P)``
    on the LP with ``properties`` (``P``: :func:`remapped_geometric`, before
    :func:`countdp.privacy.certify.certify`, which is deterministic), with the dual of
    :func:`remap_dual` and the properties' rows given 0: the LP with them only adds rows, so that
    dual stays feasible, and the check also tests that ``certify(P)`` holds every row."""
    plain = DesignProblem(n, alpha, (), objective, weights)
    target = DesignProblem(n, alpha, properties, objective, weights)
    u, v = target.dual_from(plain, *remap_dual(n, alpha, objective, weights, plain.lp()))
    lp = target.lp()
    optimality = check_optimality(lp, certify(P, alpha)[0].ravel(), u, lower_column_multipliers(lp, u, v))
    optimality["proof"] = f"{THEOREM}; explicit dual"
    return optimality
