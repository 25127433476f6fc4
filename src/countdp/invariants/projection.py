"""Non-negative L2 projection onto the invariant set: the post-processing Gong and Meng compare against.

Their method (b): take the unconstrained noisy table ``m`` and release
``argmin ||s - m||_2`` over real ``s`` with ``A s = a`` and ``s >= 0`` (the first, "NNL2"
step of the Census TopDown post-processing; no integer rounding follows in their comparison).
A convex QP per table whose answer is fixed by its zero set ``Z``: given ``Z``, the other cells
``F`` solve an equality-constrained least-squares problem in closed form (:meth:`candidate`),
and the candidate is the projection iff it passes the optimality (KKT) test.  The zero set is
found by a primal-dual active-set iteration from the equality-only projection (each step
frees the zero cells with a negative multiplier and zeroes the free cells gone negative), a
few small solves per table; the candidate is released only when it passes the test, so
released zeros are exact zeros.  A degenerate cell (zero, with a zero multiplier) may be counted
free or zero, the same projection up to rounding; it is counted free when that passes the test,
as the polished interior-point answer does.  If the iteration cycles or stalls, Clarabel (through one
compiled cvxpy problem with ``m`` and ``a`` as parameters, built on first need) solves the QP
and its (near-)zero cells are tried as the zero set, from the tightest cut up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ProjectionSettings:
    """``max_steps``: active-set iterations per table before falling back to Clarabel;
    ``multiplier_tolerance``: how negative a zero cell's multiplier may be and still pass the KKT test;
    ``cuts``: the levels below which Clarabel's cells are read as zeros, tried in turn."""

    max_steps: int = 50
    multiplier_tolerance: float = 1e-9
    cuts: tuple[float, ...] = (1e-9, 1e-6, 1e-4, 1e-3)


class NonNegativeProjection:
    """``project(m, a)``: the Euclidean projection of each row of ``m`` onto ``{s : A s = a, s >= 0}``."""

    def __init__(self, A: np.ndarray, settings: ProjectionSettings = ProjectionSettings()) -> None:
        self.A = np.asarray(A, dtype=float)
        self.settings = settings
        self._problem = None

    def project(self, noisy: np.ndarray, a: np.ndarray) -> np.ndarray:
        """One projected (float) table per row of ``noisy``.

        Raises ``RuntimeError`` if a row the active-set iteration leaves to Clarabel is not solved there.
        """
        rows = np.atleast_2d(np.asarray(noisy, dtype=float))
        values = np.asarray(a, dtype=float)
        out = np.empty_like(rows)
        for i, row in enumerate(rows):
            found = self._active_set(row, values)
            out[i] = found if found is not None else self._clarabel(row, values, i)
        return out

    def candidate(self, m: np.ndarray, a: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The projection's candidate for free set ``free`` (zeros elsewhere), and every cell's multiplier ``mu``.

        ``s_F = m_F - A_F' lam`` with ``A_F A_F' lam = A_F m_F - a`` (least squares, so a
        rank-deficient ``A_F`` is fine) and ``s_Z = 0``; ``mu = A' lam - (m - s)``, zero on ``F``.
        """
        lam = np.linalg.lstsq(self.A[:, free] @ self.A[:, free].T, self.A[:, free] @ m[free] - a, rcond=None)[0]
        candidate = np.zeros_like(m)
        candidate[free] = m[free] - self.A[:, free].T @ lam
        return candidate, self.A.T @ lam - (m - candidate)

    def passes(self, candidate: np.ndarray, mu: np.ndarray, free: np.ndarray, a: np.ndarray) -> bool:
        """The KKT test: free cells ``>= 0``, zero cells' multipliers ``>= -tolerance``, ``A s = a`` (to rounding)."""
        return bool((candidate[free] >= 0).all() and (mu[~free] >= -self.settings.multiplier_tolerance).all()
                    and np.allclose(self.A @ candidate, a))

    def _active_set(self, m: np.ndarray, a: np.ndarray) -> np.ndarray | None:
        """The projection by primal-dual active-set steps from ``F = all``, or ``None`` if they cycle or run out."""
        free = np.ones(m.size, dtype=bool)
        seen = {free.tobytes()}
        for _ in range(self.settings.max_steps):
            candidate, mu = self.candidate(m, a, free)
            if self.passes(candidate, mu, free, a):
                return self._degenerate_free(m, a, candidate, mu, free)
            free = np.where(free, candidate > 0, mu < 0)
            if free.tobytes() in seen:
                return None
            seen.add(free.tobytes())
        return None

    def _degenerate_free(self, m: np.ndarray, a: np.ndarray, candidate: np.ndarray, mu: np.ndarray,
                         free: np.ndarray) -> np.ndarray:
        """The projection written with its degenerate cells (zero value *and* zero multiplier) free, where that passes.

        Such a cell may be counted free or zero: both give the projection, up to rounding.  An
        interior-point solution leaves these cells at small positive values, so the polished
        Clarabel answer counts them free when the result passes the KKT test, zero otherwise;
        this takes the same choice, so both routes release the same floats.
        """
        tolerance = self.settings.multiplier_tolerance
        degenerate = np.where(free, candidate <= tolerance, mu <= tolerance)
        if not degenerate.any():
            return candidate
        positive = free & ~degenerate
        for trial in (positive | degenerate, positive):
            if np.array_equal(trial, free):
                return candidate
            tried, tried_mu = self.candidate(m, a, trial)
            if self.passes(tried, tried_mu, trial, a):
                return tried
        return candidate

    def _clarabel(self, m: np.ndarray, a: np.ndarray, row: int) -> np.ndarray:
        """Clarabel's solution polished: the first cut whose zero set passes the KKT test, else Clarabel's own."""
        if self._problem is None:
            self._problem = _ClarabelProblem(self.A)
        solved = self._problem.solve(m, a, row)
        for cut in self.settings.cuts:
            free = solved > cut
            candidate, mu = self.candidate(m, a, free)
            if self.passes(candidate, mu, free, a):
                return candidate
        return np.maximum(solved, 0.0)

    def kkt_residual(self, noisy: np.ndarray, projected: np.ndarray, a: np.ndarray, zero: float = 0.0) -> float:
        """The largest violation of the projection's optimality conditions over the rows, for checks.

        ``s`` is the projection of ``m`` iff ``s >= 0``, ``A s = a`` and ``m - s = A' lam - mu``
        with ``mu >= 0`` and ``mu_i s_i = 0``.  Cells with ``s_i <= zero`` count as zero (exact
        zeros after polishing); ``lam`` is fitted by least squares on the others (where
        ``mu_i = 0``).  The residual is the worst of the equality error, the
        stationarity error on positive cells, the most negative ``mu`` on zero cells and the most
        negative cell.
        """
        values = np.asarray(a, dtype=float)
        worst = 0.0
        for m, s in zip(np.atleast_2d(noisy), np.atleast_2d(projected), strict=True):
            positive = s > zero
            lam = np.linalg.lstsq(self.A[:, positive].T, (m - s)[positive], rcond=None)[0]
            mu = self.A.T @ lam - (m - s)
            worst = max(worst, float(np.abs(self.A @ s - values).max()), float(np.abs(mu[positive]).max(initial=0)),
                        float(-mu[~positive].min(initial=0)), float(-s.min()))
        return worst


class _ClarabelProblem:
    """The QP compiled once by cvxpy with ``m`` and ``a`` as parameters, solved by Clarabel per table."""

    def __init__(self, A: np.ndarray) -> None:
        import cvxpy as cp  # lazy: cvxpy is heavy, and only the fallback needs it

        self._noisy = cp.Parameter(A.shape[1])
        self._values = cp.Parameter(A.shape[0])
        self._s = cp.Variable(A.shape[1])
        self._problem = cp.Problem(cp.Minimize(cp.sum_squares(self._s - self._noisy)),
                                   [A @ self._s == self._values, self._s >= 0])

    def solve(self, m: np.ndarray, a: np.ndarray, row: int) -> np.ndarray:
        """Clarabel's (interior-point) solution for one table; ``RuntimeError`` unless it reports optimal."""
        self._noisy.value, self._values.value = m, a
        self._problem.solve(solver="CLARABEL")
        if self._problem.status != "optimal":
            raise RuntimeError(f"the NNL2 projection of row {row} ended with status {self._problem.status}")
        return self._s.value
