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
from countdp.invariants.packed import (
    Bounds,
    Packed,
    bounds_product,
    multiply,
    pack,
    words_for,
)
from countdp.invariants.splits import choose, decide, level_sums, split_sums
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
            bits = sum(m.K for m in self.mechanisms[start:stop]) + 1  # (coefficients <= 2**sum K)
            mid = (start + stop) // 2
            self._exact[start, stop] = (pack(self._types.columns[self._types.of_group[start]].tolist(), words_for(bits))
                                        if stop - start == 1 else
                                        multiply(self.exact_polynomial(start, mid), self.exact_polynomial(mid, stop),
                                                 bits))
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

    def _split(self, start: int, mid: int, stop: int, target: int, sums: tuple | None, source: RandomBits,
               tally: list) -> int:
        """How much of ``target`` goes to groups ``start..mid-1``: each level of bounds (the first one's running
        sums ``sums`` computed with the split's level of the tree), then exactly."""
        bits, u = self.settings.draw_bits, source.bits(self.settings.draw_bits)
        for level, digits in enumerate(self.settings.digits if self.settings.method == "lazy" else ()):
            keep = self.settings.precision(digits)
            left, right = self.bounds(start, mid, keep), self.bounds(mid, stop, keep)
            low, high, offset = sums if level == 0 else split_sums(left, right, target, keep)
            a, bound = decide(low, high, u, bits, offset, False)
            tally[2] += bound if level == 0 else 0.0
            if a is not None and 0 < a <= left.low.count:  # (not an entry for the degrees outside the window)
                return left.start + a - 1
            tally[1] += 1
        weights, offset = self.exact_weights(start, stop, target)
        sums = list(itertools.accumulate(weights, initial=offset))
        a, bound = decide(sums, sums, u, bits, offset, True)
        tally[2] += bound if self.settings.method == "exact" else 0.0
        while a is None:
            extra = self.settings.extend_bits
            u, bits, tally[0] = (u << extra) | source.bits(extra), bits + extra, tally[0] + 1
            a = decide(sums, sums, u, bits, offset, True)[0]
        return a - 1

    def draw_with_report(self, rng: object = None) -> tuple[np.ndarray, DrawReport]:
        """One release and its :class:`DrawReport`.  ``rng``: ``None`` (OS secure source, for real
        data), a numpy ``Generator`` (seeded, for experiments), or a :class:`RandomBits`.

        The tree is walked a level at a time: the first bounds' running sums of every split of a level
        are computed at once (:func:`~countdp.invariants.splits.level_sums`), then each split reads its
        bits, left to right."""
        source, tally = (rng if isinstance(rng, RandomBits) else RandomBits(rng)), [0, 0, 0.0]
        out, level = np.zeros(len(self.mechanisms), dtype=np.int64), [(0, len(self.mechanisms), self.total)]
        lazy, keep = self.settings.method == "lazy", self.settings.precision(self.settings.digits[0])
        while level:
            for start, _, target in (node for node in level if node[1] - node[0] == 1):
                out[start] = target
            splits = [(start, (start + stop) // 2, stop, target) for start, stop, target in level if stop - start > 1]
            pairs = [(self.bounds(start, mid, keep), self.bounds(mid, stop, keep)) for start, mid, stop, _ in splits
                     ] if lazy else []
            sums = level_sums(pairs, [t for *_, t in splits], keep) if pairs else iter([None] * len(splits))
            level = []
            for (start, mid, stop, target), first in zip(splits, sums, strict=True):
                a = self._split(start, mid, stop, target, first, source, tally)
                level += [(start, mid, a), (mid, stop, target - a)]
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
           "draw_partitioned", "level_sums", "split_sums"]
