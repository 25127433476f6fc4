"""Every group's noisy count, conditioned on the counts summing to the published total, sampled exactly.

Group ``g`` has a certified mechanism (:class:`~countdp.values.mechanism.Mechanism`, weights
``W_g[y, x]``) and a true count ``x_g``.  The release is ``y`` with probability proportional to
``prod_g W_g[y_g, x_g]`` on ``{y : sum y = T = sum x}``: Gong and Meng's conditioned mechanism
(Section 2.2, equation 2.3), without MCMC.

**Method.**  Leaf polynomials ``f_g(z) = sum_y W_g[y, x_g] z^y``; a node of a balanced binary tree
holds the product of its children's, by Kronecker substitution in fixed-width decimal slots, as
:class:`decimal.Decimal` integers (libmpdec's transform multiplication beats Python's ints) in a
context that traps any rounding.  Top down, a node told to total ``s`` gives ``a`` to its left child
with weight ``f_L[a] f_R[s - a]``: the inverse CDF at a uniform real ``U`` of which ``draw_bits``
bits are read, taken only when integer comparisons show that every weight consistent with what is
known puts all of ``U``'s dyadic interval in one step; otherwise more is learnt (bits of ``U``,
finer weights).  So every split has its exact probability and no float enters a decision.  The
weights are known (``method``) exactly (``"exact"``: ``(sum n_g) K G`` digits, a few hundred groups
at most) or (``"lazy"``) as integer lower bounds plus a radius for the tilted ``f_g(theta z)``, in
fixed point with ``digits[0]`` significant digits, refined to the next ``digits`` and at last to the
exact polynomials for a split they cannot decide.  The tilt scales a node's split weights by the
same ``theta**s`` (no probability changes); it centres the product on ``T``, where precision is
needed.  For the same random bits both methods return the same output.

**What the work depends on.**  The number of every operation is fixed by the group sizes, ``K``, ``T``
and the settings (branch-free tilt steps, ``n_g + 1`` products per leaf, packed operands behind a
sentinel digit, ``draw_bits`` bits and every index and both tests per split, its ints offset to one
length).  Left to the data: (1) operand magnitudes (leaves' Decimal products, radii, masses, exact
polynomials), so an operation's time, weakly (tests/invariants/test_draw_work.py); (2) bits of ``U``
read near a step and (3) refinements of ambiguous bounds, counted and bounded by the draw's report.
"""

from __future__ import annotations

import decimal
import itertools
import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Context, Decimal, localcontext
from fractions import Fraction

import numpy as np

from countdp.privacy.sampling import SystemRandomSource, uniform_draw
from countdp.values.mechanism import Mechanism, narrow_mechanisms

_EXACT = Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,  # raises rather than rounds
                 traps=[decimal.Inexact, decimal.Rounded, decimal.InvalidOperation])
_LOG10_2_ABOVE = 0.30103  # > log10(2): 2**k has at most floor(k * 0.30103) + 1 digits (exact nodes' slot width)


@dataclass(frozen=True)
class GroupTotalSettings:
    """Tuning of :class:`GroupTotalSampler`; none of it changes the released distribution.

    ``method``: ``"lazy"`` (fixed-point bounds, refined when ambiguous) or ``"exact"``.  ``digits``:
    the significant decimal digits per node of each level of bounds, tried in turn before the exact
    polynomials.  ``draw_bits``: bits of ``U`` read per split; ``extend_bits``: bits added when ``U``
    is too coarse.  ``tilt_steps``: bisection steps for ``log2 theta`` within ``+-tilt_range``.
    """

    method: str = "lazy"
    digits: tuple[int, ...] = (24, 96)
    draw_bits: int = 128
    extend_bits: int = 64
    tilt_steps: int = 48
    tilt_range: float = 64.0

    def __post_init__(self) -> None:
        if self.method not in ("lazy", "exact"):
            raise ValueError(f"method must be 'lazy' or 'exact', got {self.method!r}")
        if not self.digits or min(self.digits) < 1 or min(self.draw_bits, self.extend_bits) < 1:
            raise ValueError("digits must be a non-empty tuple of positive ints; draw_bits, extend_bits >= 1")


@dataclass(frozen=True)
class DrawReport:
    """Data-dependent events of one draw: extra bits of ``U`` read, splits refined (one per finer
    level), and the sum over the splits taken of a bound on the probability of either event."""

    extensions: int
    refinements: int
    event_bound: float


class RandomBits:
    """Uniform random bits from ``rng``: ``None`` (the OS's secure source, :func:`secrets.randbits`),
    a :class:`~countdp.privacy.sampling.SystemRandomSource`, or a seeded numpy ``Generator``
    (its raw 64-bit words, shifted: exactly uniform)."""

    def __init__(self, rng: object = None) -> None:
        if rng is not None and not isinstance(rng, np.random.Generator | SystemRandomSource):
            raise ValueError(f"rng must be None (OS secure source), a SystemRandomSource or a numpy Generator, "
                             f"got {type(rng).__name__}")
        self.rng = rng

    def bits(self, count: int) -> int:
        """A uniform integer in ``[0, 2**count)``."""
        if self.rng is None:
            return secrets.randbits(count)
        value = 0
        for take in [62] * (count // 62) + [count % 62] * bool(count % 62):
            value = (value << take) | uniform_draw(self.rng, take)
        return value


@dataclass(frozen=True)
class Packed:
    """A polynomial as ``count`` decimal slots of ``width`` digits, highest degree first."""

    digits: str
    count: int
    width: int

    def chars(self) -> np.ndarray:
        return np.frombuffer(self.digits.encode("ascii"), dtype=np.uint8).reshape(self.count, self.width)

    def widened(self, width: int) -> str:
        """The digits with every slot left-padded with zeros to ``width``."""
        out = np.full((self.count, width), ord("0"), dtype=np.uint8)
        out[:, width - self.width:] = self.chars()
        return out.tobytes().decode("ascii")

    def coefficients(self, kind: type = int, lead: str = "") -> list:
        """Coefficients by degree, as ``kind``; with ``lead="1"`` each plus ``10**width`` (one length)."""
        return [kind(lead + self.digits[i * self.width:(i + 1) * self.width]) for i in range(self.count - 1, -1, -1)]


def pack(coefficients: Sequence[int], width: int) -> Packed:
    """Non-negative integer coefficients (by degree) packed in slots of ``width`` digits."""
    return Packed("".join(str(int(c)).zfill(width) for c in reversed(coefficients)), len(coefficients), width)


def multiply(a: Packed, b: Packed, width: int) -> Packed:
    """The product polynomial, exactly, in slots of ``width`` digits (which must hold every coefficient).

    Both operands are packed behind a sentinel ``1`` (``A + 10**La``), so the numbers multiplied
    always have the same length whatever the coefficients; the sentinel's cross terms are then
    subtracted: ``AB = (A+a)(B+b) - (A+a)b - (B+b)a + ab``.
    """
    sa, sb = a.widened(width), b.widened(width)
    with localcontext(_EXACT):
        A, B = Decimal("1" + sa), Decimal("1" + sb)
        product = A * B - A.scaleb(len(sb)) - B.scaleb(len(sa)) + Decimal(1).scaleb(len(sa) + len(sb))
    count = a.count + b.count - 1
    return Packed(str(product).zfill(count * width), count, width)


@dataclass(frozen=True)
class Bounds:
    """Fixed-point bounds of a polynomial: every coefficient lies in ``[low_k, low_k + radius]`` (times a
    scale common to the node, which cancels in a split); ``mass >= sum_k low_k``.  Slots of ``keep + 1``."""

    low: Packed
    radius: int
    mass: int


def bounds_product(left: Bounds, right: Bounds, keep: int) -> Bounds:
    """Bounds of a product from bounds of its factors.

    The product of the lower bounds is exact; the true product exceeds it by at most
    ``r_R sum(low_L) + r_L sum(low_R) + r_L r_R min(count_L, count_R)`` in any coefficient.  Then
    every coefficient drops the same number ``d`` of low digits (floor), so that the largest keeps
    ``keep`` digits, and the radius becomes ``ceil(radius / 10**d) + 1``.
    """
    width = 2 * (keep + 1) + len(str(min(left.low.count, right.low.count)))
    product = multiply(left.low, right.low, width)
    radius = (right.radius * left.mass + left.radius * right.mass
              + left.radius * right.radius * min(left.low.count, right.low.count))
    chars = product.chars()
    nonzero = np.flatnonzero((chars != ord("0")).any(axis=0))  # the leading digit of the largest coefficient
    mass, drop = left.mass * right.mass, max(0, width - (int(nonzero[0]) if nonzero.size else width) - keep)
    kept = chars[:, width - drop - keep - 1:width - drop]
    low = Packed(kept.tobytes().decode("ascii"), product.count, keep + 1)
    return Bounds(low, -(-radius // 10**drop) + (drop > 0), mass // 10**drop)  # (divides even by 1)


def tilt(columns: Sequence[Sequence[int]], total: int, settings: GroupTotalSettings) -> Decimal:
    """``theta`` with ``sum_g E_theta[Y_g]`` close to ``total`` under the tilted laws ``W_g[y, x_g] theta**y``.

    Floats, a fixed number of bisection steps on ``log2 theta``: ``theta`` only decides where the
    fixed point is precise, never a probability (any positive ``theta`` gives the same release).
    """
    span = max(len(c) for c in columns)
    logw = np.full((len(columns), span), -np.inf)
    with np.errstate(divide="ignore"):
        for g, column in enumerate(columns):
            logw[g, :len(column)] = np.log(np.asarray(column, dtype=float))
    y = np.arange(span)
    low, high = -settings.tilt_range, settings.tilt_range
    for _ in range(settings.tilt_steps):
        mid = (low + high) / 2
        z = logw + y * (mid * math.log(2))
        p = np.exp(z - z.max(axis=1, keepdims=True))
        mean = float(((p * y).sum(axis=1) / p.sum(axis=1)).sum())
        low, high = ((low, mid), (mid, high))[mean < total]  # (no branch)
    return Decimal(f"{2.0 ** ((low + high) / 2):.17e}")


def tilt_powers(theta: Decimal, degree: int, keep: int) -> tuple[Context, Context, list, list]:
    """Contexts of ``keep + 6`` digits rounding down and up, and the lower and upper bounds they give
    of ``theta**y`` for ``y = 0..degree``."""
    down, up = (Context(prec=keep + 6, rounding=r, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
                for r in (decimal.ROUND_FLOOR, decimal.ROUND_CEILING))
    lo, hi = [Decimal(1)], [Decimal(1)]
    for _ in range(degree):
        lo.append(down.multiply(lo[-1], theta))
        hi.append(up.multiply(hi[-1], theta))
    return down, up, lo, hi


def tilted_leaf(column: Sequence[int], powers: tuple[Context, Context, list, list], keep: int) -> Bounds:
    """Fixed-point bounds of ``W[y, x] theta**y`` (directed rounding on the bounds of :func:`tilt_powers`),
    scaled so that the largest upper bound has ``keep`` digits."""
    down, up, power_lo, power_hi = powers
    lo = [down.multiply(c, p) for c, p in zip(column, power_lo, strict=False)]
    hi = [up.multiply(c, p) for c, p in zip(column, power_hi, strict=False)]
    shift = keep - 1 - max(hi).adjusted()
    lo = [int(down.scaleb(v, shift).to_integral_value(decimal.ROUND_FLOOR)) for v in lo]
    hi = [int(up.scaleb(v, shift).to_integral_value(decimal.ROUND_CEILING)) for v in hi]
    return Bounds(pack(lo, keep + 1), max(h - v for v, h in zip(lo, hi, strict=True)), sum(lo))


def choose(low: Sequence, high: Sequence, u: int, bits: int, offset: int = 0) -> tuple[int | None, float]:
    """The index ``a`` of the inverse CDF at ``U`` in ``[u, u + 1) / 2**bits`` if the weight bounds
    decide it (else ``None``), and an upper bound on the probability over ``U`` that they do not.

    ``a`` is the smallest index with ``S_a > U S`` (``S_a`` cumulative weights, ``S`` the total), taken
    only if ``(u + 1) R_a <= (2**bits - u - 1) S_a`` (so ``U S < S_a``) and ``u R_{a-1} >= (2**bits - u)
    S_{a-1}`` (so ``S_{a-1} <= U S``) hold for every weight within its bounds, ``R`` the weight above an
    index.  Weights come plus ``offset``, moved to the other side of each test (operands of one length);
    every index and both tests are evaluated.  The step after ``a`` lies in an interval of width at most
    ``((S^hi_a - S^lo_a) + (S^hi - S^lo)) / S^lo``, met by ``U``'s with probability <= that + ``2 / 2**bits``.
    """
    p_lo, p_hi = (list(itertools.accumulate(w, initial=offset)) for w in (low, high))  # offset + sums before
    total_lo, total_hi, full, n = p_lo[-1], p_hi[-1], 1 << bits, len(low)
    below = [(u + 1) * (total_hi - sh) + (full - u - 1) * ((i + 2) * offset) <= (u + 1) * ((n - i - 1) * offset)
             + (full - u - 1) * sl for i, (sl, sh) in enumerate(zip(p_lo[1:], p_hi[1:], strict=True))]
    a = below.count(False)  # (below is False up to the index, then True)
    bound, true_lo = min(1.0, 2 * n / full), total_lo - (n + 1) * offset
    if low is not high:  # (exact weights: only U's width)
        spread = (sum(p_hi) - sum(p_lo)) + n * (total_hi - total_lo)
        bound = min(1.0, spread / true_lo + bound) if true_lo else 1.0
    decided = (u * (total_lo - p_lo[a]) + (full - u) * ((a + 1) * offset)
               >= u * ((n - a) * offset) + (full - u) * p_hi[a])
    return (a, bound) if (a == 0) | decided else (None, bound)


def _validated(mechanisms: Sequence[Mechanism], counts: object) -> tuple[list[Mechanism], np.ndarray]:
    """The mechanisms and counts, or a one-line ``ValueError``."""
    mechanisms = narrow_mechanisms(mechanisms, "a release conditioned on its total")
    x = np.asarray(counts)
    if x.ndim != 1 or len(x) != len(mechanisms) or (x.size and x.dtype.kind not in "iu"):
        raise ValueError(f"counts must be one integer per group: got shape {x.shape} for {len(mechanisms)} groups")
    sizes = np.array([m.n for m in mechanisms])
    bad = np.flatnonzero((x < 0) | (x > sizes))
    if bad.size:
        g = int(bad[0])  # the first bad group
        raise ValueError(f"count {int(x[g])} of group {g} is outside 0..{int(sizes[g])} (its mechanism's size)")
    return mechanisms, x.astype(np.int64)


class GroupTotalSampler:
    """The conditioned release for fixed mechanisms and true counts (see the module docstring).

    Building it computes the tree (what a release costs apart from its random bits); :meth:`draw`
    can then be called many times.  ``total`` is ``T``, the published invariant.
    """

    def __init__(self, mechanisms: Sequence[Mechanism], counts: object,
                 settings: GroupTotalSettings = GroupTotalSettings()) -> None:
        self.mechanisms, self.counts = _validated(mechanisms, counts)
        self.settings, self.total = settings, int(self.counts.sum())
        self.sizes = np.array([m.n for m in self.mechanisms], dtype=np.int64)
        self._columns = [[int(v) for v in m.column(int(x))] for m, x in zip(self.mechanisms, self.counts, strict=True)]
        self._exact, self._bounds, self._powers = {}, {}, {}  # caches: (start, stop), (keep, start, stop), keep
        G = len(self.mechanisms)
        if settings.method == "lazy" and G > 1:
            self._theta = tilt(self._columns, self.total, settings)
            self.bounds(0, G // 2, settings.digits[0]), self.bounds(G // 2, G, settings.digits[0])

    def bounds(self, start: int, stop: int, keep: int) -> Bounds:
        """Fixed-point bounds (``keep`` digits) of the tilted ``prod_{start <= g < stop} f_g`` (cached)."""
        if (keep, start, stop) not in self._bounds:
            if stop - start == 1:
                if keep not in self._powers:
                    self._powers[keep] = tilt_powers(self._theta, int(self.sizes.max()), keep)
                node = tilted_leaf(self._columns[start], self._powers[keep], keep)
            else:
                mid = (start + stop) // 2
                node = bounds_product(self.bounds(start, mid, keep), self.bounds(mid, stop, keep), keep)
            self._bounds[keep, start, stop] = node
        return self._bounds[keep, start, stop]

    def exact_polynomial(self, start: int, stop: int) -> Packed:
        """The exact polynomial ``prod_{start <= g < stop} f_g`` (built once, cached)."""
        if (start, stop) not in self._exact:
            width = math.floor(sum(m.K for m in self.mechanisms[start:stop]) * _LOG10_2_ABOVE) + 1
            mid = (start + stop) // 2
            self._exact[start, stop] = (pack(self._columns[start], width) if stop - start == 1 else multiply(
                self.exact_polynomial(start, mid), self.exact_polynomial(mid, stop), width))
        return self._exact[start, stop]

    @staticmethod
    def _weights(left: list, right: list, target: int, offset: int = 0) -> list:
        """``left[a] right[target - a]`` per index of ``left`` (0 outside); ``+ offset**2`` if given ``+ offset``."""
        pad, twice = [offset] * len(left), 2 * offset * offset
        window = (pad + list(right) + pad)[target + len(left):target:-1]  # right[target - a], offset outside
        return [v * w + twice - offset * (v + w) for v, w in zip(left, window, strict=True)]

    def exact_weights(self, start: int, stop: int, target: int) -> list[Decimal]:
        """The exact weights ``f_L[a] f_R[target - a]`` of the splits of node ``start..stop-1``."""
        mid = (start + stop) // 2
        with localcontext(_EXACT):
            return self._weights(self.exact_polynomial(start, mid).coefficients(Decimal),
                                 self.exact_polynomial(mid, stop).coefficients(Decimal), target)

    def _split(self, start: int, mid: int, stop: int, target: int, source: RandomBits, tally: list) -> int:
        """How much of ``target`` goes to groups ``start..mid-1``: each level of bounds, then exactly."""
        bits, u = self.settings.draw_bits, source.bits(self.settings.draw_bits)
        for level, keep in enumerate(self.settings.digits if self.settings.method == "lazy" else ()):
            left, right = self.bounds(start, mid, keep), self.bounds(mid, stop, keep)
            lo_l, lo_r, B = left.low.coefficients(lead="1"), right.low.coefficients(lead="1"), 10 ** (keep + 1)
            a, bound = choose(self._weights(lo_l, lo_r, target, B), self._weights(
                [v + left.radius for v in lo_l], [v + right.radius for v in lo_r], target, B), u, bits, B * B)
            tally[2] += bound if level == 0 else 0.0
            if a is not None:
                return a
            tally[1] += 1
        weights = self.exact_weights(start, stop, target)
        with localcontext(_EXACT):
            a, bound = choose(weights, weights, u, bits)
            tally[2] += bound if self.settings.method == "exact" else 0.0
            while a is None:
                extra = self.settings.extend_bits
                u, bits, tally[0] = (u << extra) | source.bits(extra), bits + extra, tally[0] + 1
                a = choose(weights, weights, u, bits)[0]
        return a

    def draw_with_report(self, rng: object = None) -> tuple[np.ndarray, DrawReport]:
        """One release and its :class:`DrawReport`.  ``rng``: ``None`` (OS secure source, for real
        data), a numpy ``Generator`` (seeded, for experiments), or a :class:`RandomBits`."""
        source, tally = (rng if isinstance(rng, RandomBits) else RandomBits(rng)), [0, 0, 0.0]
        out, stack = np.zeros(len(self.mechanisms), dtype=np.int64), [(0, len(self.mechanisms), self.total)]
        while stack:
            start, stop, target = stack.pop()
            if stop - start == 1:
                out[start] = target
                continue
            mid = (start + stop) // 2
            a = self._split(start, mid, stop, target, source, tally)
            stack += [(mid, stop, target - a), (start, mid, a)]  # the left child first
        return out, DrawReport(tally[0], tally[1], tally[2])

    def draw(self, rng: object = None) -> np.ndarray:
        """One release: a noisy count per group, summing to :attr:`total` exactly."""
        return self.draw_with_report(rng)[0]

    def probability(self, y: object) -> Fraction:
        """The exact probability that :meth:`draw` returns ``y`` (from the exact polynomials: small cases)."""
        y = np.asarray(y)
        if y.shape != self.counts.shape or y.dtype.kind not in "iu":
            raise ValueError(f"an output must be one integer per group, got shape {y.shape}")
        if int(y.sum()) != self.total or (y < 0).any() or (y > self.sizes).any():
            return Fraction(0)
        weight, G = math.prod(column[v] for column, v in zip(self._columns, y.tolist(), strict=True)), len(y)
        if G == 1:  # y = x, the only output
            return Fraction(1)
        with localcontext(_EXACT):
            normaliser = sum(self.exact_weights(0, G, self.total))
        return Fraction(weight, int(normaliser))


def draw_partitioned(mechanisms: Sequence[Mechanism], counts: object, partition_labels: object,
                     rng: object = None, settings: GroupTotalSettings = GroupTotalSettings()) -> np.ndarray:
    """One conditioned release per partition (groups sharing a label), each keeping its own total exactly.

    The labels are public (``--invariant-by``); the partitions are drawn in the order of
    ``numpy.unique`` from one source of random bits.
    """
    mechanisms, x = _validated(mechanisms, counts)
    labels = np.asarray(partition_labels)
    if labels.shape != x.shape:
        raise ValueError(f"partition labels must be one per group: got shape {labels.shape} for {len(x)} groups")
    source = rng if isinstance(rng, RandomBits) else RandomBits(rng)
    out = np.zeros(len(x), dtype=np.int64)
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        sampler = GroupTotalSampler([mechanisms[i] for i in members], x[members], settings)
        out[members] = sampler.draw(source)
    return out


__all__ = ["Bounds", "DrawReport", "GroupTotalSampler", "GroupTotalSettings", "Packed", "RandomBits",
           "bounds_product", "choose", "draw_partitioned", "multiply", "pack", "tilt"]
