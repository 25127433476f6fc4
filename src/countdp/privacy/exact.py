"""The released form of a mechanism: integer weights, and their exact alpha-DP certificate.

An :class:`IntegerMechanism` holds non-negative integer weights ``W`` (int64), rows outputs and
columns inputs, every column summing *exactly* to ``D = 2**K``.  The sampler
(:mod:`countdp.privacy.sampling`) releases output ``i`` for input ``j`` with probability exactly
``W[i, j] / D``, so this object *is* the distribution that is sampled.

**The exact test.**  For ``alpha = p/q`` (a :class:`~fractions.Fraction`), the mechanism is
alpha-DP iff, for every output ``i`` and neighbouring inputs ``j, j'``,
``alpha * W[i, j'] <= W[i, j]``, i.e. ``p * W[i, j'] <= q * W[i, j]``, with every column summing
to ``D``.  :func:`exact_dp_check` decides this in integer arithmetic only: each product of a
weight (< 2**63) and ``p`` or ``q`` (< 2**64) is formed exactly as a 128-bit number from four
32-bit partial products in ``uint64`` (no overflow, no float); larger ``p, q`` fall back to
Python integers.  The test implies that no zero weight stands next to a positive one.

The construction of an :class:`IntegerMechanism` runs the test, so an object that exists has
passed it; its arrays are read-only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np

from countdp.privacy.inverse_cdf import guide_table, output_for_draw, outputs_for_draws
from countdp.values.alpha import alpha_text, exact_alpha

RELEASE_K = 62
"""Default ``K``: ``D = 2**62``, so cumulative weights fit int64 and draws are 62 random bits."""
MIN_RELEASE_K = 60
"""Smallest ``K`` accepted for a released mechanism."""

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


@dataclass(frozen=True)
class ExactCheck:
    """The exact test's verdict; ``reason`` names the first failure (empty when it holds)."""

    holds: bool
    inequalities: int
    broken: int
    reason: str = ""


def _mul128(x: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``x * c`` for uint64 ``x`` and ``0 <= c < 2**64``, as (high, low) 64-bit halves."""
    c0, c1 = np.uint64(c & 0xFFFFFFFF), np.uint64(c >> 32)
    x0, x1 = x & _M32, x >> _S32
    p00, p01, p10, p11 = x0 * c0, x0 * c1, x1 * c0, x1 * c1  # each < 2**64
    mid = (p00 >> _S32) + (p01 & _M32) + (p10 & _M32)  # < 3 * 2**32
    low = (p00 & _M32) | ((mid & _M32) << _S32)
    high = p11 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)
    return high, low


def scaled_products(W: np.ndarray, p: int, q: int) -> tuple:
    """Exact ``(p * W, q * W)`` for a non-negative int64 array ``W``.

    Each as (high, low) uint64 halves when ``p, q < 2**64``, else as arrays of Python ints.
    """
    if max(p, q) < 2**64:
        Wu = W.astype(np.uint64)
        return _mul128(Wu, p), _mul128(Wu, q)
    Wo = W.astype(object)
    return p * Wo, q * Wo


def _le(a, b, left: slice, right: slice) -> np.ndarray:
    """``a[:, left] <= b[:, right]`` for two results of :func:`scaled_products`."""
    if isinstance(a, tuple):
        ah, al, bh, bl = a[0][:, left], a[1][:, left], b[0][:, right], b[1][:, right]
        return (ah < bh) | ((ah == bh) & (al <= bl))
    return np.asarray(a[:, left] <= b[:, right], dtype=bool)


def scaled_difference(a, b, left: slice, right: slice) -> np.ndarray:
    """``a[:, left] - b[:, right]`` as floats (relative error 2**-52) for results of :func:`scaled_products`."""
    if not isinstance(a, tuple):
        return (a[:, left] - b[:, right]).astype(float)
    ah, al, bh, bl = a[0][:, left], a[1][:, left], b[0][:, right], b[1][:, right]
    ge = (ah > bh) | ((ah == bh) & (al >= bl))
    high = np.where(ge, ah - bh - (al < bl), bh - ah - (bl < al))
    low = np.where(ge, al - bl, bl - al)  # uint64 arithmetic wraps modulo 2**64, as borrowing needs
    return np.where(ge, 1.0, -1.0) * (high.astype(float) * 2.0**64 + low.astype(float))


def column_totals_equal(W: np.ndarray, total: int) -> np.ndarray:
    """Per column, whether the int64 column of ``W`` (entries in [0, 2**62]) sums exactly to ``total``.

    The sum is split into 31-bit halves so that no partial sum can wrap around.
    """
    high = (W >> 31).sum(axis=0)
    low = (W & (2**31 - 1)).sum(axis=0)
    high, low = high + (low >> 31), low & (2**31 - 1)
    return (high == total >> 31) & (low == total & (2**31 - 1))


def exact_dp_check(weights: object, alpha: object, K: int) -> ExactCheck:
    """Decide, in integer arithmetic only, whether ``weights / 2**K`` is an alpha-DP mechanism.

        >>> W = [[3, 2], [1, 2]]  # columns sum to 4 = 2 ** 2; the largest neighbour ratio is 2
        >>> countdp.exact_dp_check(W, "1/2", K=2).holds, countdp.exact_dp_check(W, "2/3", K=2).holds
        (True, False)
    """
    W = np.asarray(weights)
    a = exact_alpha(alpha)
    p, q = a.numerator, a.denominator
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 2:
        return ExactCheck(False, 0, 0, f"weights must be a square (n+1)x(n+1) matrix, got shape {W.shape}")
    if W.dtype != np.int64:
        return ExactCheck(False, 0, 0, f"weights must be int64 integers, got dtype {W.dtype}")
    if not 1 <= K <= 62:
        return ExactCheck(False, 0, 0, f"K must be in 1..62, got {K}")
    D = 1 << K
    inequalities = 2 * W.shape[0] * (W.shape[0] - 1)
    if W.min() < 0 or W.max() > D:
        return ExactCheck(False, inequalities, 0, f"weights must lie in [0, 2^{K}]")
    sums_ok = column_totals_equal(W, D)
    if not sums_ok.all():
        return ExactCheck(False, inequalities, 0, f"column {int(np.argmin(sums_ok))} does not sum to 2^{K}")
    pW, qW = scaled_products(W, p, q)
    head, tail = slice(None, -1), slice(1, None)
    forward = _le(pW, qW, tail, head)  # p W[i, j+1] <= q W[i, j]
    backward = _le(pW, qW, head, tail)  # p W[i, j] <= q W[i, j+1]
    broken = int((~forward).sum() + (~backward).sum())
    if broken:
        i, j = np.argwhere(~forward)[0] if (~forward).any() else np.argwhere(~backward)[0]
        where = f"first at row {i}, columns {j}/{j + 1}"
        return ExactCheck(False, inequalities, broken,
                          f"{broken} DP inequalities fail at alpha = {alpha_text(a)}, {where}")
    return ExactCheck(True, inequalities, 0)


@dataclass(frozen=True)
class ReleaseCertificate:
    """Evidence about a released :class:`IntegerMechanism`.

    ``holds``: the exact test's verdict.  ``rounding_lambda``: the weight of the uniform
    mechanism mixed in before rounding (the slack the rounding needs); ``max_abs_error``:
    ``max |W/D - P|`` against the float matrix ``P`` it was rounded from; ``objective_change``:
    the design objective of ``W/D`` minus that of ``P`` (``None`` when not computed).
    """

    holds: bool
    alpha_exact: str
    K: int
    inequalities: int
    rounding_lambda: float = 0.0
    max_abs_error: float = 0.0
    objective_change: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class IntegerMechanism:
    """Integer weights ``W[i, j]`` (output i, input j) with columns summing to ``2**K``; exactly alpha-DP.

    Construction runs :func:`exact_dp_check` and raises ``ValueError`` if it fails, so every
    instance is certified.  ``certificate`` carries the rounding's cost when the weights were
    derived from a float matrix (:func:`countdp.privacy.rounding.round_to_release`).

        >>> from fractions import Fraction
        >>> u = 2 ** 60
        >>> W = np.array([[3 * u, 2 * u], [u, 2 * u]])  # columns sum to 2 ** 62; neighbour ratios up to 2
        >>> countdp.IntegerMechanism(Fraction(1, 2), 62, W).n
        1
        >>> countdp.IntegerMechanism(Fraction(2, 3), 62, W)
        Traceback (most recent call last):
        ...
        ValueError: release weights are not alpha-DP: 1 DP inequalities fail at alpha = 2/3, ...
    """

    alpha: Fraction
    K: int
    weights: np.ndarray
    rounding: dict = field(default_factory=dict)

    representation = "matrix"
    """The protocol's name of this representation (:mod:`countdp.values.mechanism`)."""
    values_per_count = 1

    def __post_init__(self) -> None:
        alpha = exact_alpha(self.alpha)
        if not MIN_RELEASE_K <= self.K <= 62:
            raise ValueError(f"a released mechanism needs 2^K with {MIN_RELEASE_K} <= K <= 62, got K = {self.K}")
        try:
            W = np.array(self.weights, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):
            raise ValueError("release weights must be integers in [0, 2^62]") from None
        check = exact_dp_check(W, alpha, self.K)
        if not check.holds:
            raise ValueError(f"release weights are not alpha-DP: {check.reason}")
        W.setflags(write=False)
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "weights", W)
        object.__setattr__(self, "_check", check)

    @property
    def n(self) -> int:
        return self.weights.shape[0] - 1

    @property
    def denominator(self) -> int:
        return 1 << self.K

    @property
    def certificate(self) -> ReleaseCertificate:
        return ReleaseCertificate(holds=self._check.holds, alpha_exact=alpha_text(self.alpha), K=self.K,
                                  inequalities=self._check.inequalities, **self.rounding)

    def certify(self) -> ReleaseCertificate:
        """The protocol's certificate: :attr:`certificate`, the exact test run when these weights were frozen."""
        return self.certificate

    def column(self, j: int | np.ndarray) -> np.ndarray:
        """Input ``j``'s weights over the ``n + 1`` outputs (read-only; for an array of inputs, one column each)."""
        return self.weights[:, j]

    def sample(self, counts: np.ndarray, words: np.ndarray, sizes: np.ndarray | None = None,
               second=None) -> np.ndarray:
        """Each count (in ``0..n``) released from the top ``K`` bits of its uniform 64-bit word, exactly.

        The draw ``u`` gives the smallest output ``i`` with ``u < W[0, j] + ... + W[i, j]``
        (:mod:`countdp.privacy.inverse_cdf`); one count given as a Python integer (with its word)
        takes the scalar search, whose cost does not depend on ``n``.  ``sizes`` must be this ``n`` (a
        matrix serves one size); ``second`` is never needed (``K <= 62``).
        """
        if sizes is not None and np.any(np.asarray(sizes) != self.n):
            raise ValueError(f"a matrix of integer weights serves groups of size {self.n} only")
        if type(counts) is int:  # one count and its word as Python integers: no array is built, an int returned
            return output_for_draw(self.cumulative, self.guide, counts, words >> (64 - self.K))
        counts = np.asarray(counts)
        draws = (np.asarray(words, dtype=np.uint64).ravel() >> np.uint64(64 - self.K)).view(np.int64)
        return outputs_for_draws(self.cumulative, self.K, counts.ravel().astype(np.int64, copy=False), draws,
                                 self.guide).reshape(counts.shape)

    @cached_property
    def matrix(self) -> np.ndarray:
        """``W / D`` as floats (each entry rounded once; for display and metrics)."""
        return self.weights / float(self.denominator)

    @cached_property
    def cumulative(self) -> np.ndarray:
        """``cumulative[j, i] = W[0, j] + ... + W[i, j]`` (one row per input; last entry ``D``).

        C-contiguous and read-only: the sampler reads it in place on every release.
        """
        out = np.ascontiguousarray(np.cumsum(self.weights, axis=0).T)
        out.setflags(write=False)
        return out

    @cached_property
    def guide(self) -> tuple[np.ndarray, int]:
        """The sampler's guide table (:func:`countdp.privacy.inverse_cdf.guide_table`), read-only."""
        table, shift = guide_table(self.cumulative, self.K)
        table.setflags(write=False)
        return table, shift

    def to_dict(self) -> dict:
        """The ``release`` block of an artifact: denominator, weights (rows = outputs), certificate."""
        return {"denominator": self.denominator, "weights": self.weights.tolist(),
                "certificate": self.certificate.to_dict()}


__all__ = ["MIN_RELEASE_K", "RELEASE_K", "ExactCheck", "IntegerMechanism", "ReleaseCertificate",
           "column_totals_equal", "exact_dp_check", "scaled_difference", "scaled_products"]
