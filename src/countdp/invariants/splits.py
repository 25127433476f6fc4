"""A split of the conditioned release: the inverse CDF of ``f_L[a] f_R[s - a]`` at ``U``, decided exactly.

:func:`decide` takes the running sums of the weights' lower and upper bounds and returns the index the
inverse CDF at a uniform real ``U`` takes, when every weight within its bounds agrees, else ``None``;
:func:`choose` does the same from the weights.  :func:`level_sums` computes the running sums of the
fixed-point bounds of every split of one level of the tree at once, as numpy limbs
(:mod:`countdp.invariants.limbs`), so that a level of thousands of small splits is a few numpy passes;
:func:`split_sums` is one split.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from countdp.invariants.limbs import from_int, from_words, limb_bits, limbs_for, products, to_int
from countdp.invariants.packed import Bounds

CHUNK = 1 << 17
"""Window rows of a level's splits computed per numpy pass (memory)."""


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


class Running:
    """The running sums ``p[i]`` (``i = 0..n``) of one split's ``n = W + 2`` weights (the entry below, the
    window's ``W`` weights, the entry above), each plus ``offset``, with ``p[0] = offset``: read from the
    running sums ``sums`` of a chunk's window weights, each plus ``offset`` (a zero row first), in Python
    integers, branch-free."""

    def __init__(self, sums: np.ndarray, first: int, count: int, width: int, offset: int, below: int,
                 above: int) -> None:
        self.sums, self.first, self.count, self.width = sums, first, count, width
        self.offset, self.below, self.above = offset, below, above
        self.base = to_int(sums[first], width)

    def __getitem__(self, i: int) -> int:
        k = min(max(i - 1, 0), self.count)  # window weights before entry i
        value = to_int(self.sums[self.first + k], self.width) - self.base  # (each weight plus the offset)
        return value + (i + 1 - k) * self.offset + (i >= 1) * self.below + (i >= self.count + 2) * self.above

    def __len__(self) -> int:
        return self.count + 3


def split_sums(left: Bounds, right: Bounds, target: int, keep: int) -> tuple[Running, Running, int]:
    """:func:`level_sums` of one split."""
    return next(level_sums([(left, right)], [target], keep))


def level_sums(pairs: Sequence[tuple[Bounds, Bounds]], targets: Sequence[int],
               keep: int) -> Iterator[tuple[Running, Running, int]]:
    """For each split (its children's bounds at ``keep`` bits and its target): the running sums (lower,
    upper) of the bounds of the weights ``f_L[a] f_R[target - a]``, and the offset ``2**(2 keep)`` that each
    weight comes plus (operands of one length in :func:`decide`).

    The weights are those of the degrees ``a`` of ``left``'s window in order, between two entries for
    the degrees outside it (below, above; each weighs at least 0 and at most their total, ``r_L (mass_R
    + count_R r_R)``).  A degree of ``right`` outside its window has low 0 and high ``r_R`` (0 outside
    ``0..count_R - 1``).  The splits' window weights are computed together, by chunks of about
    ``CHUNK`` rows, as limbs whose length is fixed by ``keep`` (unless a radius outgrows ``2**keep``); a
    chunk is computed when its first split is asked for (memory).
    """
    at = 0
    while at < len(pairs):
        stop, rows = at + 1, pairs[at][0].low.count
        while stop < len(pairs) and rows + pairs[stop][0].low.count <= CHUNK:
            rows, stop = rows + pairs[stop][0].low.count, stop + 1
        yield from _chunk_sums(pairs[at:stop], targets[at:stop], keep)
        at = stop


def _chunk_sums(pairs: Sequence[tuple[Bounds, Bounds]], targets: Sequence[int],
                keep: int) -> list[tuple[Running, Running, int]]:
    """:func:`level_sums` of consecutive splits, in one pass."""
    lefts, rights = [p[0] for p in pairs], [p[1] for p in pairs]
    widths = np.array([left.low.count for left in lefts], dtype=np.int64)
    node = np.repeat(np.arange(len(pairs)), widths)
    local = np.arange(int(widths.sum())) - np.repeat(np.cumsum(widths) - widths, widths)
    shift, heads = (np.array(v, dtype=np.int64) for v in (
        [t - left.start - right.start for left, right, t in zip(lefts, rights, targets, strict=True)],
        [right.low.count for right in rights]))
    rows, counts = shift[node] - local, np.array([right.count for right in rights], dtype=np.int64)[node]
    degrees = rows + np.array([right.start for right in rights], dtype=np.int64)[node]
    inside, valid = ((rows >= 0) & (rows < heads[node]))[:, None], ((degrees >= 0) & (degrees < counts))[:, None]
    width, m = limb_bits(max([keep] + [b.radius.bit_length() for b in lefts + rights]) + 1)
    low_l = from_words(np.concatenate([left.low.words for left in lefts]), m, width)
    low_r = from_words(np.concatenate([right.low.words for right in rights]), m, width)[
        (np.cumsum(heads) - heads)[node] + np.clip(rows, 0, heads[node] - 1)] * inside
    high_l = low_l + np.array([from_int(left.radius, m, width) for left in lefts])[node]
    high_r = low_r + np.array([from_int(right.radius, m, width) for right in rights])[node] * valid
    offset, first, sums = 1 << (2 * keep), (np.cumsum(widths) - widths).tolist(), []
    count = max(2 * m, limbs_for(2 * keep + 1, width)) + 1
    for a, b in ((low_l, low_r), (high_l, high_r)):
        running = np.zeros((len(node) + 1, count), dtype=np.int64)
        np.cumsum(products(a, b, count, width) + from_int(offset, count, width), axis=0, out=running[1:])
        sums.append(running)
    rests = [left.radius * (right.mass + right.count * right.radius) for left, right in pairs]
    return [(Running(sums[0], f, w, width, offset, 0, 0), Running(sums[1], f, w, width, offset, rest, rest), offset)
            for f, w, rest in zip(first, widths.tolist(), rests, strict=True)]


__all__ = ["CHUNK", "Running", "choose", "decide", "level_sums", "split_sums"]
