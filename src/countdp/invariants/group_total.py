"""Every group's noisy count, conditioned on the counts summing to the published total, sampled exactly.

Group ``g`` has a certified mechanism (:class:`~countdp.values.mechanism.Mechanism`, weights
``W_g[y, x]``) and a true count ``x_g``.  The release is ``y`` with probability proportional to
``prod_g W_g[y_g, x_g]`` on ``{y : sum y = T = sum x}``: Gong and Meng's conditioned mechanism
(Section 2.2, equation 2.3), without MCMC.

**Method.**  Leaf polynomials ``f_g(z) = sum_y W_g[y, x_g] z^y``; a node of a balanced binary tree
holds the product of its children's, by Kronecker substitution in slots of 64-bit words, one product
of two GMP integers (:mod:`countdp.invariants.packed`).  Top down, a node told to total ``s`` gives
``a`` to its left child with weight ``f_L[a] f_R[s - a]``: the inverse CDF at a uniform real ``U`` of
which ``draw_bits`` bits are read, taken only when integer comparisons show that every weight
consistent with what is known puts all of ``U``'s dyadic interval in one step; otherwise more is
learnt (bits of ``U``, finer weights).  So every split has its exact probability and no float enters
a decision.  The weights are known (``method``) exactly (``"exact"``: ``(sum n_g) K G`` bits, a few
hundred groups at most) or (``"lazy"``) as integer lower bounds plus a radius for the tilted
``f_g(theta z)``, in fixed point with as many bits as ``digits[0]`` significant digits need, refined
to the next ``digits`` and at last to the exact polynomials for a split they cannot decide.  The tilt
scales a node's split weights by the same ``theta**s`` (no probability changes); it centres the
product on ``T``, where precision is needed.  A node's bounds keep a *window* of degrees whose length
is fixed by the sizes (:mod:`countdp.invariants.windows`: about ``n sqrt(g bits)`` for ``g`` groups of
size ``n``, where the full product has ``g n + 1`` coefficients), long enough for every coefficient
the precision keeps, whatever the counts.  A split's weights and their running sums are numpy limbs
(:mod:`countdp.invariants.limbs`), of which a bisection reads a few.  For the same random bits both
methods return the same output.

**What the work depends on.**  The number of every operation is fixed by the group sizes, ``K``, ``T``
and the settings (branch-free tilt steps, every leaf column of the partition's table, packed operands
behind a sentinel limb, windows of public lengths, ``draw_bits`` bits and a bisection of a fixed number
of steps per split, its running sums offset to one length).  Left to the data: (1) operand magnitudes
(radii, masses, exact polynomials) and where a window sits, so an operation's time, weakly
(tests/invariants/test_draw_work.py); (2) bits of ``U`` read near a step and (3) refinements of
ambiguous bounds, counted and bounded by the draw's report.
"""

from __future__ import annotations

import itertools
import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from countdp.invariants.leaves import leaf_bounds, tilt_powers
from countdp.invariants.limbs import Prefix, from_int, from_words, limb_bits, limbs_for, products
from countdp.invariants.packed import (
    Bounds,
    Packed,
    bounds_product,
    multiply,
    pack,
    words_for,
)
from countdp.invariants.windows import leaf_types, log_weights, tilt, window_lengths
from countdp.privacy.sampling import SystemRandomSource, uniform_draw
from countdp.values.mechanism import Mechanism, narrow_mechanisms


@dataclass(frozen=True)
class GroupTotalSettings:
    """Tuning of :class:`GroupTotalSampler`; none of it changes the released distribution.

    ``method``: ``"lazy"`` (fixed-point bounds, refined when ambiguous) or ``"exact"``.  ``digits``:
    the significant decimal digits per node of each level of bounds (held in as many bits as such a
    number needs), tried in turn before the exact polynomials.  ``draw_bits``: bits of ``U`` read per
    split; ``extend_bits``: bits added when ``U`` is too coarse.  ``tilt_steps``: bisection steps for
    ``log2 theta`` within ``+-tilt_range``.  ``window_slack``: a node's window as a multiple of the
    length that holds every coefficient its precision keeps, for any counts
    (:func:`countdp.invariants.windows.window_lengths`; below 1 it leaves some out: still exact, refined
    more often).
    """

    method: str = "lazy"
    digits: tuple[int, ...] = (24, 96)
    draw_bits: int = 128
    extend_bits: int = 64
    tilt_steps: int = 48
    tilt_range: float = 64.0
    window_slack: float = 1.0

    def __post_init__(self) -> None:
        if self.method not in ("lazy", "exact"):
            raise ValueError(f"method must be 'lazy' or 'exact', got {self.method!r}")
        if not self.digits or min(self.digits) < 1 or min(self.draw_bits, self.extend_bits) < 1:
            raise ValueError("digits must be a non-empty tuple of positive ints; draw_bits, extend_bits >= 1")
        if not self.window_slack > 0:
            raise ValueError("window_slack must be > 0")

    @staticmethod
    def precision(digits: int) -> int:
        """Bits that hold a number of ``digits`` decimal digits."""
        return (10**digits - 1).bit_length()


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


def choose(low: Sequence, high: Sequence, u: int, bits: int, offset: int = 0) -> tuple[int | None, float]:
    """The index ``a`` of the inverse CDF at ``U`` in ``[u, u + 1) / 2**bits`` if the weight bounds
    decide it (else ``None``), and an upper bound on the probability over ``U`` that they do not
    (:func:`decide` on the running sums; exact weights are passed as ``low is high``)."""
    p_lo, p_hi = (list(itertools.accumulate(w, initial=offset)) for w in (low, high))  # offset + sums before
    return decide(p_lo, p_hi, u, bits, offset, low is high)


def decide(p_lo: Sequence, p_hi: Sequence, u: int, bits: int, offset: int, exact: bool) -> tuple[int | None, float]:
    """:func:`choose` from the running sums of the weights' bounds (``p[i]``: ``offset`` plus the first ``i``
    weights, each weight plus ``offset``; ``n + 1`` sums for ``n`` weights).

    ``a`` is the smallest index with ``S_a > U S`` (``S_a`` cumulative weights, ``S`` the total), taken
    only if ``(u + 1) R_a <= (2**bits - u - 1) S_a`` (so ``U S < S_a``) and ``u R_{a-1} >= (2**bits - u)
    S_{a-1}`` (so ``S_{a-1} <= U S``) hold for every weight within its bounds, ``R`` the weight above an
    index.  The first test holds from some index on (the weights are non-negative; it holds at the
    last), which bisection finds in ``n.bit_length()`` steps whatever the weights.  The offsets are
    moved to the other side of each test (operands of one length).  The step after ``a`` lies in an
    interval of width at most ``((S^hi_a - S^lo_a) + (S^hi - S^lo)) / S^lo``; over every ``a`` (the first
    term grows with ``a``) at most ``(2n + 1)(S^hi - S^lo) / S^lo``, met by ``U`` with that probability
    plus ``2n / 2**bits``.
    """
    n = len(p_lo) - 1
    total_lo, total_hi, full = p_lo[n], p_hi[n], 1 << bits
    first, last = 0, n - 1
    for _ in range(n.bit_length()):
        i = (first + last) // 2
        below = ((u + 1) * (total_hi - p_hi[i + 1]) + (full - u - 1) * ((i + 2) * offset)
                 <= (u + 1) * ((n - i - 1) * offset) + (full - u - 1) * p_lo[i + 1])
        first, last = ((i + 1, last), (first, i))[below]
    a, bound, true_lo = first, min(1.0, 2 * n / full), total_lo - (n + 1) * offset
    if not exact:  # (exact weights: only U's width)
        bound = min(1.0, (2 * n + 1) * (total_hi - total_lo) / true_lo + bound) if true_lo else 1.0
    decided = (u * (total_lo - p_lo[a]) + (full - u) * ((a + 1) * offset)
               >= u * ((n - a) * offset) + (full - u) * p_hi[a])
    return (a, bound) if (a == 0) | decided else (None, bound)


def split_sums(left: Bounds, right: Bounds, target: int, keep: int) -> tuple[Prefix, Prefix, int]:
    """Running sums (lower, upper) of the bounds of the weights ``f_L[a] f_R[target - a]`` of a split, and
    the offset ``2**(2 keep)`` that each weight comes plus (operands of one length in :func:`decide`).

    The weights are those of the degrees ``a`` of ``left``'s window in order, between two entries for
    the degrees outside it (below, above; each weighs at least 0 and at most their total, ``r_L (mass_R
    + count_R r_R)``).  A degree of ``right`` outside its window has low 0 and high ``r_R`` (0 outside
    ``0..count_R - 1``).  Numpy limbs (:mod:`countdp.invariants.limbs`) of a length fixed by ``keep``
    (unless a radius outgrows ``2**keep``).
    """
    degrees = target - left.start - np.arange(left.low.count)  # right's degree for each of left's
    rows, valid = degrees - right.start, ((degrees >= 0) & (degrees < right.count))[:, None]
    inside = ((rows >= 0) & (rows < right.low.count))[:, None]
    width, m = limb_bits(max(keep, left.radius.bit_length(), right.radius.bit_length()) + 1)
    low_l = from_words(left.low.words, m, width)
    low_r = from_words(right.low.words, m, width)[np.clip(rows, 0, right.low.count - 1)] * inside
    high_l, high_r = low_l + from_int(left.radius, m, width), low_r + from_int(right.radius, m, width) * valid
    offset, rest = 1 << (2 * keep), left.radius * (right.mass + right.count * right.radius)
    count = max(2 * m, limbs_for((rest + offset).bit_length(), width)) + 1
    base, outside = from_int(offset, count, width), from_int(rest + offset, count, width)
    low, high = (np.empty((left.low.count + 3, count), dtype=np.int64) for _ in range(2))
    low[[0, 1, -1]], high[0], high[[1, -1]] = base, base, outside  # (row 0: the initial sum, offset)
    low[2:-1], high[2:-1] = products(low_l, low_r, count, width) + base, products(high_l, high_r, count, width) + base
    return Prefix(low, width), Prefix(high, width), offset


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
        self._types = leaf_types(self.mechanisms, self.counts)
        self._exact, self._bounds, self._leaves, self._lengths = {}, {}, {}, {}
        G = len(self.mechanisms)
        if settings.method == "lazy" and G > 1:
            multiplicity = np.bincount(self._types.of_group, minlength=len(self._types.columns))
            theta = tilt(log_weights(self._types.columns), multiplicity, self.total, settings.tilt_steps,
                         settings.tilt_range).as_integer_ratio()
            self._theta = (theta[0], theta[1].bit_length() - 1)  # num / 2**shift
            keep = settings.precision(settings.digits[0])
            self.bounds(0, G // 2, keep), self.bounds(G // 2, G, keep)

    def _nodes(self) -> np.ndarray:
        """Every node ``(start, stop)`` of the tree with more than one group."""
        out, stack = [], [(0, len(self.mechanisms))]
        while stack:
            start, stop = stack.pop()
            mid = (start + stop) // 2
            out.append((start, stop))
            stack += [node for node in ((start, mid), (mid, stop)) if node[1] - node[0] > 1]
        return np.array(out, dtype=np.int64).reshape(-1, 2)

    def window(self, start: int, stop: int, keep: int) -> int:
        """The window length of node ``start..stop-1`` at ``keep`` bits (all nodes computed at once)."""
        if keep not in self._lengths:
            nodes = self._nodes()
            lengths = window_lengths(self.sizes, nodes, keep, self.settings.window_slack).tolist()
            self._lengths[keep] = dict(zip(map(tuple, nodes.tolist()), lengths, strict=True))
        return self._lengths[keep][start, stop]

    def leaves(self, keep: int) -> list[Bounds]:
        """Bounds (``keep`` bits) of the tilted polynomial of every leaf column, used or not (cached): as many
        as the public sizes say, whatever the counts."""
        if keep not in self._leaves:
            powers = tilt_powers(self._theta, int(self.sizes.max()), keep)
            self._leaves[keep] = leaf_bounds(self._types.columns, powers, keep)
        return self._leaves[keep]

    def bounds(self, start: int, stop: int, keep: int) -> Bounds:
        """Fixed-point bounds (``keep`` bits) of the tilted ``prod_{start <= g < stop} f_g`` (cached)."""
        if (keep, start, stop) not in self._bounds:
            if stop - start == 1:
                node = self.leaves(keep)[int(self._types.of_group[start])]
            else:
                mid = (start + stop) // 2
                node = bounds_product(self.bounds(start, mid, keep), self.bounds(mid, stop, keep), keep,
                                      self.window(start, stop, keep))
            self._bounds[keep, start, stop] = node
        return self._bounds[keep, start, stop]

    def exact_polynomial(self, start: int, stop: int) -> Packed:
        """The exact polynomial ``prod_{start <= g < stop} f_g`` (built once, cached)."""
        if (start, stop) not in self._exact:
            width = words_for(sum(m.K for m in self.mechanisms[start:stop]) + 1)  # (coefficients <= 2**sum K)
            mid = (start + stop) // 2
            self._exact[start, stop] = (pack(self._types.columns[self._types.of_group[start]].tolist(), width)
                                        if stop - start == 1 else
                                        multiply(self.exact_polynomial(start, mid), self.exact_polynomial(mid, stop),
                                                 width))
        return self._exact[start, stop]

    def exact_weights(self, start: int, stop: int, target: int) -> tuple[list[int], int]:
        """The exact weights ``f_L[a] f_R[target - a]`` of the splits of node ``start..stop-1``, for every
        degree ``a`` of the left child, between two entries of weight 0 (the layout of :func:`split_sums`),
        each plus the offset returned: every factor is read plus ``lead`` (above every coefficient, so
        that the operands have one length) and the cross terms are subtracted."""
        mid = (start + stop) // 2
        left, right = self.exact_polynomial(start, mid), self.exact_polynomial(mid, stop)
        lead = 1 << (64 * max(left.width, right.width))
        values, degrees = right.values(), target - np.arange(left.count)
        inside = (degrees >= 0) & (degrees < right.count)
        factor, other = left.values() + lead, values[np.clip(degrees, 0, right.count - 1)] * inside + lead
        offset = lead * lead
        return [offset, *(factor * other + 2 * offset - lead * (factor + other)), offset], offset

    def _split(self, start: int, mid: int, stop: int, target: int, source: RandomBits, tally: list) -> int:
        """How much of ``target`` goes to groups ``start..mid-1``: each level of bounds, then exactly."""
        bits, u = self.settings.draw_bits, source.bits(self.settings.draw_bits)
        for level, digits in enumerate(self.settings.digits if self.settings.method == "lazy" else ()):
            keep = self.settings.precision(digits)
            left, right = self.bounds(start, mid, keep), self.bounds(mid, stop, keep)
            low, high, offset = split_sums(left, right, target, keep)
            a, bound = decide(low, high, u, bits, offset, False)
            tally[2] += bound if level == 0 else 0.0
            if a is not None and 0 < a <= left.low.count:  # (not an entry for the degrees outside the window)
                return left.start + a - 1
            tally[1] += 1
        weights, offset = self.exact_weights(start, stop, target)
        a, bound = choose(weights, weights, u, bits, offset)
        tally[2] += bound if self.settings.method == "exact" else 0.0
        while a is None:
            extra = self.settings.extend_bits
            u, bits, tally[0] = (u << extra) | source.bits(extra), bits + extra, tally[0] + 1
            a = choose(weights, weights, u, bits, offset)[0]
        return a - 1

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
        columns = (self._types.columns[kind] for kind in self._types.of_group)
        weight, G = math.prod(int(column[v]) for column, v in zip(columns, y.tolist(), strict=True)), len(y)
        if G == 1:  # y = x, the only output
            return Fraction(1)
        weights, offset = self.exact_weights(0, G, self.total)
        return Fraction(weight, int(sum(weights)) - len(weights) * offset)


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


__all__ = ["DrawReport", "GroupTotalSampler", "GroupTotalSettings", "RandomBits", "choose", "decide",
           "draw_partitioned", "split_sums"]
