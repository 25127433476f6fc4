"""The design LP as one HiGHS model without reductions: lexicographic solves and minimum-norm optima.

Variables ``x = P.ravel()`` (rows are outputs, columns inputs) plus ``t`` >= every column loss.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from countdp.design.constraints import LinearSystem
from countdp.design.highspy_loader import load_highspy
from countdp.design.model import DesignProblem
from countdp.design.solvers.highs import highs_lp
from countdp.privacy.certify import certify
from countdp.validation import check_alpha, check_distribution, check_n


class DesignModel:
    """BasicDP + ``properties`` over ``x = P.ravel()`` (plus ``t`` >= every column loss), in HiGHS.

    Built from the plain formulation of :class:`countdp.design.model.DesignProblem` without
    reductions, so it is an independent route to the optimum from :mod:`countdp.design.lp_solve`.
    Supports lexicographic solves (:meth:`bound`) and the minimum-norm point of the current
    feasible set.
    """

    def __init__(self, n: int, alpha: float, properties: object = (), objective: object = "L0",
                 system: LinearSystem | None = None):
        """``system``: ``constraint_system(n, alpha, properties)`` when the caller has built it already
        (countdp.studies.subsets builds the 128 subsets' systems incrementally); not checked."""
        highspy = load_highspy()

        self._hs = highspy
        self.n, self.alpha = check_n(n), check_alpha(alpha)
        self.N = self.n + 1
        self.size = self.N * self.N
        problem = DesignProblem(self.n, self.alpha, properties, objective)
        self.properties = problem.properties
        if system is None:
            system = problem.system()
        self.loss = problem.loss
        A = sp.vstack([system.A_ub, system.A_eq, problem.column_loss], format="csr")
        A = sp.hstack([A, sp.csr_matrix(np.concatenate(
            [np.zeros(system.A_ub.shape[0] + system.A_eq.shape[0]), -np.ones(self.N)])[:, None])], format="csc")
        lo = np.concatenate([system.b_ub, system.b_eq, np.full(self.N, -np.inf)])
        hi = np.concatenate([np.full(system.b_ub.size, np.inf), system.b_eq, np.zeros(self.N)])
        lp = highs_lp(A, np.zeros(self.size + 1), np.concatenate([np.zeros(self.size), [-np.inf]]),
                      np.full(self.size + 1, np.inf), lo, hi)
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.passModel(lp)
        self.solve_time = 0.0
        self.qp_solver = ""

    def cost(self, goal: str, weights: object = None) -> np.ndarray:
        """Cost vector over ``(x, t)``: ``"sum"`` (weighted loss) or ``"max"`` (``t``)."""
        c = np.zeros(self.size + 1)
        if goal == "max":
            c[-1] = 1.0
        elif goal == "sum":
            w = np.full(self.N, 1.0 / self.N) if weights is None else check_distribution(weights, self.n)
            c[: self.size] = (self.loss * w[None, :]).ravel()
        else:
            raise ValueError(f"goal must be 'sum' or 'max', got {goal!r}")
        return c

    def _run(self) -> np.ndarray:
        start = time.perf_counter()
        self.h.run()
        self.solve_time += time.perf_counter() - start
        status = self.h.getModelStatus()
        if status != self._hs.HighsModelStatus.kOptimal:
            raise RuntimeError(f"HiGHS: {self.h.modelStatusToString(status)} for n={self.n}, "
                               f"alpha={self.alpha}, properties={'+'.join(self.properties) or 'none'}")
        return np.asarray(self.h.getSolution().col_value, float)

    def minimise(self, c: np.ndarray) -> tuple[np.ndarray, float]:
        """Minimise ``c @ (x, t)``; returns the raw solution and its value."""
        idx = np.arange(self.size + 1, dtype=np.int32)
        self.h.changeColsCost(idx.size, idx, np.asarray(c, float))
        z = self._run()
        return z, float(c @ z)

    def bound(self, c: np.ndarray, value: float, rel: float = 1e-9) -> None:
        """Keep ``c @ (x, t) <= value (1 + rel)``: restrict to (near) the optimal face."""
        nz = np.flatnonzero(c).astype(np.int32)
        self.h.addRow(-self._hs.kHighsInf, value + rel * max(1.0, abs(value)), nz.size, nz, c[nz])

    def min_norm(self, qp_iteration_limit: int = 20000) -> np.ndarray:
        """The point of the current feasible set with the smallest ``||x||_2`` (unique).

        HiGHS's active-set QP solver first; on degenerate faces it can cycle, so after
        ``qp_iteration_limit`` iterations the same QP goes to Clarabel (interior point, run with
        tight tolerances: ~1e-7 on the entries; the default ones give only ~1e-5).
        ``self.qp_solver`` records which one answered.
        """
        hs = self._hs
        self.h.changeColsCost(self.size + 1, np.arange(self.size + 1, dtype=np.int32), np.zeros(self.size + 1))
        hess = hs.HighsHessian()
        hess.dim_ = self.size + 1
        hess.format_ = hs.HessianFormat.kTriangular
        hess.start_ = np.concatenate([np.arange(self.size + 1), [self.size]]).astype(np.int32)
        hess.index_ = np.arange(self.size, dtype=np.int32)
        hess.value_ = np.full(self.size, 2.0)
        self.h.passHessian(hess)
        self.h.setOptionValue("qp_iteration_limit", int(qp_iteration_limit))
        start = time.perf_counter()
        self.h.run()
        self.solve_time += time.perf_counter() - start
        if self.h.getModelStatus() == hs.HighsModelStatus.kOptimal:
            self.qp_solver = "HiGHS-QP"
            return np.asarray(self.h.getSolution().col_value, float)
        self.qp_solver = "CLARABEL"
        return self._min_norm_clarabel()

    def _min_norm_clarabel(self) -> np.ndarray:
        import cvxpy as cp  # lazy: cvxpy is heavy and only needed where HiGHS's QP cycles

        lp = self.h.getLp()
        A = sp.csc_matrix((np.asarray(lp.a_matrix_.value_), np.asarray(lp.a_matrix_.index_),
                           np.asarray(lp.a_matrix_.start_)), shape=(lp.num_row_, lp.num_col_)).tocsr()
        lo, hi = np.asarray(lp.row_lower_), np.asarray(lp.row_upper_)
        big = self._hs.kHighsInf
        eq = np.isclose(lo, hi)
        has_lo, has_hi = (lo > -big) & ~eq, (hi < big) & ~eq
        z = cp.Variable(lp.num_col_)
        cons = [z[: self.size] >= 0]
        if eq.any():
            cons.append(A[eq] @ z == lo[eq])
        if has_lo.any():
            cons.append(A[has_lo] @ z >= lo[has_lo])
        if has_hi.any():
            cons.append(A[has_hi] @ z <= hi[has_hi])
        problem = cp.Problem(cp.Minimize(cp.sum_squares(z[: self.size])), cons)
        start = time.perf_counter()
        problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12,
                      tol_ktratio=1e-10, max_iter=400)
        self.solve_time += time.perf_counter() - start
        if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or z.value is None:
            raise RuntimeError(f"Clarabel: {problem.status} for n={self.n}, alpha={self.alpha}, "
                               f"properties={'+'.join(self.properties) or 'none'}")
        return np.asarray(z.value, float)

    def matrix(self, z: np.ndarray) -> np.ndarray:
        return z[: self.size].reshape(self.N, self.N)


def lexicographic_design(n: int, alpha: float, properties: object = (), objective: object = "L0",
                         first: str = "sum", weights: object = None) -> tuple[np.ndarray, dict]:
    """Optimise ``first`` (``"sum"`` with ``weights``, or ``"max"``), then the other goal on its optima.

    Returns the certified matrix and a record of both solver values and the solve time.
    """
    model = DesignModel(n, alpha, properties, objective)
    second = "max" if first == "sum" else "sum"
    c1 = model.cost(first, weights)
    _, v1 = model.minimise(c1)
    model.bound(c1, v1)
    z, v2 = model.minimise(model.cost(second, weights))
    P, cert = certify(model.matrix(z), model.alpha)
    return P, {"first": first, "first_value": v1, "second_value": v2, "solve_time": model.solve_time,
               "certified": cert.certified, "repair_lambda": cert.repair_lambda}
