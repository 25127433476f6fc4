"""A minimax consumer's two LPs: its best remap of a released mechanism, and its own best mechanism.

Conventions: a mechanism is ``M[r, i] = Pr[release r | true count i]`` (rows outputs), a loss is
``loss[i, r]`` (:mod:`countdp.consumers.losses`), side information ``S`` is a set of inputs.

* :func:`optimal_remap` (G-S Section 2.4.3): the consumer who receives ``r`` answers ``r'`` with
  probability ``R[r', r]`` (``R`` column-stochastic; randomized, because a minimax consumer may
  need to mix), choosing ``R`` to minimise ``max_{i in S} sum_{r, r'} loss[i, r'] R[r', r] M[r, i]``.
  Post-processing: whatever ``R`` is, ``R @ M`` is as private as ``M``.
* :func:`optimal_private_mechanism` (G-S Section 2.5): the best the consumer could get from any
  alpha-DP mechanism, ``min_x max_{i in S} sum_r loss[i, r] x[r, i]`` over column-stochastic ``x``
  that is alpha-DP for *every* pair of neighbouring inputs in ``0..n`` (privacy protects all
  inputs, whatever the consumer believes).
* :func:`optimal_release_remap`: :func:`optimal_remap` of the integer release weights (the
  object that is sampled), certified in exact arithmetic;
* :func:`optimal_face_ranges`: how far each entry of an optimal mechanism can move among the
  optima (for small ``n``: is the optimum unique?).

G-S's Theorem 1: for a loss non-decreasing in ``|i - r|`` the two values coincide when ``M`` is
the geometric mechanism (:mod:`countdp.studies.universal` tests it).  Both LPs are solved by
HiGHS (``highspy``, without scipy's per-call overhead: the study solves thousands).  Neither
answer is trusted: each is returned only with a weak-duality certificate computed in
:mod:`countdp.consumers.certificates` whose gap is at most ``settings.tol``, or
:class:`CertificateError` is raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from countdp.consumers.certificates import (
    DualityCertificate,
    exact_remap_certificate,
    private_certificate,
    remap_certificate,
)
from countdp.consumers.losses import check_side
from countdp.design.highspy_loader import load_highspy
from countdp.design.solvers.highs import highs_lp
from countdp.validation import check_alpha, check_matrix, check_n
from countdp.values.mechanism import Mechanism, integer_weights, narrow_mechanisms


class CertificateError(ValueError):
    """A solver answer whose weak-duality gap exceeds the tolerance: not accepted as an optimum."""


@dataclass(frozen=True)
class RemapSettings:
    """Tuning of the consumer LPs.

    ``tol``: largest accepted duality gap; ``max_n``: largest ``n`` the remap LP is built for (it
    has ``(n+1)**2`` variables in ``|S|`` dense rows); ``attain_tol``: an input attains the
    worst case when its loss is within this of it; ``solver_tol``: HiGHS's primal and dual
    feasibility tolerances (its smallest: at its default, 1e-7, the DP rows an answer may break
    need repairs that can cost more than ``tol`` of the value).

    The structured path beyond ``max_n`` (:mod:`countdp.consumers.structured_remap`):
    ``structured_max_n``: the largest ``n`` it takes (each pass over the weights is O(n^2) time);
    ``block_entries``: the most weights one block of a pass holds (its memory: about 10 floats
    per entry); ``reach_tol``: a weight below this times its input's largest does not tie a release
    to the input in a window LP (above any floor: a structural form's is ``< 1e-15`` of the diagonal);
    ``window_entries``: the most (release, input) pairs a window LP may couple;
    ``window_iterations``: HiGHS's simplex iteration limit for one window LP (past it, that LP's
    answer is not used); ``window_rounds``: how many times a window is solved and widened; ``pricing_rounds``: how
    many times a window LP's answers are priced and extended; ``plateau_min_run``: the shortest
    run of the side information that gets a geometric least favourable prior; ``prior_background``:
    what every input of the side information gets in a prior, relative to its largest entry, in
    units of the mechanism's floor (the smallest weight of a column over its largest), so that a
    release far from the prior stays its own inputs'.
    """

    tol: float = 1e-9
    max_n: int = 128
    attain_tol: float = 1e-9
    solver_tol: float = 1e-10
    structured_max_n: int = 10_000
    block_entries: int = 1 << 21
    reach_tol: float = 1e-13
    window_entries: int = 1 << 20
    window_iterations: int = 50_000
    window_rounds: int = 4
    pricing_rounds: int = 16
    plateau_min_run: int = 16
    prior_background: float = 1e3


@dataclass(frozen=True)
class Remap:
    """A consumer's optimal remap ``remap[r', r] = Pr[answer r' | release r]`` of a mechanism.

    ``per_input[i]``: the expected loss of input ``i`` (every input, also outside ``side``);
    ``worst_loss``: the largest over ``side``; ``prior``: the dual, a least favourable prior on
    ``side`` (zero elsewhere); ``certificate``: weak duality for ``worst_loss``.
    """

    remap: np.ndarray
    worst_loss: float
    per_input: np.ndarray
    side: np.ndarray
    prior: np.ndarray
    certificate: DualityCertificate
    attain_tol: float = 1e-9

    @property
    def attained(self) -> np.ndarray:
        """The inputs of ``side`` whose loss is the worst case (within ``attain_tol``)."""
        return self.side[self.per_input[self.side] >= self.worst_loss - self.attain_tol]


@dataclass(frozen=True)
class PrivateOptimum:
    """The consumer's own optimal alpha-DP mechanism ``matrix[r, i]``, its minimax ``value``, the
    least favourable prior (dual) on the side information, the DP rows' multipliers ``up[r, i]``
    (of ``alpha x[r, i] <= x[r, i+1]``) and ``down[r, i]`` (of ``alpha x[r, i+1] <= x[r, i]``), and
    the weak-duality certificate."""

    value: float
    matrix: np.ndarray
    prior: np.ndarray
    certificate: DualityCertificate
    up: np.ndarray
    down: np.ndarray


def _check_loss(loss: object, N: int) -> np.ndarray:
    L = np.asarray(loss, dtype=float)
    if L.shape != (N, N) or not np.all(np.isfinite(L)):
        raise ValueError(f"the loss must be a finite {N}x{N} matrix loss[i, r], got shape {L.shape}")
    return L


def _solve(c: np.ndarray, A: sp.spmatrix, n_eq: int, settings: RemapSettings, what: str,
           t_upper: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """``min c z`` over ``z >= 0`` with ``A z <= 0`` except the last ``n_eq`` rows, ``= 1`` (HiGHS),
    and the last variable (the worst case ``t``) at most ``t_upper``.

    Returns ``z`` and the multipliers of the rows (``>= 0`` for the inequalities).  HiGHS's status
    is not trusted, and its answer may break rows by its tolerance: the caller's certificate
    repairs the point and decides optimality.
    """
    highspy = load_highspy()
    m, k = A.shape
    row_lower = np.concatenate([np.full(m - n_eq, -np.inf), np.ones(n_eq)])
    row_upper = np.concatenate([np.zeros(m - n_eq), np.ones(n_eq)])
    col_upper = np.full(k, np.inf)
    col_upper[-1] = t_upper
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("primal_feasibility_tolerance", settings.solver_tol)
    h.setOptionValue("dual_feasibility_tolerance", settings.solver_tol)
    h.passModel(highs_lp(A, c, np.zeros(k), col_upper, row_lower, row_upper))
    h.run()
    solution = h.getSolution()
    if not (solution.value_valid and solution.dual_valid):
        raise CertificateError(f"{what}: HiGHS returned no solution ({h.modelStatusToString(h.getModelStatus())})")
    return np.array(solution.col_value), -np.array(solution.row_dual)


def _minimise_t(N: int) -> np.ndarray:
    """The cost of ``z = (matrix.ravel(), t)``: minimise the worst case ``t``."""
    c = np.zeros(N * N + 1)
    c[-1] = 1.0
    return c


@lru_cache(maxsize=64)
def _column_sums(N: int) -> sp.csr_matrix:
    """``sum_{r'} z[r' * N + r] = 1`` for each column ``r`` of an ``N x N`` matrix, plus a zero ``t`` column."""
    return sp.hstack([sp.kron(np.ones((1, N)), sp.eye(N)), sp.csr_matrix((N, 1))], format="csr")


def optimal_remap(M: np.ndarray, loss: np.ndarray, side: object = None,
                  settings: RemapSettings = RemapSettings()) -> Remap:
    """The consumer's optimal randomized remap of the mechanism ``M`` (module docstring).

    ``side`` defaults to every input.  Raises ``ValueError`` for bad inputs or ``n >
    settings.max_n``, and :class:`CertificateError` if the answer cannot be certified.
    """
    M = check_matrix(M)
    N = M.shape[0]
    if N - 1 > settings.max_n:
        raise ValueError(f"n = {N - 1} is too large for the remap LP (at most {settings.max_n}: "
                         f"it has (n+1)^2 = {N * N} variables in up to {N} dense rows)")
    L = _check_loss(loss, N)
    S = np.arange(N) if side is None else check_side(side, N - 1)
    rows = L[S][:, :, None] * M.T[S][:, None, :]  # [k, r', r] = loss[S_k, r'] M[r, S_k]
    A = sp.vstack([sp.csr_matrix(np.hstack([rows.reshape(len(S), N * N), -np.ones((len(S), 1))])),
                   _column_sums(N)], format="csr")
    z, multipliers = _solve(_minimise_t(N), A, N, settings, "remap LP")
    prior = np.zeros(N)
    prior[S] = multipliers[:len(S)]
    certificate, R, per_input = remap_certificate(M, L, S, z[:-1].reshape(N, N), prior, settings.tol)
    if not certificate.holds:
        raise CertificateError(f"remap LP: duality gap {float(certificate.gap):.3g} > {settings.tol:g}")
    return Remap(R, certificate.primal, per_input, S, prior, certificate, settings.attain_tol)


def optimal_release_remap(released: Mechanism, loss: np.ndarray, side: object = None,
                          settings: RemapSettings = RemapSettings()) -> Remap:
    """:func:`optimal_remap` of the sampled object ``W / 2**K`` (``W``: the mechanism's columns), with its
    certificate recomputed in exact arithmetic on those integer weights (needs an integer-valued loss)."""
    released = narrow_mechanisms([released], "a remap")[0]
    W = integer_weights(released)
    remap = optimal_remap(W / float(released.denominator), loss, side, settings)
    exact, per_input, _ = exact_remap_certificate(W, released.denominator, np.asarray(loss, dtype=float),
                                               remap.side, remap.remap, remap.prior, settings.tol)
    if not exact.holds:
        raise CertificateError(f"remap LP: exact duality gap {float(exact.gap):.3g} > {settings.tol:g}")
    return Remap(remap.remap, float(exact.primal), np.array([float(v) for v in per_input]), remap.side,
                 remap.prior, exact, settings.attain_tol)


@lru_cache(maxsize=64)
def _dp_rows(N: int, alpha: float) -> sp.csr_matrix:
    """The ``2 N (N-1)`` DP rows over ``z = (x.ravel(), t)``: ``up`` rows ``alpha x[r, i] - x[r, i+1]``
    then ``down`` rows ``alpha x[r, i+1] - x[r, i]`` (``r``-major, ``i`` in ``0..n-1``)."""
    index = np.arange(N * N).reshape(N, N)
    left, right = index[:, :-1].ravel(), index[:, 1:].ravel()
    m = left.size
    up, down = np.arange(m), np.arange(m, 2 * m)
    rows = np.concatenate([up, up, down, down])
    cols = np.concatenate([left, right, right, left])
    data = np.tile(np.repeat([alpha, -1.0], m), 2)
    return sp.csr_matrix((data, (rows, cols)), shape=(2 * m, N * N + 1))


def _private_lp(n: int, alpha: float, loss: object, side: object) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """``(A, loss, S)``: the own-mechanism LP's rows over ``z = (x.ravel(), t)``: the DP rows, one loss
    row ``sum_r loss[S_k, r] x[r, S_k] - t <= 0`` per input of ``S``, then the ``N`` column sums."""
    N = n + 1
    L = _check_loss(loss, N)
    S = np.arange(N) if side is None else check_side(side, n)
    k = len(S)
    rows = np.concatenate([np.repeat(np.arange(k), N), np.arange(k)])
    cols = np.concatenate([(np.arange(N)[None, :] * N + S[:, None]).ravel(), np.full(k, N * N)])
    data = np.concatenate([L[S].ravel(), -np.ones(k)])
    loss_rows = sp.csr_matrix((data, (rows, cols)), shape=(k, N * N + 1))
    return sp.vstack([_dp_rows(N, alpha), loss_rows, _column_sums(N)], format="csr"), L, S


def optimal_private_mechanism(n: int, alpha: float | Fraction, loss: np.ndarray, side: object = None,
                              settings: RemapSettings = RemapSettings()) -> PrivateOptimum:
    """The consumer's own optimal alpha-DP mechanism and its minimax value (module docstring)."""
    n, a = check_n(n), check_alpha(alpha)
    N = n + 1
    A, L, S = _private_lp(n, a, loss, side)
    z, multipliers = _solve(_minimise_t(N), A, N, settings, "private-mechanism LP")
    m = N * n
    up, down = multipliers[:m].reshape(N, n), multipliers[m:2 * m].reshape(N, n)
    prior = np.zeros(N)
    prior[S] = multipliers[2 * m:2 * m + len(S)]
    certificate, X = private_certificate(a, L, S, z[:-1].reshape(N, N), prior, up, down, settings.tol)
    if not certificate.holds:
        raise CertificateError(f"private-mechanism LP: duality gap {float(certificate.gap):.3g} > {settings.tol:g}")
    return PrivateOptimum(certificate.primal, X, prior, certificate, up, down)


def optimal_face_ranges(n: int, alpha: float | Fraction, loss: np.ndarray, side: object = None, slack: float = 1e-9,
                        settings: RemapSettings = RemapSettings()) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``: the smallest and largest value of each entry ``x[r, i]`` over the alpha-DP
    mechanisms whose worst case is within ``slack`` of the optimum.  ``high - low`` near 0 everywhere
    means the optimal mechanism is unique.  Solves ``2 (n+1)**2`` LPs: meant for small ``n``."""
    n, a = check_n(n), check_alpha(alpha)
    N = n + 1
    value = optimal_private_mechanism(n, a, loss, side, settings).value
    A, _, _ = _private_lp(n, a, loss, side)
    low, high = np.zeros(N * N), np.zeros(N * N)
    for entry in range(N * N):  # one LP per entry and direction
        c = np.zeros(N * N + 1)
        c[entry] = 1.0
        low[entry] = _solve(c, A, N, settings, "face LP", value + slack)[0][entry]
        high[entry] = _solve(-c, A, N, settings, "face LP", value + slack)[0][entry]
    return low.reshape(N, N), high.reshape(N, N)


__all__ = ["CertificateError", "PrivateOptimum", "Remap", "RemapSettings", "optimal_face_ranges",
           "optimal_private_mechanism", "optimal_release_remap", "optimal_remap"]
