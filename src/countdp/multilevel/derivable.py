"""Is ``M_beta`` a post-processing of ``M_alpha``?  A solve or an LP, with two-sided bounds, for any mechanisms.

We look for a column-stochastic ``T >= 0`` (rows = new output, columns = old output) with
``B = T A`` (``A = M_alpha``, ``B = M_beta``; rows outputs, columns inputs) by minimising the L1
residual ``sum |T A - B|`` over column-stochastic ``T >= 0`` (HiGHS through
``scipy.optimize.linprog``).  The verdict does not trust the solver's optimum; it rests on two
bounds evaluated afterwards:

* **upper** (derivable): the solver's ``T``, clipped at 0 and with columns renormalised, is a
  genuine stochastic matrix; ``upper = sum |T A - B|`` is what it achieves.
* **lower** (not derivable): for *any* ``Y`` with entries in [-1, 1] and any stochastic ``T``,
  ``sum |T A - B| >= <Y, B> - sum_j max_i (Y A^T)[i, j]`` (weak duality: ``<-Y, T A - B>`` is at
  most the L1 norm, and ``<Y A^T, T>`` at most the column maxima since columns of ``T`` are
  distributions).  ``Y`` is the solver's dual, clipped to [-1, 1]; both signs are tried.  The
  float evaluation error, at most ``(N^2+2N) 2**-52 (N + N^2)`` for entries in [0, 1], is
  subtracted.

The matrices themselves are only accurate to ``input_accuracy`` (LP designs are certified to
about 1e-9).  If the exact ``A*, B*`` admit ``T``, then ``sum |T A - B| <= 2 N^2 input_accuracy``
(columns of ``T`` are distributions), so that is the tolerance: ``derivable`` iff
``upper <= tol``; the verdict is ``certain`` unless both bounds straddle ``tol``.

**Beyond small matrices, a solve.**  The LP has ``3 N^2`` variables and ``N^3`` non-zeros (36 s
at n = 100, out of reach at n = 1000).  Beyond ``DerivabilitySettings.lp_max_n``, :func:`derive`
solves instead: for an invertible ``A`` the only ``T`` with ``T A = B`` is ``B A^-1`` (one LU
solve, ``O(N^3)`` BLAS, 0.3 s at n = 1024), and the same two bounds decide.  Derivable pairs come
out with residuals near the float rounding (the LP's reach ``1e-7`` at n = 50).  A singular
``A`` gives no ``T`` (the upper bound is then the uniform matrix's) and no dual.  The upper bound
is ``B A^-1`` clipped and renormalised, as above; the lower bound's ``Y`` is built from the
negative entries of ``B A^-1``: with ``Z <= 0`` supported where ``B A^-1 < 0`` and
``Y = Z A^-T`` scaled into [-1, 1], ``<Y, B> = <Z, B A^-1>`` is positive while every column
maximum of ``Y A^T = Z`` is 0 (every column of ``B A^-1`` sums to 1, so has a non-negative
entry), so in exact arithmetic the bound is positive exactly when ``B A^-1`` has a negative
entry; :func:`dual_lower_bound` evaluates it for the ``Y`` actually found, float error subtracted.

When ``A``, ``B`` and a candidate ``T`` are exact (Fractions), :func:`verify_exact` decides
``B = T A``, ``T >= 0`` and column sums 1 exactly; it is how GM -> GM is confirmed without tolerance.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.optimize import linprog

from countdp.validation import check_matrix


@dataclass(frozen=True)
class DerivabilitySettings:
    """``input_accuracy``: how far the float matrices may be from the exact ones (per entry);
    ``lp_tolerance``: HiGHS's primal and dual feasibility tolerance.  Its default 1e-7 leaves
    residuals that can exceed the tolerance of the verdict at n = 50 (WM 1/2 -> 7/10 came out
    uncertain); the verdict rests on the bounds either way, so a tighter solve can only turn an
    uncertain "not derivable" into a certified "derivable".  (Measured with the LP at n = 50, before
    larger pairs went to the solve.)  ``lp_max_n``: largest ``n`` (matrices of ``n + 1`` rows) decided
    by the LP, which minimises the residual even for a singular ``A`` (the levels study, n <= 10,
    uses it); larger pairs are decided by the solve ``B A^-1`` (module docstring).
    """

    input_accuracy: float = 1e-9
    lp_tolerance: float = 1e-10
    lp_max_n: int = 20


@dataclass(frozen=True, eq=False)
class Derivation:
    """The verdict on ``B = T A``: bounds on the best L1 residual, the tolerance, and the stochastic ``T`` found.

    ``residual``: the largest entry of ``|T A - B|`` for that ``T``; ``upper``/``lower``: bounds on
    the smallest possible ``sum |T A - B|``; ``method``: ``"lp"`` or ``"solve"`` (module docstring).
    """

    derivable: bool
    certain: bool
    residual: float
    upper: float
    lower: float
    tolerance: float
    T: np.ndarray
    method: str = "lp"


def _lp(A: np.ndarray, B: np.ndarray, tolerance: float) -> tuple[np.ndarray, list[np.ndarray]]:
    """Solve min ``sum(r+ + r-)`` s.t. ``T A - B = r+ - r-``, ``1^T T = 1^T``, ``T, r+, r- >= 0``: ``(T, [Y, -Y])``.

    Column-major ``vec``: ``vec(T A) = (A^T kron I) vec(T)``; ``Y`` is the dual of ``T A - B = R``.
    """
    N = A.shape[0]
    eye = sp.identity(N, format="csr")
    residual = sp.identity(N * N, format="csr")
    fit = sp.hstack([sp.kron(sp.csr_matrix(A.T), eye), -residual, residual])
    sums = sp.hstack([sp.kron(eye, sp.csr_matrix(np.ones((1, N)))), sp.csr_matrix((N, 2 * N * N))])
    cost = np.concatenate([np.zeros(N * N), np.ones(2 * N * N)])
    res = linprog(cost, A_eq=sp.vstack([fit, sums]).tocsc(), b_eq=np.concatenate([B.ravel(order="F"), np.ones(N)]),
                  bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": tolerance, "dual_feasibility_tolerance": tolerance})
    if res.status != 0:
        raise RuntimeError(f"the derivability LP failed: {res.message}")
    T = res.x[: N * N].reshape((N, N), order="F")
    Y = np.asarray(res.eqlin.marginals[: N * N]).reshape((N, N), order="F")
    return T, [Y, -Y]


def _stochastic(T: np.ndarray) -> np.ndarray:
    """``T`` clipped at 0 with every column renormalised (an empty column becomes uniform)."""
    S = np.clip(T, 0.0, None)
    sums = S.sum(axis=0)
    S = np.where(sums > 0, S / np.where(sums > 0, sums, 1.0), 1.0 / T.shape[0])
    return S


def dual_lower_bound(A: np.ndarray, B: np.ndarray, Y: np.ndarray) -> float:
    """``<Y, B> - sum_j max_i (Y A^T)[i, j]`` for ``Y`` clipped to [-1, 1], minus its float error bound."""
    N = A.shape[0]
    Yc = np.clip(Y, -1.0, 1.0)
    value = float((Yc * B).sum() - (Yc @ A.T).max(axis=0).sum())
    scale = float(np.abs(B).sum() + np.abs(A).sum(axis=1).max() * N)
    return value - (N * N + 2 * N) * 2.0**-52 * scale


def derive(source: np.ndarray, target: np.ndarray, settings: DerivabilitySettings | None = None) -> Derivation:
    """Decide whether ``target = T source`` for some column-stochastic ``T >= 0`` (float matrices).

    By the LP for matrices of at most ``settings.lp_max_n + 1`` rows, by the solve
    ``target source^-1`` beyond (module docstring).
    """
    settings = settings or DerivabilitySettings()
    A, B = check_matrix(source), check_matrix(target)
    if A.shape != B.shape:
        raise ValueError(f"mechanisms must have one shape, got {A.shape} and {B.shape}")
    if A.shape[0] - 1 > settings.lp_max_n:
        return _verdict(A, B, *solved_transition(A, B), "solve", settings.input_accuracy)
    return _verdict(A, B, *_lp(A, B, settings.lp_tolerance), "lp", settings.input_accuracy)


def _verdict(A: np.ndarray, B: np.ndarray, T: np.ndarray, duals: list[np.ndarray], method: str,
             input_accuracy: float) -> Derivation:
    """The two bounds for a candidate ``T`` (clipped, renormalised) and candidate duals, and the verdict."""
    N = A.shape[0]
    S = _stochastic(T)
    gap = np.abs(S @ A - B)
    upper = float(gap.sum())
    lower = max([0.0, *(dual_lower_bound(A, B, y) for y in duals)])
    tol = 2 * N * N * input_accuracy
    derivable = upper <= tol
    return Derivation(derivable, derivable or lower > tol, float(gap.max()), upper, lower, tol, S, method)


def solved_transition(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """``(B A^-1, [Y...])``: the only ``T`` with ``T A = B``, and duals built from its negative entries.

    A singular ``A`` gives ``T = 0`` (whose clipped form is uniform, so the upper bound is honest)
    and no dual.  Each ``Y = Z A^-T`` is scaled to ``max |Y| = 1`` (``Z``: minus the indicator of the
    negative entries, and the negative part itself).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", scipy.linalg.LinAlgWarning)  # an exactly zero pivot: singular
        try:
            factor = scipy.linalg.lu_factor(A.T)
        except (ValueError, np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
            return np.zeros_like(A), []
    T = scipy.linalg.lu_solve(factor, B.T).T
    if not np.isfinite(T).all():
        return np.zeros_like(A), []
    duals = []
    negative = np.minimum(T, 0.0)
    if negative.min() < 0:
        for Z in (-(negative < 0).astype(float), negative):
            Y = scipy.linalg.lu_solve(factor, Z.T, trans=1).T  # Y A^T = Z: solve A Y^T = Z^T
            duals.append(Y / np.abs(Y).max())
    return T, duals


def exact_transition(source: np.ndarray, target: np.ndarray) -> np.ndarray | None:
    """The unique ``T`` with ``target = T source`` when ``source`` is invertible (None if singular), in Fractions.

    Gauss-Jordan elimination on ``source^T T^T = target^T``, whole rows at a time (object
    ndarrays of Fractions: exactness needs them), touching only the columns of ``source^T`` not
    yet eliminated and the rows with a non-zero factor.  ``O(N^3)`` Fraction operations on
    numbers that grow with N (about 3 s for EM at n = 50, 7 s at n = 60, 100 s at n = 100).
    With an invertible source the question is decided exactly: the columns of
    ``T`` then sum to 1 automatically (``1^T T A = 1^T B = 1^T`` forces ``1^T T = 1^T``), so
    ``target`` is derivable iff every entry of ``T`` is ``>= 0``.
    """
    A = np.asarray(source, dtype=object).T.copy()
    X = np.asarray(target, dtype=object).T.copy()
    A, X = A + Fraction(0), X + Fraction(0)  # integers become Fractions, so division stays exact
    N = A.shape[0]
    for c in range(N):
        nonzero = [r for r in range(c, N) if A[r, c] != 0]
        if not nonzero:
            return None
        r = nonzero[0]
        A[[c, r]], X[[c, r]] = A[[r, c]], X[[r, c]]
        pivot, rest = A[c, c], slice(c + 1, None)
        A[c, rest], X[c] = A[c, rest] / pivot, X[c] / pivot
        rows = np.flatnonzero(A[:, c] != 0)
        rows = rows[rows != c]
        factors = A[rows, c][:, None]
        A[rows, rest] = A[rows, rest] - factors * A[c, rest][None, :]
        X[rows] = X[rows] - factors * X[c][None, :]
        A[:, c] = Fraction(0)
        A[c, c] = Fraction(1)
    return X.T


def verify_exact(T: np.ndarray, source: np.ndarray, target: np.ndarray) -> bool:
    """Whether ``target == T @ source`` with ``T >= 0`` and columns summing to 1, all in exact arithmetic.

    Entries must be Fractions or integers (object ndarrays); nothing is rounded.
    """
    T, A, B = (np.asarray(M, dtype=object) for M in (T, source, target))
    if T.shape != A.shape or A.shape != B.shape:
        return False
    return bool((T >= 0).all() and all(s == 1 for s in T.sum(axis=0)) and (T.dot(A) == B).all())


__all__ = ["DerivabilitySettings", "Derivation", "derive", "dual_lower_bound", "exact_transition", "solved_transition",
           "verify_exact"]
